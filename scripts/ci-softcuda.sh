#!/usr/bin/env bash
# CI for the CUDA backend without a GPU: builds the software CUDA device's
# driver (softcuda-driver, a libcuda.so.1), builds nbody-host --features cuda
# against it (no CUDA installation) and runs Backend::Cuda on it, first in
# the deterministic schedule, then in the adversarial one with one seed
# chosen by the commit (SOFTCUDA_SEEDS picks others)
# (threads of a block arbitrarily far apart, blocks in random order):
#
#   - the kernel correctness suite against the f64 oracle (tests/correctness.rs
#     cuda::, every kernel x integrator, blocks 32..256 and the largest, eps 0
#     and 0.1, N = 1, 2, 3 ... 2048 including N not a multiple of the block;
#     the adversarial seeds run the smaller sizes, see `sizes()` there);
#   - the GPU-path defects (tests/gpu_path.rs, tests/cuda_backend.rs: stream
#     order under non-blocking streams, JIT block limits, the shared-memory
#     opt-in, an engine dropped on another thread) and the runtime errors that
#     need a device (DeviceMemoryExceeded, SharedMemoryExceeded,
#     CudaUnavailable, BlockExceedsKernelLimit) through SOFTCUDA_* variables;
#   - the block-pair primitive of the MPI ring (tests/cuda_block_pair.rs:
#     every operation against the f64 oracle, and the same defects: stream
#     order, JIT limits, opt-in, dropped on another thread);
#   - kill-and-resume (tests/snapshot.rs);
#   - the H200's bits (tests/gpu_bits.rs, deterministic schedule: SIMT and
#     tiled, 100 Euler steps, against tests/data/h200/; the MD plan's in
#     tests/md_gpu.rs cuda:: in every schedule) and
#     the driver's answers (scripts/gpu/jit_probe.py against
#     softcuda-driver/tests/data/h200_jit_probe.json, 49 cases);
#   - issue 23's CUDA graphs in the gravity plan (tests/cuda_graphs.rs: the
#     same bits with and without graphs for every kernel x integrator; the
#     driver log shows the captures and graph launches);
#   - issue 23 (tests/round_trips.rs): a gravity run of K steps waits for
#     the device as often for K = 200 as for K = 20, a safe-rebuild
#     Lennard-Jones run waits at most once per 8 steps (builds decided on
#     the device; so does a thermostatted one, NVT and Langevin), and
#     N = 4096 with the default kernel launches at least 65,536 force
#     threads;
#   - Lennard-Jones through the GPU MD plan on Backend::Cuda (tests/md_gpu.rs
#     cuda::, 256 atoms against the CPU engine and the f64 oracle through
#     rebuilds, checkpoints, errors, and with the non-blocking stream the
#     engine asks for; about 2 s deterministic, 10 s adversarial);
#   - issue 23 item 4 (tests/md_gpu_like_cpu.rs cuda::, 256 atoms): the
#     time split from CUDA events (modelled here), a checkpoint resumed bit
#     for bit under every schedule, and Error::DeviceMemoryExceeded on a
#     1 MiB device before anything is allocated; about 15 s deterministic;
#   - the thermostats on the GPU MD plan (tests/md_gpu_ensemble.rs cuda::,
#     256 atoms: NVT, Langevin, rescaling against the CPU engine over 200
#     steps and bit-identical checkpoint resumes in the deterministic
#     schedule; the same bits on every run in every schedule), and the md driver
#     with --backend cuda against --backend cpu, NVE, NVT and Langevin, 50
#     steps (scripts/softcuda-md-e2e.sh); NPT likewise (tests/md_gpu_npt.rs
#     cuda::, 500 atoms: the comparison with the CPU, the resume and the
#     squeezed box's stop in the deterministic schedule only, about 30 s;
#     the same bits in every schedule), and md --ensemble npt in the e2e
#     script;
#   - the Hermite integrator on Backend::Cuda (tests/hermite_gpu.rs cuda:::
#     the block-step engine against the CPU engine, the same bits on every
#     run, and, deterministic schedule only, the mixed kernel's force error
#     against f64 at N = 65,536; about 20 s);
#   - libgrape6 on Backend::Cuda (GRAPE6_BACKEND=cuda): grape6/tests/api.rs
#     against the f64 reference, and the C Plummer program
#     (grape6/tests/c/plummer.c, N = 512 to t = 1/16, every 10th block
#     checked against its direct sum and brute-force neighbours);
#   - nbody_tiled --backend cuda, every kernel x integrator against the CPU
#     backend (scripts/softcuda-e2e.sh), also with non-blocking streams;
#   - cargo bench --features cuda -- --quick on N = 1024 (modelled time);
#   - scripts/first-gpu.sh refusing at once where there is no GPU.
# (scripts/softcuda-mutations.sh, the mutations these tests must catch, takes
# about 8 more minutes and is not run here: see its header.)
#
# Measured (budget: 12 min): 698 s = 11.6 min from a target dir holding only
# what .ci/run's earlier steps build (test, release and bench profiles
# without the feature), on this project's 2-core VM while other jobs kept its
# load average between 100 and 250 (3.1 min compiling, 6.2 min of the four
# schedules, 1.1 min e2e, 1.2 min bench); 400 s in a less loaded run with
# the feature's test builds warm. An idle machine does better than either.
# 2026-11-26: 405 s with the test builds warm; tests/cuda_block_pair.rs adds
# about 30 s over the four schedules (3 s deterministic, 8-10 s per seed).
#   scripts/ci-softcuda.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$(date +%s)
step() { printf '\n---- softcuda [%4ds] %s\n' "$(($(date +%s) - start))" "$*"; }
sc=scripts/with-softcuda.sh
tests=(--test correctness --test cuda_backend --test cuda_block_pair --test gpu_path --test snapshot --test md_gpu --test md_gpu_like_cpu --test md_gpu_ensemble --test md_gpu_npt --test gpu_bits --test round_trips --test hermite_gpu --test cuda_graphs)

step "build: the driver, nbody-host --features cuda linked against it"
$sc cargo test -q -p nbody-host --features cuda "${tests[@]}" --no-run

# One schedule: the CUDA tests of every suite (filters apply per binary).
suite() {
  $sc cargo test -q -p nbody-host --features cuda --test correctness cuda::
  $sc cargo test -q -p nbody-host --features cuda --test cuda_backend
  $sc cargo test -q -p nbody-host --features cuda --test cuda_block_pair
  $sc cargo test -q -p nbody-host --features cuda --test gpu_path
  $sc cargo test -q -p nbody-host --features cuda --test cuda_graphs
  $sc cargo test -q -p nbody-host --features cuda --test snapshot kill_and_resume
  $sc cargo test -q -p nbody-host --features cuda --test md_gpu cuda::
  $sc cargo test -q -p nbody-host --features cuda --test md_gpu_like_cpu cuda::
  # (The 200-step comparisons with the CPU and the resumes in the
  # deterministic schedule only: 37 s there; the rest 30 s per adversarial seed.)
  $sc cargo test -q -p nbody-host --features cuda --test md_gpu_ensemble cuda:: -- ${ENSEMBLE_SKIP:-}
  # NPT (500 atoms, a build and a round trip per step): the same skips.
  $sc cargo test -q -p nbody-host --features cuda --test md_gpu_npt cuda:: -- ${ENSEMBLE_SKIP:-}
  # (The N = 65,536 force-error test in the deterministic schedule only.)
  $sc cargo test -q -p nbody-host --features cuda --test hermite_gpu cuda:: -- ${HERMITE_SKIP:-}
}

step "deterministic schedule"
SOFTCUDA_SCHEDULE=deterministic suite

# One adversarial seed in CI (each about 290 s on 2 cores since the GPU NPT
# suite; two took .ci/run to 50 of its 60 minutes): seed 1, 2 or 3 by the
# commit (its hash mod 3), so successive commits cover all three and a red
# one is reproducible: SOFTCUDA_SEEDS="1 2 3" scripts/ci-softcuda.sh runs
# them all.
commit=$(git -C "$(dirname "$0")/.." rev-parse HEAD 2>/dev/null | cut -c1-7 || true)
default_seed=$((0x${commit:-0} % 3 + 1))
for seed in ${SOFTCUDA_SEEDS:-$default_seed}; do
  step "adversarial schedule, seed $seed"
  SOFTCUDA_SCHEDULE=adversarial SOFTCUDA_SEED=$seed HERMITE_SKIP="--skip 65536" \
    ENSEMBLE_SKIP="--skip follows_the_cpu --skip checkpoints --skip squeezed" suite
done

step "issue 23: host round trips per run (gravity, safe-rebuild MD), force threads at N = 4096 (tests/round_trips.rs, counted in the driver's log)"
SOFTCUDA_SCHEDULE=deterministic $sc cargo test -q -p nbody-host --features cuda --test round_trips

step "the H200's bits: SIMT and tiled, 100 Euler steps (tests/gpu_bits.rs; deterministic schedule, 20-40 s)"
SOFTCUDA_SCHEDULE=deterministic $sc cargo test -q -p nbody-host --features cuda --test gpu_bits -- --nocapture

step "the driver's answers against the H200's (scripts/gpu/jit_probe.py)"
$sc python3 scripts/gpu/jit_probe.py --compare softcuda-driver/tests/data/h200_jit_probe.json

step "libgrape6 with GRAPE6_BACKEND=cuda: the API against the f64 reference, the C Plummer program (short)"
# The CUDA build of libgrape6 goes to target/grape6/cuda (the CPU build in
# target/release is restored after it: it must load without a driver).
$sc cargo build -q --release -p grape6 --features cuda
mkdir -p target/grape6/cuda
cp target/release/libgrape6.so target/grape6/cuda/
cargo build -q --release -p grape6
# (cc under $sc: the linker resolves libgrape6's libcuda.so.1 through it.)
$sc cc -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -ffp-contract=off -Igrape6/include \
  grape6/tests/c/plummer.c -Ltarget/grape6/cuda -lgrape6 -Wl,-rpath,"$root/target/grape6/cuda" \
  -lm -o target/grape6/cuda/plummer
# -p nbody-host beside -p grape6: the features of the suites above, so their
# test build of nbody-host --features cuda (and 18 dependencies) is reused; it
# adds nbody-host's tests/api.rs, where no test matches the filter.
SOFTCUDA_SCHEDULE=deterministic GRAPE6_TEST_CUDA=1 \
  $sc cargo test -q -p grape6 -p nbody-host --features cuda --test api the_gpu_kernels -- --nocapture
for precision in f64 mixed; do
  SOFTCUDA_SCHEDULE=deterministic GRAPE6_QUIET=1 GRAPE6_BACKEND=cuda GRAPE6_PRECISION=$precision \
    GRAPE6_NPIPES=48 $sc target/grape6/cuda/plummer nbody-host/tests/data/plummer512.npy \
    --t-end 0.0625 --check-every 10
done

step "nbody_tiled --backend cuda: every kernel x integrator against the CPU backend"
scripts/softcuda-e2e.sh --n 200 --steps 3 --block 64
step "the same with the non-blocking stream the engine asks for"
SOFTCUDA_STREAMS=non-blocking scripts/softcuda-e2e.sh --n 200 --steps 3 --block 64
step "the same, adversarial schedule, block 32"
SOFTCUDA_SCHEDULE=adversarial SOFTCUDA_SEED=4 scripts/softcuda-e2e.sh --n 100 --steps 2 --block 32

step "md --backend cuda against --backend cpu: NVE, NVT, Langevin, NPT, 256 atoms, 50 steps (scripts/softcuda-md-e2e.sh)"
SOFTCUDA_SCHEDULE=deterministic scripts/softcuda-md-e2e.sh

step "cargo bench --features cuda, quick, N = 1024 (modelled device time)"
$sc cargo bench -q -p nbody-host --features cuda --bench pips -- --quick 'cuda/.*/1024$'

step "scripts/first-gpu.sh refuses at once on a machine without a GPU"
if command -v nvidia-smi >/dev/null; then
  echo "nvidia-smi present: skipped"
else
  status=0
  msg=$(timeout 60 scripts/first-gpu.sh 2>&1) || status=$?
  echo "$msg"
  [ $status = 2 ] && echo "$msg" | grep -q "refusing: nvidia-smi not found" ||
    { echo "first-gpu.sh: expected a refusal with exit 2, got exit $status" >&2; exit 1; }
fi

step "done in $(($(date +%s) - start)) s"
