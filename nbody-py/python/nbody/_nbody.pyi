"""Type stubs of the native module nbody._nbody (re-exported by ``nbody``)."""

from __future__ import annotations

import os
from typing import Any, Iterator, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from .ensembles import NPT, NVE, NVT, Langevin, Rescale

__version__: str
CUDA: bool
"""Whether this build has the CUDA backend (feature ``cuda``)."""
RENDER: bool
"""Whether this build can draw pictures (feature ``render``)."""

_Path = Union[str, os.PathLike[str]]
_Bodies = npt.ArrayLike
"""An (N, 7) array-like, columns x y z vx vy vz m (float32; float64/ints converted)."""

def cpu_isa() -> str:
    """The instruction set the CPU backend uses here: "avx512", "avx2+fma", "neon" or "scalar"."""

class Run:
    """What ``Simulation`` and ``LennardJones`` share (not constructed directly)."""

    def step(self, steps: int = 1) -> None:
        """Advance ``steps`` steps. GIL released; Ctrl-C stops between batches of
        about 20 ms with KeyboardInterrupt, the state intact at a whole step.
        DivergedError if the run turns non-finite."""
    def integrate_to(self, t: float) -> int:
        """Step until the time reaches ``t`` (may overshoot by < dt); returns the steps taken.
        Hermite: ends at ``t`` exactly (whole intervals of dt, then a shorter one, counted)."""
    @property
    def bodies(self) -> npt.NDArray[np.floating[Any]]:
        """The state, (N, 7), read-only, updated in place by every step: float32, or
        float64 for a Hermite run (its own float64 state)."""
    @property
    def positions(self) -> npt.NDArray[np.floating[Any]]:
        """(N, 3) view of ``bodies[:, 0:3]``."""
    @property
    def velocities(self) -> npt.NDArray[np.floating[Any]]:
        """(N, 3) view of ``bodies[:, 3:6]``."""
    @property
    def masses(self) -> npt.NDArray[np.floating[Any]]:
        """(N,) view of ``bodies[:, 6]``."""
    @property
    def time(self) -> float: ...
    @property
    def steps_done(self) -> int: ...
    @property
    def dt(self) -> float: ...
    @property
    def backend(self) -> str:
        """"cpu", "cuda" or "emulator"."""
    @property
    def device(self) -> str:
        """The backend in words, e.g. "cpu (avx512, 2 threads)"."""
    @property
    def method(self) -> str: ...
    def __len__(self) -> int: ...
    def accelerations(self) -> npt.NDArray[np.float32]:
        """(N, 3) float32 accelerations at the current positions (a new array)."""
    def add(
        self,
        bodies: Optional[_Bodies] = None,
        *,
        mass: Optional[float] = None,
        position: Optional[Sequence[float]] = None,
        velocity: Optional[Sequence[float]] = None,
    ) -> None:
        """Add a (7,) row or (k, 7) rows, or one body by mass=, position=, velocity=."""
    def remove(self, index: int) -> npt.NDArray[np.float32]:
        """Remove body ``index`` (negative from the end); returns its (7,) row."""
    def save_checkpoint(self, path: _Path) -> None: ...
    def save_npy(self, path: _Path) -> None: ...
    def record_gif(
        self, path: _Path, steps: int, every: int = 10, size: Tuple[int, int] = (480, 480)
    ) -> int:
        """Step, drawing a GIF frame every ``every`` steps (needs nbody.RENDER); returns the frames."""
    def _rust_step_seconds(self, calls: int) -> list[float]: ...

class Energy:
    """Kinetic, potential and total energy, float64 sums."""

    @property
    def kinetic(self) -> float: ...
    @property
    def potential(self) -> float: ...
    @property
    def total(self) -> float: ...
    def relative_change_from(self, e0: Energy) -> float: ...

class Simulation(Run):
    """Direct-summation N-body gravity (softened).

    ``integrator``: "euler", "leapfrog" or "hermite" (4th-order Hermite with block
    time steps: ``eta`` (default 0.02), ``eta_s`` (default eta / 20), ``precision``
    "f64" or "mixed"; float64 state; ``dt`` the synchronisation interval, default
    0.125, else 0.01)."""

    def __init__(
        self,
        bodies: _Bodies,
        softening: float = 0.1,
        dt: Optional[float] = None,
        G: float = 1.0,
        kernel: str = "tiled",
        integrator: str = "euler",
        backend: str = "auto",
        block: Optional[int] = None,
        eta: Optional[float] = None,
        eta_s: Optional[float] = None,
        precision: Optional[str] = None,
    ) -> None: ...
    @classmethod
    def load_checkpoint(cls, path: _Path, backend: str = "auto") -> Simulation: ...
    def energy(self) -> Energy: ...
    @property
    def softening(self) -> float: ...
    @property
    def G(self) -> float: ...
    @property
    def kernel(self) -> str: ...
    @property
    def block(self) -> int: ...
    @property
    def integrator(self) -> str:
        """"euler", "leapfrog" or "hermite"."""
    @property
    def eta(self) -> Optional[float]:
        """Hermite's accuracy parameter (None for the fixed-step integrators)."""
    @property
    def eta_s(self) -> Optional[float]:
        """Hermite's starting criterion's parameter (None for the others)."""
    @property
    def precision(self) -> Optional[str]:
        """Hermite's force precision, "f64" or "mixed" (None for the others)."""
    def stats(self) -> Optional[dict[str, Any]]:
        """Hermite: {"block_steps", "force_evals", "mean_block"}; None for the others."""
    def copy(self) -> Simulation: ...

_Words = Union[str, Sequence[Union[str, int, float]]]
"""A LAMMPS command's arguments: "lj/cut 2.5" or ("lj/cut", 2.5)."""

class MD(Run):
    """Short-range MD in a periodic box (LAMMPS units lj, velocity Verlet): LAMMPS's
    pair styles (pair_style / pair_coeff / pair_modify), atom types numbered from 1
    as in LAMMPS, and ensembles: by name ("nve" default, "nvt", "langevin", "rescale",
    "npt") with temp_target, tdamp, press_target, pdamp, seed, or an nbody.ensembles
    object (NVT(temp, tdamp, chain=3), ...)."""

    def __init__(
        self,
        bodies: _Bodies,
        box: Union[float, Sequence[float]],
        pair: _Words,
        pair_coeff: Optional[Union[str, Sequence[_Words]]] = None,
        pair_modify: Optional[_Words] = None,
        types: Optional[npt.ArrayLike] = None,
        skin: float = 0.3,
        dt: float = 0.005,
        ensemble: Union[str, NVE, NVT, Langevin, Rescale, NPT, None] = None,
        temp_target: Optional[float] = None,
        tdamp: Optional[float] = None,
        press_target: Optional[float] = None,
        pdamp: Optional[float] = None,
        seed: Optional[int] = None,
        rebuild_every: int = 0,
        lists: str = "auto",
        neighbours: str = "cells",
        backend: str = "auto",
    ) -> None: ...
    @classmethod
    def load_checkpoint(cls, path: _Path, backend: str = "auto") -> MD: ...
    def thermo(self, exact: bool = False) -> dict[str, Any]:
        """{"step", "temp", "pe", "ke", "etotal", "press", "atoms", "virial", "coupling",
        "conserved", "volume", "density"}: LAMMPS's thermo (ecouple, econserve, vol,
        density), energies per atom, as printed (%.10g) unless exact=True."""
    @property
    def box(self) -> npt.NDArray[np.float64]:
        """(Lx, Ly, Lz) now: follows the barostat under npt."""
    @property
    def images(self) -> npt.NDArray[np.int32]: ...
    @property
    def types(self) -> npt.NDArray[np.int32]:
        """Each atom's type, numbered from 1 as in LAMMPS."""
    @property
    def ensemble(self) -> str: ...
    @property
    def pair(self) -> str:
        """The pair potential in words."""
    def stats(self) -> Optional[dict[str, Any]]: ...

class LennardJones(MD):
    """Lennard-Jones atoms in a periodic box (LAMMPS units lj, velocity Verlet):
    the one-type lj/cut NVE case of ``MD``."""

    def __init__(
        self,
        bodies: _Bodies,
        box: Union[float, Sequence[float]],
        cutoff: float = 2.5,
        skin: float = 0.3,
        dt: float = 0.005,
        shift: bool = False,
        epsilon: float = 1.0,
        sigma: float = 1.0,
        rebuild_every: int = 0,
        lists: str = "auto",
        neighbours: str = "cells",
        backend: str = "auto",
    ) -> None: ...
    @classmethod
    def load_checkpoint(cls, path: _Path, backend: str = "auto") -> LennardJones: ...

class Record:
    """One archive record."""

    @property
    def step(self) -> int: ...
    @property
    def time(self) -> float: ...
    @property
    def bodies(self) -> npt.NDArray[np.float32]: ...
    @property
    def dt(self) -> float: ...
    @property
    def force(self) -> str: ...
    @property
    def kernel(self) -> str: ...
    @property
    def integrator(self) -> str: ...
    @property
    def box(self) -> Optional[Tuple[float, float, float]]: ...
    @property
    def images(self) -> Optional[npt.NDArray[np.int32]]: ...
    def simulation(self, backend: str = "auto") -> Union[Simulation, MD]: ...

class Archive:
    """A snapshot archive opened for reading."""

    def __init__(self, path: _Path) -> None: ...
    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> Record: ...
    def __iter__(self) -> Iterator[Record]: ...
    @property
    def steps(self) -> npt.NDArray[np.uint64]: ...
    @property
    def times(self) -> npt.NDArray[np.float64]: ...
    def at_step(self, step: int) -> Record: ...
    def at_time(self, t: float) -> Record: ...
    def index_at_time(self, t: float) -> Optional[int]: ...
    @property
    def incomplete_tail_bytes(self) -> int: ...

class ArchiveWriter:
    """Appends snapshots of a running simulation to an archive."""

    def __init__(
        self, path: _Path, *, continue_at: Optional[int] = None, overwrite: bool = False
    ) -> None: ...
    def append(self, sim: Run) -> None: ...
    def __len__(self) -> int: ...
    @property
    def last_step(self) -> Optional[int]: ...

def initial_conditions(name: str, n: int, seed: int) -> npt.NDArray[np.float32]:
    """``n`` bodies of set-up ``name`` ("cube", "plummer", "collision", "disk"); see nbody.ic."""

def fcc_lattice(
    cells: int, density: float, temperature: float, seed: int
) -> Tuple[npt.NDArray[np.float32], float]:
    """An fcc lattice of 4 cells^3 atoms and the side of its cubic box; see nbody.ic."""
