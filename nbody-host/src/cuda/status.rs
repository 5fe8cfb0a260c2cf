//! Driver failures as [`Error`]s, naming what was being done: the bottom of
//! the CUDA backend, imported by every other file of it (and importing none).

use cust::error::CudaError;
use cust::sys;

use crate::error::{Error, Result};

/// Maps a cust error (or a `stream::Status`) to [`Error::Cuda`], naming
/// what was being done.
pub(super) fn during<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> Error {
    move |e| Error::Cuda {
        during: what.to_owned(),
        message: e.to_string(),
    }
}

/// A raw driver call's status as an [`Error::Cuda`].
pub(super) fn driver(status: sys::CUresult, what: &'static str) -> Result<()> {
    if status == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Cuda {
            during: what.to_owned(),
            message: format!("{status:?}"),
        })
    }
}

/// No usable device (no driver, no device, an ordinal past the last) as
/// [`Error::CudaUnavailable`].
pub(super) fn unavailable(e: CudaError) -> Error {
    Error::CudaUnavailable(e.to_string())
}
