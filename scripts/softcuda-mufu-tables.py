#!/usr/bin/env python3
"""Regenerates (or checks) the software CUDA device's sm_90 MUFU tables from the capture.

The H200 capture (scripts/gpu/capture_mufu.py; ../shared/data/sm90-mufu/sm90_mufu_tables.npz)
holds, as int8, hardware_bits - reference_bits for every f32 in [1, 4) (rsqrt.approx.ftz.f32,
2^24 inputs) and in [1, 2) (rcp.approx.ftz.f32, 2^23), the reference being
float32(1 / sqrt(float64(x))) and float32(1 / float64(x)). Every difference is -2..1, so the
repository keeps them as 2-bit codes (code = diff + 2, four per byte, lowest bits first), zlib
level 9: softcuda/data/sm90_rsqrt_diff.zlib and sm90_rcp_diff.zlib (about 0.5 MB together),
which softcuda/src/mufu.rs embeds.

usage: scripts/softcuda-mufu-tables.py [NPZ]           # write the two files, print the checksums
       scripts/softcuda-mufu-tables.py --check [NPZ]   # committed files == NPZ, exit 1 otherwise
NPZ defaults to ../shared/data/sm90-mufu/sm90_mufu_tables.npz (beside the checkout).
Standard library only (the .npz is a zip of .npy files; numpy is not needed).

The checksums printed (FNV-1a 64 of the int8 differences, and the count of each value) are
the constants of softcuda/tests/mufu.rs: a regenerated table changes them on purpose only.
"""
import ast
import os
import sys
import zipfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "softcuda", "data")
NAMES = (("rsqrt_diff", 1 << 24, "sm90_rsqrt_diff.zlib"), ("rcp_diff", 1 << 23, "sm90_rcp_diff.zlib"))


def load_npy(z, name, length):
    """The int8 array `name` of the npz as bytes (two's complement)."""
    b = z.read(name + ".npy")
    if b[:6] != b"\x93NUMPY":
        sys.exit(f"{name}.npy: not a .npy file")
    major = b[6]
    hl, off = (int.from_bytes(b[8:10], "little"), 10) if major == 1 else (int.from_bytes(b[8:12], "little"), 12)
    hdr = ast.literal_eval(b[off:off + hl].decode("latin1"))
    if hdr["descr"] not in ("|i1", "i1") or hdr["shape"] != (length,) or hdr["fortran_order"]:
        sys.exit(f"{name}.npy: expected int8[{length}], found {hdr}")
    data = b[off + hl:]
    if len(data) != length:
        sys.exit(f"{name}.npy: {len(data)} bytes, expected {length}")
    return data


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def pack(diffs):
    """2-bit codes, four per byte, lowest bits first; diff = code - 2."""
    codes = bytes(((d + 128) % 256 - 128 + 2) for d in diffs)
    if max(codes) > 3:
        sys.exit("a difference outside -2..1: the 2-bit format cannot hold it")
    out = bytearray(len(codes) // 4)
    for k in range(4):
        part = codes[k::4]
        for i, c in enumerate(part):
            out[i] |= c << (2 * k)
    return bytes(out)


def unpack(packed, length):
    out = bytearray(length)
    for k in range(4):
        out[k::4] = bytes((((p >> (2 * k)) & 3) - 2) % 256 for p in packed)
    return bytes(out)


def histogram(diffs):
    counts = {}
    for d in diffs:
        v = (d + 128) % 256 - 128
        counts[v] = counts.get(v, 0) + 1
    return dict(sorted(counts.items()))


def main():
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    npz = args[0] if args else os.path.join(os.path.dirname(ROOT), "shared", "data", "sm90-mufu", "sm90_mufu_tables.npz")
    if not os.path.exists(npz):
        sys.exit(f"{npz}: not found (the H200 capture; pass its path)")
    z = zipfile.ZipFile(npz)
    bad = 0
    for name, length, fname in NAMES:
        diffs = load_npy(z, name, length)
        path = os.path.join(OUT, fname)
        if check:
            with open(path, "rb") as f:
                got = unpack(zlib.decompress(f.read()), length)
            same = got == diffs
            bad += not same
            print(f"{fname}: {'matches' if same else 'DIFFERS FROM'} {name} of {npz}")
        else:
            os.makedirs(OUT, exist_ok=True)
            blob = zlib.compress(pack(diffs), 9)
            assert unpack(zlib.decompress(blob), length) == diffs
            with open(path, "wb") as f:
                f.write(blob)
            print(f"{fname}: {len(blob)} bytes")
        print(f"  {name}: fnv1a64 {fnv1a64(diffs):#018x}, counts {histogram(diffs)}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
