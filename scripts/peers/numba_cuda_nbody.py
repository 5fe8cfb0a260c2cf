"""A GPU peer: the shared-memory tiled all-pairs kernel (GPU Gems 3, ch. 31)
as a Numba user writes it (numba-cuda, fastmath), timed with CUDA events.

usage: python3 numba_cuda_nbody.py N STEPS [BLOCK]   -> prints 'pips=...'
The metric of nbody_tiled and of the cuda-samples peer
(scripts/peers/cuda_samples_nbody.cu): N^2 interactions per step, whole
steps (one launch computes the accelerations of all N bodies, eps^2 = 0.01,
unit masses, and integrates them, positions double-buffered as the
cuda-samples kernel does), timed with CUDA events, best of 3 runs of STEPS
steps after a warm-up step. The warm-up step starts from rest, so its
velocities are the accelerations times dt: the first bodies are checked
against float64. Under NUMBA_ENABLE_CUDASIM=1 (no GPU) it runs on Numba's
simulator, for a tiny N, to check this code (the times are then the
simulator's, not a GPU's).
"""
import math
import sys

import numpy as np

if not hasattr(np, "row_stack"):  # numba 0.68 still calls it; numpy 2.5 removed it
    np.row_stack = np.vstack
from numba import cuda, float32  # noqa: E402


def make_kernel(block):
    @cuda.jit(fastmath=True)
    def step(px, py, pz, pm, qx, qy, qz, vx, vy, vz, n, eps2, dt):
        """One whole step: accelerations from (px, py, pz), then the
        velocities and the new positions (qx, qy, qz)."""
        sx = cuda.shared.array(block, float32)
        sy = cuda.shared.array(block, float32)
        sz = cuda.shared.array(block, float32)
        sm = cuda.shared.array(block, float32)
        i = cuda.grid(1)
        t = cuda.threadIdx.x
        xi = px[i] if i < n else float32(0.0)
        yi = py[i] if i < n else float32(0.0)
        zi = pz[i] if i < n else float32(0.0)
        a0 = float32(0.0)
        a1 = float32(0.0)
        a2 = float32(0.0)
        for tile in range((n + block - 1) // block):
            j = tile * block + t
            if j < n:
                sx[t] = px[j]
                sy[t] = py[j]
                sz[t] = pz[j]
                sm[t] = pm[j]
            else:
                sx[t] = float32(0.0)
                sy[t] = float32(0.0)
                sz[t] = float32(0.0)
                sm[t] = float32(0.0)
            cuda.syncthreads()
            for k in range(block):
                dx = sx[k] - xi
                dy = sy[k] - yi
                dz = sz[k] - zi
                r2 = dx * dx + dy * dy + dz * dz + eps2
                inv = float32(1.0) / math.sqrt(r2)
                s = sm[k] * inv * inv * inv
                a0 += dx * s
                a1 += dy * s
                a2 += dz * s
            cuda.syncthreads()
        if i < n:
            wx = vx[i] + a0 * dt
            wy = vy[i] + a1 * dt
            wz = vz[i] + a2 * dt
            vx[i] = wx
            vy[i] = wy
            vz[i] = wz
            qx[i] = xi + wx * dt
            qy[i] = yi + wy * dt
            qz[i] = zi + wz * dt

    return step


def main():
    n = int(sys.argv[1])
    steps = int(sys.argv[2])
    block = int(sys.argv[3]) if len(sys.argv) > 3 else 256
    dt = 1e-3
    rng = np.random.default_rng(1)
    pos = rng.uniform(-1.0, 1.0, size=(3, n)).astype(np.float32)
    bufs = [
        [cuda.to_device(np.ascontiguousarray(pos[c])) for c in range(3)],
        [cuda.device_array(n, dtype=np.float32) for _ in range(3)],
    ]
    dm = cuda.to_device(np.ones(n, dtype=np.float32))
    vel = [cuda.to_device(np.zeros(n, dtype=np.float32)) for _ in range(3)]
    kernel = make_kernel(block)
    grid = (n + block - 1) // block
    current = [0]

    def step():
        src, dst = bufs[current[0]], bufs[1 - current[0]]
        kernel[grid, block](*src, dm, *dst, *vel, np.int32(n), np.float32(0.01), np.float32(dt))
        current[0] = 1 - current[0]

    step()  # compile and warm up, from rest: velocity = a dt
    cuda.synchronize()
    a = np.stack([v.copy_to_host() for v in vel]).astype(np.float64) / np.float32(dt)
    assert np.isfinite(a).all()
    # The peer computes what we compute: its first bodies against float64.
    p64 = pos.astype(np.float64)
    for i in range(min(n, 8)):
        dr = p64 - p64[:, i : i + 1]
        ref = (dr / (np.sum(dr * dr, axis=0) + 0.01) ** 1.5).sum(axis=1)
        assert np.allclose(a[:, i], ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max()), (i, a[:, i], ref)
    best = math.inf
    for _ in range(3):
        start, stop = cuda.event(), cuda.event()
        start.record()
        for _ in range(steps):
            step()
        stop.record()
        stop.synchronize()
        best = min(best, start.elapsed_time(stop) / 1e3)
    best = max(best, 1e-9)  # the CUDA simulator's events read 0
    print(f"peer=numba-cuda-tiled n={n} steps={steps} block={block} seconds={best:.6f} pips={n * n * steps / best:.6e}")


if __name__ == "__main__":
    main()
