"""Decoding Prometheus's HISTOGRAM and FLOAT_HISTOGRAM chunks, written from
the format's description alone (Prometheus's tsdb/docs/format/chunks.md,
"Histogram chunk data" and "Float histogram chunk data"), never from
promread's C code, so that test programs check promread's encoder against
an independent reading of the format.  Standard library only.

decode(data, is_float) returns (header, samples): header is the chunk's two
counter-reset bits as a string ("10" reset, "01" not reset, "00" unknown,
"11" gauge), samples a list of dicts with the sample's time and its
histogram's fields, doubles as their 64 bits:

    {"t", "schema", "zero_threshold", "positive_spans", "negative_spans"
     ([(offset, length)]), "custom_values", "count", "zero_count", "sum",
     "positive", "negative" (bucket deltas of integer histograms, counts of
     float ones), "stale"}

The description does not say how a stale marker (the sum's NaN
0x7ff0000000000002) is carried; Prometheus's readers end such a sample
after its sum, reading no buckets, and so does this decoder ("stale":
True, no buckets).
"""
import struct

MASK64 = (1 << 64) - 1
STALE_NAN = 0x7FF0000000000002

# <varbit_int> / <varbit_uint>: a prefix of up to 8 one bits ended by a zero
# (none after eight ones) selects how many bits of the number follow.
VARBIT_SIZES = {0: 0, 1: 3, 2: 6, 3: 9, 4: 12, 5: 18, 6: 25, 7: 56, 8: 64}


def signed64(n):
    n &= MASK64
    return n - (1 << 64) if n >= 1 << 63 else n


class Bits:
    """A bitstream read most significant bit first."""

    def __init__(self, data):
        self.data = data
        self.pos = 0            # in bits

    def left(self):
        return len(self.data) * 8 - self.pos

    def read(self, n):
        if n == 0:
            return 0
        if n > self.left():
            raise ValueError("chunk ends early")
        value = 0
        for _ in range(n):
            byte = self.data[self.pos >> 3]
            value = (value << 1) | ((byte >> (7 - (self.pos & 7))) & 1)
            self.pos += 1
        return value

    def varbit(self, signed):
        ones = 0
        while ones < 8 and self.read(1) == 1:
            ones += 1
        size = VARBIT_SIZES[ones]
        value = self.read(size)
        if signed:
            if size == 64:
                value = signed64(value)
            elif size and value > 1 << (size - 1):
                value -= 1 << size
        return value

    def xor(self, state):
        """<varbit_xor>: a float as its XOR with the previous one; state is
        [bits, leading, trailing] and is updated."""
        if self.read(1) == 0:
            return state[0]
        if self.read(1) == 1:
            leading = self.read(5)
            sig = self.read(6) or 64
            state[1], state[2] = leading, 64 - leading - sig
        state[0] ^= self.read(64 - state[1] - state[2]) << state[2]
        return state[0]


def read_zero_threshold(r):
    """1 byte: 0 is zero, 1..254 the power of two 2^(byte - 244) (a
    fraction of 0.5 with the byte - 243 as exponent), 255 the 64 bits."""
    byte = r.read(8)
    if byte == 0:
        return 0
    if byte == 255:
        return r.read(64)
    return struct.unpack("<Q", struct.pack("<d", 0.5 * 2.0 ** (byte - 243)))[0]


def read_spans(r):
    n = r.varbit(False)
    spans = []
    for _ in range(n):
        length = r.varbit(False)
        offset = r.varbit(True)
        spans.append((offset, length))
    return spans


def read_custom_value(r):
    """y + 1 as a varbit_uint (leading bit 1) for y = x * 1000 whole and in
    0..33554430; else a 0 bit and the 64 bits of x."""
    if r.read(1) == 1:
        r.pos -= 1
        y = r.varbit(False) - 1
        return struct.unpack("<Q", struct.pack("<d", y / 1000))[0]
    return r.read(64)


def decode(data, is_float):
    """The (header bits, samples) of a chunk's data: see the module doc."""
    count = struct.unpack(">H", data[:2])[0]
    header = "{:08b}".format(data[2])[:2]
    r = Bits(data[3:])
    zero_threshold = read_zero_threshold(r)
    schema = r.varbit(True)
    positive_spans = read_spans(r)
    negative_spans = read_spans(r)
    custom_values = []
    if schema == -53:
        custom_values = [read_custom_value(r) for _ in range(r.varbit(False))]
    npos = sum(length for _, length in positive_spans)
    nneg = sum(length for _, length in negative_spans)
    nbuckets = npos + nneg

    samples = []
    t = t_delta = 0
    count_v = zero_v = 0
    count_delta = zero_delta = 0
    # float histograms: count, zero count, sum, buckets as XOR states
    states = [[0, 0, 0] for _ in range(3 + nbuckets)]
    sum_state = [0, 0, 0]
    deltas = [0] * nbuckets
    changes = [0] * nbuckets
    for n in range(count):
        if n == 0:
            t = r.varbit(True)
        else:
            t_delta = signed64(t_delta + r.varbit(True))
            t = signed64(t + t_delta)
        if is_float:
            if n == 0:
                for i in range(3):
                    states[i] = [r.read(64), 0xFF, 0]
            else:
                for i in range(3):
                    r.xor(states[i])
            count_v, zero_v, sum_bits = (states[0][0], states[1][0], states[2][0])
        else:
            if n == 0:
                count_v = r.varbit(False)
                zero_v = r.varbit(False)
                sum_state = [r.read(64), 0xFF, 0]
            else:
                count_delta = signed64(count_delta + r.varbit(True))
                zero_delta = signed64(zero_delta + r.varbit(True))
                count_v = (count_v + count_delta) & MASK64
                zero_v = (zero_v + zero_delta) & MASK64
                r.xor(sum_state)
            sum_bits = sum_state[0]
        sample = {"t": t, "schema": schema, "zero_threshold": zero_threshold,
                  "positive_spans": positive_spans, "negative_spans": negative_spans,
                  "custom_values": custom_values, "count": count_v,
                  "zero_count": zero_v, "sum": sum_bits,
                  "stale": sum_bits == STALE_NAN}
        if sum_bits == STALE_NAN:
            samples.append(sample)
            continue
        values = []
        for i in range(nbuckets):
            if is_float:
                if n == 0:
                    states[3 + i] = [r.read(64), 0xFF, 0]
                else:
                    r.xor(states[3 + i])
                values.append(states[3 + i][0])
            else:
                v = r.varbit(True)
                if n == 0:
                    deltas[i] = v
                else:
                    changes[i] = signed64(changes[i] + v)
                    deltas[i] = signed64(deltas[i] + changes[i])
                values.append(deltas[i])
        sample["positive"] = values[:npos]
        sample["negative"] = values[npos:]
        samples.append(sample)
    padding = r.left()
    if padding >= 8:
        raise ValueError("%d bits left after the last sample" % padding)
    if padding and r.read(padding) != 0:
        raise ValueError("padding bits are not zero")
    return header, samples
