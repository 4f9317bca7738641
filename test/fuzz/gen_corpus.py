#!/usr/bin/python3
"""Write the seed corpora of the fuzz targets (run from anywhere):

  corpus/request/   remote-read request bodies (snappy-compressed ReadRequest):
                    the requests captured from Prometheus 2.42
                    (test/fixtures/prometheus-2.42) and hand-made ones
  corpus/write/     remote-write request bodies (snappy-compressed
                    WriteRequest): series, exemplars, histograms, metadata
  corpus/selector/  PromQL selectors: those of test/sql/matchers.sql and
                    selectors around the regex patterns of test/regex/cases.tsv
  corpus/answer/    STREAMED_XOR_CHUNKS streams, as a shard answers its
                    coordinator: frames of series with XOR chunks (encoded by
                    test/scripts/xor-check's independent encoder)

Needs Debian's python3-protobuf, python3-snappy and protoc.  The output is
deterministic; the corpora are committed, so this only needs running again
when the seeds should change.
"""
import importlib.machinery
import importlib.util
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

import snappy

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))

GEN = tempfile.mkdtemp(prefix="promread-fuzz-pb-")
subprocess.run(["protoc", "-I", os.path.join(TOP, "src/protocol/proto"), "--python_out", GEN,
                "remote.proto"], check=True)
sys.path.insert(0, GEN)
import remote_pb2  # noqa: E402

EQ, NEQ, RE, NRE = 0, 1, 2, 3


def request(queries, types=()):
    msg = remote_pb2.ReadRequest()
    for start, end, matchers in queries:
        q = msg.queries.add()
        q.start_timestamp_ms = start
        q.end_timestamp_ms = end
        for t, name, value in matchers:
            m = q.matchers.add()
            m.type = t
            # name and value may be str or raw bytes (the .proto has bytes or
            # string; set through the descriptor either way)
            for field, v in (("name", name), ("value", value)):
                if m.DESCRIPTOR.fields_by_name[field].type == m.DESCRIPTOR.fields_by_name[field].TYPE_BYTES:
                    setattr(m, field, v if isinstance(v, bytes) else v.encode())
                else:
                    setattr(m, field, v if isinstance(v, str) else v.decode("utf-8", "replace"))
    msg.accepted_response_types.extend(types)
    return snappy.compress(msg.SerializeToString())


def write_request(series, metadata=()):
    """series: (labels as (name, value) pairs, samples as (ms, value) pairs,
    exemplars, histograms); metadata: (type, family, help, unit)."""
    msg = remote_pb2.WriteRequest()
    for labels, samples, exemplars, histograms in series:
        ts = msg.timeseries.add()
        for name, value in labels:
            label = ts.labels.add()
            label.name = name if isinstance(name, bytes) else name.encode()
            label.value = value if isinstance(value, bytes) else value.encode()
        for ms, value in samples:
            sample = ts.samples.add()
            sample.timestamp = ms
            sample.value = value
        for _ in range(exemplars):
            ts.exemplars.add().value = 1.0
        for _ in range(histograms):
            ts.histograms.add()
    for type_, family, help_, unit in metadata:
        m = msg.metadata.add()
        m.type = type_
        m.metric_family_name = family.encode()
        m.help = help_.encode()
        m.unit = unit.encode()
    return snappy.compress(msg.SerializeToString())


def copy_unescape(s):
    """A field of PostgreSQL's COPY text format."""
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            out.append({"t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f",
                        "v": "\v"}.get(n, n))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def regex_patterns():
    seen = []
    with open(os.path.join(TOP, "test/regex/cases.tsv"), encoding="utf-8") as f:
        for line in f:
            p = copy_unescape(line.rstrip("\n").split("\t")[0])
            if not seen or seen[-1] != p:
                seen.append(p)
    return list(dict.fromkeys(seen))


def xor_check():
    """test/scripts/xor-check as a module: its XOR encoder and CRC-32C."""
    path = os.path.join(TOP, "test/scripts/xor-check")
    loader = importlib.machinery.SourceFileLoader("xor_check", path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("xor_check", loader))
    loader.exec_module(module)
    return module


def answer(xc, series, query_index=0):
    """A stream of frames, one per series: (labels, [(ms, value)])."""
    out = b""
    for labels, samples in series:
        msg = remote_pb2.ChunkedReadResponse(query_index=query_index)
        cs = msg.chunked_series.add()
        for name, value in sorted(labels.items()):
            label = cs.labels.add()
            label.name, label.value = name.encode(), value.encode()
        for i in range(0, len(samples), 120):
            part = samples[i:i + 120]
            chunk = cs.chunks.add()
            chunk.min_time_ms, chunk.max_time_ms, chunk.type = part[0][0], part[-1][0], 1
            chunk.data = xc.encode_xor([(t, xc.float_bits(v)) for t, v in part])
        body = msg.SerializeToString()
        out += xc.uvarint_bytes(len(body)) + xc.crc32c(body).to_bytes(4, "big") + body
    return out


def write(directory, items):
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    for name, data in items:
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)


def main():
    rng = random.Random(20261130)
    patterns = regex_patterns()
    picked = patterns[:120] + rng.sample(patterns[120:], min(80, len(patterns) - 120))

    # ---- requests
    reqs = []
    fixtures = os.path.join(TOP, "test/fixtures/prometheus-2.42")
    for f in sorted(os.listdir(fixtures)):
        if f.endswith(".bin"):
            with open(os.path.join(fixtures, f), "rb") as fh:
                reqs.append(("prometheus-2.42-" + f, fh.read()))
    day = 86400000
    t0 = 1700000000000
    reqs += [
        ("empty", request([])),
        ("all-types", request([(t0, t0 + day, [(EQ, "__name__", "http"), (NEQ, "host", "a"),
                                               (RE, "path", "/api/.*"), (NRE, "env", "dev|test")])],
                              [1, 0])),
        ("multi-query", request([(t0, t0 + day, [(EQ, "__name__", "a")]),
                                 (t0 - day, t0, [(RE, "__name__", "b.*|c"), (EQ, "x", "")]),
                                 (-2**63, 2**63 - 1, [(NRE, "__name__", "")])], [0])),
        ("chunks", request([(t0, t0, [(EQ, "__name__", "up"), (RE, "job", "(?i)api")])], [1])),
        ("unsupported-type", request([(t0, t0, [(EQ, "__name__", "up")])], [7, 5])),
        ("ends-before-start", request([(t0, t0 - 1, [(EQ, "__name__", "up")])])),
        ("nul-in-name", request([(t0, t0, [(EQ, "__name__", "up"), (EQ, b"a\0b", b"")])])),
        ("bad-utf8", request([(t0, t0, [(EQ, "__name__", b"\xff\xfe")])])),
        ("bad-type", request([(t0, t0, [(9, "__name__", "up")])])),
        ("unicode", request([(t0, t0, [(RE, "__name__", "température|温度"),
                                       (EQ, "room", "salle à manger")])])),
    ]
    # the limits: 1000 queries or matchers pass, 1001 do not; a snappy block
    # announcing more than promread.max_request_bytes (32 MB)
    one = (t0, t0, [(EQ, "__name__", "up")])
    reqs += [
        ("queries-1000", request([one] * 1000)),
        ("queries-1001", request([one] * 1001)),
        ("matchers-1000", request([(t0, t0, [(EQ, "__name__", "up")] + [(RE, "l", "a|b")] * 999)])),
        ("matchers-1001", request([(t0, t0, [(EQ, "__name__", "up")] + [(NEQ, "l", "x")] * 1000)])),
        ("snappy-too-large", b"\x81\x80\x80\x10" + request([one])[1:]),
    ]
    for i in range(0, len(picked), 10):
        matchers = [(EQ, "__name__", "m")]
        for j, p in enumerate(picked[i:i + 10]):
            matchers.append((RE if j % 2 == 0 else NRE, "l%d" % j, p))
        reqs.append(("regexes-%03d" % i, request([(t0, t0 + day, matchers)])))
    write(os.path.join(HERE, "corpus/request"), reqs)

    # ---- write requests
    up = [("__name__", "up"), ("instance", "a:9100"), ("job", "node")]
    writes = [
        ("empty", write_request([])),
        ("one-series", write_request([(up, [(t0, 1.0), (t0 + 15000, float("nan"))], 0, 0)])),
        ("many-series", write_request([([("__name__", "m%d" % (i % 3)), ("l", "v%d" % i),
                                         ("zone", "" if i % 2 else "eu")],
                                        [(t0 + j, float(j)) for j in range(i % 5)], 0, 0)
                                       for i in range(50)])),
        ("unsupported", write_request([(up, [(t0, 1.0)], 2, 1)])),
        ("metadata", write_request([], [(1, "up", "Targets up.", ""), (9, "x", "", "s")])),
        ("no-name", write_request([([("job", "x")], [(t0, 1.0)], 0, 0)])),
        ("duplicate-label", write_request([(up + [("job", "y")], [(t0, 1.0)], 0, 0)])),
        ("bad-utf8", write_request([([("__name__", "up"), ("l", b"\xff")], [], 0, 0)])),
        ("bad-names", write_request([([("__name__", "1up"), ("a-b", "x")], [], 0, 0)])),
        ("times", write_request([(up, [(-2**63, 0.0), (2**63 - 1, -0.0)], 0, 0)])),
    ]
    write(os.path.join(HERE, "corpus/write"), writes)

    # ---- selectors
    sels = []
    with open(os.path.join(TOP, "test/sql/matchers.sql"), encoding="utf-8") as f:
        for line in f:
            for prefix in ("sel('", "prom_series('", "sel(E'"):
                k = line.find(prefix)
                if k < 0:
                    continue
                rest = line[k + len(prefix):]
                j = 0
                text = []
                while j < len(rest):
                    if rest[j] == "'" and rest[j + 1:j + 2] == "'":
                        text.append("'")
                        j += 2
                    elif rest[j] == "'":
                        break
                    else:
                        text.append(rest[j])
                        j += 1
                s = "".join(text)
                if prefix == "sel(E'":
                    s = s.replace("\\\\", "\\")
                sels.append(s)
                break
    sels += ["up", "up{}", "{job=\"x\"}", "a:b:c{d!~'e', f=`g\\h`,}",
             "  m \t{\n x = \"\\a\\b\\f\\n\\r\\t\\v\\\\\\\"\\101\\x41\\u00e9\\U0001F600\" }  ",
             "m{l=~'\\''}", "m{l!=\"\"}", "m{__name__!=\"\"}"]
    for p in picked:
        if "`" not in p and "\0" not in p:
            sels.append("m{l=~`%s`}" % p)
    sels = list(dict.fromkeys(sels))
    write(os.path.join(HERE, "corpus/selector"),
          [("%03d" % i, s.encode("utf-8", "surrogateescape")) for i, s in enumerate(sels)])

    # ---- shards' answers
    xc = xor_check()
    t0 = 1709251200000
    answers = [
        answer(xc, []),
        answer(xc, [({"host": "a"}, [(t0, 1.0)])]),
        answer(xc, [({"host": "a", "env": "prod"}, [(t0 + 15000 * k, k * 1.5) for k in range(300)]),
                    ({"host": "b"}, [(t0 + 15000 * k + rng.randrange(-50, 50), rng.random())
                                     for k in range(130)])]),
        answer(xc, [({"host": "c"}, [(-5, math.nan), (0, math.inf), (1 << 40, -0.0),
                                     ((1 << 62), 5e-324)])]),
        answer(xc, [({"host": "x" * 300}, [(t0, 2.0), (t0 + 1, 3.0)])], query_index=3),
    ]
    write(os.path.join(HERE, "corpus/answer"),
          [("%03d" % i, a) for i, a in enumerate(answers)])
    shutil.rmtree(GEN)
    print("%d requests, %d write requests, %d selectors, %d answers"
          % (len(reqs), len(writes), len(sels), len(answers)))


if __name__ == "__main__":
    main()
