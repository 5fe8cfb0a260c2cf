#!/usr/bin/env bash
# What a pair law a user adds costs against the built-in one (issue 25, item 2:
# "within 15 % is the goal"). In a scratch worktree of HEAD it adds
# scripts/user-law/lj_user.rs (Lennard-Jones written from scratch as `lj/user`)
# exactly as docs/md.md "Your own pair law" says (the file and one line in
# `pair_styles!`), builds the `md` example once, then
#   1. checks the user law gives the built-in's thermo table bit for bit
#      (same arithmetic) on the CPU and on the emulator backend;
#   2. runs in.lj (`--cells C`, 4 C^3 atoms, in.lj's rebuilds) with `--pair
#      lj/cut` and `--pair lj/user` alternately, ROUNDS pairs, and prints each
#      pair's atom-steps/s, their ratio (user / built-in), the median ratio and
#      the ratio of the bests.
#
#   scripts/user-law-cost.sh [CELLS=20] [ROUNDS=7]     STEPS=200 by default
#
# The scratch tree is removed at the end; its build stays in
# target/user-law (CARGO_TARGET_DIR to move it) so a rerun compiles only the
# crates that changed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cells=${1:-20}
rounds=${2:-7}
steps=${STEPS:-200}
target=${CARGO_TARGET_DIR:-$root/target/user-law}
tmp=$(mktemp -d /tmp/user-law.XXXXXX)
cleanup() {
  git -C "$root" worktree remove --force "$tmp/tree" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

git -C "$root" worktree add --detach --quiet "$tmp/tree" HEAD
cp "$root/scripts/user-law/lj_user.rs" "$tmp/tree/gpu-kernels/src/pair/lj_user.rs"
# The registry line, after the last built-in style.
python3 - "$tmp/tree/gpu-kernels/src/pair/mod.rs" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
last = "TableForcesThermo = nbody_table_forces_thermo;\n"
assert s.count(last) == 1, "pair_styles! changed: update scripts/user-law-cost.sh"
line = ("            /// A user's Lennard-Jones (scripts/user-law/lj_user.rs).\n"
        "            LjUser in lj_user => LjUserForces = nbody_lj_user_forces,\n"
        "                LjUserForcesThermo = nbody_lj_user_forces_thermo;\n")
open(p, "w").write(s.replace(last, last + line))
PY
echo "building md with the user law (target: $target)" >&2
CARGO_INCREMENTAL=0 cargo build --release --quiet --example md \
  --manifest-path "$tmp/tree/Cargo.toml" --target-dir "$target"
md=$target/release/examples/md

common=(--cells "$cells" --density 0.8442 --temp 1.44 --seed 87287 --skin 0.3
  --rebuild-every 20 --dt 0.005)
law() { # STYLE: in.lj's pair_style and pair_coeff in that style
  echo --pair "$1" 2.5 --pair-coeff 1 1 1.0 1.0
}

# 1. Same thermo, bit for bit (the result line's timing apart).
for backend in cpu emulator; do
  small=(--cells 4 --density 0.8442 --temp 1.44 --seed 5 --steps 20 --thermo 5
    --backend "$backend")
  # shellcheck disable=SC2046
  "$md" "${small[@]}" $(law lj/cut) | grep -E '^ *[0-9]+ ' >"$tmp/builtin.txt"
  # shellcheck disable=SC2046
  "$md" "${small[@]}" $(law lj/user) | grep -E '^ *[0-9]+ ' >"$tmp/user.txt"
  if [ ! -s "$tmp/builtin.txt" ] || ! cmp -s "$tmp/builtin.txt" "$tmp/user.txt"; then
    echo "FAIL: lj/user's thermo differs from lj/cut's on $backend" >&2
    diff "$tmp/builtin.txt" "$tmp/user.txt" >&2 || true
    exit 1
  fi
  echo "same thermo ($backend): $(wc -l <"$tmp/user.txt") rows equal bit for bit"
done

# 2. Speed, alternated.
rate() { sed -n 's/.*atom_steps_per_s=\([^ ]*\).*/\1/p'; }
echo "round builtin_atom_steps_per_s user_atom_steps_per_s user/builtin"
: >"$tmp/rates"
for k in $(seq 1 "$rounds"); do
  # shellcheck disable=SC2046
  b=$("$md" "${common[@]}" --steps "$steps" $(law lj/cut) | rate)
  # shellcheck disable=SC2046
  u=$("$md" "${common[@]}" --steps "$steps" $(law lj/user) | rate)
  echo "$k $b $u" | tee -a "$tmp/rates" | awk '{printf "%s %s %s %.3f\n", $1, $2, $3, $3 / $2}'
done
python3 - "$tmp/rates" "$cells" "$steps" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split()[1:])) for l in open(sys.argv[1])]
ratios = [u / b for b, u in rows]
best_b = max(b for b, _ in rows)
best_u = max(u for _, u in rows)
atoms = 4 * int(sys.argv[2]) ** 3
print(f"result atoms={atoms} steps={sys.argv[3]} rounds={len(rows)} "
      f"median_ratio={statistics.median(ratios):.3f} min_ratio={min(ratios):.3f} "
      f"max_ratio={max(ratios):.3f} best_builtin={best_b:.4g} best_user={best_u:.4g} "
      f"best_ratio={best_u / best_b:.3f}")
PY
