//! What the driver's JIT (ptxas) refuses before a module loads, with the
//! `CUresult` it answers: the PTX ISA version a `.target` needs, a version
//! newer than the driver knows, a target newer than the device, instructions
//! the `.target` or `.version` does not have, and conflicting performance
//! directives.
//!
//! The minimum versions are the PTX ISA's (its `.target` section; LLVM's
//! NVPTX backend encodes the same table): the H200's JIT refused `.version
//! 7.0` with `.target sm_90` with `CUDA_ERROR_INVALID_PTX` (218), issue 24.

use std::fmt;

use crate::arch::Arch;
use crate::decode::{self, DecodeError};
use crate::parse::{self, Body};
use crate::{Module, ModuleError, mufu};

/// `CUDA_ERROR_INVALID_IMAGE`: what the H200's driver answered for PTX
/// without a `.version` (it does not take the text for PTX at all).
pub const INVALID_IMAGE: u32 = 200;
/// `CUDA_ERROR_NO_BINARY_FOR_GPU`
pub const NO_BINARY_FOR_GPU: u32 = 209;
/// `CUDA_ERROR_INVALID_PTX`
pub const INVALID_PTX: u32 = 218;
/// `CUDA_ERROR_UNSUPPORTED_PTX_VERSION`
pub const UNSUPPORTED_PTX_VERSION: u32 = 222;

/// The newest PTX ISA the modelled driver's JIT reads: the driver reports
/// CUDA 12.4 (`cuDriverGetVersion` 12040), whose PTX ISA is 8.4.
pub const DRIVER_PTX_ISA: (u32, u32) = (8, 4);

/// How a module is loaded.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct JitOptions {
    /// The device the JIT compiles for; `None` skips the compatibility
    /// checks (the interpreter alone runs any PTX it can decode).
    pub device: Option<Arch>,
    /// How approximate instructions are computed.
    pub mufu: mufu::Model,
}

/// A module the JIT refuses: the `CUresult` and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Incompatible {
    /// `CUDA_ERROR_INVALID_PTX` (218), `CUDA_ERROR_UNSUPPORTED_PTX_VERSION`
    /// (222) or `CUDA_ERROR_NO_BINARY_FOR_GPU` (209).
    pub code: u32,
    /// What ptxas would say.
    pub message: String,
}

impl fmt::Display for Incompatible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// A parsed `.target`: `sm_90a` is `(90, Some('a'))`.
fn split_target(t: &str) -> Option<(u32, Option<char>)> {
    let rest = t.strip_prefix("sm_")?;
    let (digits, suffix) = match rest.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, c)) if i + c.len_utf8() == rest.len() && matches!(c, 'a' | 'f') => {
            (&rest[..i], Some(c))
        }
        Some(_) => return None,
        None => (rest, None),
    };
    Some((digits.parse().ok()?, suffix))
}

/// The oldest `.version` a `.target` may be used with (PTX ISA, ".target").
pub fn min_ptx_version(target: &str) -> Option<(u32, u32)> {
    let (sm, suffix) = split_target(target)?;
    Some(match (sm, suffix) {
        (20 | 21, None) => (2, 0),
        (30, None) => (3, 0),
        (32, None) => (4, 0),
        (35, None) => (3, 1),
        (37, None) => (4, 1),
        (50, None) => (4, 0),
        (52, None) => (4, 1),
        (53, None) => (4, 2),
        (60..=62, None) => (5, 0),
        (70, None) => (6, 0),
        (72, None) => (6, 1),
        (75, None) => (6, 3),
        (80, None) => (7, 0),
        (86, None) => (7, 1),
        (87, None) => (7, 4),
        (89 | 90, None) => (7, 8),
        (90, Some('a')) => (8, 0),
        (100 | 101, None | Some('a')) => (8, 6),
        (100 | 101 | 103, Some('f')) | (103, _) => (8, 8),
        (120, None | Some('a')) => (8, 7),
        (120, Some('f')) | (121, _) => (8, 8),
        (88 | 110, _) => (9, 0),
        _ => return None,
    })
}

/// `(sm, ptx)`: the oldest target and PTX ISA version an instruction needs,
/// for the instructions the interpreter runs whose needs go beyond sm_30 and
/// PTX 6.0 (PTX ISA, each instruction's "Target ISA notes").
fn requirement(opcode: &str) -> Option<(u32, (u32, u32))> {
    let mods: Vec<&str> = opcode.split('.').collect();
    let has = |m: &str| mods.contains(&m);
    match mods[0] {
        "tanh" => Some((75, (7, 0))),
        "nanosleep" => Some((70, (6, 3))),
        "activemask" => Some((30, (6, 2))),
        "shfl" | "vote" if has("sync") => Some((30, (6, 0))),
        "bar" if has("warp") => Some((30, (6, 0))),
        "fence" => Some((70, (6, 0))),
        "atom" | "red" if has("f64") && has("add") => Some((60, (5, 0))),
        "ld" | "st" | "atom" | "red"
            if has("acquire") || has("release") || has("relaxed") || has("acq_rel") =>
        {
            Some((70, (6, 0)))
        }
        _ => None,
    }
}

fn v(p: (u32, u32)) -> String {
    format!("{}.{}", p.0, p.1)
}

/// The JIT's checks of module `m` for `device`.
pub fn check(m: &parse::Module, device: &Arch) -> Result<(), Incompatible> {
    let invalid = |message: String| Incompatible {
        code: INVALID_PTX,
        message,
    };
    let Some(version) = m.version else {
        return Err(Incompatible {
            code: INVALID_IMAGE,
            message: "missing .version directive: not PTX".into(),
        });
    };
    if version > DRIVER_PTX_ISA {
        return Err(Incompatible {
            code: UNSUPPORTED_PTX_VERSION,
            message: format!(
                "PTX .version {} is newer than this driver's JIT reads (PTX ISA {}, CUDA 12.4)",
                v(version),
                v(DRIVER_PTX_ISA)
            ),
        });
    }
    let Some(target) = &m.target else {
        return Err(invalid("ptxas: missing .target directive".into()));
    };
    let (Some((sm, suffix)), Some(min)) = (split_target(target), min_ptx_version(target)) else {
        return Err(invalid(format!("ptxas: unknown .target {target}")));
    };
    if version < min {
        return Err(invalid(format!(
            "ptxas: .target {target} requires PTX ISA .version {} or later, the module has .version {}",
            v(min),
            v(version)
        )));
    }
    let device_sm = device.major * 10 + device.minor;
    // Base targets run on their architecture and every later one; `a`
    // (architecture-specific) and `f` (family) targets only on their own.
    let runs = match suffix {
        None => sm <= device_sm,
        Some('a') => sm == device_sm,
        _ => sm / 10 == device_sm / 10 && sm <= device_sm,
    };
    if !runs {
        return Err(invalid(format!(
            "PTX .target {target} does not run on the device ({}, sm_{device_sm})",
            device.name
        )));
    }
    for f in &m.functions {
        if f.maxntid.is_some() && f.reqntid.is_some() {
            return Err(invalid(format!(
                "ptxas: {}: conflicting directives: .maxntid and .reqntid cannot both be specified",
                f.name
            )));
        }
        for (line, b) in &f.body {
            let Body::Inst(i) = b else { continue };
            let Some((need_sm, need_v)) = requirement(&i.opcode) else {
                continue;
            };
            if sm < need_sm {
                return Err(invalid(format!(
                    "ptxas: PTX line {line} ({}): `{}` requires .target sm_{need_sm} or higher, the module targets {target}",
                    f.name, i.opcode
                )));
            }
            if version < need_v {
                return Err(invalid(format!(
                    "ptxas: PTX line {line} ({}): `{}` requires PTX ISA .version {} or later, the module has .version {}",
                    f.name,
                    i.opcode,
                    v(need_v),
                    v(version)
                )));
            }
        }
    }
    Ok(())
}

impl Module {
    /// Parses `text`, applies the JIT's checks for `opts.device` (if any),
    /// and decodes every entry point with `opts.mufu`.
    pub fn from_ptx_with(text: &str, opts: &JitOptions) -> Result<Module, ModuleError> {
        let m = parse::parse(text).map_err(ModuleError::Parse)?;
        if let Some(device) = &opts.device {
            check(&m, device).map_err(ModuleError::Incompatible)?;
        }
        let kernels = m
            .functions
            .iter()
            .filter(|f| f.is_entry)
            .map(|f| decode::decode_entry_with(&m, f, opts.mufu))
            .collect::<Result<Vec<_>, DecodeError>>()
            .map_err(ModuleError::Decode)?;
        Ok(Module {
            target: m.target,
            version: m.version,
            kernels,
        })
    }
}
