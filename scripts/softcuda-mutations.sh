#!/usr/bin/env bash
# Mutations of the CUDA path that the software CUDA device must catch (issues
# 15 and 24: host code, and kernels edited in the committed PTX): each is
# applied to a scratch copy of the tree (never to the tree
# itself), the tests that should catch it run there against the software
# device, and the script prints CAUGHT or MISSED per mutation. Exits non-zero
# if any mutation is missed, or no longer applies (the code it mutates
# changed: update the mutation).
#
#   scripts/softcuda-mutations.sh                 # every mutation
#   scripts/softcuda-mutations.sh swap-args       # the ones whose name contains this
#   scripts/softcuda-mutations.sh 'ensemble|gate' # or matches this extended regex
#
# The scratch copy lives in target/mutants/src (tracked and untracked files,
# copied with their times, so cargo rebuilds only what a mutation touches)
# with its own target dir target/mutants/target; a baseline run on the
# unmutated copy must pass every test a selected mutation is judged by first
# (md_gpu and the MD plan's softcuda tests included, so that a FAILED there
# means the mutation). Measured on this project's loaded 2-core
# VM: 7.3 min from an empty target/mutants (the first build compiles every
# dependency), 2.1 min once it is warm (nbody-host's test binaries rebuilt
# after each mutation); with the four block-pair mutations, 8.1 min from
# empty (2026-11-26; results in softcuda/README.md, "Mutations"); with the
# nine kernel and stream mutations of issue 24, 11.1 and 14.8 min with
# target/mutants warm from an earlier run (2026-11-27, the VM at load 12-196). The
# five kernel mutations after issue 24's block_sums (SOFTCUDA_MUTANTS beside
# a first run, the tree's warm target dir): 46 min at load 4-143. Not in CI: cold, it would take
# scripts/ci-softcuda.sh well past its 12-minute budget.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
only=${1:-}
# SOFTCUDA_MUTANTS moves the scratch copy (a second run beside a first);
# a CARGO_TARGET_DIR already set is kept (a warm target dir: the copy's
# crates build there beside the tree's, under their own paths).
scratch=${SOFTCUDA_MUTANTS:-$root/target/mutants}
src=$scratch/src
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$scratch/target}
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
scan-missing-barrier|nbody-host/ptx/gpu_kernels.ptx|s = delete_line(s, "nbody_scan_blocks", "bar.sync", 0)|--test md_gpu cuda::;--lib plan::md
md-bin-non-atomic-count|nbody-host/ptx/gpu_kernels.ptx|s = in_entry(s, "nbody_md_bin", "{ .reg .u64 %gp; cvta.to.global.u64 %gp, %rd12; atom.global.add.u32 %r13, [%gp], %r14; }", "{ .reg .u64 %gp; .reg .b32 %cnt; cvta.to.global.u64 %gp, %rd12; ld.global.u32 %r13, [%gp]; add.s32 %cnt, %r13, %r14; st.global.u32 [%gp], %cnt; }")|--test md_gpu cuda::;--lib plan::md
md-bin-clamp-off-by-one|nbody-host/ptx/gpu_kernels.ptx|s = in_entry(s, "nbody_md_bin", "add.s32 \t%r89, %r5, -1;", "add.s32 \t%r89, %r5, 0;")|--test md_gpu cuda::;--lib plan::md;-p softcuda --test md_binning
md-read-without-stream-sync|nbody-host/src/cuda/device.rs|s = replace(s, "        let src = d.range(buf, offset, len)?;\n        d.sync()?;\n", "        let src = d.range(buf, offset, len)?;\n")|--test md_gpu cuda::
event-on-the-wrong-stream|nbody-host/src/cuda/device.rs|s = replace(s, "        d.stop\n            .record(&d.stream)\n", "        d.stop\n            .record(&Stream::new(StreamFlags::NON_BLOCKING, None).map_err(during(\"creating a stream\"))?)\n")|--test cuda_backend;--test correctness cuda::tiled
md-bin-cta-atomic|nbody-host/ptx/gpu_kernels.ptx|s = in_entry(s, "nbody_md_bin", "atom.global.add.u32 %r13, [%gp], %r14;", "atom.cta.global.add.u32 %r13, [%gp], %r14;")|--test md_gpu cuda::;--lib plan::md
md-drift-ld-nc-of-written-data|nbody-host/ptx/gpu_kernels.ptx|s = in_entry(s, "nbody_md_drift", "ld.global.v4.b32 \t{%r11, %r12, %r13, %r14}, [%rd9];", "ld.global.nc.v4.b32 \t{%r11, %r12, %r13, %r14}, [%rd9];")|--test md_gpu cuda::;--lib plan::md
triangle-missing-syncwarp|nbody-host/ptx/gpu_kernels.ptx|s = delete_line(s, "nbody_triangle_accel", "bar.warp.sync", 5)|--test correctness cuda::triangle;--test cuda_backend
energy-last-block-sums|nbody-host/ptx/gpu_kernels.ptx|s = in_entry(s, "nbody_energy", "\tst.global.b64 \t[%rd9+8], %rd48;\n", "\tst.global.b64 \t[%rd9+8], %rd48;\n" + last_block_sums("r5", "rd3", "rd9", "rd47", "rd48"))|--test cuda_backend;--test correctness cuda::
ensemble-pass-missing-barrier|nbody-host/ptx/gpu_kernels.ptx|s = delete_bar_sync(s, "nbody_md_ensemble_pass", 1)|--test md_gpu_ensemble cuda::;--test block_sums_bits md_
ensemble-pass-every-thread-writes|nbody-host/ptx/gpu_kernels.ptx|s = in_entry(s, "nbody_md_ensemble_pass", "\tsetp.ne.b32 \t%p14, %r3, 0;\n\t@%p14 bra \t$L__BB30_33;\n", "")|--test md_gpu_ensemble cuda::;--test block_sums_bits md_
ensemble-pass-last-block-sums|nbody-host/ptx/gpu_kernels.ptx|s = in_entry(s, "nbody_md_ensemble_pass", "\tst.global.b64 \t[%rd22+8], %rd201;\n", "\tst.global.b64 \t[%rd22+8], %rd201;\n" + last_block_sums("r1", "rd8", "rd22", "rd200", "rd201"))|--test md_gpu_ensemble cuda::;--test block_sums_bits md_
md-gate-before-drift|nbody-host/src/plan/md/batch.rs|s = replace(s, "        if let Some(force) = gate {\n            dev.mark(Some(Section::Neigh))?;\n            self.queue_build(dev, force)?;\n        }\n", ""); s = replace(s, "        dev.launch(\n            Launch::MdDrift {", "        if let Some(force) = gate {\n            dev.mark(Some(Section::Neigh))?;\n            self.queue_build(dev, force)?;\n        }\n        dev.launch(\n            Launch::MdDrift {")|--test md_gpu cuda::;--lib plan::md;--test md_gpu_ensemble cuda::
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
def entry_range(s, entry):
    start = s.index(f".entry {entry}(")
    end = s.find(".entry ", start + 1)
    return start, len(s) if end < 0 else end
def delete_line(s, entry, prefix, k):
    start, end = entry_range(s, entry)
    lines = s[start:end].split("\n")
    idx = [i for i, l in enumerate(lines) if l.strip().startswith(prefix)]
    if len(idx) <= k:
        sys.exit(f"mutation does not apply: {entry} has {len(idx)} {prefix}")
    del lines[idx[k]]
    return s[:start] + "\n".join(lines) + s[end:]
def delete_bar_sync(s, entry, k):
    return delete_line(s, entry, "bar.sync", k)
def in_entry(s, entry, old, new):
    start, end = entry_range(s, entry)
    return s[:start] + replace(s[start:end], old, new) + s[end:]
# After its own partial sums (registers kin and pot, stored at [mine] and
# [mine+8]), a kernel's last block (block index in register ctaid) adds
# every other block's pair (at base + 16 k) into its own and zeroes theirs:
# right only if every other block has finished (blocks in order), as a
# reduction that assumes block order would be.
def last_block_sums(ctaid, base, mine, kin, pot):
    return LAST_BLOCK_SUMS.format(ctaid=ctaid, base=base, mine=mine, kin=kin, pot=pot)
LAST_BLOCK_SUMS = """\t{{
\t.reg .pred %lq;
\t.reg .b32 %lk, %ln;
\t.reg .b64 %la, %lv, %ls, %lp;
\tmov.u32 %ln, %nctaid.x;
\tadd.u32 %ln, %ln, -1;
\tsetp.ne.u32 %lq, %{ctaid}, %ln;
\t@%lq bra $L__MUT_DONE;
\tmov.b64 %ls, %{kin};
\tmov.b64 %lp, %{pot};
\tmov.u32 %lk, 0;
$L__MUT_LOOP:
\tsetp.ge.u32 %lq, %lk, %{ctaid};
\t@%lq bra $L__MUT_END;
\tmul.wide.u32 %la, %lk, 16;
\tadd.s64 %la, %{base}, %la;
\tld.global.b64 %lv, [%la];
\tadd.rn.f64 %ls, %ls, %lv;
\tld.global.b64 %lv, [%la+8];
\tadd.rn.f64 %lp, %lp, %lv;
\tmov.b64 %lv, 0;
\tst.global.b64 [%la], %lv;
\tst.global.b64 [%la+8], %lv;
\tadd.u32 %lk, %lk, 1;
\tbra.uni $L__MUT_LOOP;
$L__MUT_END:
\tst.global.b64 [%{mine}], %ls;
\tst.global.b64 [%{mine}+8], %lp;
$L__MUT_DONE:
\t}}
"""
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

# The package a run tests: nbody-host with the CUDA backend unless the run
# names one (`-p softcuda --test md_binning`).
package() { case $1 in -p*) ;; *) echo "-p nbody-host --features cuda" ;; esac; }

selected() { [[ $1 =~ $only ]]; }

# Baseline: the unmutated copy must pass every test a selected mutation is
# judged by, or a CAUGHT below would mean nothing.
echo "==== baseline (no mutation)"
# (`if`, not `&&`: a last mutation left out by the filter must not end the
# loop with a failing status, which pipefail and set -e made a silent exit 1.)
baseline=$(while IFS='|' read -r name _ _ tests; do
  if [ -n "$name" ] && selected "$name"; then tr ';' '\n' <<<"$tests"; fi
done <<<"$mutations" | awk '!seen[$0]++')
while IFS= read -r run; do
  # shellcheck disable=SC2046,SC2086
  (cd "$src" && scripts/with-softcuda.sh cargo test -q $(package "$run") $run) \
    >"$scratch/baseline.log" 2>&1 ||
    { tail -30 "$scratch/baseline.log"; echo "baseline fails: cargo test $run"; exit 1; }
  echo "passes: cargo test $run"
done <<<"$baseline"

missed=0
results=()
while IFS='|' read -r name file code tests; do
  [ -z "$name" ] && continue
  selected "$name" || continue
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
    # shellcheck disable=SC2046,SC2086
    if (cd "$src" && scripts/with-softcuda.sh cargo test -q $(package "$run") $run) >"$log" 2>&1; then
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
