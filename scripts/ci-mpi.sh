#!/usr/bin/env bash
# CI for distributed runs (feature `mpi`, issue 18): installs OpenMPI and
# libclang (apt, for rsmpi's bindgen) where they are missing, then
#   1. clippy with --features mpi (the library, tests and nbody_mpi);
#   2. tests/distributed.rs under mpirun with 1, 2, 3 and 4 ranks,
#      oversubscribed on this 2-core machine: the ring against the f64 oracle
#      and one process (N = 1001, 777, 601, ... divide by none of 2, 3, 4;
#      N = 3 on 4 ranks leaves a rank empty), resume of the checkpoints the
#      runs with other rank counts left in one shared directory, snapshots
#      and the archive through rank 0, errors and divergence on every rank
#      alike, the emulator as the ranks' backend;
#   3. nbody_mpi end to end: the result line with ranks=, a checkpoint and
#      an archive written on 2 ranks and continued on 3 and in nbody_tiled,
#      the same bits with 1 and 2 threads per rank, exit statuses.
# Fails loudly on any error. About 5-7 minutes on 2 cores, most of it
# compiling.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n---- [ci-mpi %4ds] %s\n' "$(( $(date +%s) - start ))" "$*"; }

step "OpenMPI and libclang (apt)"
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null \
  || ! compgen -G '/usr/lib/llvm-*/lib/libclang*.so*' >/dev/null; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq openmpi-bin libopenmpi-dev libclang-dev >/dev/null
fi
mpirun --version | head -n 1
# CI runs as root in a container: OpenMPI refuses that unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_n() { mpirun --oversubscribe -n "$@"; }

step "clippy --features mpi (all targets, -D warnings)"
cargo clippy -p nbody-host --features mpi --all-targets -- -D warnings

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

step "tests/distributed.rs under mpirun, 1 to 4 ranks"
triple=$(rustc -vV | sed -n 's/^host: //p' | tr 'a-z-' 'A-Z_')
for p in 1 2 3 4; do
  env "CARGO_TARGET_${triple}_RUNNER=mpirun --oversubscribe -n $p" NBODY_MPI_DIR="$work/tests" \
    cargo test -p nbody-host --features mpi --test distributed
done
cargo test -p nbody-host --features mpi --doc distributed

step "nbody_mpi end to end (the test profile: built above)"
cargo build -q -p nbody-host --features mpi --profile test --example nbody_mpi --example nbody_tiled
bin=${CARGO_TARGET_DIR:-target}/debug/examples
run_dir=$work/run
mkdir -p "$run_dir"

out=$(mpirun_n 3 "$bin/nbody_mpi" --n 1000 --steps 4 --ic plummer --dt 0.001 --backend cpu)
echo "$out" | tail -n 3
echo "$out" | tail -n 1 | grep -Eq '^result backend=cpu kernel=ring-third-law integrator=euler n=1000 steps=4 seconds=[0-9.e-]+ pips=[0-9.e+-]+ energy_rel_change=[0-9.e-]+ ranks=3$' \
  || { echo "FAIL: the result line"; exit 1; }

# A checkpoint and an archive on 2 ranks, continued on 3 ranks, then in one process.
mpirun_n 2 "$bin/nbody_mpi" --n 3001 --steps 6 --integrator leapfrog --ring all-pairs \
  --checkpoint "$run_dir/run.ckpt" --archive "$run_dir/run.nbar" --every 3 | tail -n 1
mpirun_n 3 "$bin/nbody_mpi" --resume "$run_dir/run.ckpt" --steps 9 \
  --checkpoint "$run_dir/run.ckpt" --archive "$run_dir/run.nbar" --every 3 | tail -n 1 | tee "$run_dir/three.txt"
grep -q "steps=3 .* ranks=3$" "$run_dir/three.txt" || { echo "FAIL: the resumed run"; exit 1; }
"$bin/nbody_tiled" --resume "$run_dir/run.ckpt" --steps 12 --backend cpu | tail -n 1

# The same bits with 1 and 2 threads per rank (no core binding, so that
# rayon may use both cores).
for t in 1 2; do
  RAYON_NUM_THREADS=$t mpirun --oversubscribe --bind-to none -x RAYON_NUM_THREADS -n 2 \
    "$bin/nbody_mpi" --n 2500 --steps 3 --no-energy --backend cpu --save "$run_dir/threads$t.npy" >/dev/null
done
cmp "$run_dir/threads1.npy" "$run_dir/threads2.npy" || { echo "FAIL: bits depend on the thread count"; exit 1; }
echo "ok: the same bits on 1 and 2 threads per rank"

# Exit statuses: the same on every rank, one error line.
expect_status() {
  local want=$1
  shift
  set +e
  mpirun_n 2 "$bin/nbody_mpi" "$@" >"$run_dir/out.txt" 2>"$run_dir/err.txt"
  local got=$?
  set -e
  if [ "$got" -ne "$want" ] || [ "$(grep -c '^error: ' "$run_dir/err.txt")" -ne 1 ]; then
    echo "FAIL: nbody_mpi $*: exit status $got (want $want), stderr:"
    cat "$run_dir/err.txt"
    exit 1
  fi
  echo "ok: exit status $want: $(grep '^error: ' "$run_dir/err.txt")"
}
expect_status 2 --bogus
expect_status 2 --n 100 --render "$run_dir/x.gif"
expect_status 3 --n 0
expect_status 3 --n 100 --dt -1
expect_status 4 --n 100 --checkpoint "$run_dir/missing/dir/run.ckpt"
expect_status 2 --n 100 --checkpoint "$run_dir/run.ckpt"

step "done in $(( $(date +%s) - start )) s"
