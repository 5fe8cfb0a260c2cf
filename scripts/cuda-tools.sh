#!/usr/bin/env bash
# Installs NVIDIA's command-line tools from PyPI wheels (no GPU, no driver, no
# CUDA installation) into a venv under target/, and prints the directory that
# holds ptxas, nvdisasm and cuobjdump (CUDA 13). CUDA 13 dropped sm_70, so
# CUDA 12.9's ptxas is installed too, as <dir>/cu12/ptxas.
#
#   bin=$(scripts/cuda-tools.sh); "$bin/ptxas" --version
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
home=${CUDA_TOOLS_HOME:-$root/target/cuda-tools}
if [ ! -x "$home/bin/ptxas" ] || [ ! -x "$home/bin/cu12/ptxas" ] || [ ! -x "$home/bin/cuobjdump" ]; then
  rm -rf "$home"
  python3 -m venv "$home/venv" >&2
  "$home/venv/bin/pip" install -q --disable-pip-version-check \
    nvidia-cuda-nvcc nvidia-cuda-nvdisasm nvidia-cuda-cuobjdump >&2
  "$home/venv/bin/pip" install -q --disable-pip-version-check --target "$home/cu12-site" \
    "nvidia-cuda-nvcc-cu12==12.9.*" >&2
  site=$("$home/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  mkdir -p "$home/bin/cu12"
  for t in ptxas nvdisasm cuobjdump; do
    src=$(find "$site/nvidia" -path "*/bin/$t" -type f | head -n 1)
    [ -n "$src" ] || { echo "cuda-tools: $t not found in the wheels" >&2; exit 1; }
    chmod +x "$src"; ln -sf "$src" "$home/bin/$t"
  done
  src=$(find "$home/cu12-site/nvidia" -path "*/bin/ptxas" -type f | head -n 1)
  [ -n "$src" ] || { echo "cuda-tools: CUDA 12 ptxas not found" >&2; exit 1; }
  chmod +x "$src"; ln -sf "$src" "$home/bin/cu12/ptxas"
fi
echo "$home/bin"
