#!/usr/bin/env bash
# Regenerates the SASS table in README.md (between the sass-table markers) from
# the committed PTX, with ../shared/tools/sass-stats (or $SASS_STATS) on sm_90.
#   scripts/sass-table.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
stats=${SASS_STATS:-$(dirname "$root")/shared/tools/sass-stats}
PATH=$("$root/scripts/cuda-tools.sh"):$PATH
export PATH
"$stats" "$root/nbody-host/ptx/gpu_kernels.ptx" >"$root/target/sass-stats.txt"
python3 - "$root/README.md" "$root/target/sass-stats.txt" <<'PY'
import re, sys
readme, stats = sys.argv[1], open(sys.argv[2]).read()
rows = ["| kernel | registers | spills | SASS instr. per interaction (sm_90) |", "| --- | ---: | ---: | ---: |"]
for line in stats.splitlines():
    f = dict(re.findall(r"(\w+)=(\S+)", line))
    if "kernel" not in f:
        continue
    ipi = f.get("instr_per_interaction", "n/a")
    if f["kernel"] in ("nbody_triangle_accel", "nbody_block_pair") and ipi != "n/a":
        ipi += " per pair (2 interactions)"
    rows.append(f"| `{f['kernel']}` | {f['regs']} | {f['spill']} | {ipi} |")
text = open(readme).read()
begin, end = "<!-- sass-table:begin -->", "<!-- sass-table:end -->"
a, b = text.index(begin) + len(begin), text.index(end)
open(readme, "w").write(text[:a] + "\n" + "\n".join(rows) + "\n" + text[b:])
PY
echo "README.md SASS table regenerated"
