#!/usr/bin/env bash
# The md driver (examples/md.rs) with --backend cuda on the software CUDA
# device against the same run on the CPU: 256 atoms of in.lj (fcc 4^3,
# density 0.8442, T 1.44), shifted LJ 2.5, skin 0.3, 50 steps, thermo every
# 10, under NVE, NVT (Nose-Hoover, T 1.0, Tdamp 0.5), Langevin and NPT
# (T 1.44, Tdamp 0.5, iso P 0.5, Pdamp 0.2: the box shrinks as the lattice
# melts, the lists rebuilt every step in the new box). Every
# thermo row (Temp PotEng KinEng TotEng Press) must agree to 1e-4 relative
# (f32 rounding; measured a few 1e-6) and the result line must name the
# backend. About a minute once the release build is there.
#   scripts/softcuda-md-e2e.sh [--steps S]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
steps=50
while [ $# -gt 0 ]; do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    *) echo "usage: $0 [--steps S]" >&2; exit 2 ;;
  esac
done
cd "$root"
scripts/with-softcuda.sh cargo build --quiet --release -p nbody-host --features cuda --example md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/md
cp "${CARGO_TARGET_DIR:-target}/release/examples/md" "$bin"

run() { # backend ensemble-flags... -> the output
  local backend=$1; shift
  scripts/with-softcuda.sh "$bin" --backend "$backend" --cells 4 --density 0.8442 --temp 1.44 \
    --seed 87287 --pair lj 2.5 --shift --skin 0.3 --dt 0.005 --steps "$steps" --thermo 10 "$@"
}
rows() { awk 'NF == 6 && $1 ~ /^[0-9]+$/ { print }'; }

fail=0
for ensemble in "nve" "nvt --temp-target 1.0 --tdamp 0.5" "langevin --temp-target 1.0 --tdamp 0.5" \
  "npt --temp-target 1.44 --tdamp 0.5 --press-target 0.5 --pdamp 0.2"; do
  # shellcheck disable=SC2086
  run cpu --ensemble $ensemble > "$tmp/cpu.txt"
  # shellcheck disable=SC2086
  if ! run cuda --ensemble $ensemble > "$tmp/cuda.txt" 2>&1; then
    echo "FAIL $ensemble: the CUDA run failed:"; cat "$tmp/cuda.txt"; fail=1; continue
  fi
  grep -q "^result backend=cuda " "$tmp/cuda.txt" || { echo "FAIL $ensemble: no 'result backend=cuda' line"; fail=1; }
  rows < "$tmp/cpu.txt" > "$tmp/cpu.rows"
  rows < "$tmp/cuda.txt" > "$tmp/cuda.rows"
  count=$(wc -l < "$tmp/cpu.rows")
  if [ "$count" -lt 2 ] || [ "$count" != "$(wc -l < "$tmp/cuda.rows")" ]; then
    echo "FAIL $ensemble: $count CPU thermo rows, $(wc -l < "$tmp/cuda.rows") CUDA rows"; fail=1; continue
  fi
  verdict=$(paste "$tmp/cpu.rows" "$tmp/cuda.rows" | awk '{
    if ($1 != $7) bad = 1;
    for (k = 2; k <= 6; k++) {
      d = ($k - $(k + 6)); if (d < 0) d = -d;
      m = $k; if (m < 0) m = -m; if (m < 1) m = 1;
      if (d / m > worst) worst = d / m;
      if ($(k + 6) != $(k + 6)) bad = 1;
    }
  } END { printf "%s %.2e\n", (bad || worst > 1e-4) ? "FAIL" : "ok", worst }')
  echo "${verdict%% *} $ensemble: $count thermo rows, largest relative difference ${verdict#* }"
  [ "${verdict%% *}" = ok ] || fail=1
done
exit $fail
