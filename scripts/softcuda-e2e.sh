#!/usr/bin/env bash
# End to end on the software CUDA device: the shipped CUDA engine, through
# cust, runs nbody_tiled for every kernel x integrator, and its initial and
# final energies must match the CPU backend's (same binary, --backend cpu)
# to 1e-5 relative. Any SOFTCUDA_* variable passes through, e.g.
#
#   scripts/softcuda-e2e.sh                                   # hostile ordering, deterministic schedule
#   SOFTCUDA_SCHEDULE=adversarial SOFTCUDA_SEED=3 scripts/softcuda-e2e.sh
#   SOFTCUDA_STREAMS=non-blocking scripts/softcuda-e2e.sh     # the stream the engine asks for (see softcuda/README.md)
#
# Options: --n N (default 200), --steps S (default 3), --block B (default 64).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=200 steps=3 block=64
while [ $# -gt 0 ]; do
  case $1 in
    --n) n=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --block) block=$2; shift 2 ;;
    *) echo "usage: $0 [--n N] [--steps S] [--block B]" >&2; exit 2 ;;
  esac
done
cd "$root"
scripts/with-softcuda.sh cargo build --quiet --release -p nbody-host --features cuda --example nbody_tiled
bin=$(mktemp -d)/nbody_tiled
cp "${CARGO_TARGET_DIR:-target}/release/examples/nbody_tiled" "$bin"

energies() { # backend kernel integrator -> "e0 e1"
  scripts/with-softcuda.sh "$bin" --backend "$1" --n "$n" --steps "$steps" --block "$block" \
    --kernel "$2" --integrator "$3" | awk '$1 == "energy" { gsub(/,/, "", $4); print $2, $4 }'
}

fail=0
for kernel in simt tiled triangle split auto; do
  for integrator in euler leapfrog; do
    cpu=$(energies cpu $kernel $integrator)
    gpu=$(energies cuda $kernel $integrator) || { echo "FAIL $kernel $integrator: the CUDA run failed"; fail=1; continue; }
    verdict=$(echo "$cpu $gpu" | awk '{
      d0 = ($1 - $3) / ($1 == 0 ? 1 : $1); d1 = ($2 - $4) / ($2 == 0 ? 1 : $2);
      if (d0 < 0) d0 = -d0; if (d1 < 0) d1 = -d1;
      if ($3 != $3 || $4 != $4 || d0 > 1e-5 || d1 > 1e-5) print "FAIL"; else print "ok"}')
    echo "$verdict $kernel $integrator: cpu E0 E1 = $cpu, softcuda E0 E1 = $gpu"
    [ "$verdict" = ok ] || fail=1
  done
done
rm -rf "$(dirname "$bin")"
exit $fail
