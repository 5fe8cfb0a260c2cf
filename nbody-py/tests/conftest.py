"""Fixtures: the Rust example binaries (the reference the module must equal,
bit for bit) and small inputs.

The binaries are found in ``$NBODY_EXAMPLES`` (a directory holding
``nbody_tiled``, ``lj_melt`` and ``md_reference``) or built here with
``cargo build --release -p nbody-host --example nbody_tiled --example lj_melt``
and ``cargo build --release -p nbody-py --example md_reference`` (what
scripts/ci-python.sh does before running pytest). ``md_reference``
(nbody-py/examples/md_reference.rs) runs the Rust API alone on the MD
tests' inputs: pair styles, atom types and ensembles, which no example
binary of nbody-host takes yet.
"""

from __future__ import annotations

import os
import pathlib
import subprocess

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def _examples() -> pathlib.Path:
    given = os.environ.get("NBODY_EXAMPLES")
    if given:
        return pathlib.Path(given)
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "nbody-host", "--example", "nbody_tiled", "--example", "lj_melt"],
        cwd=REPO,
        check=True,
    )
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "nbody-py", "--example", "md_reference"], cwd=REPO, check=True
    )
    return REPO / "target" / "release" / "examples"


@pytest.fixture(scope="session")
def examples() -> pathlib.Path:
    path = _examples()
    for name in ("nbody_tiled", "lj_melt", "md_reference"):
        assert (path / name).is_file(), f"{path / name} missing (set NBODY_EXAMPLES or build the examples)"
    return path


def run_example(examples: pathlib.Path, name: str, *args, expect: int = 0) -> subprocess.CompletedProcess:
    """Runs an example binary; asserts its exit status."""
    done = subprocess.run([str(examples / name), *map(str, args)], capture_output=True, text=True)
    assert done.returncode == expect, f"{name} {args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def result_fields(stdout: str) -> dict:
    """The ``key=value`` fields of an example's last ``result`` line, as text."""
    line = [l for l in stdout.splitlines() if l.startswith("result ")][-1]
    return dict(field.split("=", 1) for field in line.split()[1:])


def cube(n: int, seed: int = 1) -> np.ndarray:
    """Warp's set-up drawn in numpy: positions in [-10, 10]^3 (N = 1024), unit masses."""
    rng = np.random.default_rng(seed)
    s = 10.0 * (n / 1024) ** (1 / 3)
    return np.hstack(
        [rng.uniform(-s, s, (n, 3)), rng.uniform(-1, 1, (n, 3)), np.ones((n, 1))]
    ).astype(np.float32)


def fcc(cells: int, density: float = 0.8442, temperature: float = 1.44, seed: int = 5):
    """An fcc lattice drawn in numpy (not the library's): (atoms (N, 7) float32, L)."""
    a = (4.0 / density) ** (1 / 3)
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    grid = np.array([[i, j, k] for i in range(cells) for j in range(cells) for k in range(cells)], dtype=float)
    positions = ((grid[:, None, :] + basis[None, :, :]).reshape(-1, 3) + 0.25) * a
    rng = np.random.default_rng(seed)
    v = rng.normal(0.0, np.sqrt(temperature), positions.shape)
    v -= v.mean(axis=0)
    atoms = np.hstack([positions, v, np.ones((len(positions), 1))]).astype(np.float32)
    return atoms, cells * a


@pytest.fixture
def small() -> np.ndarray:
    return cube(256, seed=3)
