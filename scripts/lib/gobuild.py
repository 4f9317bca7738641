"""Go programs built once per machine from a module of this repository (a
go.mod and go.sum pinning what they need) and kept in a cache:

    ${XDG_CACHE_HOME:-$HOME/.cache}/promread/NAME-KEY/

KEY is a hash of the build's recipe and the module's files (go.mod, go.sum
and, for a program of this repository, its sources), so a new pin, a
changed source or a new recipe builds anew and an old build is never taken for it.  A build goes to a temporary
directory renamed into place, so a build cut short leaves nothing, and two
at once both end with one whole build.  scripts/lib/prometheus3.py and
scripts/lib/standin.py build with it.  Standard library only.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


class NotBuilt(Exception):
    pass


def say(message):
    print(message, file=sys.stderr, flush=True)


def directory(name, module_dir, recipe, files):
    """The cache directory of a build (which may not exist yet): its key
    hashes the recipe and the files of module_dir named, in that order."""
    key = hashlib.sha256(recipe.encode())
    for entry in files:
        with open(os.path.join(module_dir, entry), "rb") as f:
            key.update(f.read())
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "promread", "%s-%s" % (name, key.hexdigest()[:12]))


def binaries(where, names, hint):
    """The paths of the programs built in where; NotBuilt (saying hint) if
    any is missing."""
    paths = tuple(os.path.join(where, n) for n in names)
    if not all(os.access(p, os.X_OK) for p in paths):
        raise NotBuilt("%s is not built in %s: %s" % (", ".join(names), where, hint))
    return paths


def go_command():
    """The go command: on PATH, or where Go's own archive installs it."""
    found = shutil.which("go") or next(
        (p for p in ("/usr/local/go/bin/go",) if os.access(p, os.X_OK)), None)
    if not found:
        raise NotBuilt("building needs Go (go.mod says which version); "
                       "no go command on PATH or in /usr/local/go/bin")
    return found


def go_version():
    return subprocess.run([go_command(), "version"], capture_output=True,
                          text=True).stdout.strip()


def build(where, module_dir, packages, flags, label, progress=True):
    """`go build` of packages (with flags) from module_dir into where,
    unless it is there.  With progress, says each tenth of the packages
    compiled."""
    if os.path.isdir(where):
        return where
    go = go_command()
    env = dict(os.environ, GOFLAGS="-mod=readonly")
    started = time.monotonic()
    if progress:
        say("  fetching modules from the Go module proxy")
    subprocess.run([go, "mod", "download"], cwd=module_dir, env=env, check=True)
    listed = subprocess.run([go, "list", "-deps"] + flags + packages, cwd=module_dir, env=env,
                            check=True, capture_output=True, text=True).stdout
    total = len(listed.split())
    parent = os.path.dirname(where)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".building-", dir=parent)
    try:
        # -v names each package as it is compiled (cached ones are not):
        # counted against the packages there are, as progress
        proc = subprocess.Popen([go, "build", "-v", "-buildvcs=false"] + flags +
                                ["-o", tmp + "/"] + packages,
                                cwd=module_dir, env=env, stderr=subprocess.PIPE, text=True)
        compiled, shown, output = 0, -1, []
        for line in proc.stderr:
            output.append(line)
            if re.fullmatch(r"[\w./~-]+\n", line):
                compiled += 1
                tenth = min(compiled * 10 // max(total, 1), 9)
                if progress and tenth > shown:
                    shown = tenth
                    say("  compiling: %d of %d packages (%.0f s)"
                        % (compiled, total, time.monotonic() - started))
        if proc.wait() != 0:
            raise NotBuilt("go build of %s failed:\n%s" % (label, "".join(output[-40:])))
        os.chmod(tmp, 0o755)  # mkdtemp's 0700 would keep other users out
        try:
            os.rename(tmp, where)
        except OSError:
            if not os.path.isdir(where):  # not another build that finished first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return where
