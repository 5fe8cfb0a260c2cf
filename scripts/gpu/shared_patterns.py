"""One warp-level shared-memory request per kernel, for each access pattern whose wavefront cost the
software device models (softcuda/src/account.rs): 4-, 8- and 16-byte loads that are consecutive,
broadcast, half-warp broadcasts, strided or permuted, and a 16-byte store. Run it under Nsight
Compute on a GPU and under the software device with SOFTCUDA_STATS, then compare per kernel:

    ncu --csv --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum python3 shared_patterns.py > ncu.csv
    SOFTCUDA_STATS=soft.jsonl scripts/with-softcuda.sh python3 scripts/gpu/shared_patterns.py
    python3 scripts/softcuda-ncu-compare.py ncu.csv soft.jsonl

Python's standard library and libcuda.so.1 only. Kernel names are stable.
"""
import ctypes as C

# name: (byte offset of lane l as a PTX expression of %r1 = lane, access width in bytes, load?)
PATTERNS = {
    "p_b32_consecutive": ("mul.lo.u32 %r2, %r1, 4;", 4, True),
    "p_b32_broadcast": ("mov.u32 %r2, 64;", 4, True),
    "p_b32_stride2": ("mul.lo.u32 %r2, %r1, 8;", 4, True),
    "p_b32_stride32": ("mul.lo.u32 %r2, %r1, 128;", 4, True),
    "p_b64_consecutive": ("mul.lo.u32 %r2, %r1, 8;", 8, True),
    "p_b64_broadcast": ("mov.u32 %r2, 64;", 8, True),
    "p_b64_stride2": ("mul.lo.u32 %r2, %r1, 16;", 8, True),
    "p_b128_consecutive": ("mul.lo.u32 %r2, %r1, 16;", 16, True),
    "p_b128_broadcast": ("mov.u32 %r2, 256;", 16, True),
    "p_b128_half_broadcast": ("shr.u32 %r2, %r1, 4;\nmul.lo.u32 %r2, %r2, 16;", 16, True),
    "p_b128_rotated": ("add.u32 %r2, %r1, 5;\nand.b32 %r2, %r2, 31;\nmul.lo.u32 %r2, %r2, 16;", 16, True),
    "p_b128_stride32": ("mul.lo.u32 %r2, %r1, 32;", 16, True),
    "p_b128_store_consecutive": ("mul.lo.u32 %r2, %r1, 16;", 16, False),
}


def kernel(name, offset, width, load):
    vec = {4: ("", "%r3"), 8: (".v2", "{%r3, %r4}"), 16: (".v4", "{%r3, %r4, %r5, %r6}")}[width]
    access = (f"ld.volatile.shared{vec[0]}.b32 {vec[1]}, [%rd2];" if load
              else f"mov.u32 %r3, 1; mov.u32 %r4, 2; mov.u32 %r5, 3; mov.u32 %r6, 4;\n"
                   f"st.volatile.shared{vec[0]}.b32 [%rd2], {vec[1]};")
    return f""".visible .entry {name}(.param .u64 out)
{{
.reg .b32 %r<8>; .reg .b64 %rd<8>;
mov.u32 %r1, %tid.x;
{offset}
mov.u64 %rd1, smem; cvt.u64.u32 %rd3, %r2; add.s64 %rd2, %rd1, %rd3;
{access}
ld.param.u64 %rd4, [out]; mul.wide.u32 %rd5, %r1, 4; add.s64 %rd6, %rd4, %rd5;
st.global.u32 [%rd6], %r3;
ret;
}}
"""


PTX = ".version 7.8\n.target sm_90\n.address_size 64\n.shared .align 16 .b8 smem[8192];\n" + "".join(
    kernel(n, *p) for n, p in PATTERNS.items())

if __name__ == "__main__":
    L = C.CDLL("libcuda.so.1")
    V = C.c_void_p
    U = C.c_uint64
    L.cuMemAlloc_v2.argtypes = [C.POINTER(U), C.c_size_t]

    def ok(r):
        assert r == 0, r

    ok(L.cuInit(0))
    dev = C.c_int()
    ok(L.cuDeviceGet(C.byref(dev), 0))
    ctx = V()
    ok(L.cuCtxCreate_v2(C.byref(ctx), 0, dev))
    m = V()
    ok(L.cuModuleLoadData(C.byref(m), PTX.encode() + b"\0"))
    buf = U()
    ok(L.cuMemAlloc_v2(C.byref(buf), 4096))
    arg = U(buf.value)
    args = (V * 1)(C.addressof(arg))
    for name in PATTERNS:
        f = V()
        ok(L.cuModuleGetFunction(C.byref(f), m, name.encode()))
        ok(L.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, None, args, None))
        ok(L.cuCtxSynchronize())
        print("launched", name)
