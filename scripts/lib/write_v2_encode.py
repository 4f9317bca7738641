"""Remote write 2.0 requests (io.prometheus.write.v2.Request, spec
2.0-rc.4), and native histograms (the Histogram message 1.0 and 2.0 share),
encoded by hand from the specification's field numbers and wire types:
never with promread's .proto or protoc, so that the tests and seeds that
use it check promread's decoder against a second reading of the spec.
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


def request(symbols, series):
    """The uncompressed Request.  symbols (Request.symbols = 4): str or raw
    bytes.  series (Request.timeseries = 5): (labels_refs, samples as (ms,
    value[, start_ms]), exemplars as (labels_refs, value, ms), histograms as
    a number of empty ones or a list of encoded Histogram messages (as
    histogram() makes), metadata as (type, help_ref, unit_ref) or None)."""
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
            histograms = [b""] * histograms
        ts += b"".join(field(3, h) for h in histograms)
        for erefs, value, ms in exemplars:
            # Exemplar: labels_refs = 1; double value = 2; int64 timestamp = 3
            ts += field(4, field(1, b"".join(uvarint(r) for r in erefs))
                        + b"\x11" + struct.pack("<d", value) + b"\x18" + uvarint(ms))
        if metadata is not None:
            # Metadata: type = 1 (enum); help_ref = 3; unit_ref = 4
            t, h, u = metadata
            ts += field(5, b"\x08" + uvarint(t) + b"\x18" + uvarint(h) + b"\x20" + uvarint(u))
        out += field(5, ts)
    return out


def zigzag(n):
    """A sint32 or sint64 as its varint encodes it."""
    return (n << 1) ^ (n >> 63)


def histogram(ms, count, zero_count, sum_, schema, zero_threshold, spans, buckets, reset_hint=0):
    """An encoded Histogram (remote write 1.0's prompb.Histogram, the same
    fields 1-15 in 2.0) of positive buckets only.  Integer counts (count,
    zero_count, buckets ints) make an integer histogram, its buckets sent as
    deltas; float counts a float histogram, its buckets sent as counts.
    spans: (offset, length) pairs."""
    integer = isinstance(count, int)
    out = (b"\x08" + uvarint(count) if integer else b"\x11" + struct.pack("<d", count))
    out += b"\x19" + struct.pack("<d", sum_) + b"\x20" + uvarint(zigzag(schema))
    out += b"\x29" + struct.pack("<d", zero_threshold)
    out += (b"\x30" + uvarint(zero_count) if integer
            else b"\x39" + struct.pack("<d", zero_count))
    for offset, length in spans:  # positive_spans = 11: BucketSpan offset = 1, length = 2
        out += field(11, b"\x08" + uvarint(zigzag(offset)) + b"\x10" + uvarint(length))
    if integer:  # positive_deltas = 12, packed sint64
        deltas = [b - a for a, b in zip([0] + buckets, buckets)]
        out += field(12, b"".join(uvarint(zigzag(d)) for d in deltas))
    else:  # positive_counts = 13, packed double
        out += field(13, b"".join(struct.pack("<d", c) for c in buckets))
    return out + b"\x70" + uvarint(reset_hint) + b"\x78" + uvarint(ms)
