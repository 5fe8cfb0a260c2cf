#!/usr/bin/env bash
# The collisional goals of issue 26, reproducible: installs numpy, numba and
# rebound in a venv (target/hermite-venv), regenerates the f64 Plummer test
# data and REBOUND's IAS15 run of it into a temporary folder, checks them
# against the committed nbody-host/tests/data/plummer512*.npy (the sphere
# bit for bit, IAS15's positions to 1e-12), and runs tests/hermite_goals.rs.
# With --speed it also times the CPU force+jerk loops against the Numba peer
# (scripts/peers/hermite_plummer.py numba), best of 5, alternately, 3 rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/hermite-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check numpy numba rebound
py="$venv/bin/python"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" scripts/peers/hermite_plummer.py make "$tmp/plummer512.npy"
cmp "$tmp/plummer512.npy" nbody-host/tests/data/plummer512.npy
"$py" scripts/peers/hermite_plummer.py rebound "$tmp/plummer512.npy" "$tmp/ias15.npy"
"$py" - "$tmp/ias15.npy" nbody-host/tests/data/plummer512_ias15_t1.npy <<'PY'
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
d = np.abs(a[:, :3] - b[:, :3]).max()
print(f"regenerated IAS15 positions differ from the committed ones by {d:.1e}")
sys.exit(0 if d <= 1e-12 else 1)
PY
# The test profile and --workspace: the test binary `cargo test --workspace`
# (README, .ci/run) builds, so CI compiles nothing more here.
cargo test --workspace --test hermite_goals -- --nocapture 2>&1 | grep -E "plummer512|test result"
if [ "${1:-}" = "--speed" ]; then
  cargo build -q --release --example hermite_pips
  for _ in 1 2 3; do
    target/release/examples/hermite_pips 4096 5 f64
    target/release/examples/hermite_pips 4096 5 mixed
    "$py" scripts/peers/hermite_plummer.py numba 4096 5
  done
fi
