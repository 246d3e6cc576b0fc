"""Which CUDA architectures a compiled extension holds: reads the fatbin headers of .so files (no cuobjdump needed).

    python bench/wheel_archs.py path/to/lib.so ...

Used for the facts S59/S67 in rlcompat/knowledge/data/sources.toml (sglang-kernel and bitsandbytes wheels from PyPI). Entry kind 1 is
PTX, 2 a cubin; the architecture is the 32-bit field at offset 28 of each entry header.
"""
import struct, sys, collections
def archs(path):
    data = open(path, 'rb').read()
    out = collections.Counter()
    i = data.find(b'\x50\xed\x55\xba')
    while i >= 0:
        version, hsize, fsize = struct.unpack_from('<HHQ', data, i + 4)
        pos, end = i + hsize, i + hsize + fsize
        while pos + 32 <= end:
            kind, _, ehsize, psize = struct.unpack_from('<HHIQ', data, pos)
            arch = struct.unpack_from('<I', data, pos + 28)[0]
            if ehsize == 0 or ehsize > 4096: break
            out[('ptx' if kind == 1 else 'sm' if kind == 2 else str(kind), arch)] += 1
            pos += ehsize + psize
        i = data.find(b'\x50\xed\x55\xba', max(end, i + 4))
    return out
for p in sys.argv[1:]:
    c = archs(p)
    print(p, sorted({f"{k}_{a}" for (k, a) in c}))
