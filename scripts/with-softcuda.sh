#!/usr/bin/env bash
# Runs a command against the software CUDA device (softcuda): builds the
# driver cdylib (release) if needed, presents it as libcuda, and execs the
# command with the link and load paths set, e.g.
#
#   scripts/with-softcuda.sh cargo run --release -p nbody-host --features cuda \
#       --example nbody_tiled -- --backend cuda --n 256 --steps 3
#
# How: the driver is target/release/libsoftcuda_driver.so with the soname
# libcuda.so.1. target/softcuda/lib64 holds libcuda.so and libcuda.so.1
# pointing at it; CUDA_LIBRARY_PATH=target/softcuda is where cust's build
# script (find_cuda_helper) looks for lib64 to link against, and
# LD_LIBRARY_PATH puts that lib64 first for the dynamic loader.
#
# The device is chosen by environment variables (read at cuInit; see
# softcuda/README.md):
#   SOFTCUDA_ARCH=sm_70|sm_80|sm_90        modelled device (attributes, limits, time model); default sm_90
#   SOFTCUDA_SCHEDULE=deterministic|adversarial   lockstep warps, or independent threads in a seeded
#                                          random interleaving with blocks in random order; default deterministic
#   SOFTCUDA_SEED=<u64>                    seed of the adversarial schedule; default 0
#   SOFTCUDA_MEMORY_BYTES=<n>[k|M|G]       device memory; default the modelled card's (80G on sm_90)
#   SOFTCUDA_SHARED_BYTES=<n>[k]           shared memory per block with the opt-in; default the arch's
#   SOFTCUDA_SHARED_DEFAULT_BYTES=<n>[k]   dynamic shared memory allowed without the opt-in; default 48k
#                                          (lower it to send small launches through a program's opt-in path)
#   SOFTCUDA_REGISTERS=<n>|<entry>=<n>,... registers per thread per entry (default 32): sets NUM_REGS and
#                                          bounds MAX_THREADS_PER_BLOCK (72 -> 896), so a register-limited
#                                          kernel is modelled; launches above it: LAUNCH_OUT_OF_RESOURCES
#   SOFTCUDA_DEVICES=0|1                   0: cuInit fails with CUDA_ERROR_NO_DEVICE; default 1
#   SOFTCUDA_ORDERING=hostile|eager        hostile: queued work runs only when forced; default hostile
#   SOFTCUDA_RACES=off|shared|all          race detection; default all
#   SOFTCUDA_LOG=stderr|off|<path>         every driver call to stderr or a file; default: errors and notices only
#   SOFTCUDA_STATS=<path>                  per-launch accounting as JSON lines
#   SOFTCUDA_MAX_INSTRUCTIONS=<n>          warp-instructions per launch before CUDA_ERROR_LAUNCH_TIMEOUT
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
case $target in /*) ;; *) target=$root/$target ;; esac

if [ $# -eq 0 ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi

cargo build --quiet --release -p softcuda-driver --manifest-path "$root/Cargo.toml"
so=$target/release/libsoftcuda_driver.so
[ -f "$so" ] || { echo "with-softcuda: $so was not built" >&2; exit 1; }

lib=$target/softcuda/lib64
mkdir -p "$lib"
ln -sfn "$so" "$lib/libcuda.so"
ln -sfn "$so" "$lib/libcuda.so.1"

export CUDA_LIBRARY_PATH=$target/softcuda
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
exec "$@"
