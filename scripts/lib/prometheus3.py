"""Prometheus 3.x, built once per machine from the Go module pinned in
scripts/prometheus3 (go.mod and go.sum) and kept in a cache:

    ${XDG_CACHE_HOME:-$HOME/.cache}/promread/prometheus-3.NN.P-KEY/{prometheus,promtool}

KEY is a hash of go.mod, go.sum and the build's recipe (scripts/lib/gobuild.py
keeps the cache).  The build is `go build -tags remove_all_sd` of
cmd/prometheus and cmd/promtool (the tag keeps file, static and http
discovery only), with the version set as Prometheus's own release builds
set it, so `prometheus --version` names it.

    scripts/lib/prometheus3.py build   # build unless cached (progress on stderr); print the directory
    scripts/lib/prometheus3.py path    # print the directory, or fail if it is not built

scripts/install-deps runs `build`; test programs and the demo take the
binaries from binaries().  Standard library only.
"""
import datetime
import os
import re
import subprocess
import sys
import time

import gobuild

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE_DIR = os.path.join(TOP, "scripts", "prometheus3")
PACKAGES = ["github.com/prometheus/prometheus/cmd/prometheus",
            "github.com/prometheus/prometheus/cmd/promtool"]
TAGS = "remove_all_sd"
# What the key covers besides go.mod and go.sum: change it with the build.
RECIPE = "go build -buildvcs=false -tags %s; version ldflags v1" % TAGS


NotBuilt = gobuild.NotBuilt


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
    return gobuild.directory("prometheus-%s" % module_version()[1], MODULE_DIR, RECIPE,
                             ["go.mod", "go.sum"])


def binaries():
    """(prometheus, promtool) of the pinned build; NotBuilt if it is not."""
    return gobuild.binaries(directory(), ["prometheus", "promtool"],
                            "Prometheus %s: run scripts/install-deps" % module_version()[1])


def build():
    """Build the pinned Prometheus unless it is cached; its directory."""
    where = directory()
    if os.path.isdir(where):
        return where
    module, release = module_version()
    started = time.monotonic()
    gobuild.say("building Prometheus %s (module %s) with %s: the first time on this machine, "
                "about 10 minutes on a cold Go cache; later runs reuse %s"
                % (release, module, gobuild.go_version(), where))
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H:%M:%S")
    version = "github.com/prometheus/common/version"
    ldflags = " ".join("-X %s.%s=%s" % (version, name, value) for name, value in (
        ("Version", release), ("Revision", module), ("Branch", "module-" + module),
        ("BuildUser", "promread-install-deps"), ("BuildDate", date)))
    gobuild.build(where, MODULE_DIR, PACKAGES, ["-tags", TAGS, "-ldflags", ldflags],
                  "Prometheus %s" % release)
    binaries()
    gobuild.say("  built Prometheus %s in %.0f s: %s"
                % (release, time.monotonic() - started, where))
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
