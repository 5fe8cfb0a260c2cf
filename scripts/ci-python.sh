#!/usr/bin/env bash
# The Python module (nbody-py), as a user gets it: a fresh venv, `pip install
# ./nbody-py` (maturin from PyPI as the build backend, a release build of the
# extension), then the pytest suite (nbody-py/tests) against the Rust example
# binaries, and the examples in python/examples/. One step of .ci/run.
#
#   scripts/ci-python.sh            # everything
#   scripts/ci-python.sh -k views   # extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=target/python-ci

rm -rf "$venv"
python3 -m venv "$venv"
py="$root/$venv/bin/python"
"$py" -m pip install -q --disable-pip-version-check --upgrade pip
echo "pip install ./nbody-py (fresh venv, $("$py" --version))"
"$py" -m pip install -q --disable-pip-version-check ./nbody-py pytest matplotlib rebound
"$py" -c 'import nbody; print("nbody", nbody.__version__, "CUDA:", nbody.CUDA, "CPU:", nbody.cpu_isa())'

# The reference the module must equal bit for bit (md_reference: the Rust
# API alone on the pair-style, atom-type and ensemble tests' inputs).
cargo build --release -q -p nbody-host --example nbody_tiled --example lj_melt
cargo build --release -q -p nbody-py --example md_reference
export NBODY_EXAMPLES="$root/target/release/examples"

# From the tests' directory: `import nbody` is the installed package, not the sources.
(cd nbody-py/tests && "$py" -m pytest -q -p no:cacheprovider "$@")

echo "python/examples:"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(
  cd "$out"
  "$py" "$root/python/examples/quickstart.py"
  "$py" "$root/python/examples/lj_melt.py" --cells 4 --steps 40 --thermo 20
  "$py" "$root/python/examples/plummer_energy.py" --n 256 --t 1 --out plummer.png
  test -s plummer.png
  "$py" "$root/python/examples/compare_rebound.py" --n 64 --t 0.1
)
