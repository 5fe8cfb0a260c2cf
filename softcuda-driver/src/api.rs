//! The exported CUDA Driver API functions: argument checking, handle
//! decoding and the per-thread current context; the semantics live in
//! [`crate::state`].
//!
//! Every function takes the driver's one lock, so any thread may call any
//! function; the current context is per thread, as in CUDA. Raw pointers
//! from the caller are checked for null; beyond that they are trusted as the
//! real driver trusts them (each use carries a `SAFETY` note).
//!
//! # Safety
//!
//! The functions that take pointers are `unsafe`: callers must follow the
//! CUDA Driver API's contract for each argument (out-pointers point to
//! writable values of their type, host buffers hold the stated number of
//! bytes, strings are NUL-terminated, `kernelParams` has one pointer per
//! kernel parameter, `extra` is terminated by `CU_LAUNCH_PARAM_END`). These
//! per-function contracts are CUDA's documentation, not repeated here.
//!
//! (Over 600 lines: one thin exported function per Driver API entry point, each a few lines of argument checking.)
#![allow(
    clippy::missing_safety_doc,
    reason = "every function implements a CUDA Driver API entry point; its contract is CUDA's documentation (above)"
)]

use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use softcuda::{Arch, LaunchConfig};

use crate::config::Config;
use crate::errors::*;
use crate::state::{Driver, R, StreamRef};

/// `CUdevice`
pub type CUdevice = c_int;
/// `CUdeviceptr`
pub type CUdeviceptr = u64;
/// Opaque handles (`CUcontext`, `CUmodule`, `CUfunction`, `CUstream`, `CUevent`).
pub type Handle = *mut c_void;

static DRIVER: Mutex<Option<Driver>> = Mutex::new(None);

thread_local! {
    /// This thread's context stack; the top is the current context.
    static CONTEXTS: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

const TAG_CTX: u64 = 0x5c01;
const TAG_MODULE: u64 = 0x5c02;
const TAG_FUNCTION: u64 = 0x5c03;
const TAG_STREAM: u64 = 0x5c04;
const TAG_EVENT: u64 = 0x5c05;
pub(crate) const TAG_GRAPH: u64 = 0x5c06;
pub(crate) const TAG_GRAPH_EXEC: u64 = 0x5c07;

pub(crate) fn handle(tag: u64, id: u32) -> Handle {
    ((tag << 48) | id as u64) as Handle
}

pub(crate) fn unhandle(h: Handle, tag: u64) -> R<u32> {
    let v = h as u64;
    if v >> 48 == tag {
        Ok(v as u32)
    } else {
        Err(INVALID_HANDLE)
    }
}

fn current() -> Option<u32> {
    CONTEXTS.with(|s| s.borrow().last().copied())
}

fn set_current(ctx: Option<u32>) {
    CONTEXTS.with(|s| {
        let mut s = s.borrow_mut();
        s.pop();
        if let Some(c) = ctx {
            s.push(c);
        }
    });
}

/// Runs `f` on the initialised driver, turning a panic into
/// `CUDA_ERROR_UNKNOWN` (an unwinding panic must not cross the C boundary).
pub(crate) fn with(call: &str, f: impl FnOnce(&mut Driver) -> R<()>) -> CUresult {
    let r = catch_unwind(AssertUnwindSafe(|| {
        let mut g = DRIVER.lock().unwrap_or_else(|p| p.into_inner());
        match g.as_mut() {
            None => NOT_INITIALIZED,
            Some(d) => {
                let r = f(d);
                let code = r.err().unwrap_or(SUCCESS);
                d.log.trace(|| format!("{call} -> {}", name(code)));
                code
            }
        }
    }));
    r.unwrap_or_else(|_| {
        eprintln!("softcuda: internal error (panic) in {call}: CUDA_ERROR_UNKNOWN");
        UNKNOWN
    })
}

/// `f` on the driver under its lock, neither logged nor counted as a call
/// (`None` before `cuInit`): for a wait that polls the driver's state.
pub(crate) fn peek<T>(f: impl FnOnce(&mut Driver) -> T) -> Option<T> {
    let mut g = DRIVER.lock().unwrap_or_else(|p| p.into_inner());
    g.as_mut().map(f)
}

/// The current context, which must exist (not sticky-checked).
pub(crate) fn ctx_of(d: &mut Driver) -> R<u32> {
    match current() {
        Some(c) if d.contexts.contains_key(&c) => Ok(c),
        _ => Err(INVALID_CONTEXT),
    }
}

/// The current context, which must exist and be free of sticky errors.
pub(crate) fn live_ctx(d: &mut Driver) -> R<u32> {
    let c = ctx_of(d)?;
    d.ctx(c)?;
    Ok(c)
}

pub(crate) fn stream_of(d: &mut Driver, ctx: u32, h: Handle) -> R<StreamRef> {
    match h as u64 {
        // 0 and CU_STREAM_LEGACY: the legacy default stream;
        // CU_STREAM_PER_THREAD is treated as it too.
        0..=2 => Ok(StreamRef::Legacy),
        _ => {
            let id = unhandle(h, TAG_STREAM)?;
            d.stream_ref(ctx, Some(id))
        }
    }
}

pub(crate) fn out<T>(p: *mut T, v: T) -> R<()> {
    if p.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: a non-null out-pointer from the caller, which CUDA's contract
    // says points to a writable T.
    unsafe { p.write(v) };
    Ok(())
}

fn check_device(d: &Driver, dev: CUdevice) -> R<()> {
    if dev < 0 || dev as u32 >= d.config.devices {
        Err(INVALID_DEVICE)
    } else {
        Ok(())
    }
}

// ---------------------------------------------------------------- init

/// `cuInit`: reads the `SOFTCUDA_*` configuration once.
#[unsafe(no_mangle)]
pub extern "C" fn cuInit(flags: c_uint) -> CUresult {
    let r = catch_unwind(|| {
        let mut g = DRIVER.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            match Config::from_env() {
                Ok(c) => {
                    let d = Driver::new(c);
                    *g = Some(d);
                    let d = g.as_mut().expect("just set");
                    let c = &d.config;
                    let line = format!(
                        "software CUDA device: {} ({}), {} memory bytes, {:?} ordering, {:?} schedule, races {:?}, {} device(s)",
                        c.arch.name,
                        c.arch.device_name,
                        c.memory_bytes,
                        c.ordering,
                        c.schedule,
                        c.races,
                        c.devices
                    );
                    d.log.trace(|| line);
                }
                Err(e) => {
                    eprintln!("softcuda: {e}");
                    return INVALID_VALUE;
                }
            }
        }
        let d = g.as_mut().expect("initialised");
        if flags != 0 {
            return INVALID_VALUE;
        }
        if d.config.devices == 0 {
            d.log
                .notice("cuInit: SOFTCUDA_DEVICES=0: no device: CUDA_ERROR_NO_DEVICE");
            return NO_DEVICE;
        }
        SUCCESS
    });
    r.unwrap_or(UNKNOWN)
}

/// `cuDriverGetVersion`: 12.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CUresult {
    match out(version, 12040) {
        Ok(()) => SUCCESS,
        Err(e) => e,
    }
}

// ---------------------------------------------------------------- devices

/// `cuDeviceGetCount`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
    with("cuDeviceGetCount", |d| {
        out(count, d.config.devices as c_int)
    })
}

/// `cuDeviceGet`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGet(device: *mut CUdevice, ordinal: c_int) -> CUresult {
    with("cuDeviceGet", |d| {
        check_device(d, ordinal)?;
        out(device, ordinal)
    })
}

/// `cuDeviceGetName`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: CUdevice) -> CUresult {
    with("cuDeviceGetName", |d| {
        check_device(d, dev)?;
        if name.is_null() || len <= 0 {
            return Err(INVALID_VALUE);
        }
        let bytes = d.config.arch.device_name.as_bytes();
        let n = bytes.len().min(len as usize - 1);
        // SAFETY: the caller's buffer holds `len` bytes; we write n + 1 <= len.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), name as *mut u8, n);
            *name.add(n) = 0;
        }
        Ok(())
    })
}

/// `cuDeviceTotalMem_v2`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: CUdevice) -> CUresult {
    with("cuDeviceTotalMem_v2", |d| {
        check_device(d, dev)?;
        out(bytes, d.config.memory_bytes as usize)
    })
}

/// `cuDeviceComputeCapability` (deprecated, still exported by libcuda).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceComputeCapability(
    major: *mut c_int,
    minor: *mut c_int,
    dev: CUdevice,
) -> CUresult {
    with("cuDeviceComputeCapability", |d| {
        check_device(d, dev)?;
        out(major, d.config.arch.major as c_int)?;
        out(minor, d.config.arch.minor as c_int)
    })
}

/// `cuDeviceGetUuid`: a fixed UUID.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetUuid(uuid: *mut [u8; 16], dev: CUdevice) -> CUresult {
    with("cuDeviceGetUuid", |d| {
        check_device(d, dev)?;
        out(uuid, *b"softcuda-device0")
    })
}

/// The value of device attribute `attr` on the modelled device, or `None`
/// for an attribute softcuda does not model.
fn attribute(arch: &Arch, config: &Config, attr: u32) -> Option<i32> {
    let optin = config.shared_optin as i32;
    Some(match attr {
        1 => 1024,
        2 | 3 => 1024,
        4 => 64,
        5 => i32::MAX,
        6 | 7 => 65535,
        8 => optin.min(config.shared_default as i32),
        9 => 65536,
        10 => 32,
        11 => i32::MAX,
        12 => arch.registers as i32,
        13 => arch.clock_khz as i32,
        14 => 512,
        15 => 1,
        16 => arch.sms as i32,
        17 => 0,
        18 => 0,
        19 => 1,
        20 => 0,
        31 => 1,
        32 => 1,
        33..=35 => 0,
        36 => arch.memory_clock_khz as i32,
        37 => arch.bus_width as i32,
        38 => arch.l2_bytes as i32,
        39 => arch.threads_per_sm as i32,
        40 => 2,
        41 => 1,
        50 => 0,
        75 => arch.major as i32,
        76 => arch.minor as i32,
        78..=80 => 1,
        81 => arch.shared_per_sm as i32,
        82 => arch.registers as i32,
        // Managed memory, cooperative launches and memory pools are not
        // implemented: report them absent, as a device without them would.
        83 | 88 | 89 | 95 | 96 | 115 => 0,
        84 | 86 => 0,
        87 => 2,
        90 => 1,
        97 => optin,
        106 => arch.blocks_per_sm as i32,
        111 => {
            if arch.major >= 8 {
                1024
            } else {
                0
            }
        }
        _ => return None,
    })
}

/// `cuDeviceGetAttribute`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    pi: *mut c_int,
    attrib: u32,
    dev: CUdevice,
) -> CUresult {
    with("cuDeviceGetAttribute", |d| {
        check_device(d, dev)?;
        if attrib == 0 || attrib >= 120 {
            return Err(INVALID_VALUE);
        }
        match attribute(&d.config.arch, &d.config, attrib) {
            Some(v) => out(pi, v),
            None => {
                d.log.notice(&format!(
                    "cuDeviceGetAttribute: attribute {attrib} is not modelled: CUDA_ERROR_NOT_SUPPORTED"
                ));
                Err(NOT_SUPPORTED)
            }
        }
    })
}

// ---------------------------------------------------------------- contexts

/// `cuDevicePrimaryCtxRetain`: the device's one primary context,
/// reference-counted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(pctx: *mut Handle, dev: CUdevice) -> CUresult {
    with("cuDevicePrimaryCtxRetain", |d| {
        check_device(d, dev)?;
        if pctx.is_null() {
            return Err(INVALID_VALUE);
        }
        let id = match d.primary {
            Some((id, refs)) => {
                d.primary = Some((id, refs + 1));
                id
            }
            None => {
                let flags = d.primary_flags;
                let id = d.create_context(flags);
                d.primary = Some((id, 1));
                id
            }
        };
        out(pctx, handle(TAG_CTX, id))
    })
}

/// `cuDevicePrimaryCtxRelease_v2`: destroys the primary context (after
/// running its queued work) when the last reference goes.
#[unsafe(no_mangle)]
pub extern "C" fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice) -> CUresult {
    with("cuDevicePrimaryCtxRelease_v2", |d| {
        check_device(d, dev)?;
        match d.primary {
            None => Err(INVALID_CONTEXT),
            Some((id, 1)) => {
                d.primary = None;
                d.destroy_context(id)
            }
            Some((id, n)) => {
                d.primary = Some((id, n - 1));
                Ok(())
            }
        }
    })
}

/// `cuDevicePrimaryCtxReset_v2`: destroys the primary context now.
#[unsafe(no_mangle)]
pub extern "C" fn cuDevicePrimaryCtxReset_v2(dev: CUdevice) -> CUresult {
    with("cuDevicePrimaryCtxReset_v2", |d| {
        check_device(d, dev)?;
        if let Some((id, _)) = d.primary.take() {
            d.destroy_context(id)?;
        }
        Ok(())
    })
}

/// `cuDevicePrimaryCtxSetFlags_v2`
#[unsafe(no_mangle)]
pub extern "C" fn cuDevicePrimaryCtxSetFlags_v2(dev: CUdevice, flags: c_uint) -> CUresult {
    with("cuDevicePrimaryCtxSetFlags_v2", |d| {
        check_device(d, dev)?;
        d.primary_flags = flags;
        Ok(())
    })
}

/// `cuDevicePrimaryCtxGetState`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxGetState(
    dev: CUdevice,
    flags: *mut c_uint,
    active: *mut c_int,
) -> CUresult {
    with("cuDevicePrimaryCtxGetState", |d| {
        check_device(d, dev)?;
        out(flags, d.primary_flags)?;
        out(active, d.primary.is_some() as c_int)
    })
}

/// `cuCtxCreate_v2`: a new context, pushed as current.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxCreate_v2(
    pctx: *mut Handle,
    flags: c_uint,
    dev: CUdevice,
) -> CUresult {
    with("cuCtxCreate_v2", |d| {
        check_device(d, dev)?;
        if pctx.is_null() {
            return Err(INVALID_VALUE);
        }
        let id = d.create_context(flags);
        CONTEXTS.with(|s| s.borrow_mut().push(id));
        out(pctx, handle(TAG_CTX, id))
    })
}

/// `cuCtxDestroy_v2`
#[unsafe(no_mangle)]
pub extern "C" fn cuCtxDestroy_v2(ctx: Handle) -> CUresult {
    with("cuCtxDestroy_v2", |d| {
        let id = unhandle(ctx, TAG_CTX)?;
        if d.primary.is_some_and(|(p, _)| p == id) {
            return Err(INVALID_CONTEXT);
        }
        CONTEXTS.with(|s| s.borrow_mut().retain(|&c| c != id));
        d.destroy_context(id)
    })
}

/// `cuCtxSetCurrent` (null unbinds).
#[unsafe(no_mangle)]
pub extern "C" fn cuCtxSetCurrent(ctx: Handle) -> CUresult {
    with("cuCtxSetCurrent", |d| {
        if ctx.is_null() {
            set_current(None);
            return Ok(());
        }
        let id = unhandle(ctx, TAG_CTX)?;
        if !d.contexts.contains_key(&id) {
            return Err(INVALID_CONTEXT);
        }
        set_current(Some(id));
        Ok(())
    })
}

/// `cuCtxGetCurrent`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetCurrent(pctx: *mut Handle) -> CUresult {
    with("cuCtxGetCurrent", |_| {
        out(
            pctx,
            current().map_or(std::ptr::null_mut(), |c| handle(TAG_CTX, c)),
        )
    })
}

/// `cuCtxPushCurrent_v2`
#[unsafe(no_mangle)]
pub extern "C" fn cuCtxPushCurrent_v2(ctx: Handle) -> CUresult {
    with("cuCtxPushCurrent_v2", |d| {
        let id = unhandle(ctx, TAG_CTX)?;
        if !d.contexts.contains_key(&id) {
            return Err(INVALID_CONTEXT);
        }
        CONTEXTS.with(|s| s.borrow_mut().push(id));
        Ok(())
    })
}

/// `cuCtxPopCurrent_v2`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPopCurrent_v2(pctx: *mut Handle) -> CUresult {
    with("cuCtxPopCurrent_v2", |_| {
        let popped = CONTEXTS
            .with(|s| s.borrow_mut().pop())
            .ok_or(INVALID_CONTEXT)?;
        if !pctx.is_null() {
            out(pctx, handle(TAG_CTX, popped))?;
        }
        Ok(())
    })
}

/// `cuCtxGetDevice`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetDevice(device: *mut CUdevice) -> CUresult {
    with("cuCtxGetDevice", |d| {
        let c = ctx_of(d)?;
        let dev = d.contexts[&c].device;
        out(device, dev)
    })
}

/// `cuCtxGetApiVersion`: 3020, as for every context since CUDA 3.2.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetApiVersion(ctx: Handle, version: *mut c_uint) -> CUresult {
    with("cuCtxGetApiVersion", |d| {
        let id = if ctx.is_null() {
            ctx_of(d)?
        } else {
            unhandle(ctx, TAG_CTX)?
        };
        if !d.contexts.contains_key(&id) {
            return Err(INVALID_CONTEXT);
        }
        out(version, 3020)
    })
}

/// `cuCtxGetFlags`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetFlags(flags: *mut c_uint) -> CUresult {
    with("cuCtxGetFlags", |d| {
        let c = ctx_of(d)?;
        let f = d.contexts[&c].flags;
        out(flags, f)
    })
}

/// `cuCtxSynchronize`: runs everything queued in the current context.
#[unsafe(no_mangle)]
pub extern "C" fn cuCtxSynchronize() -> CUresult {
    with("cuCtxSynchronize", |d| {
        let c = ctx_of(d)?;
        d.capture_forbids_context_sync(c)?;
        d.synchronize(c)
    })
}

/// `cuCtxGetLimit`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetLimit(pvalue: *mut usize, limit: c_int) -> CUresult {
    with("cuCtxGetLimit", |d| {
        let c = live_ctx(d)?;
        let v = d.limit(c, limit, None)?;
        out(pvalue, v)
    })
}

/// `cuCtxSetLimit` (stored and reported; no effect on the interpreter).
#[unsafe(no_mangle)]
pub extern "C" fn cuCtxSetLimit(limit: c_int, value: usize) -> CUresult {
    with("cuCtxSetLimit", |d| {
        let c = live_ctx(d)?;
        d.limit(c, limit, Some(value)).map(|_| ())
    })
}

/// `cuCtxGetCacheConfig`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetCacheConfig(pconfig: *mut c_int) -> CUresult {
    with("cuCtxGetCacheConfig", |d| {
        let c = live_ctx(d)?;
        let v = d.cache_config(c, None, false)?;
        out(pconfig, v)
    })
}

/// `cuCtxSetCacheConfig` (a preference: stored).
#[unsafe(no_mangle)]
pub extern "C" fn cuCtxSetCacheConfig(config: c_int) -> CUresult {
    with("cuCtxSetCacheConfig", |d| {
        let c = live_ctx(d)?;
        d.cache_config(c, Some(config), false).map(|_| ())
    })
}

/// `cuCtxGetSharedMemConfig`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetSharedMemConfig(pconfig: *mut c_int) -> CUresult {
    with("cuCtxGetSharedMemConfig", |d| {
        let c = live_ctx(d)?;
        let v = d.cache_config(c, None, true)?;
        out(pconfig, v)
    })
}

/// `cuCtxSetSharedMemConfig` (no effect since Volta: stored).
#[unsafe(no_mangle)]
pub extern "C" fn cuCtxSetSharedMemConfig(config: c_int) -> CUresult {
    with("cuCtxSetSharedMemConfig", |d| {
        let c = live_ctx(d)?;
        d.cache_config(c, Some(config), true).map(|_| ())
    })
}

/// `cuCtxGetStreamPriorityRange`: 0 (least) to -5 (greatest), as on Volta+.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetStreamPriorityRange(
    least: *mut c_int,
    greatest: *mut c_int,
) -> CUresult {
    with("cuCtxGetStreamPriorityRange", |d| {
        live_ctx(d)?;
        if !least.is_null() {
            out(least, 0)?;
        }
        if !greatest.is_null() {
            out(greatest, -5)?;
        }
        Ok(())
    })
}

// ---------------------------------------------------------------- modules

/// Reads a module image: PTX text up to its NUL (or a binary, rejected later).
///
/// # Safety
/// `image` must point to a NUL-terminated string (or a cubin/fatbin, whose
/// first 4 bytes are read).
unsafe fn image_bytes<'a>(image: *const c_void) -> &'a [u8] {
    // SAFETY: every valid image has at least 4 readable bytes (a magic
    // number, or PTX text longer than that).
    let head = unsafe { std::slice::from_raw_parts(image as *const u8, 4) };
    if head == b"\x7fELF" || head == [0x50, 0xed, 0x55, 0xba] {
        return head;
    }
    // SAFETY: PTX images are NUL-terminated strings (the caller's contract).
    unsafe { CStr::from_ptr(image as *const c_char) }.to_bytes()
}

fn load(d: &mut Driver, module: *mut Handle, bytes: &[u8]) -> R<()> {
    if module.is_null() {
        return Err(INVALID_VALUE);
    }
    let c = live_ctx(d)?;
    let id = d.load_module(c, bytes)?;
    out(module, handle(TAG_MODULE, id))
}

/// `cuModuleLoadData`: PTX text.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadData(module: *mut Handle, image: *const c_void) -> CUresult {
    with("cuModuleLoadData", |d| {
        if image.is_null() {
            return Err(INVALID_VALUE);
        }
        // SAFETY: a non-null image pointer, per the API contract.
        let bytes = unsafe { image_bytes(image) };
        load(d, module, bytes)
    })
}

/// `cuModuleLoadDataEx`: JIT options are accepted and ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    module: *mut Handle,
    image: *const c_void,
    num_options: c_uint,
    _options: *mut c_int,
    _values: *mut *mut c_void,
) -> CUresult {
    with("cuModuleLoadDataEx", |d| {
        if image.is_null() {
            return Err(INVALID_VALUE);
        }
        d.log
            .trace(|| format!("cuModuleLoadDataEx: {num_options} JIT options ignored"));
        // SAFETY: a non-null image pointer, per the API contract.
        let bytes = unsafe { image_bytes(image) };
        load(d, module, bytes)
    })
}

/// `cuModuleLoad`: a PTX file.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoad(module: *mut Handle, fname: *const c_char) -> CUresult {
    with("cuModuleLoad", |d| {
        if fname.is_null() {
            return Err(INVALID_VALUE);
        }
        // SAFETY: a NUL-terminated file name, per the API contract.
        let path = unsafe { CStr::from_ptr(fname) }
            .to_string_lossy()
            .into_owned();
        let bytes = std::fs::read(&path).map_err(|_| {
            d.log.notice(&format!(
                "cuModuleLoad: cannot read {path}: CUDA_ERROR_FILE_NOT_FOUND"
            ));
            FILE_NOT_FOUND
        })?;
        load(d, module, &bytes)
    })
}

/// `cuModuleUnload`
#[unsafe(no_mangle)]
pub extern "C" fn cuModuleUnload(module: Handle) -> CUresult {
    with("cuModuleUnload", |d| {
        let id = unhandle(module, TAG_MODULE)?;
        d.unload_module(id)
    })
}

/// `cuModuleGetFunction`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetFunction(
    hfunc: *mut Handle,
    module: Handle,
    name: *const c_char,
) -> CUresult {
    with("cuModuleGetFunction", |d| {
        if name.is_null() || hfunc.is_null() {
            return Err(INVALID_VALUE);
        }
        live_ctx(d)?;
        let id = unhandle(module, TAG_MODULE)?;
        // SAFETY: a NUL-terminated name, per the API contract.
        let name = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        let f = d.get_function(id, &name)?;
        out(hfunc, handle(TAG_FUNCTION, f))
    })
}

/// `cuFuncGetAttribute`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetAttribute(
    pi: *mut c_int,
    attrib: u32,
    hfunc: Handle,
) -> CUresult {
    with("cuFuncGetAttribute", |d| {
        let id = unhandle(hfunc, TAG_FUNCTION)?;
        let f = d.functions.get(&id).ok_or(INVALID_HANDLE)?;
        let k = &d
            .modules
            .get(&f.module)
            .ok_or(INVALID_HANDLE)?
            .module
            .kernels[f.index];
        let arch = d.config.arch;
        let v = match attrib {
            0 => f.max_threads as i32,
            1 => k.static_shared as i32,
            2 => 0,
            3 => k.local_bytes as i32,
            // The H200 JIT's count for code it was measured on, an estimate
            // otherwise, or SOFTCUDA_REGISTERS (softcuda::regalloc).
            4 => f.registers as i32,
            5 => 70,
            6 => (arch.major * 10 + arch.minor) as i32,
            7 => 0,
            8 => f.max_dynamic_shared as i32,
            9 => f.carveout,
            _ => return Err(INVALID_VALUE),
        };
        out(pi, v)
    })
}

/// `cuFuncSetAttribute`: the dynamic shared memory limit (checked against
/// the device's opt-in maximum) and the carveout preference.
#[unsafe(no_mangle)]
pub extern "C" fn cuFuncSetAttribute(hfunc: Handle, attrib: u32, value: c_int) -> CUresult {
    with("cuFuncSetAttribute", |d| {
        let id = unhandle(hfunc, TAG_FUNCTION)?;
        let optin = d.config.shared_optin;
        let f = d.functions.get(&id).ok_or(INVALID_HANDLE)?;
        let k = &d
            .modules
            .get(&f.module)
            .ok_or(INVALID_HANDLE)?
            .module
            .kernels[f.index];
        let stat = k.static_shared;
        let name = k.name.clone();
        match attrib {
            8 => {
                if value < 0 || value as u64 + stat as u64 > optin as u64 {
                    d.log.notice(&format!(
                        "cuFuncSetAttribute({name}, MAX_DYNAMIC_SHARED_SIZE_BYTES, {value}): the device allows {} bytes per block with {stat} static: CUDA_ERROR_INVALID_VALUE",
                        optin
                    ));
                    return Err(INVALID_VALUE);
                }
                d.functions
                    .get_mut(&id)
                    .expect("checked")
                    .max_dynamic_shared = value as u32;
                Ok(())
            }
            9 => {
                if !(-1..=100).contains(&value) {
                    return Err(INVALID_VALUE);
                }
                d.functions.get_mut(&id).expect("checked").carveout = value;
                Ok(())
            }
            _ => Err(INVALID_VALUE),
        }
    })
}

/// `cuFuncSetCacheConfig` (a preference: accepted).
#[unsafe(no_mangle)]
pub extern "C" fn cuFuncSetCacheConfig(hfunc: Handle, _config: c_int) -> CUresult {
    with("cuFuncSetCacheConfig", |d| {
        let id = unhandle(hfunc, TAG_FUNCTION)?;
        d.functions.get(&id).map(|_| ()).ok_or(INVALID_HANDLE)
    })
}

/// `cuFuncSetSharedMemConfig` (no effect since Volta: accepted).
#[unsafe(no_mangle)]
pub extern "C" fn cuFuncSetSharedMemConfig(hfunc: Handle, _config: c_int) -> CUresult {
    with("cuFuncSetSharedMemConfig", |d| {
        let id = unhandle(hfunc, TAG_FUNCTION)?;
        d.functions.get(&id).map(|_| ()).ok_or(INVALID_HANDLE)
    })
}

/// `cuOccupancyMaxActiveBlocksPerMultiprocessor`: from threads, blocks,
/// registers and shared memory per SM (0 above the function's threads per
/// block).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessor(
    num_blocks: *mut c_int,
    hfunc: Handle,
    block_size: c_int,
    dynamic_smem: usize,
) -> CUresult {
    with("cuOccupancyMaxActiveBlocksPerMultiprocessor", |d| {
        let id = unhandle(hfunc, TAG_FUNCTION)?;
        let f = d.functions.get(&id).ok_or(INVALID_HANDLE)?;
        let k = &d
            .modules
            .get(&f.module)
            .ok_or(INVALID_HANDLE)?
            .module
            .kernels[f.index];
        if block_size <= 0 || block_size > 1024 {
            return Err(INVALID_VALUE);
        }
        let arch = d.config.arch;
        let warps = (block_size as u32).div_ceil(32) * 32;
        let by_threads = arch.threads_per_sm / warps;
        let smem = k.static_shared as usize + dynamic_smem + if arch.major >= 8 { 1024 } else { 0 };
        let by_smem = (arch.shared_per_sm as usize)
            .checked_div(smem)
            .map_or(u32::MAX, |b| b as u32);
        let by_registers = arch.blocks_for_registers(f.registers, block_size as u32);
        let blocks = if block_size as u32 > f.max_threads {
            0
        } else {
            by_threads
                .min(by_smem)
                .min(by_registers)
                .min(arch.blocks_per_sm)
        };
        out(num_blocks, blocks as c_int)
    })
}

/// `cuOccupancyAvailableDynamicSMemPerBlock`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyAvailableDynamicSMemPerBlock(
    dynamic: *mut usize,
    hfunc: Handle,
    num_blocks: c_int,
    _block_size: c_int,
) -> CUresult {
    with("cuOccupancyAvailableDynamicSMemPerBlock", |d| {
        let id = unhandle(hfunc, TAG_FUNCTION)?;
        let f = d.functions.get(&id).ok_or(INVALID_HANDLE)?;
        let k = &d
            .modules
            .get(&f.module)
            .ok_or(INVALID_HANDLE)?
            .module
            .kernels[f.index];
        if num_blocks <= 0 {
            return Err(INVALID_VALUE);
        }
        let per = d.config.arch.shared_per_sm as usize / num_blocks as usize;
        let v = per
            .min(d.config.shared_optin as usize)
            .saturating_sub(k.static_shared as usize);
        out(dynamic, v)
    })
}

// ---------------------------------------------------------------- memory

/// `cuMemAlloc_v2` (fresh memory holds the poison pattern 0x7fbadbad).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytesize: usize) -> CUresult {
    with("cuMemAlloc_v2", |d| {
        if dptr.is_null() || bytesize == 0 {
            return Err(INVALID_VALUE);
        }
        let c = live_ctx(d)?;
        d.capture_forbids(c, None)?;
        let p = d.ctx(c)?.dev.memory.alloc(bytesize as u64).map_err(|_| {
            d.log.notice(&format!(
                "cuMemAlloc_v2({bytesize}): device memory exhausted (SOFTCUDA_MEMORY_BYTES={}): CUDA_ERROR_OUT_OF_MEMORY",
                d.config.memory_bytes
            ));
            OUT_OF_MEMORY
        })?;
        d.log
            .trace(|| format!("cuMemAlloc_v2({bytesize}) = {p:#x}"));
        out(dptr, p)
    })
}

/// `cuMemFree_v2` (synchronises the context first, as CUDA does).
#[unsafe(no_mangle)]
pub extern "C" fn cuMemFree_v2(dptr: CUdeviceptr) -> CUresult {
    with("cuMemFree_v2", |d| {
        let c = live_ctx(d)?;
        d.capture_forbids(c, None)?;
        d.free(c, dptr)
    })
}

/// `cuMemGetInfo_v2`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CUresult {
    with("cuMemGetInfo_v2", |d| {
        let c = live_ctx(d)?;
        let m = &d.ctx(c)?.dev.memory;
        let (f, t) = (m.free_bytes() as usize, m.capacity() as usize);
        out(free, f)?;
        out(total, t)
    })
}

fn alloc_host(d: &mut Driver, pp: *mut *mut c_void, bytesize: usize) -> R<()> {
    if pp.is_null() {
        return Err(INVALID_VALUE);
    }
    live_ctx(d)?;
    let mut b = vec![0u8; bytesize.max(1)].into_boxed_slice();
    let p = b.as_mut_ptr();
    d.pinned.insert(p as usize, b);
    out(pp, p as *mut c_void)
}

/// `cuMemAllocHost_v2`: pinned host memory (asynchronous copies to and from
/// it really are asynchronous here).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocHost_v2(pp: *mut *mut c_void, bytesize: usize) -> CUresult {
    with("cuMemAllocHost_v2", |d| alloc_host(d, pp, bytesize))
}

/// `cuMemHostAlloc` (flags ignored).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostAlloc(
    pp: *mut *mut c_void,
    bytesize: usize,
    _flags: c_uint,
) -> CUresult {
    with("cuMemHostAlloc", |d| alloc_host(d, pp, bytesize))
}

/// `cuMemFreeHost`: runs queued work first (it may still read or write the
/// memory).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeHost(p: *mut c_void) -> CUresult {
    with("cuMemFreeHost", |d| {
        if !d.pinned.contains_key(&(p as usize)) {
            return Err(INVALID_VALUE);
        }
        let ids: Vec<u32> = d.contexts.keys().copied().collect();
        for c in ids {
            let _ = d.synchronize(c);
        }
        d.pinned.remove(&(p as usize));
        Ok(())
    })
}

/// # Safety
/// `src` must be valid for `len` bytes of reads.
unsafe fn host_slice<'a>(src: *const c_void, len: usize) -> R<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if src.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(src as *const u8, len) })
}

/// `cuMemcpyHtoD_v2`: from pageable memory the bytes are staged at the call
/// and land when the legacy stream is forced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoD_v2(
    dst: CUdeviceptr,
    src: *const c_void,
    len: usize,
) -> CUresult {
    with("cuMemcpyHtoD_v2", |d| {
        let c = live_ctx(d)?;
        // SAFETY: the API contract: `src` holds `len` readable bytes.
        let data = unsafe { host_slice(src, len)? };
        d.copy_htod(c, dst, data, None)
    })
}

/// `cuMemcpyHtoDAsync_v2`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: CUdeviceptr,
    src: *const c_void,
    len: usize,
    stream: Handle,
) -> CUresult {
    with("cuMemcpyHtoDAsync_v2", |d| {
        let c = live_ctx(d)?;
        let s = stream_of(d, c, stream)?;
        // SAFETY: the API contract: `src` holds `len` readable bytes.
        let data = unsafe { host_slice(src, len)? };
        d.copy_htod(c, dst, data, Some(s))
    })
}

/// `cuMemcpyDtoH_v2`: forces the legacy stream up to the copy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(
    dst: *mut c_void,
    src: CUdeviceptr,
    len: usize,
) -> CUresult {
    with("cuMemcpyDtoH_v2", |d| {
        let c = live_ctx(d)?;
        if len == 0 {
            return Ok(());
        }
        if dst.is_null() {
            return Err(INVALID_VALUE);
        }
        // SAFETY: the API contract: `dst` holds `len` writable bytes for the
        // duration of this synchronous call.
        unsafe { d.copy_dtoh(c, dst as *mut u8, src, len, None) }
    })
}

/// `cuMemcpyDtoHAsync_v2`: asynchronous only into pinned memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: CUdeviceptr,
    len: usize,
    stream: Handle,
) -> CUresult {
    with("cuMemcpyDtoHAsync_v2", |d| {
        let c = live_ctx(d)?;
        let s = stream_of(d, c, stream)?;
        if len == 0 {
            return Ok(());
        }
        if dst.is_null() {
            return Err(INVALID_VALUE);
        }
        // SAFETY: the API contract: `dst` holds `len` writable bytes until
        // the copy completes (pinned) or for this call (pageable, which the
        // driver completes before returning).
        unsafe { d.copy_dtoh(c, dst as *mut u8, src, len, Some(s)) }
    })
}

/// `cuMemcpyDtoD_v2`
#[unsafe(no_mangle)]
pub extern "C" fn cuMemcpyDtoD_v2(dst: CUdeviceptr, src: CUdeviceptr, len: usize) -> CUresult {
    with("cuMemcpyDtoD_v2", |d| {
        let c = live_ctx(d)?;
        d.copy_dtod(c, dst, src, len, None)
    })
}

/// `cuMemcpyDtoDAsync_v2`
#[unsafe(no_mangle)]
pub extern "C" fn cuMemcpyDtoDAsync_v2(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    len: usize,
    stream: Handle,
) -> CUresult {
    with("cuMemcpyDtoDAsync_v2", |d| {
        let c = live_ctx(d)?;
        let s = stream_of(d, c, stream)?;
        d.copy_dtod(c, dst, src, len, Some(s))
    })
}

fn memset(
    call: &str,
    dst: CUdeviceptr,
    pattern: &[u8],
    count: usize,
    stream: Option<Handle>,
) -> CUresult {
    with(call, |d| {
        let c = live_ctx(d)?;
        let s = match stream {
            Some(h) => Some(stream_of(d, c, h)?),
            None => None,
        };
        d.memset(c, dst, pattern, count, s)
    })
}

/// `cuMemsetD8_v2`: queued on the legacy stream (completes late).
#[unsafe(no_mangle)]
pub extern "C" fn cuMemsetD8_v2(dst: CUdeviceptr, uc: u8, n: usize) -> CUresult {
    memset("cuMemsetD8_v2", dst, &[uc], n, None)
}

/// `cuMemsetD16_v2`
#[unsafe(no_mangle)]
pub extern "C" fn cuMemsetD16_v2(dst: CUdeviceptr, us: u16, n: usize) -> CUresult {
    memset("cuMemsetD16_v2", dst, &us.to_le_bytes(), n, None)
}

/// `cuMemsetD32_v2`
#[unsafe(no_mangle)]
pub extern "C" fn cuMemsetD32_v2(dst: CUdeviceptr, ui: u32, n: usize) -> CUresult {
    memset("cuMemsetD32_v2", dst, &ui.to_le_bytes(), n, None)
}

/// `cuMemsetD8Async`
#[unsafe(no_mangle)]
pub extern "C" fn cuMemsetD8Async(dst: CUdeviceptr, uc: u8, n: usize, stream: Handle) -> CUresult {
    memset("cuMemsetD8Async", dst, &[uc], n, Some(stream))
}

/// `cuMemsetD16Async`
#[unsafe(no_mangle)]
pub extern "C" fn cuMemsetD16Async(
    dst: CUdeviceptr,
    us: u16,
    n: usize,
    stream: Handle,
) -> CUresult {
    memset("cuMemsetD16Async", dst, &us.to_le_bytes(), n, Some(stream))
}

/// `cuMemsetD32Async`
#[unsafe(no_mangle)]
pub extern "C" fn cuMemsetD32Async(
    dst: CUdeviceptr,
    ui: u32,
    n: usize,
    stream: Handle,
) -> CUresult {
    memset("cuMemsetD32Async", dst, &ui.to_le_bytes(), n, Some(stream))
}

// ---------------------------------------------------------------- streams

fn create_stream(call: &str, ph: *mut Handle, flags: c_uint, priority: c_int) -> CUresult {
    with(call, |d| {
        if ph.is_null() {
            return Err(INVALID_VALUE);
        }
        let c = live_ctx(d)?;
        let id = d.create_stream(c, flags, priority.clamp(-5, 0))?;
        out(ph, handle(TAG_STREAM, id))
    })
}

/// `cuStreamCreate`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCreate(ph: *mut Handle, flags: c_uint) -> CUresult {
    create_stream("cuStreamCreate", ph, flags, 0)
}

/// `cuStreamCreateWithPriority`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCreateWithPriority(
    ph: *mut Handle,
    flags: c_uint,
    priority: c_int,
) -> CUresult {
    create_stream("cuStreamCreateWithPriority", ph, flags, priority)
}

/// `cuStreamDestroy_v2`: its queued work runs first.
#[unsafe(no_mangle)]
pub extern "C" fn cuStreamDestroy_v2(stream: Handle) -> CUresult {
    with("cuStreamDestroy_v2", |d| {
        let id = unhandle(stream, TAG_STREAM)?;
        d.destroy_stream(id)
    })
}

/// `cuStreamSynchronize`
#[unsafe(no_mangle)]
pub extern "C" fn cuStreamSynchronize(stream: Handle) -> CUresult {
    with("cuStreamSynchronize", |d| {
        let c = ctx_of(d)?;
        let s = stream_of(d, c, stream)?;
        d.stream_synchronize(c, s)
    })
}

/// `cuStreamQuery`: NOT_READY once while work is pending, then it runs.
#[unsafe(no_mangle)]
pub extern "C" fn cuStreamQuery(stream: Handle) -> CUresult {
    with("cuStreamQuery", |d| {
        let c = ctx_of(d)?;
        let s = stream_of(d, c, stream)?;
        d.stream_query(c, s)
    })
}

/// `cuStreamGetFlags`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetFlags(stream: Handle, flags: *mut c_uint) -> CUresult {
    with("cuStreamGetFlags", |d| {
        let c = ctx_of(d)?;
        match stream_of(d, c, stream)? {
            StreamRef::Legacy => out(flags, 0),
            StreamRef::Id(id) => out(flags, d.streams[&id].flags),
        }
    })
}

/// `cuStreamGetPriority`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetPriority(stream: Handle, priority: *mut c_int) -> CUresult {
    with("cuStreamGetPriority", |d| {
        let c = ctx_of(d)?;
        match stream_of(d, c, stream)? {
            StreamRef::Legacy => out(priority, 0),
            StreamRef::Id(id) => out(priority, d.streams[&id].priority),
        }
    })
}

/// `cuStreamWaitEvent`
#[unsafe(no_mangle)]
pub extern "C" fn cuStreamWaitEvent(stream: Handle, event: Handle, flags: c_uint) -> CUresult {
    with("cuStreamWaitEvent", |d| {
        if flags != 0 {
            return Err(INVALID_VALUE);
        }
        let c = live_ctx(d)?;
        let s = stream_of(d, c, stream)?;
        let e = unhandle(event, TAG_EVENT)?;
        d.wait_event(c, s, e)
    })
}

// ---------------------------------------------------------------- events

/// `cuEventCreate`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventCreate(ph: *mut Handle, flags: c_uint) -> CUresult {
    with("cuEventCreate", |d| {
        if ph.is_null() {
            return Err(INVALID_VALUE);
        }
        let c = live_ctx(d)?;
        let id = d.create_event(c, flags)?;
        out(ph, handle(TAG_EVENT, id))
    })
}

/// `cuEventDestroy_v2`
#[unsafe(no_mangle)]
pub extern "C" fn cuEventDestroy_v2(event: Handle) -> CUresult {
    with("cuEventDestroy_v2", |d| {
        let id = unhandle(event, TAG_EVENT)?;
        d.events.remove(&id).map(|_| ()).ok_or(INVALID_HANDLE)
    })
}

/// `cuEventRecord`
#[unsafe(no_mangle)]
pub extern "C" fn cuEventRecord(event: Handle, stream: Handle) -> CUresult {
    with("cuEventRecord", |d| {
        let id = unhandle(event, TAG_EVENT)?;
        let c = d.events.get(&id).ok_or(INVALID_HANDLE)?.ctx;
        if ctx_of(d)? != c {
            return Err(INVALID_CONTEXT);
        }
        let s = stream_of(d, c, stream)?;
        d.record(id, s)
    })
}

/// `cuEventSynchronize`
#[unsafe(no_mangle)]
pub extern "C" fn cuEventSynchronize(event: Handle) -> CUresult {
    with("cuEventSynchronize", |d| {
        let id = unhandle(event, TAG_EVENT)?;
        d.event_synchronize(id)
    })
}

/// `cuEventQuery`: NOT_READY once while pending, then the work runs.
#[unsafe(no_mangle)]
pub extern "C" fn cuEventQuery(event: Handle) -> CUresult {
    with("cuEventQuery", |d| {
        let id = unhandle(event, TAG_EVENT)?;
        d.event_query(id)
    })
}

/// `cuEventElapsedTime`: modelled milliseconds (see `arch::Arch::model_seconds`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventElapsedTime(ms: *mut f32, start: Handle, end: Handle) -> CUresult {
    with("cuEventElapsedTime", |d| {
        let s = unhandle(start, TAG_EVENT)?;
        let e = unhandle(end, TAG_EVENT)?;
        let v = d.elapsed(s, e)?;
        out(ms, v)
    })
}

// ---------------------------------------------------------------- launch

const LAUNCH_PARAM_END: usize = 0;
const LAUNCH_PARAM_BUFFER_POINTER: usize = 1;
const LAUNCH_PARAM_BUFFER_SIZE: usize = 2;

/// `cuLaunchKernel`: checks the shape, the shared memory (above the
/// function's limit, 48 KiB unless raised with cuFuncSetAttribute, is
/// CUDA_ERROR_INVALID_VALUE) and the parameters, then queues the launch.
///
/// With `kernelParams` the driver copies each parameter's size, from the
/// PTX `.param` list, from the caller's pointers: as with NVIDIA's driver,
/// the array carries no count, so a missing argument cannot be detected. A
/// parameter buffer passed through `extra` must match the list's size.
#[unsafe(no_mangle)]
#[allow(
    clippy::too_many_arguments,
    reason = "the CUDA Driver API's own signature"
)]
pub unsafe extern "C" fn cuLaunchKernel(
    f: Handle,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared: c_uint,
    stream: Handle,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    with("cuLaunchKernel", |d| {
        let c = live_ctx(d)?;
        let id = unhandle(f, TAG_FUNCTION)?;
        let s = stream_of(d, c, stream)?;
        let fe = d.functions.get(&id).ok_or(INVALID_HANDLE)?;
        let k = &d
            .modules
            .get(&fe.module)
            .ok_or(INVALID_HANDLE)?
            .module
            .kernels[fe.index];
        let name = k.name.clone();
        let mut params = vec![0u8; k.param_bytes as usize];
        let invalid = |d: &mut Driver, why: String| {
            d.log.notice(&format!(
                "cuLaunchKernel {name}: {why}: CUDA_ERROR_INVALID_VALUE"
            ));
            Err(INVALID_VALUE)
        };
        if !kernel_params.is_null() && !extra.is_null() {
            return invalid(d, "both kernelParams and extra given".into());
        }
        if !kernel_params.is_null() {
            let list: Vec<(u32, u32)> = k.params.iter().map(|p| (p.offset, p.size)).collect();
            for (i, (off, size)) in list.into_iter().enumerate() {
                // SAFETY: kernelParams is an array with one pointer per
                // parameter of the entry (the API contract).
                let p = unsafe { *kernel_params.add(i) };
                if p.is_null() {
                    return invalid(d, format!("kernelParams[{i}] is null"));
                }
                // SAFETY: the pointer addresses the parameter's value, of the
                // parameter's size (the API contract).
                let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, size as usize) };
                params[off as usize..(off + size) as usize].copy_from_slice(bytes);
            }
        } else if !extra.is_null() {
            let mut buf: *const u8 = std::ptr::null();
            let mut size: Option<usize> = None;
            let mut i = 0;
            loop {
                // SAFETY: `extra` is a LAUNCH_PARAM_END-terminated list of
                // (key, value) pointer pairs (the API contract).
                let key = unsafe { *extra.add(i) } as usize;
                match key {
                    LAUNCH_PARAM_END => break,
                    // SAFETY: as above; the value follows its key.
                    LAUNCH_PARAM_BUFFER_POINTER => buf = unsafe { *extra.add(i + 1) } as *const u8,
                    LAUNCH_PARAM_BUFFER_SIZE => {
                        // SAFETY: as above; the value points to a size_t.
                        size = Some(unsafe { *(*extra.add(i + 1) as *const usize) })
                    }
                    k => return invalid(d, format!("unknown extra key {k:#x}")),
                }
                i += 2;
            }
            let Some(size) = size else {
                return invalid(d, "extra without CU_LAUNCH_PARAM_BUFFER_SIZE".into());
            };
            let k = &d.modules[&d.functions[&id].module].module.kernels[d.functions[&id].index];
            if size != k.param_bytes as usize || (size > 0 && buf.is_null()) {
                let sig = k.param_signature();
                let want = k.param_bytes;
                return invalid(
                    d,
                    format!(
                        "a parameter buffer of {size} bytes, the entry's .param list ({sig}) takes {want}"
                    ),
                );
            }
            if size > 0 {
                // SAFETY: the buffer holds `size` bytes (the API contract).
                params.copy_from_slice(unsafe { std::slice::from_raw_parts(buf, size) });
            }
        } else if !params.is_empty() {
            let sig = k.param_signature();
            return invalid(d, format!("no parameters given, the entry takes ({sig})"));
        }
        let cfg = LaunchConfig {
            grid: [grid_x, grid_y, grid_z],
            block: [block_x, block_y, block_z],
            dynamic_shared: shared,
        };
        d.launch(c, id, cfg, params, s)
    })
}

// ---------------------------------------------------------------- errors

/// `cuGetErrorName` (works before cuInit).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorName(error: CUresult, pstr: *mut *const c_char) -> CUresult {
    match describe(error) {
        Some((n, _)) => out(pstr, n.as_ptr() as *const c_char)
            .err()
            .unwrap_or(SUCCESS),
        None => {
            let _ = out(pstr, std::ptr::null());
            INVALID_VALUE
        }
    }
}

/// `cuGetErrorString` (works before cuInit).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorString(error: CUresult, pstr: *mut *const c_char) -> CUresult {
    match describe(error) {
        Some((_, s)) => out(pstr, s.as_ptr() as *const c_char)
            .err()
            .unwrap_or(SUCCESS),
        None => {
            let _ = out(pstr, std::ptr::null());
            INVALID_VALUE
        }
    }
}

// ---------------------------------------------------------------- not supported

/// Logs an unsupported call and returns CUDA_ERROR_NOT_SUPPORTED.
pub fn not_supported(call: &str) -> CUresult {
    let mut g = DRIVER.lock().unwrap_or_else(|p| p.into_inner());
    match g.as_mut() {
        Some(d) => d.log.notice(&format!(
            "{call} is not implemented by softcuda: CUDA_ERROR_NOT_SUPPORTED"
        )),
        None => eprintln!("softcuda: {call} is not implemented: CUDA_ERROR_NOT_SUPPORTED"),
    }
    NOT_SUPPORTED
}

/// Exports functions cust binds (so every cust program links and loads)
/// that softcuda does not implement: each logs and returns
/// CUDA_ERROR_NOT_SUPPORTED, never a silent success. They take no
/// parameters: under the C calling convention a callee may ignore the
/// arguments its caller passes.
macro_rules! not_supported {
    ($($name:ident),* $(,)?) => {
        $(
            #[doc = concat!("`", stringify!($name), "`: not implemented (CUDA_ERROR_NOT_SUPPORTED).")]
            #[unsafe(no_mangle)]
            pub extern "C" fn $name() -> CUresult {
                not_supported(stringify!($name))
            }
        )*
        /// The names of the functions exported as not supported.
        pub const NOT_SUPPORTED_FUNCTIONS: &[&str] = &[$(stringify!($name)),*];
    };
}

not_supported!(
    cuArray3DCreate_v2,
    cuArray3DGetDescriptor_v2,
    cuArrayDestroy,
    cuDestroyExternalMemory,
    cuExternalMemoryGetMappedBuffer,
    cuGraphAddKernelNode,
    cuGraphCreate,
    cuGraphDebugDotPrint,
    cuGraphGetEdges,
    cuGraphGetNodes,
    cuGraphKernelNodeGetParams,
    cuGraphNodeGetType,
    cuImportExternalMemory,
    cuLaunchHostFunc,
    cuLinkAddData_v2,
    cuLinkComplete,
    cuLinkCreate_v2,
    cuLinkDestroy,
    cuMemAdvise,
    cuMemAllocAsync,
    cuMemAllocManaged,
    cuMemAllocPitch,
    cuMemAllocPitch_v2,
    cuMemFreeAsync,
    cuMemPrefetchAsync,
    cuMemcpy2D_v2,
    cuMemcpyAtoH_v2,
    cuMemcpyHtoA_v2,
    cuModuleGetGlobal_v2,
    cuOccupancyMaxPotentialBlockSize,
    cuSurfObjectCreate,
    cuSurfObjectDestroy,
    cuSurfObjectGetResourceDesc,
    cuTexObjectCreate,
    cuTexObjectDestroy,
    cuTexObjectGetResourceDesc,
    cuTexObjectGetResourceViewDesc,
    cuMemHostRegister_v2,
    cuMemHostUnregister,
    cuLaunchCooperativeKernel,
);
