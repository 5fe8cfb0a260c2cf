"""Input arrays to the library's layout: C-contiguous float32 of shape (N, 7)."""

from __future__ import annotations

import warnings

import numpy as np

from ._errors import InvalidInputError, PrecisionWarning


def as_bodies(obj, what: str = "bodies", row: bool = False) -> np.ndarray:
    """``obj`` as a C-contiguous float32 ``(N, 7)`` array (``x y z vx vy vz m``).

    float32 input is used as it is (copied only if not C-contiguous). Other
    real dtypes (float64, float16, integers) are converted; a conversion that
    changes a value (float64 rounded to float32) warns with
    ``PrecisionWarning``. Other dtypes (complex, bool, object, strings) and
    other shapes raise ``InvalidInputError``. With ``row``, a ``(7,)`` row is
    taken as ``(1, 7)``. Values (finite, masses >= 0) are checked by the
    library, whose error names the body.
    """
    try:
        array = np.asarray(obj)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"{what}: not an array of numbers ({e})") from None
    if array.dtype == np.float32:
        converted = array
    elif array.dtype.kind in "fiu":
        converted = array.astype(np.float32)
        with np.errstate(invalid="ignore"):
            changed = ~(
                (converted.astype(array.dtype) == array) | (np.isnan(converted) & np.isnan(array))
                if array.dtype.kind == "f"
                else converted.astype(np.float64) == array.astype(np.float64)
            )
        if np.any(changed):
            first = tuple(int(i) for i in np.argwhere(changed)[0])
            warnings.warn(
                f"{what}: {array.dtype} converted to float32, the library's precision; values "
                f"changed (first at index {first}: {array[first]!r} -> {converted[first]!r}); "
                "pass float32 to silence this",
                PrecisionWarning,
                stacklevel=3,
            )
    else:
        raise InvalidInputError(
            f"{what}: dtype {array.dtype} is not a real number type; give float32 "
            "(or float64 or integers, converted)"
        )
    if row and converted.ndim == 1 and converted.shape[0] == 7:
        converted = converted.reshape(1, 7)
    if converted.ndim != 2 or converted.shape[1] != 7:
        expected = "(7,) or (k, 7)" if row else "(N, 7)"
        raise InvalidInputError(
            f"{what}: shape {array.shape}, expected {expected}: columns x y z vx vy vz m"
        )
    return np.ascontiguousarray(converted)


def as_bodies64(obj, what: str = "bodies") -> np.ndarray:
    """``obj`` as a C-contiguous float64 ``(N, 7)`` array, for the Hermite
    integrator, which starts from these very values (float32 and integer
    input widen exactly). Other dtypes and shapes raise ``InvalidInputError``;
    values are checked by the library."""
    try:
        array = np.asarray(obj)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"{what}: not an array of numbers ({e})") from None
    if array.dtype.kind not in "fiu":
        raise InvalidInputError(
            f"{what}: dtype {array.dtype} is not a real number type; give float64 "
            "(or float32 or integers, widened)"
        )
    if array.ndim != 2 or array.shape[1] != 7:
        raise InvalidInputError(f"{what}: shape {array.shape}, expected (N, 7): columns x y z vx vy vz m")
    return np.ascontiguousarray(array, dtype=np.float64)
