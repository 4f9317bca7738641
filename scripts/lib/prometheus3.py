"""Prometheus 3.x, built once per machine from the Go module pinned in
scripts/prometheus3 (go.mod and go.sum) and kept in a cache:

    ${XDG_CACHE_HOME:-$HOME/.cache}/promread/prometheus-3.NN.P-KEY/{prometheus,promtool}

KEY is a hash of go.mod, go.sum and the build's recipe, so a new pin (or a
new recipe) builds anew and an old build is never taken for it.  The build
is `go build -tags remove_all_sd` of cmd/prometheus and cmd/promtool (the
tag keeps file, static and http discovery only), with the version set as
Prometheus's own release builds set it, so `prometheus --version` names it.
It goes to a temporary directory renamed into place, so a build cut short
leaves nothing, and two at once both end with one whole build.

    scripts/lib/prometheus3.py build   # build unless cached (progress on stderr); print the directory
    scripts/lib/prometheus3.py path    # print the directory, or fail if it is not built

scripts/install-deps runs `build`; test programs and the demo take the
binaries from binaries().  Standard library only.
"""
import datetime
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE_DIR = os.path.join(TOP, "scripts", "prometheus3")
PACKAGES = ["github.com/prometheus/prometheus/cmd/prometheus",
            "github.com/prometheus/prometheus/cmd/promtool"]
TAGS = "remove_all_sd"
# What the key covers besides go.mod and go.sum: change it with the build.
RECIPE = "go build -buildvcs=false -tags %s; version ldflags v1" % TAGS


class NotBuilt(Exception):
    pass


def module_version():
    """The pinned module version of Prometheus (v0.316.0) and the release
    it is (3.16.0): module v0.3NN.P is Prometheus 3.NN.P."""
    with open(os.path.join(MODULE_DIR, "go.mod")) as f:
        m = re.search(r"^\s*github\.com/prometheus/prometheus (v0\.(\d)(\d\d)\.(\d+))\b",
                      f.read(), re.M)
    if not m:
        raise NotBuilt("scripts/prometheus3/go.mod pins no github.com/prometheus/prometheus")
    return m.group(1), "%s.%d.%s" % (m.group(2), int(m.group(3)), m.group(4))


def directory():
    """The cache directory of the pinned build (which may not exist yet)."""
    key = hashlib.sha256(RECIPE.encode())
    for name in ("go.mod", "go.sum"):
        with open(os.path.join(MODULE_DIR, name), "rb") as f:
            key.update(f.read())
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "promread",
                        "prometheus-%s-%s" % (module_version()[1], key.hexdigest()[:12]))


def binaries():
    """(prometheus, promtool) of the pinned build; NotBuilt if it is not."""
    where = directory()
    paths = (os.path.join(where, "prometheus"), os.path.join(where, "promtool"))
    if not all(os.access(p, os.X_OK) for p in paths):
        raise NotBuilt("Prometheus %s is not built in %s: run scripts/install-deps"
                       % (module_version()[1], where))
    return paths


def go_command():
    """The go command: on PATH, or where Go's own archive installs it."""
    found = shutil.which("go") or next(
        (p for p in ("/usr/local/go/bin/go",) if os.access(p, os.X_OK)), None)
    if not found:
        raise NotBuilt("building Prometheus 3 needs Go (go.mod says which version); "
                       "no go command on PATH or in /usr/local/go/bin")
    return found


def say(message):
    print(message, file=sys.stderr, flush=True)


def build():
    """Build the pinned Prometheus unless it is cached; its directory."""
    where = directory()
    try:
        binaries()
        return where
    except NotBuilt:
        pass
    module, release = module_version()
    go = go_command()
    env = dict(os.environ, GOFLAGS="-mod=readonly")
    started = time.monotonic()
    say("building Prometheus %s (module %s) with %s: the first time on this machine, "
        "about 10 minutes on a cold Go cache; later runs reuse %s"
        % (release, module, subprocess.run([go, "version"], capture_output=True,
                                           text=True).stdout.strip(), where))
    say("  fetching modules from the Go module proxy")
    subprocess.run([go, "mod", "download"], cwd=MODULE_DIR, env=env, check=True)
    listed = subprocess.run([go, "list", "-deps", "-tags", TAGS] + PACKAGES, cwd=MODULE_DIR,
                            env=env, check=True, capture_output=True, text=True).stdout
    total = len(listed.split())
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H:%M:%S")
    version = "github.com/prometheus/common/version"
    ldflags = " ".join("-X %s.%s=%s" % (version, name, value) for name, value in (
        ("Version", release), ("Revision", module), ("Branch", "module-" + module),
        ("BuildUser", "promread-install-deps"), ("BuildDate", date)))
    parent = os.path.dirname(where)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".building-", dir=parent)
    try:
        # -v names each package as it is compiled (cached ones are not):
        # counted against the packages there are, as progress
        proc = subprocess.Popen([go, "build", "-v", "-buildvcs=false",
                                 "-tags", TAGS, "-ldflags", ldflags, "-o", tmp + "/"] + PACKAGES,
                                cwd=MODULE_DIR, env=env, stderr=subprocess.PIPE, text=True)
        compiled, shown, output = 0, -1, []
        for line in proc.stderr:
            output.append(line)
            if re.fullmatch(r"[\w./~-]+\n", line):
                compiled += 1
                tenth = min(compiled * 10 // max(total, 1), 9)
                if tenth > shown:
                    shown = tenth
                    say("  compiling: %d of %d packages (%.0f s)"
                        % (compiled, total, time.monotonic() - started))
        if proc.wait() != 0:
            raise NotBuilt("go build of Prometheus %s failed:\n%s"
                           % (release, "".join(output[-40:])))
        os.chmod(tmp, 0o755)  # mkdtemp's 0700 would keep other users out
        try:
            os.rename(tmp, where)
        except OSError:
            if not os.path.isdir(where):  # not another build that finished first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    binaries()
    say("  built Prometheus %s in %.0f s: %s" % (release, time.monotonic() - started, where))
    return where


def main(argv):
    if argv not in (["build"], ["path"]):
        print("usage: scripts/lib/prometheus3.py build|path", file=sys.stderr)
        return 2
    try:
        print(build() if argv == ["build"] else os.path.dirname(binaries()[0]))
        return 0
    except (NotBuilt, subprocess.CalledProcessError) as e:
        print("prometheus3: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
