"""The remote-read and remote-write stack, started and stopped for the demo
and the tests.

demo/serve, test/scripts/e2e and test/scripts/e2e-write use this module to
run, on 127.0.0.1 and free high ports, what docs/deployment.md
describes:

    Prometheus --remote_read/remote_write--> nginx (deploy/nginx/promread.conf)
        --> PostgREST (here scripts/postgrest-standin, with
            deploy/postgrest/postgrest.conf)
        --> api.prom_remote_read, api.prom_remote_write

Prometheus is Debian's 2.42 unless a test passes another binary (Prometheus
3.x from scripts/lib/prometheus3.py).  Every server is a child process in its own process group, with its log in
the stack's directory; children die with this process (PR_SET_PDEATHSIG) and
Stack.stop() ends them (SIGTERM, then SIGKILL), so nothing outlives a demo
or a test.  Standard library only (Debian's /usr/bin/python3).
"""
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import standin
from ports import free_port

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(TOP, "deploy")
POSTGREST_CONF = os.path.join(DEPLOY, "postgrest", "postgrest.conf")
NGINX_CONF = os.path.join(DEPLOY, "nginx", "promread.conf")
API_SQL = os.path.join(DEPLOY, "postgrest", "api.sql")
MAKE_JWT = os.path.join(DEPLOY, "postgrest", "make-jwt")
PYTHON = "/usr/bin/python3"

_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent():
    _libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def make_jwt(*claims, secret=None, expires_in=None):
    """A token from deploy/postgrest/make-jwt (the jwt-secret of the
    deployment's postgrest.conf unless secret is given)."""
    argv = [PYTHON, MAKE_JWT, "--config", POSTGREST_CONF]
    if secret is not None:
        argv += ["--secret", secret]
    if expires_in is not None:
        argv += ["--expires-in", str(expires_in)]
    return subprocess.run(argv + list(claims), check=True, capture_output=True,
                          text=True).stdout.strip()


def authenticator_dsn(dbname, password):
    """libpq conninfo for PostgREST's db-uri, from the PG* variables; without
    TLS, as deploy/postgrest/postgrest.conf connects on the database's host."""
    parts = ["dbname=%s" % dbname, "user=authenticator", "password=%s" % password,
             "sslmode=disable"]
    for var, key in (("PGHOST", "host"), ("PGPORT", "port")):
        if os.environ.get(var):
            parts.append("%s=%s" % (key, os.environ[var]))
    return " ".join(parts)


def http(method, url, body=None, headers=None, timeout=60):
    """(status, headers, body) of one request; HTTP errors are answers too."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


# ---- comparing answers of the HTTP API -------------------------------------

def canonical(answer):
    """An API answer with the order of series made canonical."""
    if answer.get("status") != "success":
        return {"status": answer.get("status"), "errorType": answer.get("errorType"),
                "error": answer.get("error")}
    data = answer["data"]
    result = data["result"]
    if data["resultType"] in ("vector", "matrix"):
        result = sorted(result, key=lambda s: json.dumps(s["metric"], sort_keys=True))
    return {"status": "success", "resultType": data["resultType"], "result": result}


def difference(a, b):
    """Where two canonical answers first differ, shortly."""
    if a.get("status") != "success" or b.get("status") != "success" or \
            a["resultType"] != b["resultType"]:
        return "remote: %s\n     local:  %s" % (json.dumps(a)[:400], json.dumps(b)[:400])
    ra, rb = a["result"], b["result"]
    if a["resultType"] not in ("vector", "matrix"):
        return "remote: %s\n     local:  %s" % (ra, rb)
    ka = [json.dumps(s["metric"], sort_keys=True) for s in ra]
    kb = [json.dumps(s["metric"], sort_keys=True) for s in rb]
    if ka != kb:
        return "series only remote: %s\n     series only local: %s" % (
            sorted(set(ka) - set(kb))[:5], sorted(set(kb) - set(ka))[:5])
    for sa, sb in zip(ra, rb):
        if sa != sb:
            va = sa.get("values") or [sa.get("value")]
            vb = sb.get("values") or [sb.get("value")]
            diff = [(x, y) for x, y in zip(va, vb) if x != y][:3]
            return "series %s: %d vs %d points; first differences (remote, local): %s" % (
                ka[ra.index(sa)], len(va), len(vb), diff)
    return "?"


class StackError(Exception):
    pass


class Prometheus:
    def __init__(self, name, url, datadir):
        self.name, self.url, self.datadir = name, url, datadir

    def api(self, path, params):
        """The parsed JSON answer of the HTTP API (numbers kept as text)."""
        status, _, body = http("POST", self.url + path, urllib.parse.urlencode(params).encode(),
                               {"Content-Type": "application/x-www-form-urlencoded"})
        try:
            return json.loads(body, parse_float=str, parse_int=str)
        except ValueError:
            raise StackError("%s %s: HTTP %d %r" % (self.name, path, status, body[:300]))

    def query(self, expr, time_s):
        return self.api("/api/v1/query", {"query": expr, "time": time_s})

    def query_range(self, expr, start_s, end_s, step):
        return self.api("/api/v1/query_range",
                        {"query": expr, "start": start_s, "end": end_s, "step": step})

    def remote_read_counts(self):
        """Its remote reads so far by (response_type, code), from its own
        prometheus_remote_read_client_queries_total (Prometheus 2.55 and
        later; an earlier one has no such counter: {})."""
        status, _, body = http("GET", self.url + "/metrics")
        if status != 200:
            raise StackError("%s /metrics: HTTP %d" % (self.name, status))
        counts = {}
        for line in body.decode().splitlines():
            m = re.match(r"prometheus_remote_read_client_queries_total\{(.*)\} (\S+)$", line)
            if m:
                labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
                key = (labels.get("response_type"), labels.get("code"))
                counts[key] = counts.get(key, 0) + float(m.group(2))
        return counts

    def tsdb_status(self):
        status, _, body = http("GET", self.url + "/api/v1/status/tsdb")
        return json.loads(body)

    def metrics(self):
        """Its own metrics, from /metrics: {(name, ((label, value), ...)): value}."""
        status, _, body = http("GET", self.url + "/metrics")
        if status != 200:
            raise StackError("%s /metrics: HTTP %d" % (self.name, status))
        out = {}
        for line in body.decode().splitlines():
            m = re.match(r"([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$", line)
            if m:
                labels = tuple(sorted(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or "")))
                out[(m.group(1), labels)] = float(m.group(3))
        return out

    def stop_scraping(self, timeout=30):
        """End every scrape target and rule: empty its target files, then
        reload its configuration without rules (SIGHUP) and wait until the
        reload took.  It appends nothing from then on but the staleness
        markers that end the series it scraped and recorded, two scrape
        (and evaluation) intervals later, and after the discovery's
        update, within 5 s."""
        for path in self.target_files:
            with open(path + ".new", "w") as f:
                json.dump([], f)
            os.rename(path + ".new", path)  # never read half written
        reloaded = ("prometheus_config_last_reload_success_timestamp_seconds", ())
        before = self.metrics().get(reloaded)
        config = dict(self.config)
        config.pop("rule_files", None)
        with open(self.config_path, "w") as f:
            json.dump(config, f, indent=1)
        os.kill(self.proc.pid, signal.SIGHUP)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            now = self.metrics()
            if now.get(("prometheus_config_last_reload_successful", ())) == 1 and \
                    now.get(reloaded) != before:
                self.config = config
                return
            time.sleep(0.2)
        raise StackError("%s did not reload its configuration in %ds" % (self.name, timeout))


class Stack:
    """Servers started for a demo or a test, stopped together."""

    def __init__(self, workdir=None, log=None):
        self.dir = workdir or tempfile.mkdtemp(prefix="promread-stack-")
        os.chmod(self.dir, 0o755)  # nginx's workers (www-data under root) read below it
        self.procs = []  # (name, Popen, log path)
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))

    # -- processes --

    def spawn(self, name, argv, env=None):
        path = os.path.join(self.dir, name + ".log")
        out = open(path, "ab")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True, preexec_fn=_die_with_parent)
        out.close()
        self.procs.append((name, proc, path))
        return proc

    def wait_http(self, name, proc, url, timeout=60, ready=lambda status: True):
        """Wait until url answers (and ready(status)), or fail with the log."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise StackError("%s exited with status %s before it was ready:\n%s"
                                 % (name, proc.returncode, self.log_tail(name)))
            try:
                status, _, _ = http("GET", url, timeout=5)
                if ready(status):
                    return
                last = "HTTP %d" % status
            except OSError as e:
                last = str(e)
            time.sleep(0.1)
        raise StackError("%s not ready after %ds at %s (%s):\n%s"
                         % (name, timeout, url, last, self.log_tail(name)))

    def stop(self):
        """End every server, the last started first, each before the next
        (a Prometheus flushes its remote-write queue through the servers
        started before it)."""
        for name, proc, _ in reversed(self.procs):
            self._end(name, proc)
        self.procs = []

    def stop_one(self, name):
        """End the server called name, leaving the others running."""
        for entry in self.procs:
            if entry[0] == name:
                self._end(name, entry[1])
                self.procs.remove(entry)
                return

    def _end(self, name, proc):
        """SIGTERM to a server's process group, SIGKILL after 15 s."""
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.log("%s did not stop; killing it" % name)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left in its group
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def log_tail(self, name, lines=60):
        for n, _, path in self.procs:
            if n == name:
                try:
                    with open(path, errors="replace") as f:
                        return "".join(f.readlines()[-lines:])
                except OSError:
                    return ""
        return ""

    def dump_logs(self, out=sys.stdout, lines=80):
        for name, proc, path in self.procs:
            state = "running" if proc.poll() is None else "exited %s" % proc.returncode
            print("---- log of %s (%s), last %d lines: %s" % (name, state, lines, path), file=out)
            print(self.log_tail(name, lines), file=out)
        for name, extra in ((name, extra) for name, _, _ in self.procs
                            for extra in ("nginx-access.log", "nginx-error.log")):
            path = os.path.join(self.dir, name, extra)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    tail = f.readlines()[-lines:]
                print("---- %s/%s, last %d lines" % (name, extra, lines), file=out)
                print("".join(tail), file=out)
        out.flush()

    # -- the servers --

    def start_standin(self, db_uri, name="postgrest", port=None, env_extra=None):
        """scripts/postgrest-standin (built by scripts/lib/standin.py) with
        the deployment's postgrest.conf; db-uri and server-port overridden.
        Returns its port."""
        port = port or free_port()
        env = dict(os.environ, PGRST_DB_URI=db_uri, PGRST_SERVER_PORT=str(port),
                   PGRST_SERVER_HOST="127.0.0.1")
        env.update(env_extra or {})
        proc = self.spawn(name, [standin.binary(), POSTGREST_CONF], env=env)
        self.wait_http(name, proc, "http://127.0.0.1:%d/" % port, ready=lambda s: s == 200)
        return port

    def nginx_config(self, port, upstream_port, name="nginx"):
        """deploy/nginx/promread.conf with the test's ports, in an nginx.conf
        of its own (prefix, pid, logs and temp dirs under the stack's dir,
        in a directory called name)."""
        with open(NGINX_CONF) as f:
            site = f.read()
        site, n_listen = re.subn(r"(?m)^(\s*listen\s+)[^;]+;", r"\g<1>127.0.0.1:%d;" % port, site)
        site, n_server = re.subn(r"(upstream\s+promread_postgrest\s*\{[^}]*?\bserver\s+)[^;\s]+",
                                 r"\g<1>127.0.0.1:%d" % upstream_port, site)
        if n_listen != 1 or n_server != 1:
            raise StackError("%s: expected one listen and one upstream server line" % NGINX_CONF)
        prefix = os.path.join(self.dir, name)
        os.makedirs(prefix, exist_ok=True)
        os.chmod(prefix, 0o755)
        user = "user www-data;\n" if os.geteuid() == 0 else ""
        temps = "".join("\t%s_temp_path %s/%s;\n" % (kind, prefix, kind)
                        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        conf = ("# generated from %s\n%s"
                "daemon off;\nmaster_process on;\nworker_processes 2;\n"
                "pid %s/nginx.pid;\nerror_log %s/nginx-error.log notice;\n"
                "events { worker_connections 256; }\n"
                "http {\n\taccess_log %s/nginx-access.log;\n%s\n%s\n}\n"
                % (NGINX_CONF, user, prefix, prefix, prefix, temps, site))
        path = os.path.join(prefix, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        return prefix, path

    def start_nginx(self, upstream_port, port=None, name="nginx"):
        """nginx serving deploy/nginx/promread.conf (name: of its process
        and directory, when a stack has several).  Returns its port."""
        port = port or free_port()
        prefix, conf = self.nginx_config(port, upstream_port, name)
        check = subprocess.run(["nginx", "-t", "-p", prefix, "-c", conf, "-e",
                                os.path.join(prefix, "nginx-error.log")],
                               capture_output=True, text=True)
        if check.returncode != 0:
            raise StackError("nginx -t failed:\n%s%s" % (check.stdout, check.stderr))
        proc = self.spawn(name, ["nginx", "-p", prefix, "-c", conf, "-e",
                                 os.path.join(prefix, "nginx-error.log")])
        self.wait_http(name, proc, "http://127.0.0.1:%d/" % port, ready=lambda s: s == 404)
        return port

    def start_prometheus(self, name, remote_reads=(), datadir=None, port=None, wait=True,
                         remote_writes=(), scrape_self=False, binary="prometheus",
                         native_histograms=False, scrape_configs=(), rules=(), flags=()):
        """Prometheus reading remotely from each of remote_reads and writing
        to each of remote_writes: dicts with url, and token (a bearer token)
        or None; a remote write may also say version "2.0" (remote write
        2.0, Prometheus 3 only), histograms (send native histograms) and
        exemplars (send exemplars; needs the flag
        --enable-feature=exemplar-storage).
        It scrapes nothing, or itself every second (scrape_self), and every
        job of scrape_configs (scrape_config dicts as Prometheus's
        configuration has them, with "targets", a list of host:port, in
        place of service discovery); native_histograms scrapes native
        histograms, classic ones beside them (Prometheus 3 only).  rules
        are recording rules, (record, expr) evaluated every second.  Its
        TSDB is datadir (by default a new, empty one).  binary is Debian's
        Prometheus 2.42 by default, or the path of another
        (prometheus3.binaries()[0]); the configuration suits both unless a
        Prometheus 3 option is asked for.  flags: more command-line flags
        (--web.enable-remote-write-receiver).  stop_scraping() ends
        scraping and rules."""
        port = port or free_port()
        home = os.path.join(self.dir, name)
        os.makedirs(home, exist_ok=True)
        datadir = datadir or os.path.join(home, "data")
        config = {"global": {"scrape_interval": "15s", "evaluation_interval": "15s"},
                  "remote_read": [], "remote_write": []}
        if native_histograms:
            config["global"].update(scrape_native_histograms=True,
                                    always_scrape_classic_histograms=True)
        for i, rr in enumerate(remote_reads):
            entry = {"name": "promread-%d" % i, "url": rr["url"], "read_recent": True,
                     "remote_timeout": "30s"}
            if rr.get("token"):
                entry["authorization"] = {"type": "Bearer", "credentials": rr["token"]}
            config["remote_read"].append(entry)
        for i, rw in enumerate(remote_writes):
            entry = {"name": rw.get("name", "promread-write-%d" % i), "url": rw["url"],
                     "remote_timeout": "30s",
                     "queue_config": {"batch_send_deadline": "1s", "min_backoff": "100ms",
                                      "max_backoff": "1s"},
                     "metadata_config": {"send": True, "send_interval": "2s"}}
            if rw.get("token"):
                entry["authorization"] = {"type": "Bearer", "credentials": rw["token"]}
            if rw.get("version") == "2.0":
                entry["protobuf_message"] = "io.prometheus.write.v2.Request"
            if rw.get("histograms"):
                entry["send_native_histograms"] = True
            if rw.get("exemplars"):
                entry["send_exemplars"] = True
            config["remote_write"].append(entry)
        # targets in files (file discovery), which stop_scraping empties
        jobs = list(scrape_configs)
        if scrape_self:
            jobs.insert(0, {"job_name": "self", "scrape_interval": "1s",
                            "targets": ["127.0.0.1:%d" % port]})
        config["scrape_configs"], target_files = [], []
        for job in jobs:
            path = os.path.join(home, "targets-%s.json" % job["job_name"])
            with open(path, "w") as f:
                json.dump([{"targets": job["targets"]}], f)
            target_files.append(path)
            config["scrape_configs"].append(dict(
                {k: v for k, v in job.items() if k != "targets"},
                file_sd_configs=[{"files": [path], "refresh_interval": "1s"}]))
        if rules:
            rules_path = os.path.join(home, "rules.yml")
            with open(rules_path, "w") as f:
                json.dump({"groups": [{"name": "recorded", "interval": "1s", "rules": [
                    {"record": record, "expr": expr} for record, expr in rules]}]}, f, indent=1)
            config["rule_files"] = [rules_path]
        config_path = os.path.join(home, "prometheus.yml")
        with open(config_path, "w") as f:
            json.dump(config, f, indent=1)  # JSON is YAML
        argv = [binary, "--config.file=" + config_path, "--storage.tsdb.path=" + datadir,
                "--web.listen-address=127.0.0.1:%d" % port, "--log.level=info"] + list(flags)
        proc = self.spawn(name, argv)
        prom = Prometheus(name, "http://127.0.0.1:%d" % port, datadir)
        prom.proc, prom.config, prom.config_path = proc, config, config_path
        prom.target_files = target_files
        if wait:
            self.wait_prometheus(prom)
        return prom

    def wait_prometheus(self, prom):
        self.wait_http(prom.name, prom.proc, prom.url + "/-/ready", ready=lambda s: s == 200)
