//! The module-load path as the driver's JIT takes it: the PTX ISA version
//! and `.target` checks for the modelled device (`softcuda::jit::check`),
//! the approximate instructions as `SOFTCUDA_MUFU` says, and each entry's
//! registers (measured on an H200, estimated, or set by
//! `SOFTCUDA_REGISTERS`), which bound its threads per block.

use softcuda::decode::Kernel;
use softcuda::jit::JitOptions;
use softcuda::{Module, ModuleError};

use crate::config::Config;
use crate::errors::{CUresult, INVALID_PTX};

/// PTX text to a module as `cuModuleLoadData` loads it, or the `CUresult`
/// and the log line: the JIT's refusals with their own codes (218, 222,
/// 209), anything the interpreter cannot decode as
/// `CUDA_ERROR_INVALID_PTX`.
pub fn load(config: &Config, text: &str) -> Result<Module, (CUresult, String)> {
    let opts = JitOptions {
        device: Some(config.arch),
        mufu: config.mufu,
    };
    Module::from_ptx_with(text, &opts).map_err(|e| match e {
        ModuleError::Incompatible(i) => (
            i.code,
            format!("{}: {}", i.message, crate::errors::name(i.code)),
        ),
        e => (INVALID_PTX, format!("{e}: CUDA_ERROR_INVALID_PTX")),
    })
}

/// Why a launch of `block` is refused by an entry's `.reqntid`.
pub fn reqntid_problem(req: [u32; 3], block: [u32; 3]) -> String {
    format!(
        "block ({}, {}, {}), the entry's .reqntid requires exactly ({}, {}, {})",
        block[0], block[1], block[2], req[0], req[1], req[2]
    )
}

/// What limits a function to `max` threads per block, for messages.
pub fn limit_reason(kernel: &Kernel, registers: u32, max: u32) -> String {
    match kernel.max_threads {
        Some(m) if m == max => format!("the entry's .maxntid/.reqntid allows {m}"),
        _ => format!(
            "{registers} registers per thread ({}), 64 Ki per block",
            if kernel.registers == registers && kernel.registers_measured {
                "the H200's JIT"
            } else if kernel.registers == registers {
                "estimated; SOFTCUDA_REGISTERS sets it"
            } else {
                "SOFTCUDA_REGISTERS"
            }
        ),
    }
}
