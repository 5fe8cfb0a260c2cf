#!/usr/bin/env bash
# Mutations of the CUDA path that the software CUDA device must catch (issue
# 15): each is applied to a scratch copy of the tree (never to the tree
# itself), the tests that should catch it run there against the software
# device, and the script prints CAUGHT or MISSED per mutation. Exits non-zero
# if any mutation is missed, or no longer applies (the code it mutates
# changed: update the mutation).
#
#   scripts/softcuda-mutations.sh            # every mutation
#   scripts/softcuda-mutations.sh swap-args  # the ones whose name contains this
#
# The scratch copy lives in target/mutants/src (tracked and untracked files,
# copied with their times, so cargo rebuilds only what a mutation touches)
# with its own target dir target/mutants/target; a baseline run on the
# unmutated copy must pass first. Measured on this project's loaded 2-core
# VM: 7.3 min from an empty target/mutants (the first build compiles every
# dependency), 2.1 min once it is warm (nbody-host's test binaries rebuilt
# after each mutation); with the four block-pair mutations, 8.1 min from
# empty (2026-11-26; results in softcuda/README.md, "Mutations"). Not in CI: cold, it would take scripts/ci-softcuda.sh
# well past its 12-minute budget.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
only=${1:-}
scratch=$root/target/mutants
src=$scratch/src
export CARGO_TARGET_DIR=$scratch/target
mkdir -p "$src" "$CARGO_TARGET_DIR"

# name | file | python edit (gets `s`, the file's text; must change it; a `|`
# in it is written \x7c inside a string literal) | tests (cargo test args;
# `;` separates runs). Since the one device model (issue 21), every CUDA
# plan's memory operations go through `CudaDevice` (cuda/device.rs): the
# gravity engine's, the MD plan's and the block pairs' mutations of one
# operation are the same edit there, judged by each plan's own suite.
mutations=$(cat <<'EOF'
swap-args|nbody-host/src/cuda/launch.rs|s = replace(s, "    let mut pointers = [ptr::null_mut::<c_void>(); MAX_PARAMS];", "    let k = args.len();\n    if k >= 2 && matches!((&args[k - 2], &args[k - 1]), (Arg::F32(_), Arg::F32(_))) {\n        slots.swap(k - 2, k - 1);\n    }\n    let mut pointers = [ptr::null_mut::<c_void>(); MAX_PARAMS];")|--test cuda_backend;--test correctness cuda::tiled
no-shared-opt-in|nbody-host/src/cuda/limits.rs|s = replace(s, "    if shared > function_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)? {", "    if false && shared > function_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)? {")|--test cuda_backend
bar-sync-tiled|nbody-host/ptx/gpu_kernels.ptx|s = delete_bar_sync(s, "nbody_tiled_accel", 0)|--test cuda_backend;--test correctness cuda::tiled
bar-sync-triangle|nbody-host/ptx/gpu_kernels.ptx|s = delete_bar_sync(s, "nbody_triangle_accel", 1)|--test cuda_backend;--test correctness cuda::triangle
bug1-legacy-uploads|nbody-host/src/cuda/device.rs|s = replace(s, "            sys::cuMemcpyHtoDAsync_v2(\n                dst,\n                host.as_ptr() as *const c_void,\n                4 * host.len(),\n                d.stream.as_inner(),\n            )", "            sys::cuMemcpyHtoD_v2(dst, host.as_ptr() as *const c_void, 4 * host.len())")|--test cuda_backend;--test correctness cuda::non_blocking
md-legacy-uploads|nbody-host/src/cuda/device.rs|s = replace(s, "            sys::cuMemcpyHtoDAsync_v2(\n                dst,\n                host.as_ptr() as *const c_void,\n                4 * host.len(),\n                d.stream.as_inner(),\n            )", "            sys::cuMemcpyHtoD_v2(dst, host.as_ptr() as *const c_void, 4 * host.len())")|--test md_gpu cuda::
bug1-legacy-flag-reset|nbody-host/src/cuda/device.rs|s = replace(s, "        let host = data.to_vec();\n", "        if data.len() <= 2 {\n            // SAFETY: the mutation: a legacy-stream copy of the flag's reset.\n            let status = unsafe { sys::cuMemcpyHtoD_v2(dst, data.as_ptr() as *const c_void, 4 * data.len()) };\n            return driver(status, \"uploading data\");\n        }\n        let host = data.to_vec();\n")|--test cuda_backend
bug1-legacy-zero-acc|nbody-host/src/cuda/device.rs|s = replace(s, "sys::cuMemsetD32Async(dst, value, words, d.stream.as_inner())", "sys::cuMemsetD32_v2(dst, value, words)")|--test cuda_backend
bug1-block-pair-legacy-uploads|nbody-host/src/cuda/device.rs|s = replace(s, "            sys::cuMemcpyHtoDAsync_v2(\n                dst,\n                host.as_ptr() as *const c_void,\n                4 * host.len(),\n                d.stream.as_inner(),\n            )", "            sys::cuMemcpyHtoD_v2(dst, host.as_ptr() as *const c_void, 4 * host.len())")|--test cuda_block_pair
bug1-block-pair-legacy-memset|nbody-host/src/cuda/device.rs|s = replace(s, "sys::cuMemsetD32Async(dst, 0, words.max(1), d.stream.as_inner())", "sys::cuMemsetD32_v2(dst, 0, words.max(1))")|--test cuda_block_pair
bug4-no-jit-limits|nbody-host/src/cuda/device.rs|s = replace(s, "        for &(entry, shape) in launches {\n            d.admit(entry, shape.block, shape.shared_bytes)?;\n        }\n", "        let _ = launches;\n")|--test cuda_backend
bug4-block-pair-no-jit-limits|nbody-host/src/cuda/device.rs|s = replace(s, "        for &(entry, shape) in launches {\n            d.admit(entry, shape.block, shape.shared_bytes)?;\n        }\n", "        let _ = launches;\n")|--test cuda_block_pair
bug5-drop-without-context|nbody-host/src/cuda/device.rs|s = replace(s, "let _current = Current::push(self.context.as_raw());", "let _current = ();")|--test cuda_backend
bug5-block-pair-drop-without-context|nbody-host/src/cuda/device.rs|s = replace(s, "let _current = Current::push(self.context.as_raw());", "let _current = ();")|--test cuda_block_pair
EOF
)

apply() { # file, python statements
  python3 - "$src/$1" "$2" <<'PY'
import sys
path, code = sys.argv[1], sys.argv[2]
def replace(s, old, new):
    if s.count(old) != 1:
        sys.exit(f"mutation does not apply: {old[:80]!r} found {s.count(old)} times in {path}")
    return s.replace(old, new)
def delete_bar_sync(s, entry, k):
    start = s.index(f".entry {entry}(")
    end = s.find(".entry ", start + 1)
    end = len(s) if end < 0 else end
    lines = s[start:end].split("\n")
    idx = [i for i, l in enumerate(lines) if l.strip().startswith("bar.sync")]
    if len(idx) <= k:
        sys.exit(f"mutation does not apply: {entry} has {len(idx)} bar.sync")
    del lines[idx[k]]
    return s[:start] + "\n".join(lines) + s[end:]
s = open(path).read()
before = s
exec(code)
if s == before:
    sys.exit("mutation changed nothing")
open(path, "w").write(s)
PY
}

# The scratch tree: tracked and untracked (not ignored) files, with their times.
(cd "$root" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$src"

# Whatever an earlier run left compiled, nbody-host is built from this tree.
(cd "$src" && cargo clean -q -p nbody-host)

# Baseline: the unmutated copy must pass every test a mutation is judged by,
# or a CAUGHT below would mean nothing.
echo "==== baseline (no mutation)"
for run in "--test cuda_backend" "--test cuda_block_pair" "--test correctness cuda::"; do
  # shellcheck disable=SC2086
  (cd "$src" && scripts/with-softcuda.sh cargo test -q -p nbody-host --features cuda $run) \
    >"$scratch/baseline.log" 2>&1 ||
    { tail -30 "$scratch/baseline.log"; echo "baseline fails: cargo test $run"; exit 1; }
done

missed=0
results=()
while IFS='|' read -r name file code tests; do
  [ -z "$name" ] && continue
  case $name in *"$only"*) ;; *) continue ;; esac
  echo "==== mutation $name ($file)"
  if ! apply "$file" "$code"; then
    results+=("MISSED $name (the mutation no longer applies)")
    missed=1
    continue
  fi
  verdict="MISSED $name"
  IFS=';' read -ra runs <<<"$tests"
  for run in "${runs[@]}"; do
    log=$scratch/$name.log
    # shellcheck disable=SC2086
    if (cd "$src" && scripts/with-softcuda.sh cargo test -q -p nbody-host --features cuda $run) >"$log" 2>&1; then
      continue
    fi
    if grep -q "test result: FAILED" "$log"; then
      verdict="CAUGHT $name (by: cargo test $run)"
      grep -m3 "panicked at\|CUDA_ERROR\|race" "$log" | cut -c1-300 || true
    else
      verdict="MISSED $name (the tests did not run: see $log)"
      tail -20 "$log"
    fi
    break
  done
  case $verdict in CAUGHT*) ;; *) missed=1 ;; esac
  results+=("$verdict")
  # The file back to the tree's bytes for the next mutation, with a new time
  # so that cargo rebuilds it.
  cp "$root/$file" "$src/$file"
done <<<"$mutations"

echo
printf '%s\n' "${results[@]}"
exit $missed
