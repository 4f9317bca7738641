#!/usr/bin/python3
"""promread benchmark: rows to series against the scan floor and plain SQL.

Run through bench/run, which starts a throwaway cluster (PG* variables set).
For each case (label encoding x row ordering x size) it measures, in one
session, repetitions after a warm-up (five times as many for the cases of
10,000 rows, whose calls take a millisecond or two), and reports medians;
the repetitions are interleaved, method by method and, within a size, case
by case:

  read    prom_remote_read of a request selecting the whole case
          (decode, scan, group, encode, snappy)
  chunks  the same with STREAMED_XOR_CHUNKS, when promread serves it
  series  prom_series over the same rows
  agg     prom_read_response_agg over the same rows
  floor   SELECT count(host), count(datacenter), count(env), count(job),
          count(ts), count(value): reading and deforming the rows, nothing else
  sql     the SQL a user would write instead: jsonb_build_object and
          array_agg(... ORDER BY ts) grouped by the labels, consumed by count(s)

and the phase report of promread.report_phases for read, taken once per
repetition, each phase's median (conversion throughput = rows / (group + sort
+ encode), and by the whole call = rows / (read - floor - compress)).  The
report's call comes right after the timed read, and a call of read that is
not timed right after the SQL alternative: that one's gigabyte of work_mem
leaves the C library handing memory back to the system when it is freed, so
that the next call faults the pages of its output in again (on a virtual
machine, 2,000 faults made compress of 1000x1000 take 42 ms instead of 20),
a cost of the query before it, not of the call.  Prints a Markdown report.
"""
import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import psycopg2

FULL_SIZES = [(10, 1000), (100, 100), (1000, 100), (5000, 20), (1000, 1000), (300000, 10)]
SMOKE_SIZES = [(10, 50), (200, 5)]
# cases of fewer rows than SHORT_ROWS get SHORT_REPS_FACTOR times the repetitions
SHORT_ROWS = 100000
SHORT_REPS_FACTOR = 5
ENCODINGS = ["text", "enum"]
ORDERINGS = ["adjacent", "interleaved"]
START = "2024-01-01 00:00:00+00"
DATACENTERS = ["eu-west", "eu-central", "us-east", "us-west", "ap-south"]
ENVS = ["prod", "staging", "dev"]
JOBS = ["api", "db", "cache", "batch"]


def table_name(encoding, ordering, nseries, nsamples):
    return "bench_%s_%s_%dx%d" % (encoding, ordering, nseries, nsamples)


def create_case(cur, encoding, ordering, nseries, nsamples):
    """Create, fill and register one case's table; returns its name."""
    name = table_name(encoding, ordering, nseries, nsamples)
    cur.execute("SELECT to_regclass(%s) IS NOT NULL", (name,))
    if cur.fetchone()[0]:
        return name
    if encoding == "text":
        types = {"host": "text", "datacenter": "text", "env": "text", "job": "text"}
        host = "'host-' || lpad(s::text, 6, '0')"
        pick = "(ARRAY[%s])[1 + s %% %d]"
        dc = pick % (",".join("'%s'" % v for v in DATACENTERS), len(DATACENTERS))
        env = pick % (",".join("'%s'" % v for v in ENVS), len(ENVS))
        job = pick % (",".join("'%s'" % v for v in JOBS), len(JOBS))
    else:
        types = {}
        for label, values in [("host", ["host-%06d" % s for s in range(nseries)]),
                              ("datacenter", DATACENTERS), ("env", ENVS), ("job", JOBS)]:
            tname = "%s_%s" % (name, label)
            cur.execute("CREATE TYPE %s AS ENUM (%s)" % (tname, ",".join("'%s'" % v for v in values)))
            types[label] = tname
        host = "h.label"
        dc = "(enum_range(NULL::%s))[1 + s %% %d]" % (types["datacenter"], len(DATACENTERS))
        env = "(enum_range(NULL::%s))[1 + s %% %d]" % (types["env"], len(ENVS))
        job = "(enum_range(NULL::%s))[1 + s %% %d]" % (types["job"], len(JOBS))
    cur.execute("""CREATE TABLE %s (ts timestamptz NOT NULL, host %s, datacenter %s,
                   env %s, job %s, value double precision)"""
                % (name, types["host"], types["datacenter"], types["env"], types["job"]))
    # the rows of a series together; the series in turn at each time; or
    # the rows of each time in a random order (bench/phases.py only)
    order = {"adjacent": "s, k", "interleaved": "k, s",
             "shuffled": "k, random()"}[ordering]
    host_join = ""
    if encoding == "enum":
        # one enum label per series, numbered in the enum's order
        host_join = ("JOIN (SELECT row_number() OVER () - 1 AS n, e AS label "
                     "FROM unnest(enum_range(NULL::%s)) e) h ON h.n = s" % types["host"])
    # a table as users read them: vacuumed, every page all-visible, so that
    # scans check no tuple's visibility.  VACUUM marks a page so only once
    # the inserting commit is flushed (hint bits wait for it), which the
    # cluster's synchronous_commit=off would put off
    cur.execute("SET synchronous_commit = on")
    cur.execute("""INSERT INTO %s
        SELECT %s::timestamptz + k * interval '15 seconds', %s, %s, %s, %s,
               s * 1000 + k + 0.25
        FROM generate_series(0, %d) s CROSS JOIN generate_series(0, %d) k %s
        ORDER BY %s""" % (name, "'" + START + "'", host, dc, env, job,
                           nseries - 1, nsamples - 1, host_join, order))
    cur.execute("VACUUM ANALYZE %s" % name)
    cur.execute("RESET synchronous_commit")
    cur.execute("SELECT relallvisible, relpages FROM pg_class WHERE oid = %s::regclass",
                (name,))
    visible, pages = cur.fetchone()
    if visible < pages:
        raise RuntimeError("%s: %d of %d pages all-visible after VACUUM" % (name, visible, pages))
    cur.execute("SELECT prom_register(%s)", (name,))
    return name


class Case:
    def __init__(self, cur, encoding, ordering, nseries, nsamples):
        self.encoding, self.ordering = encoding, ordering
        self.nseries, self.nsamples = nseries, nsamples
        self.rows = nseries * nsamples
        self.name = create_case(cur, encoding, ordering, nseries, nsamples)
        end = "2024-01-02 00:00:00+00"
        cur.execute("SELECT prom_read_request(%s, %s, %s)", (self.name, START, end))
        self.request = cur.fetchone()[0]
        cur.execute("SELECT prom_read_request(%s, %s, %s, '{streamed_xor_chunks}')",
                    (self.name, START, end))
        self.chunk_request = cur.fetchone()[0]
        labels = "'__name__', '%s', 'host', host, 'datacenter', datacenter, 'env', env, 'job', job" % self.name
        self.statements = {
            "read": ("SELECT length(prom_remote_read(%s))", (self.request,)),
            "chunks": ("SELECT length(prom_remote_read(%s))", (self.chunk_request,)),
            "series": ("SELECT sum(cardinality(ts)) FROM prom_series(%s, %s, %s)",
                       (self.name, START, end)),
            "agg": ("SELECT length(prom_read_response_agg(ts, value, %s)) FROM %s" % (labels, self.name), None),
            "floor": ("SELECT count(host), count(datacenter), count(env), count(job), "
                      "count(ts), count(value) FROM %s" % self.name, None),
            "sql": ("SELECT count(s) FROM (SELECT jsonb_build_object('__name__', '%s', "
                    "'host', host, 'datacenter', datacenter, 'env', env, 'job', job), "
                    "array_agg(ts ORDER BY ts), array_agg(value ORDER BY ts) FROM %s "
                    "GROUP BY host, datacenter, env, job) s" % (self.name, self.name), None),
        }


def timed(cur, statement):
    sql, args = statement
    t0 = time.perf_counter()
    cur.execute(sql, args)
    cur.fetchall()
    return time.perf_counter() - t0


def phases(conn, cur, statement):
    """The phase report of one call, as a dict."""
    del conn.notices[:]
    cur.execute("SET promread.report_phases = on")
    cur.execute(*statement)
    cur.fetchall()
    cur.execute("SET promread.report_phases = off")
    for notice in conn.notices:
        if "promread phases" in notice:
            return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", notice)}
    return None


def fmt_ms(seconds):
    return "%.1f" % (seconds * 1000) if seconds >= 0.01 else "%.2f" % (seconds * 1000)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true", help="seconds-long run for CI")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--sizes", help="only these sizes, e.g. 1000x1000,300000x10")
    args = parser.parse_args()
    sizes = SMOKE_SIZES if args.smoke else FULL_SIZES
    if args.sizes:
        sizes = [tuple(int(n) for n in size.split("x")) for size in args.sizes.split(",")]
    reps = args.reps or (3 if args.smoke else 7)
    # a call on 10,000 rows takes a millisecond or two, within which the
    # machine's noise is a tenth: such cases get more repetitions
    short_reps = reps if args.smoke else reps * SHORT_REPS_FACTOR

    conn = psycopg2.connect("")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("CREATE EXTENSION IF NOT EXISTS promread")
    cur.execute("SET max_parallel_workers_per_gather = 0")
    cur.execute("SET jit = off")
    cur.execute("SET work_mem = '1GB'")
    cur.execute("SELECT version(), current_setting('shared_buffers')")
    version, shared_buffers = cur.fetchone()
    chunks_served = True
    try:
        cur.execute("SELECT prom_remote_read(prom_read_request('x', now(), now(), '{streamed_xor_chunks}'))")
    except psycopg2.Error:
        chunks_served = False
    methods = ["read"] + (["chunks"] if chunks_served else []) + ["series", "agg", "floor", "sql"]

    print("# promread benchmark%s\n" % (" (smoke)" if args.smoke else ""))
    print("- command: `%s`" % " ".join(["bench/run"] + sys.argv[1:]))
    print("- machine: %s, %d cores, %s; %s" % (platform.machine(), os.cpu_count(),
          _cpu_model(), _memory()))
    print("- server: %s; shared_buffers %s; parallel workers off; jit off" % (version.split(" on ")[0], shared_buffers))
    short = (" (%d for cases of fewer than %d rows)" % (short_reps, SHORT_ROWS)
             if short_reps != reps else "")
    print("- %d timed repetitions per case%s after one warm-up, interleaved method by method and case by case within a size; medians\n"
          % (reps, short))

    results = {}
    for nseries, nsamples in sizes:
        # the four cases of a size are measured turn by turn, so that the
        # ratios between them (enum/text, interleaved/adjacent) compare calls
        # made under the same conditions of a machine whose speed drifts
        cases = [Case(cur, encoding, ordering, nseries, nsamples)
                 for encoding in ENCODINGS for ordering in ORDERINGS]
        for case in cases:
            for method in methods:  # warm-up: caches, shared buffers, plans
                timed(cur, case.statements[method])
        times = {case.name: {m: [] for m in methods} for case in cases}
        reports = {case.name: [] for case in cases}
        for _ in range(short_reps if nseries * nsamples < SHORT_ROWS else reps):
            for case in cases:
                for method in methods:
                    times[case.name][method].append(timed(cur, case.statements[method]))
                    if method == "read":
                        reports[case.name].append(phases(conn, cur, case.statements["read"]))
                # not timed: the next case's first call is not the one to
                # fault in what the SQL alternative gave back (see above)
                timed(cur, case.statements["read"])
        for case in cases:
            med = {m: statistics.median(v) for m, v in times[case.name].items()}
            runs = reports[case.name]
            report = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            chunk_report = phases(conn, cur, case.statements["chunks"]) if chunks_served else None
            results[(case.encoding, case.ordering, nseries, nsamples)] = (case, med, report, chunk_report)
            print("measured %s" % case.name, file=sys.stderr)

    print("## Times (ms, medians) and ratios\n")
    header = ["case", "rows"] + ["%s ms" % m for m in methods] + \
        ["read/floor", "series/floor", "sql/series", "read Mrows/s"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for key, (case, med, report, _) in results.items():
        row = ["%s %s %dx%d" % (key[0], key[1], key[2], key[3]), "%d" % case.rows]
        row += [fmt_ms(med[m]) for m in methods]
        row += ["%.2f" % (med["read"] / med["floor"]), "%.2f" % (med["series"] / med["floor"]),
                "%.1f" % (med["sql"] / med["series"]), "%.1f" % (case.rows / med["read"] / 1e6)]
        print("| " + " | ".join(row) + " |")

    print("\n## Encodings and orderings (read time ratios)\n")
    print("| size | enum/text adjacent | enum/text interleaved | interleaved/adjacent text | interleaved/adjacent enum |")
    print("|---|---|---|---|---|")
    for nseries, nsamples in sizes:
        def r(e, o):
            return results[(e, o, nseries, nsamples)][1]["read"]
        print("| %dx%d | %.2f | %.2f | %.2f | %.2f |" % (
            nseries, nsamples, r("enum", "adjacent") / r("text", "adjacent"),
            r("enum", "interleaved") / r("text", "interleaved"),
            r("text", "interleaved") / r("text", "adjacent"),
            r("enum", "interleaved") / r("enum", "adjacent")))

    print("\n## Phases of prom_remote_read (promread.report_phases, medians of the repetitions)\n")
    print("conversion: rows / (group + sort + encode), the phases' own times; by the call:")
    print("rows / (read - floor - compress), all a call takes beyond reading the rows and")
    print("compressing, the cache misses that grouping leaves to the executor included\n")
    print("| case | decode | plan | scan | group | sort | encode | compress | conversion Mrows/s | by the call Mrows/s | series | bytes | compressed | peak memory | memory/sample beyond the response |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key, (case, med, report, chunk_report) in results.items():
        if not report:
            continue
        conv = report["group"] + report["sort"] + report["encode"]
        call = (med["read"] - med["floor"]) * 1000 - report["compress"]
        beyond = (report["memory"] - report["compressed"]) / max(report["samples"], 1)
        print("| %s %s %dx%d | %s | %s | %s | %s | %s | %s | %s | %.1f | %.1f | %d | %d | %d | %d | %.1f |" % (
            key[0], key[1], key[2], key[3],
            *["%.2f" % report[p] for p in ["decode", "plan", "scan", "group", "sort", "encode", "compress"]],
            report["rows"] / conv / 1000 if conv > 0 else 0,
            report["rows"] / call / 1000 if call > 0 else 0, report["series"], report["bytes"],
            report["compressed"], report["memory"], beyond))

    if chunks_served:
        print("\n## STREAMED_XOR_CHUNKS against SAMPLES\n")
        print("| case | chunks ms | read ms | chunks/floor | chunk bytes | bytes/sample | samples bytes (snappy) |")
        print("|---|---|---|---|---|---|---|")
        for key, (case, med, report, chunk_report) in results.items():
            print("| %s %s %dx%d | %s | %s | %.2f | %d | %.2f | %d |" % (
                key[0], key[1], key[2], key[3], fmt_ms(med["chunks"]), fmt_ms(med["read"]),
                med["chunks"] / med["floor"], chunk_report["bytes"] if chunk_report else 0,
                (chunk_report["bytes"] if chunk_report else 0) / case.rows,
                report["compressed"] if report else 0))

    # concurrency: 4 clients against 1, with pgbench
    size = min(sizes, key=lambda size: abs(size[0] * size[1] - 100000))
    case = results[("text", "adjacent") + size][0]
    script = "/tmp/promread-bench-%d.sql" % os.getpid()
    with open(script, "w") as f:
        f.write("SELECT length(prom_remote_read(prom_read_request('%s', '%s', "
                "'2024-01-02 00:00:00+00')));\n" % (case.name, START))
    seconds = 3 if args.smoke else 15
    tps = {}
    for clients in (1, 4):
        out = subprocess.run(["pgbench", "-n", "-f", script, "-c", str(clients), "-j", str(clients),
                              "-T", str(seconds)], capture_output=True, text=True).stdout
        match = re.search(r"tps = ([0-9.]+)", out)
        tps[clients] = float(match.group(1)) if match else 0.0
    os.unlink(script)
    print("\n## Concurrency (pgbench, prom_remote_read of %s, %d s each)\n" % (case.name, seconds))
    print("| clients | requests/s | rows/s |")
    print("|---|---|---|")
    for clients, rate in tps.items():
        print("| %d | %.1f | %.0f |" % (clients, rate, rate * case.rows))
    print("\n4 clients / 1 client: %.2f (%d cores)" % (tps[4] / tps[1] if tps[1] else 0, os.cpu_count()))

    # memory across many calls in one session
    calls = 1000 if args.smoke else 10000
    smallest = min(sizes, key=lambda size: size[0] * size[1])
    small = results[("text", "interleaved") + smallest][0]
    usage = []
    for _ in range(2):
        for _ in range(calls // 2):
            cur.execute("SELECT length(prom_remote_read(%s))", (small.request,))
            cur.fetchall()
        cur.execute("SELECT sum(total_bytes) FROM pg_backend_memory_contexts")
        contexts = cur.fetchone()[0]
        cur.execute("SELECT pg_backend_pid()")
        with open("/proc/%d/status" % cur.fetchone()[0]) as f:
            rss = [int(line.split()[1]) for line in f if line.startswith("VmRSS")][0]
        usage.append((contexts, rss))
    print("\n## Memory across %d calls of prom_remote_read in one session (%s)\n" % (calls, small.name))
    print("| after | memory contexts (bytes) | backend RSS (kB) |")
    print("|---|---|---|")
    print("| %d calls | %d | %d |" % (calls // 2, usage[0][0], usage[0][1]))
    print("| %d calls | %d | %d |" % (calls, usage[1][0], usage[1][1]))
    conn.close()


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _memory():
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
        return "%.0f GiB RAM" % (kb / 2**20)
    except (OSError, ValueError):
        return "unknown RAM"


if __name__ == "__main__":
    main()
