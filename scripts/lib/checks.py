"""What the programs in test/scripts share: reporting checks and connecting.

Each program prints one line per check, "ok SUITE/NAME" or "FAIL SUITE/NAME"
(test/suites counts them), and exits non-zero when one failed.  A check of
the test's own machinery rather than of promread (a decoder's known answer,
a stand-in's contract) is a guard: it prints "guard-ok" or "guard-FAIL", and
test/suites counts guards apart from the tests of promread.
Standard library and Debian's python3-psycopg2 only.
"""
import sys

import psycopg2


class Checks:
    """The checks of one suite and how many failed."""

    def __init__(self, suite):
        self.suite = suite
        self.failures = 0

    def report(self, name, ok, detail=""):
        """Print one check's result; its detail when it failed."""
        print(("ok " if ok else "FAIL ") + self.suite + "/" + name, flush=True)
        if not ok:
            self.failures += 1
            print("   " + str(detail)[:3000], flush=True)
        return ok

    def guard(self, name, ok, detail=""):
        """Print one guard's result: a check of the test itself."""
        print(("guard-ok " if ok else "guard-FAIL ") + self.suite + "/" + name,
              flush=True)
        if not ok:
            self.failures += 1
            print("   " + str(detail)[:3000], flush=True)
        return ok

    def exit(self):
        """End the program: status 1 when a check failed."""
        sys.exit(1 if self.failures else 0)


def connect(dbname=None, autocommit=True, **settings):
    """A connection to the cluster of the PG* variables."""
    conn = psycopg2.connect(dbname=dbname) if dbname else psycopg2.connect("")
    conn.autocommit = autocommit
    if settings:
        with conn.cursor() as cur:
            for name, value in settings.items():
                cur.execute("SELECT set_config(%s, %s, false)",
                            (name.replace("__", "."), str(value)))
    return conn


def sqlstate(error):
    """The SQLSTATE of a psycopg2 error, or a word for a lost connection."""
    if isinstance(error, psycopg2.OperationalError) and error.pgcode is None:
        return "lost-connection"
    return error.pgcode or "no-sqlstate"


def create_loopback_server(cur, name, dbname):
    """A postgres_fdw server NAME, listing promread, on this very server's
    database DBNAME, reached through its Unix socket as the current user
    (no password: pg_virtualenv asks one of TCP connections only)."""
    cur.execute("""SELECT split_part(current_setting('unix_socket_directories'), ',', 1),
                          current_setting('port')""")
    socket_dir, port = cur.fetchone()
    cur.execute(f"""CREATE SERVER {name} FOREIGN DATA WRAPPER postgres_fdw
                        OPTIONS (host %s, port %s, dbname %s, extensions 'promread');
                    CREATE USER MAPPING FOR CURRENT_USER SERVER {name}""",
                (socket_dir or "localhost", port, dbname))
