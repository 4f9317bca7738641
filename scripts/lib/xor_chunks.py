"""Decoding Prometheus's XOR chunks, written from the format's description
(Prometheus's tsdb/docs/format/chunks.md, "XOR chunk data", and
tsdb/chunkenc), never from promread's C code, so that test programs check
promread's encoder against an independent reading of the format.  Standard
library only.

decode_xor(data) returns the chunk's samples as (time, value bits) pairs,
and the number of padding bits after the last one.
"""
import struct

MASK64 = 2**64 - 1


def to_signed(n):
    n &= MASK64
    return n - 2**64 if n >= 2**63 else n


class BitReader:
    def __init__(self, data):
        self.bits = "".join("{:08b}".format(b) for b in data)
        self.pos = 0

    def read(self, n):
        if self.pos + n > len(self.bits):
            raise ValueError("chunk ends early")
        value = int(self.bits[self.pos:self.pos + n], 2) if n else 0
        self.pos += n
        return value

    def uvarint(self):
        result = shift = 0
        while True:
            byte = self.read(8)
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result
            shift += 7


def decode_xor(data):
    """The (time, value bits) samples of an XOR chunk, and its padding bits."""
    count = struct.unpack(">H", data[:2])[0]
    r = BitReader(data[2:])
    samples = []
    t = delta = bits = 0
    leading = trailing = 0
    for n in range(count):
        if n == 0:
            z = r.uvarint()
            t = (z >> 1) ^ -(z & 1)
            bits = r.read(64)
            samples.append((t, bits))
            continue
        if n == 1:
            delta = r.uvarint()
        else:
            prefix = 0
            while prefix < 4 and r.read(1) == 1:
                prefix += 1
            size = {0: 0, 1: 14, 2: 17, 3: 20, 4: 64}[prefix]
            dod = r.read(size)
            if size == 64:
                dod = to_signed(dod)
            elif size and dod > 1 << (size - 1):
                dod -= 1 << size
            delta = (delta + dod) & MASK64
        t = to_signed(t + delta)
        if r.read(1) == 1:
            if r.read(1) == 1:
                leading = r.read(5)
                sig = r.read(6) or 64
                trailing = 64 - leading - sig
            bits ^= r.read(64 - leading - trailing) << trailing
        samples.append((t, bits))
    return samples, len(r.bits) - r.pos
