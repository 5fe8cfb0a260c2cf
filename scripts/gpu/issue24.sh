#!/usr/bin/env bash
# Issue 24's GPU-side checks as one short scripted call (about 8-10 minutes on an H200), run by
# the bundle's runner (scripts/gpu-bundle-run.sh, section 7) or alone from the repository root:
#
#   scripts/gpu/issue24.sh BIN_DIR OUT_DIR      # BIN_DIR: the bundle's bin/ (scripts/gpu-bundle.sh)
#
# Records, for the next session to commit (the paths are printed at the end):
#   1. the H200's bits of the 100-step SIMT and tiled runs and of the Lennard-Jones run
#      (gpu_bits and md_gpu with NBODY_RECORD_GPU_BITS) -> nbody-host/tests/data/h200/*.txt;
#   2. the driver's answers to PTX versions, targets, .reqntid/.maxntid launches and the NaN bits
#      of f32/f64 operations (jit_probe.py) -> softcuda-driver/tests/data/h200_jit_probe.json;
#      and its answers to calls made during an open stream capture (capture_probe.py: cuCtxSynchronize,
#      cuMemAlloc, a legacy-stream read, per capture mode and thread; the software device's rules in
#      softcuda-driver/src/graph.rs are partly inferred) -> softcuda-driver/tests/data/h200_capture_probe.json,
#      then `scripts/with-softcuda.sh python3 scripts/gpu/capture_probe.py --compare THAT.json`;
#   3. sqrt/ex2/lg2/sin/cos.approx tables and statistics (capture_mufu.py, numpy) -> ../shared
#      or docs (the npz is too large for the repository as it is: softcuda refuses these
#      instructions until a model of them is committed);
#   4. Nsight Compute counters with the metric definitions softcuda's accounting uses
#      (shared wavefronts; global load, store, reduction and atomic sectors; SASS instructions)
#      for every kernel of a gravity step at N = 4,096 (each kernel and integrator), of a small
#      Lennard-Jones run (256 atoms: every MD kernel), and of the shared-memory access patterns
#      (shared_patterns.py) -> docs/gpu/; compare with scripts/softcuda-ncu-compare.py.
# Every step is under `timeout`; a failed step is reported and the rest still run.
set -u
bin=${1:?usage: issue24.sh BIN_DIR OUT_DIR}
out=${2:?usage: issue24.sh BIN_DIR OUT_DIR}
mkdir -p "$out/h200"
here=$(cd "$(dirname "$0")" && pwd)
failed=()
step() {
  local limit=$1 name=$2; shift 2
  local t0=$SECONDS status=0
  echo "== $name: $*"
  timeout "$limit" "$@" >"$out/$name.log" 2>&1 || status=$?
  tail -n 15 "$out/$name.log"
  echo "== $name: exit $status, $((SECONDS - t0)) s"
  [ $status = 0 ] || failed+=("$name (exit $status)")
}

# 1. Bits (the comparison with committed files runs too, where they exist).
step 240 gpu_bits env NBODY_RECORD_GPU_BITS="$out/h200" "$bin/gpu_bits" --nocapture
step 120 md_bits env NBODY_RECORD_GPU_BITS="$out/h200" "$bin/md_gpu" \
  cuda::the_plan_gives_the_same_bits_on_every_run --exact --nocapture

# 2. The driver's answers.
step 60 jit_probe python3 "$here/jit_probe.py" "$out/h200_jit_probe.json"
# Calls made during an open stream capture (the software device's capture rules, partly inferred).
step 60 capture_probe python3 "$here/capture_probe.py" "$out/h200_capture_probe.json"

# 3. The other approximate instructions (tables, every 16th chunk of 2^25 inputs, at most
#    MUFU_BUDGET_S seconds of sweep, default 240).
mufu_budget=${MUFU_BUDGET_S:-240}
step $((mufu_budget + 90)) capture_mufu env BUDGET_S="$mufu_budget" STRIDE=16 python3 "$here/capture_mufu.py" "$out" 25

# 4. Nsight Compute.
if command -v ncu >/dev/null; then
  m=l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
  m=$m,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum
  m=$m,l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum,smsp__inst_executed.sum,launch__registers_per_thread
  step 120 ncu_shared ncu --csv --metrics "$m" python3 "$here/shared_patterns.py"
  for kernel in simt tiled triangle; do
    for integrator in euler leapfrog; do
      step 120 "ncu_${kernel}_${integrator}_4096" ncu --csv --metrics "$m" "$bin/nbody_tiled" \
        --backend cuda --n 4096 --steps 1 --kernel $kernel --block 256 --integrator $integrator
    done
  done
  step 180 ncu_lj_256 ncu --csv --metrics "$m" "$bin/lj_melt" --backend cuda --cells 4 --steps 4 \
    --thermo 2
  for f in "$out"/ncu_*.log; do grep '^"' "$f" >"${f%.log}.csv" || true; done
else
  echo "ncu not found: the counters are not recorded"
fi

echo
echo "To commit (from the repository root):"
echo "  cp $out/h200/*.txt nbody-host/tests/data/h200/"
echo "  cp $out/h200_jit_probe.json softcuda-driver/tests/data/h200_jit_probe.json"
echo "  cp $out/ncu_*.csv docs/gpu/ncu-issue24/ ; $out/sm90_mufu_report_v2.json -> docs/gpu/"
echo "  then, on the software device, the same commands with SOFTCUDA_STATS=FILE and"
echo "  scripts/softcuda-ncu-compare.py docs/gpu/ncu-issue24/ncu_X.csv FILE (README, softcuda/README.md)"
if [ ${#failed[@]} = 0 ]; then echo "issue24: every step passed"; else printf 'issue24: FAILED %s\n' "${failed[@]}"; exit 1; fi
