"""The PostgREST stand-in (scripts/postgrest-standin, a Go program), built
once per machine into a cache by scripts/lib/gobuild.py:

    ${XDG_CACHE_HOME:-$HOME/.cache}/promread/postgrest-standin-KEY/postgrest-standin

KEY hashes its go.mod, go.sum and sources, so a changed stand-in builds
anew.  The first build fetches its one dependency (pgx) from the Go module
proxy; later ones reuse the cache.

    scripts/lib/standin.py build   # build unless cached; print the program's path

scripts/install-deps runs `build`; scripts/lib/promstack.py starts the
program from binary(), which builds it when it is missing.  Standard
library only.
"""
import glob
import os
import subprocess
import sys

import gobuild

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE_DIR = os.path.join(TOP, "scripts", "postgrest-standin")
NAME = "postgrest-standin"
# What the key covers besides the module's files: change it with the build.
RECIPE = "go build -buildvcs=false; v1"


def directory():
    """The cache directory of this stand-in's build (which may not exist yet)."""
    sources = sorted(os.path.basename(p) for p in glob.glob(os.path.join(MODULE_DIR, "*.go")))
    return gobuild.directory(NAME, MODULE_DIR, RECIPE, ["go.mod", "go.sum"] + sources)


def binary():
    """The stand-in's program, built first if it is not cached."""
    where = directory()
    if not os.path.isdir(where):
        gobuild.say("building the PostgREST stand-in (%s) into %s" % (gobuild.go_version(), where))
        gobuild.build(where, MODULE_DIR, ["."], [], "the PostgREST stand-in", progress=False)
    return gobuild.binaries(where, [NAME], "scripts/lib/standin.py build")[0]


def main(argv):
    if argv != ["build"]:
        print("usage: scripts/lib/standin.py build", file=sys.stderr)
        return 2
    try:
        print(binary())
        return 0
    except (gobuild.NotBuilt, subprocess.CalledProcessError) as e:
        print("standin: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
