#!/usr/bin/env bash
# Proves the committed PTX is what the source produces and that it assembles
# to clean machine code:
#   1. rebuilds the PTX with scripts/build-ptx.sh and fails on any difference
#      from nbody-host/ptx/gpu_kernels.ptx;
#   2. fails on any unresolved extern function in the PTX;
#   3. assembles it with `ptxas -v` for sm_70 (CUDA 12.9's ptxas), sm_80 and
#      sm_90 (CUDA 13's), and fails on any ptxas error or warning, local-memory
#      spill or stack frame in any kernel;
#   4. prints registers and static shared memory per kernel and arch (dynamic
#      shared memory is sized at launch: see gpu-kernels/src/launch.rs).
# Tools come from PyPI wheels (scripts/cuda-tools.sh); no GPU or CUDA install.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
committed=$root/nbody-host/ptx/gpu_kernels.ptx
work=$root/target/ptx-check
mkdir -p "$work"

echo "== PTX: rebuild and compare with the committed file"
"$root/scripts/build-ptx.sh" "$work/fresh.ptx" 2>"$work/build.log" || { cat "$work/build.log" >&2; exit 1; }
if ! cmp -s "$committed" "$work/fresh.ptx"; then
  echo "FAIL: nbody-host/ptx/gpu_kernels.ptx is stale: run scripts/build-ptx.sh and commit the result" >&2
  diff -u "$committed" "$work/fresh.ptx" | head -40 >&2 || true
  exit 1
fi
echo "ok: committed PTX matches a fresh build"

if grep -nE '^\s*\.extern\s+\.func' "$committed"; then
  echo "FAIL: the PTX calls an unresolved extern function (above)" >&2
  exit 1
fi
echo "ok: no unresolved extern functions"

bin=$("$root/scripts/cuda-tools.sh")
status=0
for arch in sm_70 sm_80 sm_90; do
  ptxas=$bin/ptxas
  [ "$arch" = sm_70 ] && ptxas=$bin/cu12/ptxas
  echo "== ptxas -v -arch=$arch ($("$ptxas" --version | tail -n 1))"
  if ! "$ptxas" -v -arch="$arch" -o "$work/$arch.cubin" "$committed" >"$work/$arch.log" 2>&1; then
    cat "$work/$arch.log" >&2
    echo "FAIL: ptxas rejected the PTX for $arch" >&2
    status=1
    continue
  fi
  python3 - "$arch" "$work/$arch.log" <<'PY' || status=1
import re, sys
arch, log = sys.argv[1], open(sys.argv[2]).read()
bad = []
for line in log.splitlines():
    if re.search(r"\b(warning|error)\b", line, re.I):
        bad.append(f"ptxas: {line.strip()}")
kernels, cur = {}, None
for line in log.splitlines():
    m = re.search(r"Compiling entry function '([^']+)'", line)
    if m:
        cur = kernels.setdefault(m.group(1), {"stack": 0, "spill_st": 0, "spill_ld": 0, "regs": None, "smem": 0})
        continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and cur is not None:
        cur["stack"], cur["spill_st"], cur["spill_ld"] = map(int, m.groups())
        continue
    m = re.search(r"Used (\d+) registers", line)
    if m and cur is not None:
        cur["regs"] = int(m.group(1))
        s = re.search(r"(\d+) bytes smem", line)
        cur["smem"] = int(s.group(1)) if s else 0
        cur = None
if not kernels:
    bad.append("no kernels found in ptxas output")
print(f"{'kernel':<26} {'regs':>5} {'static smem':>12} {'stack':>6} {'spill st/ld':>12}")
for name, k in sorted(kernels.items()):
    print(f"{name:<26} {k['regs']:>5} {k['smem']:>12} {k['stack']:>6} {str(k['spill_st'])+'/'+str(k['spill_ld']):>12}")
    if k["stack"] or k["spill_st"] or k["spill_ld"]:
        bad.append(f"{name}: {k['stack']} bytes stack frame, {k['spill_st']}/{k['spill_ld']} bytes spilled on {arch}")
for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
done
[ $status -eq 0 ] && echo "ok: ptxas clean for sm_70, sm_80, sm_90 (no spills, no stack frames)"
exit $status
