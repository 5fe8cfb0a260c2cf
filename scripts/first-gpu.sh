#!/usr/bin/env bash
# The one command to run the day a machine with an NVIDIA GPU is available:
#
#   scripts/first-gpu.sh              # on the GPU machine (driver installed; no CUDA toolkit needed)
#   scripts/first-gpu.sh --rehearse   # the same steps on the software CUDA device, to check the script
#
# A GPU machine without Rust (as the lent H200 of 2026-11-26 was): build here
# with scripts/gpu-bundle.sh, carry the bundle, run DIR/run.sh there
# (scripts/gpu-bundle-run.sh: the same steps from prebuilt binaries).
#
# It writes one report (its path is printed at the end) with:
#   1. the device (nvidia-smi);
#   2. the JIT limits of every entry point after the driver's JIT: registers,
#      max threads per block, local and static shared bytes (a table), and the
#      engine's check of every block size against them;
#   3. correctness of Backend::Cuda against the f64 oracle (tests/correctness.rs
#      cuda::, all sizes), against the emulator (tests/cuda_backend.rs), the
#      block-pair primitive of the MPI ring (tests/cuda_block_pair.rs), the
#      GPU-path tests, kill-and-resume;
#   4. cargo bench --features cuda -- cuda (PIPS from CUDA events: a real
#      measurement on a GPU, a model on the software device);
#   5. with Nsight Compute (`ncu` on PATH): shared-memory wavefronts and
#      instructions per interaction of each force kernel, next to the
#      interpreter's figures in README.md's GPU table.
#
# Without a GPU it refuses at once (exit 2), naming what is missing: no
# nvidia-smi, no GPU listed, or no libcuda.so.1 for the loader. Each step
# runs under `timeout`, so a broken driver cannot hang it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rehearse=0
case ${1:-} in
  --rehearse) rehearse=1 ;;
  "") ;;
  *) echo "usage: $0 [--rehearse]" >&2; exit 2 ;;
esac
refuse() { echo "first-gpu: refusing: $*" >&2; exit 2; }

out=$root/target/first-gpu
mkdir -p "$out"
if [ $rehearse = 1 ]; then
  run=(scripts/with-softcuda.sh)
  what="REHEARSAL on the software CUDA device (softcuda): no figure below is a GPU measurement"
else
  command -v nvidia-smi >/dev/null ||
    refuse "nvidia-smi not found: no NVIDIA driver on this machine (use --rehearse to try the script on the software CUDA device)"
  status=0
  gpus=$(timeout 30 nvidia-smi -L 2>&1) || status=$?
  [ $status = 124 ] && refuse "nvidia-smi -L did not answer within 30 s (a hung driver?)"
  [ $status = 0 ] || refuse "nvidia-smi -L failed (exit $status): $gpus"
  echo "$gpus" | grep -q '^GPU ' || refuse "nvidia-smi lists no GPU: $gpus"
  libcuda=$( (ldconfig -p 2>/dev/null || true) | awk '/libcuda\.so\.1 /{print $NF; exit}')
  [ -n "$libcuda" ] || refuse "the dynamic loader knows no libcuda.so.1 (ldconfig -p)"
  case $(readlink -f "$libcuda") in
    *softcuda*) refuse "$libcuda is the software CUDA device, not NVIDIA's driver" ;;
  esac
  # cust's build script links against $CUDA_LIBRARY_PATH/lib64/libcuda.so:
  # the driver's own library is enough (no toolkit needed).
  mkdir -p "$out/cuda/lib64"
  ln -sfn "$libcuda" "$out/cuda/lib64/libcuda.so"
  export CUDA_LIBRARY_PATH=${CUDA_LIBRARY_PATH:-$out/cuda}
  run=(env)
  what="GPU run: $(echo "$gpus" | head -n 1)"
fi

report=$out/report-$(date +%Y%m%d-%H%M%S).md
{
  echo "# first-gpu report, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "$what. Commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with local changes)')."
} >"$report"
section() { printf '\n## %s\n\n' "$1" >>"$report"; echo "first-gpu: $1"; }
failed=()
# Runs a command (under a time limit), its output in the report as a code block.
record() {
  local limit=$1; shift
  local log=$out/step.log status=0
  timeout "$limit" "$@" >"$log" 2>&1 || status=$?
  { echo '```text'; grep -v '^\s*$' "$log" | tail -n 200 || true; echo '```'; } >>"$report"
  if [ $status != 0 ]; then
    echo "**exit status $status** (124: the step ran past ${limit})" >>"$report"
    failed+=("$*")
  fi
  return 0
}
cuda=(-q -p nbody-host --features cuda)

section "1. Device"
if [ $rehearse = 1 ]; then
  echo "software CUDA device, SOFTCUDA_ARCH=${SOFTCUDA_ARCH:-sm_90}" >>"$report"
else
  record 60 nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.max.sm --format=csv
fi

section "2. Build"
record 1800 "${run[@]}" cargo test "${cuda[@]}" --no-run --test correctness --test cuda_backend --test cuda_block_pair --test gpu_path --test snapshot --test md_gpu --test gpu_bits

section "3. JIT limits of every entry point"
record 600 "${run[@]}" cargo test "${cuda[@]}" --test cuda_backend jit_limits_of_every_entry_point -- --nocapture

section "4. Correctness: Backend::Cuda against the f64 oracle and the emulator"
record 3600 "${run[@]}" cargo test "${cuda[@]}" --test correctness cuda:: -- --nocapture
record 1800 "${run[@]}" cargo test "${cuda[@]}" --test cuda_backend -- --skip softcuda_ --nocapture
record 1800 "${run[@]}" cargo test "${cuda[@]}" --test cuda_block_pair -- --skip softcuda_ --nocapture
record 1800 "${run[@]}" cargo test "${cuda[@]}" --test gpu_path
record 1800 "${run[@]}" cargo test "${cuda[@]}" --test snapshot kill_and_resume
record 1800 "${run[@]}" cargo test "${cuda[@]}" --test md_gpu cuda:: -- --skip softcuda_
record 1800 "${run[@]}" cargo test "${cuda[@]}" --test gpu_bits -- --nocapture

section "5. cargo bench --features cuda -- cuda"
if [ $rehearse = 1 ]; then
  record 1800 "${run[@]}" cargo bench "${cuda[@]}" --bench pips -- --quick 'cuda/.*/1024$'
else
  record 7200 "${run[@]}" cargo bench "${cuda[@]}" --bench pips -- cuda
fi

section "6. Nsight Compute: shared-memory wavefronts per interaction"
if command -v ncu >/dev/null && [ $rehearse = 0 ]; then
  record 1800 "${run[@]}" cargo build -q --release -p nbody-host --features cuda --example nbody_tiled
  n=16384
  for kernel in simt tiled triangle; do
    echo "### $kernel, N = $n, block 256" >>"$report"
    record 1800 ncu --csv --kernel-name regex:'nbody_(simt|tiled|triangle)_accel' --launch-count 1 \
      --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,sm__cycles_elapsed.avg \
      target/release/examples/nbody_tiled --backend cuda --n $n --steps 1 --kernel $kernel --block 256 --integrator leapfrog --no-energy
    echo "(per interaction: divide the sums by N (N - 1) = $((n * (n - 1))); compare with README.md's GPU table)" >>"$report"
  done
else
  echo "ncu not found (or a rehearsal): skipped. Install Nsight Compute and rerun for the wavefront counts." >>"$report"
fi

section "Summary"
if [ ${#failed[@]} = 0 ]; then
  echo "every step passed" | tee -a "$report"
else
  printf -- '- FAILED: %s\n' "${failed[@]}" | tee -a "$report"
fi
echo "first-gpu: report written to $report"
[ ${#failed[@]} = 0 ]
