"""LAMMPS's in.lj melt from Python: the Rust example lj_melt, with its thermo table.

    python python/examples/lj_melt.py [--cells 10] [--steps 100] [--thermo 50]

An fcc lattice at reduced density 0.8442 (4 cells^3 atoms), velocities at
T = 1.44, lj/cut 2.5, skin 0.3, lists rebuilt every 20 steps, velocity Verlet
with dt = 0.005: LAMMPS's thermo columns, energies per atom, as LAMMPS prints them.
"""

import argparse
import time

import nbody

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--cells", type=int, default=10)
parser.add_argument("--steps", type=int, default=100)
parser.add_argument("--thermo", type=int, default=50)
parser.add_argument("--shift", action="store_true")
args = parser.parse_args()

atoms, side = nbody.ic.fcc_lattice(args.cells, density=0.8442, temperature=1.44, seed=87287)
lj = nbody.LennardJones(atoms, box=side, cutoff=2.5, skin=0.3, dt=0.005, shift=args.shift,
                        rebuild_every=20, backend="auto")
print(f"{len(lj)} atoms in a {side:.4f}^3 box on {lj.device} ({lj.method})")
columns = ("temp", "pe", "ke", "etotal", "press")
print(f"{'Step':>10}" + "".join(f"{name:>15}" for name in ("Temp", "PotEng", "KinEng", "TotEng", "Press")))


def row(t):
    print(f"{t['step']:>10}" + "".join(f"{t[c]:>15.10g}" for c in columns))


row(lj.thermo())
start = time.perf_counter()
while lj.steps_done < args.steps:
    lj.step(min(args.thermo, args.steps - lj.steps_done))
    row(lj.thermo())
seconds = time.perf_counter() - start
stats = lj.stats()
print(f"Loop time of {seconds:.6f} for {args.steps} steps with {len(lj)} atoms "
      f"({len(lj) * args.steps / seconds:.3e} atom-steps/s)")
if stats:
    print(f"Neighbor list builds = {stats['builds']}, dangerous builds = {stats['dangerous_builds']}")
