"""Seeded initial conditions, the Rust library's ``nbody_host::ic``: the same
seed gives the same bits as in Rust (``nbody_tiled --ic NAME --seed S``).

Each returns an ``(N, 7)`` float32 array, columns ``x y z vx vy vz m``.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

from ._nbody import fcc_lattice as _fcc_lattice
from ._nbody import initial_conditions as _generate

__all__ = ["uniform_cube", "plummer", "collision", "cold_disk", "fcc_lattice"]


def uniform_cube(n: int, seed: int = 42) -> np.ndarray:
    """NVIDIA Warp's N-body example's set-up: positions uniform in ``[-s, s]^3``,
    ``s = 10 (N / 1024)^(1/3)``, velocities uniform in ``[-1, 1]^3``, unit masses."""
    return _generate("cube", n, seed)


def plummer(n: int, seed: int = 42) -> np.ndarray:
    """A Plummer sphere in N-body units (G = 1, total mass 1, energy -1/4)."""
    return _generate("plummer", n, seed)


def collision(n: int, seed: int = 42) -> np.ndarray:
    """Two Plummer spheres on a collision course (bodies ``[0, n/2)`` and ``[n/2, n)``)."""
    return _generate("collision", n, seed)


def cold_disk(n: int, seed: int = 42) -> np.ndarray:
    """A cold rotating disk around a central mass."""
    return _generate("disk", n, seed)


def fcc_lattice(
    cells: int, density: float = 0.8442, temperature: float = 1.44, seed: int = 87287
) -> Tuple[np.ndarray, float]:
    """LAMMPS's ``in.lj`` set-up: an fcc lattice of ``4 cells^3`` unit-mass atoms at
    reduced ``density``, velocities at ``temperature`` (zero total momentum).
    Returns ``(atoms, L)``, the side of the cubic box ``[0, L)^3``."""
    return _fcc_lattice(cells, density, temperature, seed)
