#!/usr/bin/env bash
# MODELLED (not measured) force+jerk interactions per second of the Hermite
# force kernels (nbody_hermite_force, nbody_hermite_force_mixed) on an
# H200, from the static SASS of their hottest loop: sass-stats (ptxas and
# cuobjdump from PyPI wheels, no GPU; ../shared/tools/sass-stats, or
# $SASS_STATS) dumps the loop of the committed PTX for sm_90; each SASS
# instruction is put on the pipe that executes it and each pipe's
# throughput per SM per clock bounds the interactions per clock:
#   issue  4 warp-instructions        (128 thread-instructions) / all
#   FP64   64 lanes (DFMA DMUL DADD)  / FP64 instructions
#   FP32   128 lanes (FFMA FADD FMUL FMNMX FSETP)
#   ALU    64 lanes (integer, logic, FSEL, SEL, MOV, ...)
#   XU     16 lanes (MUFU and F2F, counted as sharing one pipe: conservative)
#   shared 1 wavefront per clock, one wavefront per broadcast LDS per warp
# (H100/H200 SM rates: CUDA C Programming Guide, arithmetic instructions,
# compute capability 9.0), then x 132 SMs x 1.98 GHz (H200 SXM boost).
# Not modelled: latency and occupancy, the work outside the hot loop
# (tile loads, barriers, the j-split's reduction: one tile of `block`
# j-bodies per 2 barriers), clocks below boost. An upper bound, labelled as
# such wherever it is quoted (docs/collisional.md, README).
#   scripts/hermite-model.sh            # the table, markdown
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
stats=${SASS_STATS:-}
if [ -z "$stats" ]; then
  for d in "$root/.." "$root/../.."; do
    [ -x "$d/shared/tools/sass-stats" ] && { stats=$(cd "$d/shared/tools" && pwd)/sass-stats; break; }
  done
fi
[ -x "$stats" ] || { echo "hermite-model: sass-stats not found (set SASS_STATS)" >&2; exit 1; }
out=$root/target/hermite-model
mkdir -p "$out"
ptx=$root/nbody-host/ptx/gpu_kernels.ptx
for k in nbody_hermite_force nbody_hermite_force_mixed; do
  "$stats" "$ptx" --arch sm_90 --kernel "^$k\$" --dump-loop >"$out/$k.txt"
done
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
SMS, CLOCK = 132, 1.98e9
pipes = {  # lanes per SM per clock
    "issue": 128, "FP64": 64, "FP32": 128, "ALU": 64, "XU": 16,
}
def pipe(op):
    if op in ("DFMA", "DMUL", "DADD", "DSETP", "DMNMX"):
        return "FP64"
    if op in ("FFMA", "FADD", "FMUL", "FMNMX", "FSETP"):
        return "FP32"
    if op in ("MUFU", "F2F", "I2F", "F2I"):
        return "XU"
    if op.startswith("LDS"):
        return "LDS"
    return "ALU"
rows, all_bounds = [], []
for k in ("nbody_hermite_force", "nbody_hermite_force_mixed"):
    text = open(f"{out}/{k}.txt").read()
    head = dict(re.findall(r"(\w+)=(\S+)", text.splitlines()[0]))
    ia = int(head["ia"])
    count = {"FP64": 0, "FP32": 0, "ALU": 0, "XU": 0, "LDS": 0}
    total = 0
    for line in text.splitlines()[1:]:
        m = re.match(r"#\s+/\*[0-9a-f]+\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line)
        if not m or m.group(2) == "NOP":
            continue
        total += 1
        count[pipe(m.group(2))] += 1
    per = {p: c / ia for p, c in count.items()}
    inf = float("inf")
    bounds = {
        "issue": pipes["issue"] / (total / ia),
        "FP64": pipes["FP64"] / per["FP64"] if per["FP64"] else inf,
        "FP32": pipes["FP32"] / per["FP32"] if per["FP32"] else inf,
        "ALU": pipes["ALU"] / per["ALU"] if per["ALU"] else inf,
        "XU": pipes["XU"] / per["XU"] if per["XU"] else inf,
        "shared": 32 / per["LDS"] if per["LDS"] else inf,
    }
    name = min(bounds, key=bounds.get)
    rate = bounds[name]
    rows.append(
        f"| `{k}` | {total / ia:.1f} | {per['FP64']:.1f} | {per['FP32']:.1f} | {per['ALU']:.1f} | "
        f"{per['XU']:.1f} | {per['LDS']:.1f} | {name} | {rate:.2f} | {rate * SMS * CLOCK:.2e} |"
    )
    all_bounds.append(
        f"| `{k}` | " + " | ".join(f"{bounds[b]:.2f}" for b in ("issue", "FP64", "FP32", "ALU", "XU", "shared")) + " |"
    )
print("SASS instructions per interaction of the hot loop (sm_90, static count) by pipe, and the modelled rate:")
print()
print("| kernel | SASS / interaction | FP64 | FP32 | ALU | XU (MUFU + F2F) | LDS | bound (modelled) | interactions / clock / SM (modelled) | H200 interactions/s (modelled) |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
print("\n".join(rows))
print()
print("Each pipe's bound, interactions per clock per SM (modelled):")
print()
print("| kernel | issue | FP64 | FP32 | ALU | XU | shared |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
print("\n".join(all_bounds))
PY
