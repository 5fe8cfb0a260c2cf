"""The same system in REBOUND and in nbody, side by side.

    pip install rebound
    python python/examples/compare_rebound.py [--n 256] [--t 1.0] [--dt 0.001]

A Plummer sphere (N-body units) integrated to time t with leapfrog, softening
eps and the same dt in both: REBOUND (float64, its "leapfrog" integrator,
drift-kick-drift) and nbody (float32, kick-drift-kick). Prints both final
states' summaries, their energy errors (one float64 sum for both), and how far
apart the bodies ended up.
"""

import argparse
import time

import numpy as np
import rebound

import nbody

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--n", type=int, default=256)
parser.add_argument("--t", type=float, default=1.0)
parser.add_argument("--dt", type=float, default=1e-3)
parser.add_argument("--softening", type=float, default=0.05)
parser.add_argument("--seed", type=int, default=1)
args = parser.parse_args()

bodies = nbody.ic.plummer(args.n, args.seed)
steps = round(args.t / args.dt)

# REBOUND: float64, the same initial state (the float32 values, exactly).
rsim = rebound.Simulation()
rsim.G = 1.0
rsim.softening = args.softening
rsim.integrator = "leapfrog"
rsim.dt = args.dt
for x, y, z, vx, vy, vz, m in bodies.astype(np.float64):
    rsim.add(m=m, x=x, y=y, z=z, vx=vx, vy=vy, vz=vz)
start = time.perf_counter()
rsim.steps(steps)
rebound_seconds = time.perf_counter() - start
xyz, vxvyvz = np.zeros((args.n, 3)), np.zeros((args.n, 3))  # contiguous, as REBOUND writes them
rsim.serialize_particle_data(xyz=xyz, vxvyvz=vxvyvz)
rebound_state = np.hstack([xyz, vxvyvz, bodies[:, 6:7].astype(np.float64)])

# nbody: float32, leapfrog, on the CPU (bit-reproducible on any thread count).
sim = nbody.Simulation(bodies, softening=args.softening, dt=args.dt, G=1.0, kernel="triangle",
                       integrator="leapfrog", backend="cpu")
start = time.perf_counter()
sim.step(steps)
nbody_seconds = time.perf_counter() - start



def energy(state: np.ndarray) -> float:
    """Kinetic plus softened potential, float64, the same sum for both (REBOUND's
    own energy() leaves the softening out of the potential)."""
    x, v, m = state[:, :3], state[:, 3:6], state[:, 6]
    d = x[None, :, :] - x[:, None, :]
    r = np.sqrt((d * d).sum(-1) + args.softening**2)
    i, j = np.triu_indices(len(m), 1)
    return 0.5 * (m * (v * v).sum(1)).sum() - (m[i] * m[j] / r[i, j]).sum()


e_start = energy(bodies.astype(np.float64))
ours = sim.bodies.astype(np.float64)
for name, t, state, seconds in (
    ("REBOUND", rsim.t, rebound_state, rebound_seconds),
    ("nbody", sim.time, ours, nbody_seconds),
):
    de = abs((energy(state) - e_start) / e_start)
    com = (state[:, 6:7] * state[:, :3]).sum(axis=0) / state[:, 6].sum()
    print(f"{name:>8}: t = {t:.6f} after {steps} steps in {seconds:.3f} s; |dE/E| = {de:.3e}; "
          f"x0 = {np.array2string(state[0, :3], precision=6)}; centre of mass {np.array2string(com, precision=2)}")

dx = np.linalg.norm(ours[:, :3] - xyz, axis=1)
dv = np.linalg.norm(ours[:, 3:6] - vxvyvz, axis=1)
print(f"difference: positions median {np.median(dx):.2e}, max {dx.max():.2e}; velocities median "
      f"{np.median(dv):.2e}, max {dv.max():.2e} (float32 against float64, kick-drift-kick against "
      "drift-kick-drift)")
