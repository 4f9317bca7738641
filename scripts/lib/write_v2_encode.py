"""Remote write 2.0 requests (io.prometheus.write.v2.Request, spec
2.0-rc.4), encoded by hand from the specification's field numbers and wire
types: never with promread's .proto or protoc, so that the tests and seeds
that use it check promread's decoder against a second reading of the spec.
"""
import struct


def uvarint(n):
    """A protobuf varint (negative int64 as its 64-bit two's complement)."""
    n &= 2**64 - 1
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(number, data):
    """A length-delimited field."""
    return uvarint(number << 3 | 2) + uvarint(len(data)) + data


def tag(number, wiretype):
    """A field's key: its number and wire type (0 varint, 1 fixed64)."""
    return uvarint(number << 3 | wiretype)


def zigzag(n):
    """A sint32 or sint64 as its zigzag varint."""
    return uvarint((n << 1) ^ (n >> 63) if n < 0 else n << 1)


def double(value):
    """A fixed64 double: a float, or an int holding the double's bits (for
    NaN payloads such as the stale marker, which Python may not keep)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return struct.pack("<Q", value)
    return struct.pack("<d", value)


def histogram(h):
    """A Histogram message (io.prometheus.write.v2.Histogram) from a dict of
    its fields named as in the specification: count_int or count_float
    (field 1 or 2, a oneof), sum 3, schema 4 (sint32), zero_threshold 5,
    zero_count_int or zero_count_float (6 or 7), negative_spans 8 and
    positive_spans 11 as [(offset, length)] (BucketSpan: sint32 offset = 1,
    uint32 length = 2), negative_deltas 9 and positive_deltas 12 (packed
    sint64), negative_counts 10 and positive_counts 13 (packed doubles),
    reset_hint 14, timestamp 15, custom_values 16 (packed doubles),
    start_timestamp 17.  Absent keys are not written; doubles as double()."""
    out = b""
    if "count_int" in h:
        out += tag(1, 0) + uvarint(h["count_int"])
    if "count_float" in h:
        out += tag(2, 1) + double(h["count_float"])
    if "sum" in h:
        out += tag(3, 1) + double(h["sum"])
    if "schema" in h:
        out += tag(4, 0) + zigzag(h["schema"])
    if "zero_threshold" in h:
        out += tag(5, 1) + double(h["zero_threshold"])
    if "zero_count_int" in h:
        out += tag(6, 0) + uvarint(h["zero_count_int"])
    if "zero_count_float" in h:
        out += tag(7, 1) + double(h["zero_count_float"])
    for side, number in (("negative", 8), ("positive", 11)):
        for offset, length in h.get(side + "_spans", ()):
            out += field(number, tag(1, 0) + zigzag(offset) + tag(2, 0) + uvarint(length))
        if side + "_deltas" in h:
            out += field(number + 1, b"".join(zigzag(d) for d in h[side + "_deltas"]))
        if side + "_counts" in h:
            out += field(number + 2, b"".join(double(c) for c in h[side + "_counts"]))
    if "reset_hint" in h:
        out += tag(14, 0) + uvarint(h["reset_hint"])
    if "timestamp" in h:
        out += tag(15, 0) + uvarint(h["timestamp"])
    if "custom_values" in h:
        out += field(16, b"".join(double(c) for c in h["custom_values"]))
    if "start_timestamp" in h:
        out += tag(17, 0) + uvarint(h["start_timestamp"])
    return out


def request(symbols, series):
    """The uncompressed Request.  symbols (Request.symbols = 4): str or raw
    bytes.  series (Request.timeseries = 5): (labels_refs, samples as (ms,
    value[, start_ms]), exemplars as (labels_refs, value, ms), histograms
    as a list of histogram() dicts or a number of empty ones, metadata as
    (type, help_ref, unit_ref) or None)."""
    out = b"".join(field(4, s if isinstance(s, bytes) else s.encode()) for s in symbols)
    for refs, samples, exemplars, histograms, metadata in series:
        ts = field(1, b"".join(uvarint(r) for r in refs))  # packed uint32
        for sample in samples:
            # Sample: double value = 1; int64 timestamp = 2; start_timestamp = 3
            body = b"\x09" + struct.pack("<d", sample[1]) + b"\x10" + uvarint(sample[0])
            if len(sample) > 2:
                body += b"\x18" + uvarint(sample[2])
            ts += field(2, body)
        if isinstance(histograms, int):
            histograms = [{}] * histograms
        ts += b"".join(field(3, histogram(h)) for h in histograms)
        for erefs, value, ms in exemplars:
            # Exemplar: labels_refs = 1; double value = 2; int64 timestamp = 3
            ts += field(4, field(1, b"".join(uvarint(r) for r in erefs))
                        + b"\x11" + double(value) + b"\x18" + uvarint(ms))
        if metadata is not None:
            # Metadata: type = 1 (enum); help_ref = 3; unit_ref = 4
            t, h, u = metadata
            ts += field(5, b"\x08" + uvarint(t) + b"\x18" + uvarint(h) + b"\x20" + uvarint(u))
        out += field(5, ts)
    return out
