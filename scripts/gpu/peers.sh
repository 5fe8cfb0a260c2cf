#!/usr/bin/env bash
# Issue 23 item 5: ours beside same-card peers, in one call, at the goals' N values. Run by the
# bundle's runner (scripts/gpu-bundle-run.sh, section 2) or alone from the repository root:
#
#   scripts/gpu/peers.sh BIN_DIR OUT_DIR     # BIN_DIR: the bundle's bin/ (scripts/gpu-bundle.sh)
#
# One metric for all: N^2 interactions per step, whole steps (every launch of a step),
# CUDA events, best of 3:
#   - ours: bin/nbody_tiled --backend cuda --no-energy, kernels auto (the default), tiled and
#     triangle, three runs each (the best taken); at N <= 16384 also auto with --graphs off
#     (item 1: graphs against plain launches);
#   - cuda-samples: scripts/peers/cuda_samples_nbody.cu (NVIDIA's nbody kernels, BSD licence)
#     compiled here with nvcc -O3 -arch=sm_XX, and again with -use_fast_math; block 256;
#   - Numba CUDA: scripts/peers/numba_cuda_nbody.py (fastmath), block 256.
# Every run is under `timeout`; a peer that fails (no nvcc, no numba, a wrong answer: the peers
# check their first bodies against float64 and exit non-zero) is recorded as failed and the
# rest still run. Writes OUT_DIR/peers.md (the table, with ratios ours / peer) and one log per
# run; about 2-3 minutes on an H200 (modelled from the issue's rates plus ~1 s per start).
set -u
bin=${1:?usage: peers.sh BIN_DIR OUT_DIR}
out=${2:?usage: peers.sh BIN_DIR OUT_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
results=$out/peers.txt
: >"$results"
# PEERS_NS, PEERS_STEPS: other N values and step counts (a dry run without a GPU:
# PEERS_NS=64 PEERS_STEPS=2 NUMBA_ENABLE_CUDASIM=1).
read -r -a ns <<<"${PEERS_NS:-4096 16384 65536 1048576}"
steps_for() { if [ "$1" -le 16384 ]; then echo 512; elif [ "$1" -le 65536 ]; then echo 50; else echo 2; fi; }

# One result line per run, tagged: "who=NAME n=N pips=X" or "who=NAME n=N failed=STATUS".
note() {
  local who=$1 n=$2 log=$3 status=$4 pips
  pips=$(grep -o 'pips=[0-9.e+-]*' "$log" | tail -n 1 | cut -d= -f2)
  if [ "$status" = 0 ] && [ -n "$pips" ]; then
    echo "who=$who n=$n pips=$pips" >>"$results"
  else
    echo "who=$who n=$n failed=$status" >>"$results"
    echo "peers: $who n=$n failed (exit $status): $(tail -n 3 "$log" | tr '\n' ' ')"
  fi
}
run() {
  local limit=$1 who=$2 n=$3; shift 3
  local log=$out/$who-$n.log status=0
  timeout "$limit" "$@" >"$log" 2>&1 || status=$?
  note "$who" "$n" "$log" "$status"
}

# The cuda-samples peer, compiled on this machine.
nvcc=/usr/local/cuda/bin/nvcc
[ -x "$nvcc" ] || nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
arch=sm_${cc:-90}
# Compiled in the background while our runs take the GPU (nvcc needs none).
for variant in default fast-math; do
  flags=(-O3 "-arch=$arch")
  [ $variant = fast-math ] && flags+=(-use_fast_math)
  (timeout 180 "$nvcc" "${flags[@]}" -o "$out/cuda_samples_$variant" \
    "$root/scripts/peers/cuda_samples_nbody.cu" >"$out/nvcc-$variant.log" 2>&1 ||
    echo "peers: nvcc ${flags[*]} failed: $(tail -n 3 "$out/nvcc-$variant.log" | tr '\n' ' ')") &
done
"$nvcc" --version 2>/dev/null | tail -n 1 >"$out/nvcc-version.txt"

for n in "${ns[@]}"; do
  steps=${PEERS_STEPS:-$(steps_for "$n")}
  for kernel in auto tiled triangle; do
    for r in 1 2 3; do
      run 120 "ours-$kernel" "$n" "$bin/nbody_tiled" --backend cuda --n "$n" --steps "$steps" \
        --kernel "$kernel" --no-energy
    done
  done
  if [ "$n" -le 16384 ]; then
    for r in 1 2 3; do
      run 120 "ours-auto-graphs-off" "$n" "$bin/nbody_tiled" --backend cuda --n "$n" \
        --steps "$steps" --kernel auto --graphs off --no-energy
    done
  fi
  wait  # the nvcc builds
  for variant in default fast-math; do
    if [ -x "$out/cuda_samples_$variant" ]; then
      run 120 "cuda-samples-$variant" "$n" "$out/cuda_samples_$variant" "$n" "$steps" 256
    else
      echo "who=cuda-samples-$variant n=$n failed=not-built" >>"$results"
    fi
  done
  run 180 numba "$n" python3 "$root/scripts/peers/numba_cuda_nbody.py" "$n" "$steps" 256
done

python3 - "$results" "$out/peers.md" "$(cat "$out/nvcc-version.txt" 2>/dev/null)" "$arch" <<'PY'
import collections, re, sys
src, dst, nvcc, arch = sys.argv[1:5]
best = collections.defaultdict(float)
failed = collections.defaultdict(list)
for line in open(src):
    f = dict(re.findall(r"(\w[\w-]*)=(\S+)", line))
    key = (f["who"], int(f["n"]))
    if "pips" in f:
        best[key] = max(best[key], float(f["pips"]))
    else:
        failed[key].append(f["failed"])
ns = sorted({n for _, n in list(best) + list(failed)})
def cell(who, n):
    if (who, n) in best:
        return f"{best[who, n]:.3e}"
    if (who, n) in failed:
        return "failed (" + ",".join(failed[who, n]) + ")"
    return "-"
ours = ["ours-auto", "ours-tiled", "ours-triangle", "ours-auto-graphs-off"]
peers = ["cuda-samples-default", "cuda-samples-fast-math", "numba"]
rows = [
    f"Interactions/s (N^2 per step, whole steps, CUDA events, best of 3), measured in this call; "
    f"cuda-samples compiled here ({nvcc or 'nvcc: unknown version'}, -O3 -arch={arch}, block 256); "
    f"Numba CUDA fastmath, block 256. Ours best = the best of our kernels at that N.",
    "",
    "| N | " + " | ".join(ours) + " | ours best | " + " | ".join(peers) + " | " + " | ".join(f"best / {p}" for p in peers) + " |",
    "| ---: |" + " ---: |" * (len(ours) + 1 + 2 * len(peers)),
]
for n in ns:
    b = max((best.get((w, n), 0.0) for w in ours), default=0.0)
    ratios = []
    for p in peers:
        ratios.append(f"{b / best[p, n]:.2f}x" if b > 0 and best.get((p, n), 0) > 0 else "n/a")
    rows.append(
        f"| {n} | " + " | ".join(cell(w, n) for w in ours) + f" | {b:.3e} | "
        + " | ".join(cell(p, n) for p in peers) + " | " + " | ".join(ratios) + " |"
    )
open(dst, "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
PY
