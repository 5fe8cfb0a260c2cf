"""Energy conservation of the two integrators on a Plummer sphere, plotted with
matplotlib: the Rust example plummer_energy (examples/plummer_energy.rs) from Python.

    pip install matplotlib
    python python/examples/plummer_energy.py [--n 1024] [--t 20] [--dt 0.01] [--out plummer_energy.png]

Semi-implicit Euler (Warp's example's) is first order in dt, leapfrog second:
|E(t) - E0| / |E0| (energies summed in float64 by the library) on a log axis.
"""

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import nbody  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--n", type=int, default=1024)
parser.add_argument("--t", type=float, default=20.0)
parser.add_argument("--dt", type=float, default=0.01)
parser.add_argument("--softening", type=float, default=0.05)
parser.add_argument("--seed", type=int, default=7)
parser.add_argument("--out", default="plummer_energy.png")
args = parser.parse_args()

bodies = nbody.ic.plummer(args.n, args.seed)  # Henon units: crossing time about 2.8
steps = max(1, round(args.t / args.dt))
samples = min(steps, 200)
fig, ax = plt.subplots(figsize=(9, 5.6))
for integrator in ("euler", "leapfrog"):
    sim = nbody.Simulation(bodies, dt=args.dt, softening=args.softening, integrator=integrator, backend="auto")
    e0 = sim.energy()
    times, errors = [], []
    for k in range(1, samples + 1):
        sim.step(steps * k // samples - sim.steps_done)
        times.append(sim.time)
        errors.append(max(sim.energy().relative_change_from(e0), 1e-16))
    print(f"{integrator:>9}: {steps} steps, |dE/E| at t = {sim.time:.0f}: {errors[-1]:.2e}, max {max(errors):.2e}")
    ax.semilogy(times, errors, label=integrator)
ax.set_xlabel("time (N-body units)")
ax.set_ylabel("|E(t) - E0| / |E0|")
ax.set_title(f"Plummer sphere, N = {args.n}, dt = {args.dt}, softening = {args.softening} ({sim.device})")
ax.legend()
fig.savefig(args.out, dpi=100)
print(f"wrote {args.out}")
