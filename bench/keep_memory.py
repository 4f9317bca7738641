#!/usr/bin/python3
"""Read times under promread.keep_memory 4MB, 128MB and 0, back to back.

    bench/keep_memory.py [ROUNDS]

Against the cluster of the PG* variables: loads 1000 series x 1000 samples
into a table of its own (dropped at the end), then, in ROUNDS alternating
rounds (15 by default), reads the whole table through prom_remote_read on
three connections, one per setting, and prints the median of each.
"""
import statistics
import sys
import time

import psycopg2

SETTINGS = ("4MB", "128MB", "0")
READ = ("SELECT length(prom_remote_read(prom_read_request('bench_keep', "
        "'2024-01-01', '2024-02-01')))")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    admin = psycopg2.connect("")
    admin.autocommit = True
    cur = admin.cursor()
    cur.execute("""
        DROP TABLE IF EXISTS bench_keep;
        CREATE TABLE bench_keep (ts timestamptz, host text, value float8);
        INSERT INTO bench_keep
            SELECT '2024-01-01'::timestamptz + s * interval '15 s', 'host-' || h, s
            FROM generate_series(1, 1000) h, generate_series(1, 1000) s;
        SELECT prom_register('bench_keep');""")
    cur.execute("VACUUM ANALYZE bench_keep")
    conns = {}
    for setting in SETTINGS:
        conns[setting] = psycopg2.connect("")
        conns[setting].autocommit = True
        conns[setting].cursor().execute("SET promread.keep_memory = %s", (setting,))
    times = {setting: [] for setting in SETTINGS}
    for _ in range(rounds):
        for setting, conn in conns.items():
            c = conn.cursor()
            begin = time.perf_counter()
            c.execute(READ)
            c.fetchall()
            times[setting].append(time.perf_counter() - begin)
    for setting in SETTINGS:
        print("keep_memory %-6s median %.1f ms" % (setting, 1000 * statistics.median(times[setting])))
    cur.execute("DROP TABLE bench_keep")


main()
