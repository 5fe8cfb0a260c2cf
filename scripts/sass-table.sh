#!/usr/bin/env bash
# Regenerates the GPU tables in README.md (between the sass-table markers)
# from the committed PTX:
#   - static count: registers and SASS instructions per interaction of each
#     kernel's hottest loop, on sm_80 and sm_90, from sass-stats (ptxas +
#     cuobjdump from PyPI wheels, no GPU; ../shared/tools/sass-stats, or
#     $SASS_STATS);
#   - the interpreter's accounting: PTX instructions, shared-memory wavefronts
#     and global sectors per interaction, from softcuda-stats (the software
#     CUDA device, deterministic schedule, N = 4096, block 256, fixed bodies);
#     the Lennard-Jones force kernel's global traffic per neighbour pair from
#     the MD plan's accounting test on the same device (softcuda-stats builds
#     no neighbour lists): nbody-host/src/plan/md/tests/runs.rs
#     `the_force_kernel_moves_at_most_36_bytes_per_pair`, which prints it;
#   - modelled: per kernel and architecture, the issue bound (4 warp
#     instructions per clock per SM: 128 / SASS instructions per interaction)
#     and the shared-memory bound (1 wavefront per clock per SM: 1 /
#     wavefronts per interaction), the predicted interactions per clock per SM
#     as the smaller of the two, and the triangle kernel's prediction relative
#     to the tiled kernel's with N^2 interactions as the work of both.
# The same PTX and the same tools give the same tables.
#   scripts/sass-table.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
stats=${SASS_STATS:-}
if [ -z "$stats" ]; then
  # ../shared/tools from the main checkout, ../../shared/tools from a worktree.
  for d in "$root/.." "$root/../.."; do
    [ -x "$d/shared/tools/sass-stats" ] && { stats=$(cd "$d/shared/tools" && pwd)/sass-stats; break; }
  done
fi
[ -x "$stats" ] || { echo "sass-table: sass-stats not found (set SASS_STATS)" >&2; exit 1; }
out=$root/target/sass-table
mkdir -p "$out"
ptx=$root/nbody-host/ptx/gpu_kernels.ptx
for arch in sm_80 sm_90; do
  "$stats" "$ptx" --arch $arch >"$out/sass-$arch.txt"
  # The Lennard-Jones force loop has one reciprocal (MUFU.RCP) per neighbour
  # pair and no rsqrt: count it per reciprocal.
  "$stats" "$ptx" --arch $arch --marker 'MUFU\.RCP' --kernel '^nbody_lj_forces' >"$out/sass-lj-$arch.txt"
done
cargo build -q --release -p softcuda --bin softcuda-stats --manifest-path "$root/Cargo.toml"
interp=${CARGO_TARGET_DIR:-$root/target}/release/softcuda-stats
: >"$out/softcuda.jsonl"
for k in $(grep -o '^kernel=[a-z_]*' "$out/sass-sm_90.txt" | cut -d= -f2); do
  case $k in nbody_simt_* | nbody_tiled_* | nbody_triangle_* | nbody_energy)
    "$interp" "$ptx" --kernel "$k" --n 4096 --block 256 --json >>"$out/softcuda.jsonl" ;;
  esac
done
# The LJ force kernel needs neighbour lists: the MD plan's test measures its
# traffic (in.lj's state point, N = 2048, deterministic schedule) and prints
# "... <bytes> bytes (<sectors> sectors) of global traffic".
cargo test -q -p nbody-host --lib --manifest-path "$root/Cargo.toml" \
  the_force_kernel_moves_at_most_36_bytes_per_pair -- --nocapture >"$out/lj-traffic.txt" 2>&1 ||
  { cat "$out/lj-traffic.txt" >&2; exit 1; }
python3 - "$root/README.md" "$out" <<'PY'
import json, re, sys
readme, out = sys.argv[1], sys.argv[2]
sass = {}
for arch in ("sm_80", "sm_90"):
    # The LJ pass (counted per MUFU.RCP) replaces the default pass's LJ lines.
    for name in (f"sass-{arch}.txt", f"sass-lj-{arch}.txt"):
        for line in open(f"{out}/{name}"):
            f = dict(re.findall(r"(\w+)=(\S+)", line))
            if "kernel" in f:
                sass[(f["kernel"], arch)] = f
interp = {j["kernel"]: j for j in map(json.loads, open(f"{out}/softcuda.jsonl"))}
kernels = [k for (k, a) in sass if a == "sm_90"]
lj = re.search(r"([0-9.]+) bytes \(([0-9.]+) sectors\) of global traffic", open(f"{out}/lj-traffic.txt").read())
if lj is None:
    sys.exit("sass-table: the LJ accounting test printed no traffic line")
lj_bytes, lj_sectors = float(lj.group(1)), float(lj.group(2))

def sass_per_interaction(k, arch):
    """SASS instructions per interaction (N^2 counting) of the hot loop, or None."""
    v = sass[(k, arch)].get("instr_per_interaction", "n/a")
    if v == "n/a":
        return None
    # The triangle kernel's loop has one RSQ per pair: two interactions.
    return float(v) / (2 if k.startswith(("nbody_triangle", "nbody_block_pair")) else 1)

def fmt(x, digits=2):
    return "n/a" if x is None else f"{x:.{digits}f}"

rows = [
    f"Static count (sass-stats: ptxas and cuobjdump, hottest loop) and the interpreter's accounting (softcuda-stats, whole kernel, N = 4096, block 256, deterministic schedule), per interaction with N^2 interactions per step (the triangle and block-pair kernels compute each pair once: two interactions; the `nbody_lj_forces` rows count one neighbour-list entry, one MUFU.RCP, as one interaction; softcuda-stats cannot run them without neighbour lists: the MD plan's accounting test on the software device (`the_force_kernel_moves_at_most_36_bytes_per_pair`, in.lj's state point, N = 2048) measures {lj_sectors:.2f} global sectors, {lj_bytes:.1f} bytes, per neighbour pair):",
    "",
    "| kernel | registers sm_80 / sm_90 | spills | SASS instr. per interaction, sm_80 (static count) | sm_90 (static count) | PTX instr. per interaction (interpreter) | shared-memory wavefronts per interaction (interpreter) | global sectors per interaction (interpreter) |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
]
for k in kernels:
    s80, s90 = sass[(k, "sm_80")], sass[(k, "sm_90")]
    i = interp.get(k)
    rows.append(
        f"| `{k}` | {s80['regs']} / {s90['regs']} | {s90['spill']} | {fmt(sass_per_interaction(k, 'sm_80'))} | {fmt(sass_per_interaction(k, 'sm_90'))} | "
        + (f"{i['thread_instructions_per_interaction']:.2f} | {i['shared_wavefronts_per_interaction']:.4f} | {i['global_sectors_per_interaction']:.4f} |" if i else "n/a | n/a | n/a |")
    )
rows += [
    "",
    "Modelled interactions per clock per SM: issue bound = 4 warp instructions per clock x 32 lanes / SASS instructions per interaction; shared-memory bound = 1 wavefront per clock / wavefronts per interaction; predicted = the smaller. Not modelled: the FP32 pipe (64 lanes per SM on sm_80, 128 on sm_90), MUFU.RSQ (16 per clock per SM), latency, occupancy, the loop's overhead outside the hot loop.",
    "",
    "| kernel | arch | issue bound (modelled) | shared-memory bound (modelled) | predicted interactions / clock / SM (modelled) | bound by |",
    "| --- | --- | ---: | ---: | ---: | --- |",
]
pred = {}
for k in kernels:
    i = interp.get(k)
    if i is None:
        continue
    for arch in ("sm_80", "sm_90"):
        spi = sass_per_interaction(k, arch)
        if spi is None:
            continue
        issue = 128.0 / spi
        w = i["shared_wavefronts_per_interaction"]
        shared = 1.0 / w if w > 0 else float("inf")
        p = min(issue, shared)
        pred[(k, arch)] = p
        rows.append(
            f"| `{k}` | {arch} | {issue:.2f} | {'none' if w == 0 else f'{shared:.1f}'} | {p:.2f} | {'issue' if issue <= shared else 'shared memory'} |"
        )
rows.append("")
for arch in ("sm_80", "sm_90"):
    t, r = pred.get(("nbody_triangle_accel", arch)), pred.get(("nbody_tiled_accel", arch))
    if t and r:
        rows.append(
            f"Triangle vs tiled on {arch} (modelled, N^2 interactions as the work of both): {t:.2f} / {r:.2f} = **{t / r:.2f}x** predicted PIPS."
            + ("" if arch == "sm_80" else " (issue 17 asks for >= 1.4x on sm_90.)")
        )
        rows.append("")
text = open(readme).read()
begin, end = "<!-- sass-table:begin -->", "<!-- sass-table:end -->"
a, b = text.index(begin) + len(begin), text.index(end)
open(readme, "w").write(text[:a] + "\n" + "\n".join(rows).rstrip() + "\n" + text[b:])
PY
echo "README.md GPU tables regenerated"
