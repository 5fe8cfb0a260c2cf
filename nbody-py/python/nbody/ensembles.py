"""Ensembles as objects, with the Rust ``nbody_host::md::Ensemble``'s
variants and field names (LAMMPS's fixes, ``units lj``): for what the
keywords of ``nbody.MD`` (``ensemble="nvt", temp_target=, tdamp=``, the
command line's ``EnsembleFlags``) do not reach: chain lengths, the
rescaling's ramp, window and fraction. Checked by the library when the run
is built (``InvalidInputError`` naming the bad value).

>>> md = nbody.MD(atoms, box=L, pair="lj 2.5", pair_coeff="1 1 1 1", ensemble=nbody.NVT(1.0, 0.5, chain=5))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["NVE", "NVT", "Langevin", "Rescale", "NPT"]


@dataclass(frozen=True)
class NVE:
    """Constant energy: velocity Verlet alone (``fix nve``)."""


@dataclass(frozen=True)
class NVT:
    """Nosé–Hoover chain thermostat (``fix nvt temp T T Tdamp tchain chain``)."""

    temp: float
    tdamp: float
    chain: int = 3


@dataclass(frozen=True)
class Langevin:
    """Langevin dynamics (``fix langevin T T damp seed`` + ``fix nve``)."""

    temp: float
    damp: float
    seed: int = 0


@dataclass(frozen=True)
class Rescale:
    """Velocity rescaling for equilibration (``fix temp/rescale every t_start
    t_stop window fraction``); the target moves from ``t_start`` to ``t_stop``
    (default ``t_start``) over the first ``ramp`` steps."""

    t_start: float
    t_stop: Optional[float] = None
    every: int = 1
    ramp: int = 0
    window: float = 0.0
    fraction: float = 1.0


@dataclass(frozen=True)
class NPT:
    """Isotropic Martyna–Tobias–Klein barostat with Nosé–Hoover chains
    (``fix npt temp T T Tdamp iso P P Pdamp tchain chain pchain pchain``)."""

    temp: float
    tdamp: float
    press: float
    pdamp: float
    chain: int = 3
    pchain: int = 3
