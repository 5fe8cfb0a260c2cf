#!/usr/bin/env bash
# The runner scripts/gpu-bundle.sh packs as DIR/run.sh: runs the prebuilt
# binaries on a GPU machine with NVIDIA's driver and no Rust, from the
# repository root, and writes REPORT_DIR/report.md. Every step is under
# `timeout`; a failed step is recorded and the rest still run.
#
#   DIR/run.sh REPORT_DIR [quick]     # quick: skip the long bench and ncu
#
# Sections run in order of importance (the same-card peers right after the
# device) within a device-time budget, BUNDLE_BUDGET_S seconds (default 540:
# about 9 minutes of a 15-minute lease, leaving time to rerun one step): a
# section that would start after it is recorded as skipped, and the last one
# (issue 24's, 8-10 minutes alone) gets what is left.
set -uo pipefail
budget=${BUNDLE_BUDGET_S:-540}
bin=$(cd "$(dirname "$0")" && pwd)/bin
out=${1:?usage: run.sh REPORT_DIR [quick]}
quick=${2:-}
mkdir -p "$out"
report=$out/report.md
failed=()
{
  echo "# GPU report (prebuilt bundle), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "Bundle: $(cat "$(dirname "$bin")/COMMIT" 2>/dev/null)."
} >"$report"
section() { printf '\n## %s\n\n' "$1" >>"$report"; echo "gpu-bundle: $1"; }
# Whether the budget is spent (then the section is recorded as skipped).
spent() {
  [ $SECONDS -lt "$budget" ] && return 1
  echo "skipped: the bundle's budget of $budget s is spent ($SECONDS s)" >>"$report"
  failed+=("$1 (skipped: budget)")
  return 0
}
record() {
  local limit=$1 name=$2; shift 2
  local log=$out/$name.log status=0 t0=$SECONDS
  timeout "$limit" "$@" >"$log" 2>&1 || status=$?
  { echo "\`$*\` ($((SECONDS - t0)) s, exit $status)"; echo '```text'
    grep -v '^\s*$' "$log" | tail -n 60; echo '```'; } >>"$report"
  [ $status = 0 ] || failed+=("$name (exit $status)")
}

section "1. Device"
record 60 nvidia-smi nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.max.sm --format=csv

section "1b. Same-card peers (issue 23 item 5): ours, the cuda-samples nbody kernels, Numba CUDA"
# Also alone: scripts/gpu/peers.sh BIN_DIR OUT_DIR (about 2-3 minutes).
record 400 peers scripts/gpu/peers.sh "$bin" "$out/peers"
[ -f "$out/peers/peers.md" ] && cat "$out/peers/peers.md" >>"$report"

section "1c. Where the last fifth goes (issue 23 item 3): stall reasons of the tiled and triangle force loops"
# The static count (docs/gpu/issue-23-whole-step.md) puts both kernels within
# 5 % (tiled) and 8 % (triangle) of their arithmetic floor, and at 79 % and
# 74 % of the issue bound measured: the rest is stalls, which only ncu shows.
if command -v ncu >/dev/null; then
  for kernel in tiled triangle; do
    record 120 "ncu_stalls_$kernel" ncu --csv --section WarpStateStats --section SchedulerStats \
      --kernel-name regex:"nbody_${kernel}_accel" --launch-count 1 \
      "$bin/nbody_tiled" --backend cuda --n 262144 --steps 1 --kernel $kernel --block 256 \
      --integrator leapfrog --no-energy --graphs off
  done
else
  echo "ncu not found: skipped" >>"$report"
fi

section "2. JIT limits of every entry point"
record 120 jit "$bin/cuda_backend" jit_limits_of_every_entry_point --nocapture

section "3. Correctness on Backend::Cuda (f64 oracle, emulator, block pairs, GPU path, resume, Lennard-Jones)"
if ! spent "section 3"; then
record 300 correctness "$bin/correctness" cuda::
record 200 cuda_backend "$bin/cuda_backend" --skip softcuda_
record 200 cuda_block_pair "$bin/cuda_block_pair" --skip softcuda_
record 200 gpu_path "$bin/gpu_path"
record 200 cuda_graphs "$bin/cuda_graphs" --skip softcuda_
record 200 snapshot "$bin/snapshot" kill_and_resume
record 200 md_gpu "$bin/md_gpu" cuda:: --skip softcuda_ --nocapture

fi

section "4. nbody_tiled --backend cuda: PIPS from CUDA events (measured)"
if ! spent "section 4"; then
for n in 16384 65536 262144; do
  for kernel in simt tiled triangle; do
    record 120 "tiled_${kernel}_$n" "$bin/nbody_tiled" --backend cuda --n $n --steps 10 \
      --kernel $kernel --block 256 --no-energy
  done
done
record 120 lj_melt "$bin/lj_melt" --backend cuda
record 120 lj_melt_cpu "$bin/lj_melt" --backend cpu
record 300 lj_melt_256k "$bin/lj_melt" --backend cuda --cells 40
record 300 lj_melt_256k_cpu "$bin/lj_melt" --backend cpu --cells 40

fi

section "4b. Block sizes: PIPS per kernel, block and N (CUDA events, measured)"
if ! spent "section 4b"; then
sweep=$out/sweep.txt
: >"$sweep"
for n in 16384 65536 262144 1048576; do
  steps=10; [ $n = 1048576 ] && steps=2
  for kernel in simt tiled triangle; do
    for block in 64 128 256 512 1024; do
      [ $kernel = triangle ] && [ $block -gt 512 ] && continue
      line=$(timeout 120 "$bin/nbody_tiled" --backend cuda --n $n --steps $steps --kernel $kernel \
        --block $block --no-energy 2>&1 | grep '^result' || echo "result FAILED n=$n kernel=$kernel block=$block")
      echo "block=$block $line" | tee -a "$sweep" >/dev/null
    done
  done
done
{ echo '```text'; cat "$sweep"; echo '```'; } >>"$report"

fi

section "4c. The same run on the GPU and on the CPU (N = 65536, 10 steps, leapfrog, triangle)"
if ! spent "section 4c"; then
for backend in cuda cpu; do
  record 300 "traj_$backend" "$bin/nbody_tiled" --backend $backend --n 65536 --steps 10 \
    --kernel triangle --integrator leapfrog --save "$out/traj_$backend.npy"
done
record 60 traj_compare python3 -c "
import numpy as np
a = np.load('$out/traj_cuda.npy').astype(np.float64); b = np.load('$out/traj_cpu.npy').astype(np.float64)
d = np.abs(a[:, :3] - b[:, :3]).max(); s = np.abs(b[:, :3]).max()
dv = np.abs(a[:, 3:6] - b[:, 3:6]).max(); sv = np.abs(b[:, 3:6]).max()
print(f'positions: max |cuda - cpu| = {d:.3e} (scale {s:.3e}, relative {d/s:.3e})')
print(f'velocities: max |cuda - cpu| = {dv:.3e} (scale {sv:.3e}, relative {dv/sv:.3e})')
print('masses identical:', bool((a[:, 6] == b[:, 6]).all()))
"
record 120 default_run "$bin/nbody_tiled"

fi

section "4d. Hermite (issue 26): the GPU engine and the force kernels' interactions/s (measured)"
if ! spent "section 4d"; then
# The engine against the CPU, the same bits on every run, the mixed kernel's
# force error at N = 65536; then force+jerk+potential interactions/s of
# nbody_hermite_force(_mixed) through Backend::hermite_forces, wall clock
# per call (uploads included), best of 3: all N active (the goal: >= 3e11
# in mixed precision at N >= 2^18 on an H200; modelled 5.2e11 f64, 5.4e11
# mixed by scripts/hermite-model.sh), and blocks of 1024 (the j-split).
record 300 hermite_gpu "$bin/hermite_gpu" cuda:: --nocapture
for n in 262144 524288; do
  for precision in mixed f64; do
    for ni in $n 1024; do
      for block in 128 256; do
        record 120 "hermite_pips_${precision}_${n}_${ni}_$block" "$bin/hermite_gpu_pips" --backend cuda \
          --n $n --ni $ni --precision $precision --block $block --repeats 3
      done
    done
  done
done

fi

if [ "$quick" != quick ] && ! spent "sections 5-6"; then
  section "5. cargo bench: CUDA rows (quick)"
  record 300 bench "$bin/pips" --bench --quick cuda

  section "6. Nsight Compute: shared wavefronts, instructions, sectors (N = 16384, block 256)"
  if command -v ncu >/dev/null; then
    for kernel in simt tiled triangle; do
      record 120 "ncu_$kernel" ncu --csv --kernel-name regex:'nbody_(simt|tiled|triangle)_accel' \
        --launch-count 1 --metrics \
        l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,sm__cycles_elapsed.avg \
        "$bin/nbody_tiled" --backend cuda --n 16384 --steps 1 --kernel $kernel --block 256 \
        --integrator leapfrog --no-energy
    done
    echo "(per interaction: divide the sums by N (N - 1) = $((16384 * 16383)))" >>"$report"
  else
    echo "ncu not found: skipped" >>"$report"
  fi
fi

section "7. Issue 24: the H200's bits, the driver's answers, MUFU captures, ncu counters"
# Also alone: scripts/gpu/issue24.sh BIN_DIR OUT_DIR (about 8-10 minutes):
# here with what is left of the budget (BUNDLE_BUDGET_S=1200 for all of it).
left=$((budget - SECONDS))
if [ $left -ge 60 ]; then
  record $left issue24 scripts/gpu/issue24.sh "$bin" "$out/issue24"
else
  echo "skipped: $left s of the budget left (BUNDLE_BUDGET_S=1200 runs it)" >>"$report"
  failed+=("issue24 (skipped: budget)")
fi

section "Summary"
if [ ${#failed[@]} = 0 ]; then
  echo "every step passed" | tee -a "$report"
else
  printf -- '- FAILED: %s\n' "${failed[@]}" | tee -a "$report"
fi
