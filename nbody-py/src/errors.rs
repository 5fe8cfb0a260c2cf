//! Library errors as Python exceptions: the `nbody.Error` hierarchy of
//! `python/nbody/_errors.py` (a Python class statement is what gives an
//! exception two bases, `nbody.Error` and `ValueError`), each with the
//! library's message unchanged. The classes follow the example binaries'
//! exit statuses: invalid input (3) is a `ValueError`, file I/O (4) an
//! `OSError`, divergence (5) `DivergedError`, the backend (1) a `RuntimeError`.

use nbody_host::Error;
use pyo3::prelude::*;

/// The class `name` of `nbody._errors`.
fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("nbody._errors")?.getattr(name)
}

/// `error` as the exception of its class, with the same message.
pub(crate) fn to_py(py: Python<'_>, error: Error) -> PyErr {
    make(py, &error).unwrap_or_else(|failed| failed)
}

/// `to_py` for `map_err`, taking the GIL the caller already holds.
pub(crate) fn err(error: Error) -> PyErr {
    Python::attach(|py| to_py(py, error))
}

/// An `nbody.InvalidInputError` (a `ValueError`) with this message, for
/// bad input the binding itself finds (names, shapes).
pub(crate) fn invalid(py: Python<'_>, message: String) -> PyErr {
    raise(py, "InvalidInputError", (message,))
}

/// An instance of class `name` built from `args`, as a `PyErr`.
pub(crate) fn raise<'py, A>(py: Python<'py>, name: &str, args: A) -> PyErr
where
    A: pyo3::call::PyCallArgs<'py>,
{
    match class(py, name).and_then(|c| c.call1(args)) {
        Ok(value) => PyErr::from_value(value),
        Err(failed) => failed,
    }
}

fn make(py: Python<'_>, error: &Error) -> PyResult<PyErr> {
    let message = error.to_string();
    let value = match error {
        Error::Diverged { step, body } => {
            class(py, "DivergedError")?.call1((message, Some(*step), Some(*body)))?
        }
        Error::NonFiniteEnergy { step, .. } => {
            class(py, "DivergedError")?.call1((message, Some(*step), None::<usize>))?
        }
        Error::NonFiniteSnapshot { body, .. } => {
            class(py, "DivergedError")?.call1((message, None::<u64>, Some(*body)))?
        }
        Error::Io { path, source } => {
            let value = class(py, "FileError")?.call1((message,))?;
            // OSError's own fields, as open() sets them (str() stays the message).
            value.setattr("errno", source.raw_os_error())?;
            value.setattr("strerror", source.to_string())?;
            value.setattr("filename", path.as_os_str())?;
            value
        }
        Error::InvalidFile { path, .. } => {
            let value = class(py, "InvalidFileError")?.call1((message,))?;
            value.setattr("filename", path.as_os_str())?;
            value
        }
        Error::NoSuchBody { .. } => class(py, "OutOfRangeError")?.call1((message,))?,
        Error::CudaNotCompiled
        | Error::CudaUnavailable(_)
        | Error::Cuda { .. }
        | Error::Emulator(_)
        | Error::OtherRank { .. } => class(py, "BackendError")?.call1((message,))?,
        Error::NoBodies
        | Error::TooManyBodies { .. }
        | Error::LengthMismatch { .. }
        | Error::InvalidMass { .. }
        | Error::NonFiniteInput { .. }
        | Error::InvalidTimeStep(_)
        | Error::InvalidSoftening(_)
        | Error::InvalidGravitationalConstant(_)
        | Error::InvalidParameter { .. }
        | Error::InvalidCombination(_)
        | Error::Overlapping { .. }
        | Error::InvalidBlockSize { .. }
        | Error::SharedMemoryExceeded { .. }
        | Error::BlockExceedsKernelLimit { .. }
        | Error::GridTooLarge { .. }
        | Error::DeviceMemoryExceeded { .. }
        | Error::HostMemoryExceeded { .. }
        | Error::InvalidRenderSetting { .. }
        | Error::InvalidMdSetting { .. }
        | Error::InvalidTargetTime { .. }
        | Error::Unsupported(_) => class(py, "InvalidInputError")?.call1((message,))?,
        // A variant added to the library later: the base class, same message.
        _ => class(py, "Error")?.call1((message,))?,
    };
    Ok(PyErr::from_value(value))
}
