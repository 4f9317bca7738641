#!/usr/bin/python3
"""Phase medians of prom_remote_read, calls back to back, for A/B comparisons.

Runs against the cluster of the PG* variables (libpq defaults), which holds
promread and the bench tables (made here with bench.create_case when
missing).  For each case given as ENCODING:ORDERING:SERIESxSAMPLES, e.g.
text:adjacent:1000x1000 (the orderings of bench/run, adjacent and
interleaved, and shuffled: the rows of each time in a random order), it
makes one warm-up call and then N calls of prom_remote_read with
promread.report_phases on, one after the other (so
promread's working memory stays in the CPU caches, unlike in bench/run),
and prints each phase's median, the conversion throughput and the peak
working memory per sample beyond the response.  To compare
two builds, install each in turn and run this with the same arguments.

    bench/phases.py [-n N] CASE...
"""
import argparse
import statistics

import psycopg2

import bench


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=7, help="calls per case (default 7)")
    parser.add_argument("cases", nargs="+", metavar="CASE")
    args = parser.parse_args()

    conn = psycopg2.connect("")
    conn.autocommit = True
    cur = conn.cursor()
    names = ["scan", "group", "sort", "encode", "compress"]
    print("| case | " + " | ".join(names) + " | conversion Mrows/s | memory/sample beyond the response |")
    print("|---|" + "---|" * (len(names) + 2))
    for spec in args.cases:
        encoding, ordering, size = spec.split(":")
        nseries, nsamples = (int(x) for x in size.split("x"))
        case = bench.Case(cur, encoding, ordering, nseries, nsamples)
        bench.timed(cur, case.statements["read"])
        reports = [bench.phases(conn, cur, case.statements["read"]) for _ in range(args.n)]
        med = {k: statistics.median(r[k] for r in reports) for k in reports[0]}
        conversion = med["group"] + med["sort"] + med["encode"]
        beyond = (med["memory"] - med["compressed"]) / max(med["samples"], 1)
        print("| %s %s %s | %s | %.1f | %.1f |" % (
            encoding, ordering, size, " | ".join("%.2f" % med[k] for k in names),
            case.rows / conversion / 1000 if conversion > 0 else 0, beyond))


if __name__ == "__main__":
    main()
