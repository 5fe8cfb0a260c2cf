"""What the CUDA driver answers to calls made while a stream capture is open (issue 24: the
software device's capture rules, softcuda-driver/src/graph.rs, were partly inferred from reports).

    python3 capture_probe.py OUT.json             # on a GPU: record the driver's answers
    scripts/with-softcuda.sh python3 scripts/gpu/capture_probe.py --compare H200.json
                                                  # the software device against a recorded file
                                                  # (exit 1 listing every case that differs)

For each capture mode (global, thread-local, relaxed) on a non-blocking stream: a capture with one
queued memset is opened, one call is made (on the capturing thread or another one), then the capture
is ended. Each case records the call's result, what cuStreamIsCapturing says after it, and the
result of cuStreamEndCapture. Python's standard library and libcuda.so.1 only; case names are
stable: add cases, never rename.
"""
import ctypes as C
import json
import sys
import threading

L = C.CDLL("libcuda.so.1")
V = C.c_void_p
U = C.c_uint64
L.cuMemAlloc_v2.argtypes = [C.POINTER(U), C.c_size_t]
L.cuMemFree_v2.argtypes = [U]
L.cuMemsetD8Async.argtypes = [U, C.c_ubyte, C.c_size_t, V]
L.cuMemcpyDtoH_v2.argtypes = [V, U, C.c_size_t]
L.cuStreamBeginCapture_v2.argtypes = [V, C.c_int]
L.cuStreamEndCapture.argtypes = [V, C.POINTER(V)]
L.cuStreamIsCapturing.argtypes = [V, C.POINTER(C.c_int)]
L.cuStreamSynchronize.argtypes = [V]
L.cuGraphDestroy.argtypes = [V]
L.cuCtxSetCurrent.argtypes = [V]

MODES = {"global": 0, "thread-local": 1, "relaxed": 2}
NON_BLOCKING = 1


def ok(r):
    assert r == 0, r


ok(L.cuInit(0))
dev = C.c_int()
ok(L.cuDeviceGet(C.byref(dev), 0))
ctx = V()
ok(L.cuCtxCreate_v2(C.byref(ctx), 0, dev))
buf = U()
ok(L.cuMemAlloc_v2(C.byref(buf), 4096))
host = (C.c_ubyte * 16)()


def ctx_sync():
    return L.cuCtxSynchronize()


def alloc_free():
    p = U()
    r = L.cuMemAlloc_v2(C.byref(p), 256)
    if r == 0:
        L.cuMemFree_v2(p)
    return r


def legacy_read():
    return L.cuMemcpyDtoH_v2(C.cast(host, V), buf, 16)


CALLS = {"cuCtxSynchronize": ctx_sync, "cuMemAlloc": alloc_free, "cuMemcpyDtoH (legacy stream)": legacy_read}


def case(mode, call, other_thread):
    stream = V()
    ok(L.cuStreamCreate(C.byref(stream), NON_BLOCKING))
    out = {"begin": L.cuStreamBeginCapture_v2(stream, MODES[mode])}
    ok(L.cuMemsetD8Async(buf, 0, 4096, stream))
    if other_thread:
        res = {}

        def run():
            L.cuCtxSetCurrent(ctx)
            res["r"] = CALLS[call]()

        t = threading.Thread(target=run)
        t.start()
        t.join()
        out["call"] = res["r"]
    else:
        out["call"] = CALLS[call]()
    status = C.c_int(-1)
    out["is_capturing"] = L.cuStreamIsCapturing(stream, C.byref(status))
    out["capture_status"] = status.value
    graph = V()
    out["end"] = L.cuStreamEndCapture(stream, C.byref(graph))
    if out["end"] == 0 and graph.value:
        L.cuGraphDestroy(graph)
    # Whatever the capture left behind must not leak into the next case.
    L.cuStreamSynchronize(stream)
    L.cuCtxSynchronize()
    L.cuStreamDestroy_v2(stream)
    return out


cases = {}
for mode in MODES:
    for call in CALLS:
        for other in (False, True):
            cases[f"{mode} capture: {call} on {'another' if other else 'the capturing'} thread"] = case(
                mode, call, other)

if len(sys.argv) == 3 and sys.argv[1] == "--compare":
    want = json.load(open(sys.argv[2]))
    bad = [name for name, got in cases.items() if name in want and want[name] != got]
    for name in bad:
        print(f"differs: {name}: recorded {want[name]}, here {cases[name]}")
    missing = [name for name in want if name not in cases]
    for name in missing:
        print(f"missing here: {name}")
    print(f"{len(cases) - len(bad)} of {len(cases)} cases as recorded")
    sys.exit(1 if bad or missing else 0)
json.dump(cases, open(sys.argv[1], "w"), indent=1, sort_keys=True)
for name, got in cases.items():
    print(name, got)
