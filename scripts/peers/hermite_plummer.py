"""The collisional goals' peers (issue 26): the f64 Plummer test data, its
REBOUND IAS15 reference, and a straightforward Numba f64 Hermite force loop.

usage:
  hermite_plummer.py make OUT.npy [N] [SEED]     the f64 Plummer sphere (N = 512, seed 26)
  hermite_plummer.py rebound IN.npy OUT.npy      IAS15 to t = 1, softening 0.01, G = 1
  hermite_plummer.py numba N REPEATS             force+jerk+potential of all N bodies, f64,
                                                 prints 'pips=' (interactions per second)

`make` draws the sphere of Aarseth, Henon & Wielen (1974) with numpy's
PCG64 generator (deterministic for a seed), in Henon units (G = M = 1,
E = -1/4), equal masses, centre of mass and its velocity at the origin,
and writes an (N, 7) float64 array x y z vx vy vz m. The committed test
data (nbody-host/tests/data/plummer512*.npy) were made by
scripts/hermite-goals.sh, which installs numpy, numba and rebound in a venv.
"""
import math
import sys
import time

import numpy as np


def plummer(n, seed):
    rng = np.random.default_rng(seed)
    pos = np.empty((n, 3))
    vel = np.empty((n, 3))
    for i in range(n):
        while True:
            r = 1.0 / math.sqrt(rng.uniform(1e-10, 1.0) ** (-2.0 / 3.0) - 1.0)
            if r < 10.0:
                break
        z = rng.uniform(-1.0, 1.0)
        phi = rng.uniform(0.0, 2.0 * math.pi)
        s = math.sqrt(1.0 - z * z)
        pos[i] = r * np.array([s * math.cos(phi), s * math.sin(phi), z])
        while True:
            q = rng.uniform(0.0, 1.0)
            if rng.uniform(0.0, 0.1) < q * q * (1.0 - q * q) ** 3.5:
                break
        v = q * math.sqrt(2.0) * (1.0 + r * r) ** -0.25
        z = rng.uniform(-1.0, 1.0)
        phi = rng.uniform(0.0, 2.0 * math.pi)
        s = math.sqrt(1.0 - z * z)
        vel[i] = v * np.array([s * math.cos(phi), s * math.sin(phi), z])
    pos *= 3.0 * math.pi / 16.0
    vel /= math.sqrt(3.0 * math.pi / 16.0)
    pos -= pos.mean(axis=0)
    vel -= vel.mean(axis=0)
    out = np.empty((n, 7))
    out[:, 0:3] = pos
    out[:, 3:6] = vel
    out[:, 6] = 1.0 / n
    return out


def energy(s, eps2):
    pos, vel, m = s[:, 0:3], s[:, 3:6], s[:, 6]
    kin = 0.5 * np.sum(m * np.sum(vel * vel, axis=1))
    pot = 0.0
    for i in range(len(m) - 1):
        d = pos[i + 1:] - pos[i]
        pot -= m[i] * np.sum(m[i + 1:] / np.sqrt(np.sum(d * d, axis=1) + eps2))
    return kin + pot


def run_rebound(src, dst):
    import rebound

    s = np.load(src)
    sim = rebound.Simulation()
    sim.G = 1.0
    sim.softening = 0.01
    sim.integrator = "ias15"
    sim.exact_finish_time = 1
    for row in s:
        sim.add(m=row[6], x=row[0], y=row[1], z=row[2], vx=row[3], vy=row[4], vz=row[5])
    sim.integrate(1.0)
    out = np.empty_like(s)
    for i, p in enumerate(sim.particles):
        out[i] = [p.x, p.y, p.z, p.vx, p.vy, p.vz, p.m]
    np.save(dst, out)
    e0, e1 = energy(s, 1e-4), energy(out, 1e-4)
    print(f"rebound {rebound.__version__} ias15: t = {sim.t}, dE/E = {abs((e1 - e0) / e0):.3e}")


def run_numba(n, repeats):
    import numba as nb

    @nb.njit(parallel=True, fastmath=True)
    def force_jerk(x, v, m, eps2, acc, jerk, pot):
        for i in nb.prange(x.shape[0]):
            ax = ay = az = jx = jy = jz = p = 0.0
            for j in range(x.shape[0]):
                if j == i:
                    continue
                dx = x[j, 0] - x[i, 0]
                dy = x[j, 1] - x[i, 1]
                dz = x[j, 2] - x[i, 2]
                du = v[j, 0] - v[i, 0]
                dv = v[j, 1] - v[i, 1]
                dw = v[j, 2] - v[i, 2]
                r2 = dx * dx + dy * dy + dz * dz + eps2
                rinv = 1.0 / math.sqrt(r2)
                rinv2 = rinv * rinv
                mr = m[j] * rinv
                mr3 = mr * rinv2
                rv = 3.0 * (dx * du + dy * dv + dz * dw) * rinv2
                ax += mr3 * dx
                ay += mr3 * dy
                az += mr3 * dz
                jx += mr3 * (du - rv * dx)
                jy += mr3 * (dv - rv * dy)
                jz += mr3 * (dw - rv * dz)
                p -= mr
            acc[i, 0] = ax
            acc[i, 1] = ay
            acc[i, 2] = az
            jerk[i, 0] = jx
            jerk[i, 1] = jy
            jerk[i, 2] = jz
            pot[i] = p

    s = plummer(n, 1)
    x, v, m = np.ascontiguousarray(s[:, 0:3]), np.ascontiguousarray(s[:, 3:6]), s[:, 6].copy()
    acc, jerk, pot = np.empty((n, 3)), np.empty((n, 3)), np.empty(n)
    force_jerk(x, v, m, 1e-4, acc, jerk, pot)  # compile
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        force_jerk(x, v, m, 1e-4, acc, jerk, pot)
        best = min(best, time.perf_counter() - t0)
    print(f"result peer=numba-f64-hermite n={n} threads={nb.get_num_threads()} seconds={best:.6f} pips={n * n / best:.4e}")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "make":
        n = int(sys.argv[3]) if len(sys.argv) > 3 else 512
        seed = int(sys.argv[4]) if len(sys.argv) > 4 else 26
        np.save(sys.argv[2], plummer(n, seed))
    elif what == "rebound":
        run_rebound(sys.argv[2], sys.argv[3])
    elif what == "numba":
        run_numba(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(__doc__)
