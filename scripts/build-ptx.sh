#!/usr/bin/env bash
# Regenerates the committed PTX from gpu-kernels with the preinstalled nightly.
#
#   scripts/build-ptx.sh            writes nbody-host/ptx/gpu_kernels.ptx
#   scripts/build-ptx.sh OUT.ptx    writes OUT.ptx instead (used by check-ptx.sh)
#
# rustc's own nvptx64-nvidia-cuda target, core rebuilt from source
# (-Zbuild-std=core, needs the nightly's rust-src), the `ptx` profile
# (lto = "fat", codegen-units = 1), panics abort in place
# (-Cpanic=immediate-abort), baseline sm_70 / PTX ISA 7.0 so every driver from
# Volta on can load it. --emit=asm writes the PTX; no linker is involved.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/nbody-host/ptx/gpu_kernels.ptx}
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
toolchain=${PTX_TOOLCHAIN:-nightly}

if ! rustup component list --toolchain "$toolchain" --installed 2>/dev/null | grep -q '^rust-src'; then
  rustup component add rust-src --toolchain "$toolchain" >&2
fi

cd "$root"
mkdir -p "$(dirname "$out")"
tmp=$(mktemp "$out.XXXXXX.tmp")
trap 'rm -f "$tmp"' EXIT
RUSTFLAGS="-Zunstable-options -Cpanic=immediate-abort -Ctarget-cpu=sm_70 -Ctarget-feature=+ptx70" \
  cargo "+$toolchain" rustc -p gpu-kernels --profile ptx --target nvptx64-nvidia-cuda \
  -Zbuild-std=core --target-dir "$root/target/ptx" --quiet -- --emit=asm="$tmp"
# (rustc warns that `ptx70` is an unstable target feature: expected.)
# Atomic replace: a failed build never leaves a truncated PTX behind.
mv "$tmp" "$out"
trap - EXIT
echo "wrote $out" >&2
