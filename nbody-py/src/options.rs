//! The names Python passes for settings, parsed into the library's types;
//! a bad name is an `InvalidInputError` listing the choices.

use nbody_host::md::Lists;
use nbody_host::{Backend, CpuTuning, DEFAULT_BLOCK, Integrator, Isa, Kernel};
use pyo3::prelude::*;

use crate::errors::invalid;

/// `"auto"`, `"cpu"`, `"cpu:ISA"` (`avx512`, `avx2+fma`, `neon`, `scalar`),
/// `"cuda"`, `"cuda:DEVICE"` or `"emulator"`.
pub(crate) fn backend(py: Python<'_>, name: &str) -> PyResult<Backend> {
    let bad = || {
        invalid(
            py,
            format!(
                "backend = {name:?}: must be \"auto\", \"cpu\", \"cpu:ISA\" (avx512, avx2+fma, \
                 neon, scalar), \"cuda\", \"cuda:DEVICE\" or \"emulator\""
            ),
        )
    };
    Ok(match name.split_once(':') {
        None => match name {
            "auto" => Backend::Auto,
            "cpu" => Backend::cpu(),
            "cuda" => Backend::Cuda { device: 0 },
            "emulator" => Backend::emulator(),
            _ => return Err(bad()),
        },
        Some(("cpu", isa)) => Backend::Cpu(CpuTuning {
            isa: Some(Isa::from_name(isa).ok_or_else(bad)?),
            ..CpuTuning::default()
        }),
        Some(("cuda", device)) => Backend::Cuda {
            device: device.parse().map_err(|_| bad())?,
        },
        _ => return Err(bad()),
    })
}

/// `"simt"`, `"tiled"` or `"triangle"`, with `block` threads per block
/// (default 256, as the library's).
pub(crate) fn kernel(py: Python<'_>, name: &str, block: Option<u32>) -> PyResult<Kernel> {
    Kernel::from_name(name, block.unwrap_or(DEFAULT_BLOCK)).ok_or_else(|| {
        invalid(
            py,
            format!("kernel = {name:?}: must be \"simt\", \"tiled\" or \"triangle\""),
        )
    })
}

/// `"euler"` (semi-implicit, Warp's example's), `"leapfrog"`, its MD
/// name `"velocity-verlet"`, or `"hermite"` (default settings; the
/// constructor sets them).
pub(crate) fn integrator(py: Python<'_>, name: &str) -> PyResult<Integrator> {
    Integrator::from_name(name).ok_or_else(|| {
        invalid(
            py,
            format!(
                "integrator = {name:?}: must be \"euler\", \"leapfrog\", \"velocity-verlet\" or \"hermite\""
            ),
        )
    })
}

/// `"auto"`, `"half"` or `"full"` Verlet lists.
pub(crate) fn lists(py: Python<'_>, name: &str) -> PyResult<Lists> {
    match name {
        "auto" => Ok(Lists::Auto),
        "half" => Ok(Lists::Half),
        "full" => Ok(Lists::Full),
        _ => Err(invalid(
            py,
            format!("lists = {name:?}: must be \"auto\", \"half\" or \"full\""),
        )),
    }
}
