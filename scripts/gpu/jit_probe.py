"""What the CUDA driver answers, case by case: PTX versions against targets, instructions a target
lacks, conflicting directives, .reqntid/.maxntid launches, and the NaN bits of f32/f64 operations.

    python3 jit_probe.py OUT.json                 # on a GPU: record the driver's answers
    scripts/with-softcuda.sh python3 scripts/gpu/jit_probe.py --compare H200.json
                                                  # the software device against a recorded file
                                                  # (exit 1 listing every case that differs)
Python's standard library and libcuda.so.1 only. Case names are stable: add cases, never rename.
"""
import ctypes as C
import json
import sys

L = C.CDLL("libcuda.so.1")
V = C.c_void_p
U = C.c_uint64
L.cuMemAlloc_v2.argtypes = [C.POINTER(U), C.c_size_t]
L.cuMemcpyDtoH_v2.argtypes = [V, U, C.c_size_t]
L.cuMemsetD8_v2.argtypes = [U, C.c_ubyte, C.c_size_t]


def ok(r):
    assert r == 0, r


ok(L.cuInit(0))
dev = C.c_int()
ok(L.cuDeviceGet(C.byref(dev), 0))
ctx = V()
ok(L.cuCtxCreate_v2(C.byref(ctx), 0, dev))
buf = U()
ok(L.cuMemAlloc_v2(C.byref(buf), 4096))


def module(version, target, directives="", body="", params=""):
    return (f".version {version}\n.target {target}\n.address_size 64\n"
            f".visible .entry k({params}) {directives}\n{{\n.reg .pred %p<4>;\n.reg .b32 %r<16>;\n"
            f".reg .f32 %f<16>;\n.reg .b64 %rd<16>;\n.reg .f64 %fd<16>;\n{body}\nret;\n}}\n")


def load(text):
    m = V()
    r = L.cuModuleLoadData(C.byref(m), text.encode() + b"\0")
    return r, m


def launch(m, block, args=None):
    f = V()
    ok(L.cuModuleGetFunction(C.byref(f), m, b"k"))
    r = L.cuLaunchKernel(f, 1, 1, 1, block[0], block[1], block[2], 0, None, args, None)
    s = L.cuCtxSynchronize()
    return r if r else s


cases = {}
# PTX ISA versions against targets (the H200 refused 7.0 with sm_90).
for v, t in [("7.0", "sm_90"), ("7.7", "sm_90"), ("7.8", "sm_90"), ("8.0", "sm_90a"), ("7.8", "sm_90a"),
             ("6.0", "sm_70"), ("5.0", "sm_70"), ("7.0", "sm_80"), ("6.5", "sm_80"), ("6.3", "sm_75"),
             ("9.9", "sm_90"), ("7.8", "sm_91")]:
    cases[f"load .version {v} .target {t}"] = {"load": load(module(v, t, body="mov.u32 %r1, %tid.x;"))[0]}
cases["load without .version"] = {"load": load(".target sm_90\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n")[0]}
cases["load nanosleep .version 6.0 .target sm_70"] = {"load": load(module("6.0", "sm_70", body="nanosleep.u32 100;"))[0]}
cases["load nanosleep .version 6.3 .target sm_70"] = {"load": load(module("6.3", "sm_70", body="nanosleep.u32 100;"))[0]}
cases["load tanh.approx .target sm_70"] = {
    "load": load(module("7.0", "sm_70", body="mov.f32 %f1, 0f3F000000;\ntanh.approx.f32 %f2, %f1;"))[0]}
cases["load .maxntid with .reqntid"] = {"load": load(module("7.8", "sm_90", ".maxntid 64, 1, 1 .reqntid 64, 1, 1"))[0]}
# .reqntid / .maxntid at launch.
for directive in (".reqntid 64, 1, 1", ".maxntid 64, 1, 1"):
    r, m = load(module("7.8", "sm_90", directive))
    f = V()
    ok(L.cuModuleGetFunction(C.byref(f), m, b"k"))
    mt = C.c_int()
    ok(L.cuFuncGetAttribute(C.byref(mt), 0, f))
    cases[f"{directive}: MAX_THREADS_PER_BLOCK"] = {"value": mt.value}
    for block in ((64, 1, 1), (32, 1, 1), (32, 2, 1), (8, 8, 1), (128, 1, 1), (16, 8, 1)):
        cases[f"{directive}: launch {block}"] = {"launch": launch(m, block)}

# NaN bits: each line computes one value from immediates and stores it (f64 results as two words).
NAN_CASES = [
    ("mul.rn.f32 0*inf", "mul.rn.f32 %f1, 0f00000000, 0f7F800000;", "f32"),
    ("sub.rn.f32 inf-inf", "sub.rn.f32 %f1, 0f7F800000, 0f7F800000;", "f32"),
    ("fma.rn.f32 0*inf+0", "fma.rn.f32 %f1, 0f00000000, 0f7F800000, 0f00000000;", "f32"),
    ("add.rn.f32 payload+1", "add.rn.f32 %f1, 0fFFC01234, 0f3F800000;", "f32"),
    ("mul.rn.f32 snan*1", "mul.rn.f32 %f1, 0f7FA00001, 0f3F800000;", "f32"),
    ("sqrt.rn.f32 -1", "sqrt.rn.f32 %f1, 0fBF800000;", "f32"),
    ("div.rn.f32 0/0", "div.rn.f32 %f1, 0f00000000, 0f00000000;", "f32"),
    ("min.f32 nan,nan", "min.f32 %f1, 0fFFC01234, 0f7FC00001;", "f32"),
    ("neg.f32 payload", "neg.f32 %f1, 0f7FC01234;", "f32"),
    ("abs.f32 payload", "abs.f32 %f1, 0fFFC01234;", "f32"),
    ("rsqrt.approx.ftz.f32 payload", "rsqrt.approx.ftz.f32 %f1, 0fFFC01234;", "f32"),
    ("cvt.rn.f32.f64 payload", "cvt.rn.f32.f64 %f1, 0dFFF8000012345678;", "f32"),
    # Payload bits above bit 29 and a positive sign: tells "sign and top payload kept"
    # (softcuda's model, 0x7fc91a2b) from "canonical NaN with the sign" (0x7fc00000).
    ("cvt.rn.f32.f64 high payload", "cvt.rn.f32.f64 %f1, 0d7FF9234567800000;", "f32"),
    ("cvt.f64.f32 payload", "cvt.f64.f32 %fd1, 0fFFC01234;", "f64"),
    ("mul.rn.f64 0*inf", "mul.rn.f64 %fd1, 0d0000000000000000, 0d7FF0000000000000;", "f64"),
    ("add.rn.f64 payload+1", "add.rn.f64 %fd1, 0dFFF8000012345678, 0d3FF0000000000000;", "f64"),
    ("fma.rn.f64 0*inf+0", "fma.rn.f64 %fd1, 0d0000000000000000, 0d7FF0000000000000, 0d0000000000000000;", "f64"),
    ("neg.f64 payload", "neg.f64 %fd1, 0d7FF8000012345678;", "f64"),
    ("sqrt.rn.f64 -1", "sqrt.rn.f64 %fd1, 0dBFF0000000000000;", "f64"),
]
body = "ld.param.u64 %rd1, [o];\n"
for i, (_, inst, ty) in enumerate(NAN_CASES):
    body += inst + "\n" + (f"st.global.f32 [%rd1+{8 * i}], %f1;\n" if ty == "f32" else f"st.global.f64 [%rd1+{8 * i}], %fd1;\n")
r, m = load(module("7.8", "sm_90", body=body, params=".param .u64 o"))
assert r == 0, f"the NaN kernel does not load: {r}"
ok(L.cuMemsetD8_v2(buf.value, 0, 4096))
arg = U(buf.value)
args = (V * 1)(C.addressof(arg))
ok(launch(m, (1, 1, 1), args))
out = (C.c_uint64 * len(NAN_CASES))()
ok(L.cuMemcpyDtoH_v2(out, buf.value, 8 * len(NAN_CASES)))
for i, (name, _, ty) in enumerate(NAN_CASES):
    v = out[i] & 0xFFFFFFFF if ty == "f32" else out[i]
    cases[f"nan {name}"] = {"bits": hex(v)}

if len(sys.argv) > 2 and sys.argv[1] == "--compare":
    want = json.load(open(sys.argv[2]))["cases"]
    bad = [(k, v, cases.get(k)) for k, v in want.items() if cases.get(k) != v]
    for k, v, got in bad:
        print(f"DIFFERS {k}: recorded {v}, here {got}")
    print(f"{len(want) - len(bad)} of {len(want)} recorded cases agree")
    sys.exit(1 if bad else 0)
name = C.create_string_buffer(256)
L.cuDeviceGetName(name, 256, dev)
drv = C.c_int()
L.cuDriverGetVersion(C.byref(drv))
result = {"device": name.value.decode(), "driver": drv.value, "cases": cases}
if len(sys.argv) > 1:
    json.dump(result, open(sys.argv[1], "w"), indent=1)
print(json.dumps(result, indent=1))
