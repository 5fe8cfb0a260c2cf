#!/usr/bin/env bash
# The GRAPE-6 C library (grape6/, issue 26 item 4) from C and Fortran, on the
# CPU backend: builds libgrape6.so (cargo, release), compiles
# grape6/tests/c/plummer.c with the system cc against it (-lgrape6 and an
# rpath, as a user would), and runs the Plummer sphere N = 512 to t = 1
# through the API with a ph4/phiGRAPE-style Hermite block-step loop:
#   1. f64, Sapporo2's 16384 pipes: |dE/E| <= 1e-7, positions within 1e-5 of
#      REBOUND IAS15 (the committed run), forces/jerks against a direct f64
#      sum in C, neighbour lists and nearest neighbours against brute force,
#      error codes;
#   2. mixed precision with GRAPE-6's 48 pipes (the blocks go in chunks);
# then checks that grape6.h compiles and links as C++, and runs the Fortran
# caller (grape6/tests/fortran/check.f90) if gfortran is installed.
# Expected error messages are silenced (GRAPE6_QUIET); the C program prints
# unexpected ones itself.
#
#   scripts/ci-grape6.sh                 # the checks (about 10 s once built)
#   scripts/ci-grape6.sh --plot OUT.png  # and the energy-error-vs-time plot
#                                        # of both runs (docs/images/grape6_plummer_energy.png)
set -euo pipefail
cd "$(dirname "$0")/.."
plot=""
if [ "${1:-}" = "--plot" ]; then
  plot="${2:?--plot needs a PNG path}"
fi
cargo build --release -p grape6
lib="$PWD/target/release"
out=target/grape6
mkdir -p "$out"
cc -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -ffp-contract=off -Igrape6/include \
  grape6/tests/c/plummer.c -L"$lib" -lgrape6 -Wl,-rpath,"$lib" -lm -o "$out/plummer"
data=nbody-host/tests/data
GRAPE6_QUIET=1 "$out/plummer" "$data/plummer512.npy" "$data/plummer512_ias15_t1.npy" \
  --csv "$out/energy_f64.csv"
GRAPE6_QUIET=1 GRAPE6_PRECISION=mixed GRAPE6_NPIPES=48 "$out/plummer" "$data/plummer512.npy" \
  "$data/plummer512_ias15_t1.npy" --csv "$out/energy_mixed.csv"

if command -v c++ >/dev/null; then
  printf '#include "grape6.h"\nint main() { return g6_npipes() > 0 ? 0 : 1; }\n' >"$out/header.cc"
  c++ -std=c++11 -Wall -Wextra -Werror -Igrape6/include "$out/header.cc" -L"$lib" -lgrape6 \
    -Wl,-rpath,"$lib" -o "$out/header_cxx"
  "$out/header_cxx"
  echo "grape6.h compiles and links as C++"
else
  echo "c++ not found: skipping the C++ header check"
fi

if command -v gfortran >/dev/null; then
  gfortran -O2 -Wall -Werror -fimplicit-none grape6/tests/fortran/check.f90 -L"$lib" -lgrape6 \
    -Wl,-rpath,"$lib" -o "$out/check_fortran"
  GRAPE6_QUIET=1 "$out/check_fortran"
else
  echo "gfortran not found: skipping the Fortran caller (grape6/tests/fortran/check.f90)"
fi

if [ -n "$plot" ]; then
  cargo run --release -q -p grape6 --example grape6_energy_plot -- "$plot" \
    "f64, 16384 pipes=$out/energy_f64.csv" "mixed, 48 pipes=$out/energy_mixed.csv"
fi
