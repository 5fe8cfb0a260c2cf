#!/usr/bin/env bash
# For a GPU machine WITHOUT Rust (a lent device with only NVIDIA's driver and
# CUDA tools): builds here, on a machine with Rust and no GPU, everything
# scripts/first-gpu.sh would build there, and packs it with a runner.
#
#   scripts/gpu-bundle.sh [DIR]       # default DIR: .gpubundle (git-ignored)
#   # copy the checkout and DIR.tar.xz to the GPU machine, then there, from the repository root:
#   tar -xJf DIR.tar.xz
#   DIR/run.sh REPORT_DIR             # writes REPORT_DIR/report.md (and the raw logs)
#
# The binaries link libcuda.so.1 by name (the software device's driver stands
# in while building: it carries that soname) and take the real driver at run
# time. Tests are run with `--skip softcuda_` (those need the software
# device's knobs). Binaries are stripped and packed (below) so the bundle travels.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dir=${1:-.gpubundle}
case $dir in /*) ;; *) dir=$root/$dir ;; esac
rm -rf "$dir"
mkdir -p "$dir/bin"

tests=(correctness cuda_backend cuda_block_pair gpu_path snapshot md_gpu gpu_bits hermite_gpu cuda_graphs
  md_gpu_ensemble md_gpu_npt md_gpu_like_cpu block_sums_bits)
args=()
for t in "${tests[@]}"; do args+=(--test "$t"); done

# Test binaries (profile.test is optimised), the bench and the examples.
json=$(mktemp)
scripts/with-softcuda.sh cargo test -q -p nbody-host --features cuda "${args[@]}" --no-run \
  --message-format=json >"$json"
scripts/with-softcuda.sh cargo bench -q -p nbody-host --features cuda --bench pips --no-run \
  --message-format=json >>"$json"
scripts/with-softcuda.sh cargo build -q --release -p nbody-host --features cuda \
  --example nbody_tiled --example lj_melt --example hermite_gpu_pips --example md --message-format=json >>"$json"
python3 - "$json" "$dir/bin" <<'EOF'
import json, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
for line in open(src):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    t = m["target"]
    if t["kind"][0] in ("test", "bench", "example"):
        shutil.copy(m["executable"], f"{dst}/{t['name']}")
        print("bundled", t["kind"][0], t["name"])
EOF
rm -f "$json"
strip "$dir"/bin/*
for b in "$dir"/bin/*; do
  readelf -d "$b" | grep -q 'libcuda.so.1' || { echo "gpu-bundle: $b does not link libcuda.so.1" >&2; exit 1; }
done
cp scripts/gpu-bundle-run.sh "$dir/run.sh"
chmod +x "$dir/run.sh"
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with local changes)')" >"$dir/COMMIT"
du -sh "$dir"
# The device tool carries at most 64 MiB: the stripped binaries (~150 MiB,
# the library linked into each) travel as DIR.tar.xz (~25 MiB), unpacked there
# with `tar -xJf` from the repository root.
tar -C "$(dirname "$dir")" -cf - "$(basename "$dir")" | xz -T0 -6 >"$dir.tar.xz"
du -sh "$dir.tar.xz"
