#!/usr/bin/env bash
# The runner scripts/gpu-bundle.sh packs as DIR/run.sh: runs the prebuilt
# binaries on a GPU machine with NVIDIA's driver and no Rust, from the
# repository root, and writes REPORT_DIR/report.md. Every step is under
# `timeout`; a failed step is recorded and the rest still run.
#
#   DIR/run.sh REPORT_DIR [quick]     # quick: skip the long bench and the block sweep
#   BUNDLE_SECTIONS="4 5 8" DIR/run.sh REPORT_DIR   # only those sections (and 1, the device)
#
# With the device tool (its working tree is this checkout; carry the archive):
#   run(command='tar -xJf .gpubundle.tar.xz && .gpubundle/run.sh $OUT/r >$OUT/run.log 2>&1;
#       rm -rf $OUT/r; tail -5 $OUT/run.log', carry=['.gpubundle.tar.xz'], timeout_s=570)
# brings back $OUT/r.tgz (the report and every log) and run.log.
#
# Sections run in order of what the open issues still need from a GPU (the
# goals' timings first, on an idle GPU; then correctness, the bits and the
# counters; the sweeps last) within a device-time budget, BUNDLE_BUDGET_S
# seconds (default 480: about 8 minutes of a 15-minute lease, leaving time to
# rerun one step): a section that would start after it is recorded as
# skipped. On an H200 most runs take about a second (process start and
# context creation included), so the whole bundle takes about 5 minutes.
set -uo pipefail
budget=${BUNDLE_BUDGET_S:-480}
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
section() { printf '\n## %s\n\n' "$1" >>"$report"; echo "gpu-bundle: $1 ($SECONDS s)"; }
# Whether the section is to be skipped: not among BUNDLE_SECTIONS (a list of
# section numbers, e.g. "4 5 8" for a second, shorter call; unset: all), or
# the budget is spent (then it is recorded as a failure to skip).
spent() {
  if [ -n "${BUNDLE_SECTIONS:-}" ] && ! [[ " $BUNDLE_SECTIONS " == *" ${1#section } "* ]]; then
    echo "skipped: not among BUNDLE_SECTIONS ($BUNDLE_SECTIONS)" >>"$report"
    return 0
  fi
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
# The result lines of several runs, one line each, into the report.
results() {
  local log=$1 status=0; shift
  { echo "\$ $*"; timeout 300 "$@" 2>&1 | grep -E '^result|^(Pair|Neigh|Comm|Modify|Output|Other) +\||^Neighbor list builds' || status=$?
  } >>"$log"
  [ $status = 0 ] || { echo "FAILED (exit $status): $*" >>"$log"; failed+=("$* (exit $status)"); }
}
show() { { echo '```text'; cat "$1"; echo '```'; } >>"$report"; }

section "1. Device"
record 60 nvidia-smi nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.max.sm,clocks.sm --format=csv
# The first start JIT-compiles the module (then cached): not inside a timing.
record 120 warm "$bin/nbody_tiled" --backend cuda --n 4096 --steps 2 --no-energy

section "2. Same-card peers (issue 23 items 2 and 5): ours, the cuda-samples nbody kernels, Numba CUDA"
# Also alone: scripts/gpu/peers.sh BIN_DIR OUT_DIR (about 2 minutes).
if ! spent "section 2"; then
record 400 peers scripts/gpu/peers.sh "$bin" "$out/peers"
[ -f "$out/peers/peers.md" ] && cat "$out/peers/peers.md" >>"$report"
fi

section "3. Lennard-Jones (issue 23 goals): safe rebuilds against a fixed interval, 32,000 and 4,000,000 atoms"
# in.lj, --thermo 0 (a thermo line only at the start and the end), CUDA events
# around the whole loop; best of 3 (of 2 at 4,000,000 atoms). --rebuild-every 0:
# rebuild when an atom moved half the skin (never a missed pair).
if ! spent "section 3"; then
lj=$out/lj_goals.txt
: >"$lj"
for cells in 20 100; do
  steps=5000; repeats=3
  [ $cells = 100 ] && { steps=500; repeats=2; }
  for every in 0 20; do
    for r in $(seq $repeats); do
      results "$lj" "$bin/lj_melt" --backend cuda --cells $cells --steps $steps --rebuild-every $every \
        --thermo 0 -q
    done
  done
done
show "$lj"
fi

section "4. Hermite (issue 26): force+jerk+potential interactions/s, and the engine on the GPU"
# nbody_hermite_force(_mixed) through Backend::hermite_forces, wall clock per
# call (uploads included), best of 3: all N active (the goal: >= 3e11 in
# mixed precision at N >= 2^18 on an H200; measured 2026-11-27 before the
# self-pair mask left the inner loop: 2.7-2.9e11 at 2^18, 3.3e11 at 2^19;
# scripts/hermite-model.sh: 4.0e11 mixed, 3.6e11 f64 for the kernel alone,
# modelled), and a block of 1024 active bodies (the j-split; at both N, so
# that the j-bodies' upload shows how much of a call is not the kernel).
# Then ncu on one force launch of each precision at 2^18: the kernel's own
# duration, the SM clock, issue slots busy, pipe use and occupancy (what the
# model assumes: docs/collisional.md, "Throughput on an H200").
if ! spent "section 4"; then
herm=$out/hermite_pips.txt
: >"$herm"
for n in 262144 524288; do
  for precision in mixed f64; do
    for ni in $n 1024; do
      for block in 128 256; do
        results "$herm" "$bin/hermite_gpu_pips" --backend cuda --n $n --ni $ni --precision $precision \
          --block $block --repeats 3
      done
    done
  done
done
show "$herm"
if command -v ncu >/dev/null; then
  for precision in mixed f64; do
    record 120 "ncu_hermite_$precision" ncu --csv --section SpeedOfLight --section ComputeWorkloadAnalysis \
      --section Occupancy --section WarpStateStats --section SchedulerStats \
      --kernel-name regex:'nbody_hermite_force' --launch-count 1 \
      "$bin/hermite_gpu_pips" --backend cuda --n 262144 --ni 262144 --precision $precision \
      --block 256 --repeats 1
  done
fi
record 300 hermite_gpu "$bin/hermite_gpu" cuda:: --nocapture
fi

section "5. Correctness on Backend::Cuda (f64 oracle, emulator, CPU engine, block pairs, graphs, resume, MD ensembles)"
if ! spent "section 5"; then
record 120 jit "$bin/cuda_backend" jit_limits_of_every_entry_point --nocapture
record 300 correctness "$bin/correctness" cuda::
record 200 cuda_backend "$bin/cuda_backend" --skip softcuda_
record 200 cuda_block_pair "$bin/cuda_block_pair" --skip softcuda_
record 200 gpu_path "$bin/gpu_path"
record 200 cuda_graphs "$bin/cuda_graphs" --skip softcuda_
record 200 snapshot "$bin/snapshot" kill_and_resume
record 200 md_gpu "$bin/md_gpu" cuda:: --skip softcuda_ --nocapture
record 200 md_gpu_ensemble "$bin/md_gpu_ensemble" cuda:: --skip softcuda_
record 200 md_gpu_npt "$bin/md_gpu_npt" cuda:: --skip softcuda_
record 200 md_gpu_like_cpu "$bin/md_gpu_like_cpu" cuda:: --skip softcuda_ --nocapture
# Bits pinned on the software device (whose MUFU is the H200's): equal here too?
record 200 block_sums_bits "$bin/block_sums_bits" --nocapture
fi

section "6. Issue 24: the H200's bits, the driver's answers, ncu counters, MUFU captures"
# Also alone: scripts/gpu/issue24.sh BIN_DIR OUT_DIR; the MUFU sweep gets
# MUFU_BUDGET_S (default here 45 s; 240 alone).
if ! spent "section 6"; then
  record 400 issue24 env MUFU_BUDGET_S="${MUFU_BUDGET_S:-45}" scripts/gpu/issue24.sh "$bin" "$out/issue24"
fi

section "7. Where the last fifth goes (issue 23 item 3): stall reasons of the tiled and triangle force loops"
# The static count (docs/gpu/issue-23-whole-step.md) puts both kernels within
# 5 % (tiled) and 8 % (triangle) of their arithmetic floor, and at 79 % and
# 74 % of the issue bound measured: the rest is stalls, which only ncu shows.
if ! spent "section 7"; then
if command -v ncu >/dev/null; then
  for kernel in tiled triangle; do
    record 120 "ncu_stalls_$kernel" ncu --csv --section WarpStateStats --section SchedulerStats \
      --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      --kernel-name regex:"nbody_${kernel}_accel" --launch-count 1 \
      "$bin/nbody_tiled" --backend cuda --n 262144 --steps 1 --kernel $kernel --block 256 \
      --integrator leapfrog --no-energy --graphs off
  done
else
  echo "ncu not found: skipped" >>"$report"
fi
fi

section "8. MD ensembles on the GPU: NVE, NVT, NPT at 256,000 atoms (md, CUDA events, best of 2)"
if ! spent "section 8"; then
ens=$out/md_ensembles.txt
: >"$ens"
for e in nve "nvt --temp-target 1.0 --tdamp 0.5" "npt --temp-target 1.0 --tdamp 0.5 --press-target 1.0 --pdamp 5.0"; do
  for r in 1 2; do
    # shellcheck disable=SC2086
    results "$ens" "$bin/md" --backend cuda --cells 40 --steps 500 --thermo 0 -q --ensemble $e
  done
done
show "$ens"
fi

section "9. The same run on the GPU and on the CPU (N = 65536, 10 steps, leapfrog, triangle)"
if ! spent "section 9"; then
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
record 120 lj_melt_default "$bin/lj_melt" --backend cuda
fi

section "10. Block sizes: PIPS per kernel, block and N (CUDA events, measured)"
if [ "$quick" != quick ] && ! spent "section 10"; then
sweep=$out/sweep.txt
: >"$sweep"
for n in 4096 16384 65536 1048576; do
  steps=20; [ $n -le 16384 ] && steps=200; [ $n = 1048576 ] && steps=2
  for kernel in simt tiled triangle; do
    for block in 64 128 256 512 1024; do
      [ $kernel = triangle ] && [ $block -gt 512 ] && continue
      line=$(timeout 120 "$bin/nbody_tiled" --backend cuda --n $n --steps $steps --kernel $kernel \
        --block $block --no-energy 2>&1 | grep '^result' || echo "result FAILED n=$n kernel=$kernel block=$block")
      echo "block=$block $line" | tee -a "$sweep" >/dev/null
    done
  done
done
show "$sweep"
fi

section "11. cargo bench: CUDA rows (quick)"
if [ "$quick" != quick ] && ! spent "section 11"; then
  record 300 bench "$bin/pips" --bench --quick cuda
fi

section "Summary"
echo "wall time: $SECONDS s" >>"$report"
if [ ${#failed[@]} = 0 ]; then
  echo "every step passed" | tee -a "$report"
else
  printf -- '- FAILED: %s\n' "${failed[@]}" | tee -a "$report"
fi
# One archive of the whole report (the device tool brings back only a few
# files: 2026-11-27's first call lost all but 8 of its 90), without the
# large arrays.
tar -czf "$out.tgz" --exclude='*.npy' --exclude='*.npz' -C "$out" . &&
  echo "gpu-bundle: the report and its logs in $out.tgz"
