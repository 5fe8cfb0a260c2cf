"""The exceptions of ``nbody``: every library error is one of these, with the
Rust library's message unchanged.

==========================  =====================  ===========================================
class                       also a                 raised for
==========================  =====================  ===========================================
``Error``                   ``Exception``          the base of all below
``InvalidInputError``       ``ValueError``         a bad value, shape, dtype, name or combination
``InvalidFileError``        ``InvalidInputError``  a file that is not what it should be (corrupt,
                                                   truncated, wrong format)
``OutOfRangeError``         ``InvalidInputError``,  a body or record index past the end
                            ``IndexError``
``FileError``               ``OSError``            reading or writing a file failed (``errno``,
                                                   ``filename`` set)
``DivergedError``           --                     the run turned non-finite (``step``, ``body``)
``BackendError``            ``RuntimeError``       CUDA missing or failing, an emulator fault
==========================  =====================  ===========================================
"""

from __future__ import annotations

from typing import Optional


class Error(Exception):
    """The base class of every error the nbody library reports."""


class InvalidInputError(Error, ValueError):
    """Bad input: a value, array shape, dtype, name or combination of settings
    the library refuses, found before any expensive work; the message names it."""


class InvalidFileError(InvalidInputError):
    """A file that is not a valid checkpoint, archive or ``.npy`` file
    (corrupt, truncated, another format); ``filename`` names it."""

    filename: Optional[str] = None


class OutOfRangeError(InvalidInputError, IndexError):
    """A body or archive record index past the end."""


class FileError(Error, OSError):
    """Reading or writing a file failed. ``errno``, ``strerror`` and ``filename``
    are set as ``open()`` sets them; ``str()`` is the library's message."""


class DivergedError(Error):
    """The simulation became non-finite (a close encounter with too little
    softening, overlapping atoms, too large a time step).

    ``step``: the first step after which the state was not finite (``None``
    where unknown: a refused snapshot); ``body``: a body that was not finite
    (``None`` for a non-finite energy). The simulation refuses to step further;
    its state can still be read.
    """

    def __init__(self, message: str, step: Optional[int] = None, body: Optional[int] = None):
        super().__init__(message)
        self.step = step
        self.body = body

    def __reduce__(self):  # picklable with its fields (multiprocessing)
        return (type(self), (str(self), self.step, self.body))


class BackendError(Error, RuntimeError):
    """The backend failed or is missing: no CUDA in this build or no device,
    a CUDA driver error, a kernel fault caught by the emulator."""


class BackendWarning(UserWarning):
    """``backend="auto"`` found no GPU and runs on the CPU (said once per process)."""


class PrecisionWarning(UserWarning):
    """Input converted to float32 changed value (float64 rounded, large integers)."""


# Shown (and pickled) as nbody.X, where users import them from.
for _class in (
    Error,
    InvalidInputError,
    InvalidFileError,
    OutOfRangeError,
    FileError,
    DivergedError,
    BackendError,
    BackendWarning,
    PrecisionWarning,
):
    _class.__module__ = "nbody"
del _class
