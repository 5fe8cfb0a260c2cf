"""Capture sm_90's approximate f32 instructions bit for bit (run on a GPU: one short call).

Extends the capture of 2026-11-27 (../shared/data/sm90-mufu/capture.py: rsqrt and rcp, whose tables
softcuda now uses) to sqrt.approx, ex2.approx, lg2.approx, sin.approx and cos.approx (all .ftz.f32),
so the software device can model them instead of refusing them.

For every instruction:
  - a table over one octave of inputs, as the int8 (or int16) difference in ulps between the
    hardware's result and numpy's f64 reference rounded to f32 (u32 bit patterns);
  - a sweep over every STRIDE-th chunk of all 2^32 inputs: per input class (sign, biased exponent)
    a histogram of hardware - reference (clipped to -8..8, 'big' beyond, 'nan'), the outputs of the
    specials, and, for the instructions with a known exact scaling (rsqrt, rcp, sqrt), the inputs
    that break it (none did for rsqrt and rcp).
Writes OUTDIR/sm90_mufu_tables_v2.npz and OUTDIR/sm90_mufu_report_v2.json.

usage: python3 capture_mufu.py OUTDIR [CHUNK_LOG2] [MAX_CHUNKS]
env:   STRIDE (default 3: every third chunk), BUDGET_S (stop the sweep after this many seconds),
       OPS (comma-separated subset, default all), START (first input of the sweep)
Needs numpy and libcuda.so.1 (NVIDIA's, or softcuda's under scripts/with-softcuda.sh with
SOFTCUDA_MUFU=ieee to try the script without a GPU: then the 'hardware' is the f64 model).
"""
import ctypes as C
import json
import os
import sys
import time

import numpy as np

OUT = sys.argv[1]
CH = 1 << int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 25
MAXC = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 30
STRIDE = int(os.environ.get("STRIDE", "3"))
BUDGET = float(os.environ.get("BUDGET_S", "1e9"))
START = int(os.environ.get("START", "0"), 0)


def ftz(x):
    x = x.copy()
    x[np.abs(x) < np.float32(1.17549435e-38)] = 0
    return x


def ref(fn):
    def r(bits):
        x = ftz(bits.view(np.float32)).astype(np.float64)
        with np.errstate(all="ignore"):
            return fn(x).astype(np.float32).view(np.uint32)
    return r


# name: (PTX instruction, table start bits, table entries, reference, exact scaling rule)
OPS = {
    "rsqrt": ("rsqrt.approx.ftz.f32", 0x3F800000, 1 << 24, ref(lambda x: 1 / np.sqrt(x)), "4^k"),
    "rcp": ("rcp.approx.ftz.f32", 0x3F800000, 1 << 23, ref(lambda x: 1 / x), "2^e"),
    "sqrt": ("sqrt.approx.ftz.f32", 0x3F800000, 1 << 24, ref(np.sqrt), "sqrt4^k"),
    "ex2": ("ex2.approx.ftz.f32", 0x3F800000, 1 << 23, ref(np.exp2), None),
    "lg2": ("lg2.approx.ftz.f32", 0x3F800000, 1 << 23, ref(np.log2), None),
    "sin": ("sin.approx.ftz.f32", 0x3F800000, 1 << 23, ref(np.sin), None),
    "cos": ("cos.approx.ftz.f32", 0x3F800000, 1 << 23, ref(np.cos), None),
}
wanted = os.environ.get("OPS")
if wanted:
    OPS = {k: v for k, v in OPS.items() if k in wanted.split(",")}

PTX = """.version 7.8
.target sm_90
.address_size 64
.visible .entry k(.param .u64 o, .param .u32 base, .param .u32 n){
.reg .pred %p; .reg .b32 %r<9>; .reg .f32 %f<3>; .reg .b64 %rd<4>;
mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x; mad.lo.s32 %r4, %r1, %r2, %r3;
ld.param.u32 %r5, [n]; setp.ge.u32 %p, %r4, %r5; @%p bra D;
ld.param.u32 %r8, [base]; add.s32 %r6, %r4, %r8; ld.param.u64 %rd1, [o];
mul.wide.u32 %rd2, %r4, 4; add.s64 %rd3, %rd1, %rd2;
mov.b32 %f1, %r6; INST %f2, %f1; st.global.f32 [%rd3], %f2;
D: ret;}"""

L = C.CDLL("libcuda.so.1")
V = C.c_void_p
U = C.c_uint64


def k(r):
    assert r == 0, r


L.cuMemAlloc_v2.argtypes = [C.POINTER(U), C.c_size_t]
L.cuMemcpyDtoH_v2.argtypes = [V, U, C.c_size_t]
k(L.cuInit(0))
dev = C.c_int()
k(L.cuDeviceGet(C.byref(dev), 0))
ctx = V()
k(L.cuCtxCreate_v2(C.byref(ctx), 0, dev))
name = C.create_string_buffer(256)
L.cuDeviceGetName(name, 256, dev)
funcs = {}
for op, (inst, *_rest) in OPS.items():
    m = V()
    k(L.cuModuleLoadData(C.byref(m), PTX.replace("INST", inst).encode() + b"\0"))
    f = V()
    k(L.cuModuleGetFunction(C.byref(f), m, b"k"))
    funcs[op] = f
buf = U()
k(L.cuMemAlloc_v2(C.byref(buf), 4 * CH))


def run(op, base, n):
    b = C.c_uint32(base)
    nn = C.c_uint32(n)
    a = (V * 3)(C.addressof(buf), C.addressof(b), C.addressof(nn))
    k(L.cuLaunchKernel(funcs[op], (n + 255) // 256, 1, 1, 256, 1, 1, 0, None, a, None))
    k(L.cuCtxSynchronize())
    r = np.empty(n, np.uint32)
    k(L.cuMemcpyDtoH_v2(r.ctypes.data, buf.value, 4 * n))
    return r


def hw_all(op, base, n):
    out = np.empty(n, np.uint32)
    for s in range(0, n, CH):
        m = min(CH, n - s)
        out[s:s + m] = run(op, base + s, m)
    return out


t0 = time.time()
tables = {}
report = {"device": name.value.decode(), "chunk": CH, "stride": STRIDE, "ops": {}}
for op, (inst, start, entries, reference, rule) in OPS.items():
    bits = (np.arange(entries, dtype=np.uint64) + start).astype(np.uint32)
    hw = hw_all(op, start, entries)
    d = hw.astype(np.int64) - reference(bits).astype(np.int64)
    small = np.abs(d).max() < 127
    tables[f"{op}_diff"] = d.astype(np.int8 if small else np.int32)
    vals, counts = np.unique(np.clip(d, -9, 9), return_counts=True)
    report["ops"][op] = {
        "instruction": inst,
        "table_start": hex(start),
        "table_entries": entries,
        "table_histogram": {str(int(v)): int(c) for v, c in zip(vals, counts)},
        "rule": rule,
        "rule_checked": 0,
        "rule_mismatch": 0,
        "mismatch_examples": [],
        "classes": {},
        "specials": {},
    }
    tables[f"{op}_hw"] = hw if op in ("ex2", "lg2", "sin", "cos") else np.empty(0, np.uint32)


def predict(op, bits, table_hw):
    """(prediction, ok) for the exact-scaling instructions."""
    e = ((bits >> 23) & 0xFF).astype(np.int64)
    sign = (bits >> 31).astype(np.int64)
    mant = (bits & 0x7FFFFF).astype(np.int64)
    normal = (e > 0) & (e < 255)
    ue = e - 127
    if op in ("rsqrt", "sqrt"):
        kk = np.floor_divide(ue, 2)
        idx = np.where(normal, ((ue - 2 * kk) << 23) + mant, 0)
        p = table_hw[idx].astype(np.int64) + (kk << 23) * (1 if op == "sqrt" else -1)
        ok = normal & (sign == 0) & (p > 0x7FFFFF) & (p < 0x7F800000)
        return p, ok
    idx = np.where(normal, mant, 0)
    p = table_hw[idx].astype(np.int64) - (ue << 23)
    ok = normal & (p > 0x7FFFFF) & (p < 0x7F800000)
    return p | (sign << 31), ok


table_hw = {op: hw_all(op, OPS[op][1], OPS[op][2]) for op, v in OPS.items() if v[4]}
nch = 0
for base in range(START, 1 << 32, CH * STRIDE):
    if nch >= MAXC or time.time() - t0 > BUDGET:
        break
    nch += 1
    n = min(CH, (1 << 32) - base)
    bits = (np.arange(n, dtype=np.uint64) + base).astype(np.uint32)
    e = (bits >> 23) & 0xFF
    cls = np.where(bits >> 31 == 1, -1, 1) * (e.astype(np.int64) + 1)
    for op, (inst, start, entries, reference, rule) in OPS.items():
        r = report["ops"][op]
        hw = run(op, base, n)
        want = reference(bits)
        d = hw.astype(np.int64) - want.astype(np.int64)
        nan = (hw & 0x7FFFFFFF) > 0x7F800000
        dd = np.where(nan, 99, np.clip(d, -9, 9))
        for c in np.unique(cls):
            sel = cls == c
            v, cnt = np.unique(dd[sel], return_counts=True)
            h = r["classes"].setdefault(str(int(c)), {})
            for vv, cc in zip(v, cnt):
                key = "nan" if vv == 99 else str(int(vv))
                h[key] = h.get(key, 0) + int(cc)
        special = (e == 0) | (e == 255)
        if special.any():
            sb, so = bits[special], hw[special]
            kind = np.where(e[special] == 0, np.where((sb & 0x7FFFFF) == 0, 0, 1),
                            np.where((sb & 0x7FFFFF) == 0, 2, 3)) + 4 * (sb >> 31).astype(np.int64)
            names = ["+0", "+denormal", "+inf", "+nan", "-0", "-denormal", "-inf", "-nan"]
            for kd in np.unique(kind):
                outs, cnt = np.unique(so[kind == kd], return_counts=True)
                dct = r["specials"].setdefault(names[int(kd)], {})
                for ov, cv in zip(outs[:8], cnt[:8]):
                    dct[hex(int(ov))] = dct.get(hex(int(ov)), 0) + int(cv)
        if rule:
            p, ok = predict(op, bits, table_hw[op])
            mis = ok & (hw.astype(np.int64) != p)
            r["rule_checked"] += int(ok.sum())
            r["rule_mismatch"] += int(mis.sum())
            for i in np.nonzero(mis)[0][:3]:
                if len(r["mismatch_examples"]) < 20:
                    r["mismatch_examples"].append([hex(int(bits[i])), hex(int(hw[i]))])

report["chunks"] = nch
report["seconds"] = round(time.time() - t0, 1)
np.savez_compressed(f"{OUT}/sm90_mufu_tables_v2.npz", **tables)
json.dump(report, open(f"{OUT}/sm90_mufu_report_v2.json", "w"), indent=1)
print(json.dumps({op: {kk: v for kk, v in r.items() if kk in ("table_histogram", "rule_checked", "rule_mismatch")}
                  for op, r in report["ops"].items()}))
print(f"{nch} chunks, {report['seconds']} s")
