"""nbody: direct-summation N-body gravity and Lennard-Jones molecular dynamics
from numpy, on the Rust library nbody-host (multithreaded SIMD CPU backend,
CUDA, and an emulator of the CUDA execution model).

>>> import numpy as np, nbody
>>> rng = np.random.default_rng(42)
>>> b = np.hstack([rng.uniform(-10, 10, (1024, 3)), np.zeros((1024, 3)), np.ones((1024, 1))]).astype(np.float32)
>>> sim = nbody.Simulation(b, softening=0.1, dt=0.01, G=1.0, kernel="tiled", integrator="euler", backend="cpu")
>>> sim.step(10)
>>> sim.positions.shape, sim.steps_done
((1024, 3), 10)

===============================  ====================================================
``Simulation``                   softened gravity: step, integrate_to, energy, add, remove, checkpoints;
                                 Hermite (``integrator="hermite"``) with its float64 state
``MD``                           short-range MD in a periodic box: LAMMPS's pair styles, atom
                                 types, ensembles (NVE, NVT, Langevin, rescale, NPT); thermo
``LennardJones``                 the one-type lj/cut case of ``MD`` (LAMMPS's in.lj melt)
``Archive``, ``ArchiveWriter``   the snapshot archive: records as arrays, by step and time
``Error`` and subclasses         library errors (``InvalidInputError`` is a ``ValueError``,
                                 ``FileError`` an ``OSError``, ``DivergedError`` has ``.step``, ``.body``)
``NVE``, ``NVT``, ``Langevin``,   ensembles as objects (the Rust ``md::Ensemble``'s fields), for
``Rescale``, ``NPT``             ``MD(ensemble=...)``
``ic``                           seeded initial conditions (Warp's cube, Plummer, fcc lattice)
``CUDA``, ``RENDER``             whether this build has the CUDA backend, pictures
===============================  ====================================================

docs/python.md in the repository has the details (arrays and views, the GIL,
Ctrl-C, errors, building with CUDA).
"""

from ._errors import (
    BackendError,
    BackendWarning,
    DivergedError,
    Error,
    FileError,
    InvalidFileError,
    InvalidInputError,
    OutOfRangeError,
    PrecisionWarning,
)
from . import ic
from .ensembles import NPT, NVE, NVT, Langevin, Rescale
from ._nbody import (
    CUDA,
    RENDER,
    Archive,
    ArchiveWriter,
    Energy,
    LennardJones,
    MD,
    Record,
    Run,
    Simulation,
    __version__,
    cpu_isa,
)

__all__ = [
    "Archive",
    "ArchiveWriter",
    "BackendError",
    "BackendWarning",
    "CUDA",
    "DivergedError",
    "Energy",
    "Error",
    "FileError",
    "InvalidFileError",
    "InvalidInputError",
    "Langevin",
    "LennardJones",
    "MD",
    "NPT",
    "NVE",
    "NVT",
    "OutOfRangeError",
    "PrecisionWarning",
    "RENDER",
    "Rescale",
    "Record",
    "Run",
    "Simulation",
    "__version__",
    "cpu_isa",
    "ic",
]
