"""Throwaway PostgreSQL 15 clusters on loopback, for the scale-out test and
bench: initdb, start on a Unix socket in a directory of their own, stop.
Run as the postgres user when started as root."""
import os
import pwd
import subprocess
import tempfile

import psycopg2

BIN = "/usr/lib/postgresql/15/bin"


def as_postgres():
    """A preexec_fn that drops to the postgres user when running as root."""
    if os.geteuid() != 0:
        return None
    user = pwd.getpwnam("postgres")

    def drop():
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)
    return drop


def run(argv):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                   preexec_fn=as_postgres())


class Cluster:
    """A cluster of its own, on a Unix socket in the test's directory."""

    def __init__(self, root, name, port):
        self.root, self.name, self.port = root, name, port
        self.datadir = os.path.join(root, name)
        self.log = os.path.join(root, name + ".log")

    def initdb(self):
        run([BIN + "/initdb", "-D", self.datadir, "-E", "UTF8", "--locale=C.UTF-8",
             "-A", "trust", "-U", "postgres"])

    def start(self, *settings):
        options = "-p %d -k %s -c listen_addresses='' %s" % (
            self.port, self.root, " ".join("-c " + s for s in settings))
        run([BIN + "/pg_ctl", "-D", self.datadir, "-o", options, "-l", self.log, "-w", "start"])

    def stop(self):
        subprocess.run([BIN + "/pg_ctl", "-D", self.datadir, "-m", "immediate", "-w", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       preexec_fn=as_postgres())

    def connect(self, dbname="postgres"):
        conn = psycopg2.connect(host=self.root, port=self.port, user="postgres", dbname=dbname)
        conn.autocommit = True
        return conn

    def log_size(self):
        return os.path.getsize(self.log)

    def log_since(self, offset):
        with open(self.log, errors="replace") as f:
            f.seek(offset)
            return f.read()


def make_root(prefix):
    """A directory for clusters and their sockets, owned by postgres when
    running as root."""
    root = tempfile.mkdtemp(prefix=prefix)
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(root, user.pw_uid, user.pw_gid)
    os.chmod(root, 0o755)
    return root
