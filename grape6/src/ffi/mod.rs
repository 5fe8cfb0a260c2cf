//! The exported C and Fortran entry points (declared in `include/grape6.h`).
//!
//! Every function takes the library's one lock (any thread may call any
//! function; calls are serialised), runs inside `catch_unwind` (a panic
//! becomes [`G6_ERR_INTERNAL`], never an unwind across the C boundary), and
//! leaves its outcome in this thread's last-error message
//! ([`g6_last_error`]: empty after a success), which is also printed to
//! stderr unless `GRAPE6_QUIET` is set.
//!
//! The plain names take values (`g6_open(int)`, the GRAPE-6 C API); the
//! names with a trailing underscore take every argument by reference, as
//! Fortran passes them and as Sapporo2 exports them (`g6_open_(int *)`).
//! The cluster id is never read (Sapporo2 ignores it too).
//!
//! # Safety
//!
//! Pointers are checked for NULL (an error, [`G6_ERR_NULL_POINTER`]);
//! beyond that they are trusted as GRAPE-6 trusts them: every array
//! argument points to as many elements as the call says (`ni` i-particles,
//! 3 components, `maxlength` neighbours), aligned for its type, and output
//! arrays do not overlap the inputs.
#![allow(
    clippy::too_many_arguments,
    reason = "set_j_particle takes GRAPE-6's j-particle fields as its entry points do"
)]

use std::cell::RefCell;
use std::ffi::{CString, c_double, c_int};
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, MutexGuard};

use nbody_host::hermite::Field;

use crate::config::Config;
use crate::error::*;
use crate::jmem::JParticle;
use crate::library::{IBlock, Library};

mod c;
mod fortran;

pub use c::*;
pub use fortran::*;

/// One C `double[3]`.
type V3 = [c_double; 3];

static LIB: Mutex<Option<Library>> = Mutex::new(None);

thread_local! {
    /// The message of this thread's last call (empty: it succeeded).
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// The library, with a poisoned lock (a panic inside an earlier call)
/// recovered: that call's calculation and prediction are dropped.
fn lock() -> MutexGuard<'static, Option<Library>> {
    match LIB.lock() {
        Ok(g) => g,
        Err(poisoned) => {
            LIB.clear_poison();
            let mut g = poisoned.into_inner();
            if let Some(lib) = g.as_mut() {
                lib.recover();
            }
            g
        }
    }
}

fn not_open() -> G6Error {
    G6Error::new(
        G6_ERR_NOT_OPEN,
        "the library is not open: call g6_open first",
    )
}

/// `f` on the open library.
fn with_lib<T>(f: impl FnOnce(&mut Library) -> Result<T>) -> Result<T> {
    let mut g = lock();
    match g.as_mut() {
        None => Err(not_open()),
        Some(lib) => f(lib),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Stores this thread's message (without panicking: it runs outside
/// `catch_unwind`; during thread teardown the message is dropped).
fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|e| {
        if let Ok(mut e) = e.try_borrow_mut() {
            *e = c;
        }
    });
}

/// Whether `GRAPE6_QUIET` asks for no stderr messages.
fn quiet() -> bool {
    std::env::var_os("GRAPE6_QUIET").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Runs the body of entry point `name`: its code, or the error's code with
/// the message stored (and printed); a panic becomes [`G6_ERR_INTERNAL`].
pub(crate) fn call(name: &str, f: impl FnOnce() -> Result<c_int>) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        Err(G6Error::new(
            G6_ERR_INTERNAL,
            format!(
                "internal error (a bug in libgrape6, please report it): {}",
                panic_message(payload.as_ref())
            ),
        ))
    });
    match outcome {
        Ok(code) => {
            set_last_error("");
            code
        }
        Err(e) => {
            let message = format!("{name}: {} ({})", e.message, e.code_name());
            if !quiet() {
                // Not eprintln!, which panics when stderr is closed.
                let _ = writeln!(std::io::stderr(), "grape6: {message}");
            }
            set_last_error(&message);
            e.code
        }
    }
}

fn null(what: &str) -> G6Error {
    G6Error::new(G6_ERR_NULL_POINTER, format!("{what} is a NULL pointer"))
}

/// The value `p` points to.
///
/// # Safety
/// `p` is NULL or points to a readable `T`.
unsafe fn value<T: Copy>(p: *const T, what: &str) -> Result<T> {
    if p.is_null() {
        return Err(null(what));
    }
    // SAFETY: non-null; the caller's contract says it points to a T.
    Ok(unsafe { p.read() })
}

/// `n` elements from `p` (`p` may be NULL when `n` is 0).
///
/// # Safety
/// `p` is NULL or points to `n` readable, aligned `T` that nothing writes
/// while the slice lives.
unsafe fn slice<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null(what));
    }
    // SAFETY: non-null, and the caller's contract gives n elements.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// `n` writable elements at `p` (`p` may be NULL when `n` is 0).
///
/// # Safety
/// `p` is NULL or points to `n` writable, aligned `T` that nothing else
/// reads or writes while the slice lives.
unsafe fn slice_mut<'a, T>(p: *mut T, n: usize, what: &str) -> Result<&'a mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(null(what));
    }
    // SAFETY: non-null, and the caller's contract gives n exclusive elements.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

// ------------------------------------------------------------ the bodies

/// Opens the library with `config` (what `g6_open` does with the
/// environment's): the Rust way to choose pipes, memory and precision.
pub fn open_with(config: Config) -> c_int {
    call("g6_open", || open(Ok(config)))
}

/// `f` on the library the C and Fortran calls use (`None` when closed),
/// under its lock: for Rust code and tests that look at its state.
pub fn with_library<T>(f: impl FnOnce(Option<&Library>) -> T) -> T {
    f(lock().as_ref())
}

fn open(config: Result<Config>) -> Result<c_int> {
    let mut g = lock();
    if let Some(lib) = g.as_ref() {
        return Err(G6Error::new(
            G6_ERR_ALREADY_OPEN,
            format!(
                "the library is already open ({} pipes, {} precision): call g6_close first; \
                 the open library is unchanged",
                lib.npipes(),
                lib.config().precision
            ),
        ));
    }
    *g = Some(Library::open(config?)?);
    Ok(G6_OK)
}

fn close() -> Result<c_int> {
    match lock().take() {
        Some(_) => Ok(G6_OK),
        None => Err(not_open()),
    }
}

fn npipes() -> Result<c_int> {
    let g = lock();
    match g.as_ref() {
        Some(lib) => Ok(lib.npipes() as c_int),
        None => Ok(Config::from_env()?.npipes as c_int),
    }
}

/// A call that only needs the library open (the hardware settings GRAPE-6
/// had and a CPU does not).
fn open_noop() -> Result<c_int> {
    with_lib(|_| Ok(G6_OK))
}

/// # Safety
/// The pointers follow the module's Safety contract (3 values each).
unsafe fn set_j_particle(
    address: c_int,
    index: c_int,
    tj: c_double,
    mass: c_double,
    j6: *const c_double,
    a2: *const c_double,
    v: *const c_double,
    x: *const c_double,
) -> Result<c_int> {
    with_lib(|lib| {
        // SAFETY: each points to 3 doubles (the caller's contract).
        let [j6, a2, v, x] = unsafe {
            [
                value(j6 as *const V3, "j6")?,
                value(a2 as *const V3, "a2")?,
                value(v as *const V3, "v")?,
                value(x as *const V3, "x")?,
            ]
        };
        lib.set_j_particle(
            address,
            JParticle {
                index,
                tj,
                mass,
                a2,
                j6,
                v,
                x,
            },
        )?;
        Ok(G6_OK)
    })
}

/// The i-particles' arguments of `g6calc_firsthalf`.
struct FirstHalf {
    index: *const c_int,
    xi: *const V3,
    vi: *const V3,
    h2: *const c_double,
}

/// # Safety
/// `nj`, `ni`, `eps2` are NULL or point to their values; the arrays follow
/// the module's Safety contract.
unsafe fn firsthalf(
    nj: *const c_int,
    ni: *const c_int,
    eps2: *const c_double,
    a: FirstHalf,
) -> Result<c_int> {
    with_lib(|lib| {
        let r = (|| {
            // SAFETY: the caller's contract (scalars, then ni-long arrays
            // once ni is checked against the pipes).
            unsafe {
                let (nj, ni, eps2) = (value(nj, "nj")?, value(ni, "ni")?, value(eps2, "eps2")?);
                let n = lib.check_ni(ni)?;
                let block = IBlock {
                    index: slice(a.index, n, "index")?,
                    x: slice(a.xi, n, "xi")?,
                    v: slice(a.vi, n, "vi")?,
                    eps2,
                    h2: if a.h2.is_null() {
                        None
                    } else {
                        Some(slice(a.h2, n, "h2")?)
                    },
                };
                lib.firsthalf(nj, block)
            }
        })();
        if let Err(e) = &r {
            lib.fail_calculation(e);
        }
        r.map(|()| G6_OK)
    })
}

/// # Safety
/// `nj`, `ni` are NULL or point to their values; the output arrays follow
/// the module's Safety contract (`ni` of each; `nnb` NULL for
/// `g6calc_lasthalf`).
unsafe fn lasthalf(
    nj: *const c_int,
    ni: *const c_int,
    acc: *mut V3,
    jerk: *mut V3,
    pot: *mut c_double,
    nnb: Option<*mut c_int>,
) -> Result<c_int> {
    with_lib(|lib| {
        // SAFETY: the caller's contract (scalars, then ni-long outputs once
        // ni is known to be the begun calculation's, which was checked
        // against the pipes).
        unsafe {
            let (nj, ni) = (value(nj, "nj")?, value(ni, "ni")?);
            let n = lib.check_begun(nj, ni)?;
            let acc = slice_mut(acc, n, "acc")?;
            let jerk = slice_mut(jerk, n, "jerk")?;
            let pot = slice_mut(pot, n, "pot")?;
            let nnb = match nnb {
                Some(p) => Some(slice_mut(p, n, "nnbindex")?),
                None => None,
            };
            let mut out = vec![Field::default(); n];
            lib.lasthalf(nj, ni, &mut out, nnb)?;
            for (k, f) in out.iter().enumerate() {
                acc[k] = f.acc;
                jerk[k] = f.jerk;
                pot[k] = f.pot;
            }
        }
        Ok(G6_OK)
    })
}

fn read_neighbour_list() -> Result<c_int> {
    with_lib(|lib| lib.read_neighbour_lists().map(|()| G6_OK))
}

/// # Safety
/// `ipipe`, `maxlength` are NULL or point to their values; `n_neighbours`
/// to a writable int; `list` to `maxlength` writable ints.
unsafe fn get_neighbour_list(
    ipipe: *const c_int,
    maxlength: *const c_int,
    n_neighbours: *mut c_int,
    list: *mut c_int,
) -> Result<c_int> {
    with_lib(|lib| {
        // SAFETY: the caller's contract.
        unsafe {
            let (ipipe, maxlength) = (value(ipipe, "ipipe")?, value(maxlength, "maxlength")?);
            if maxlength < 0 {
                return Err(G6Error::new(
                    G6_ERR_ARGUMENT,
                    format!("maxlength = {maxlength} is negative"),
                ));
            }
            if n_neighbours.is_null() {
                return Err(null("n_neighbours"));
            }
            let list = slice_mut(list, maxlength as usize, "neighbour_list")?;
            let (info, overflow) = lib.neighbour_list(ipipe, list)?;
            n_neighbours.write(info.count as c_int);
            match overflow {
                Some(e) => Err(e),
                None => Ok(G6_OK),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_code_and_message() {
        let code = call("test_entry", || panic!("deliberate"));
        assert_eq!(code, G6_ERR_INTERNAL);
        let msg = LAST_ERROR.with(|e| e.borrow().to_string_lossy().into_owned());
        assert!(
            msg.contains("test_entry") && msg.contains("deliberate"),
            "{msg}"
        );
        // The next successful call clears the message.
        assert_eq!(call("test_entry", || Ok(7)), 7);
        assert!(LAST_ERROR.with(|e| e.borrow().is_empty()));
    }

    #[test]
    fn a_panic_holding_the_lock_leaves_the_library_usable() {
        // Poison the lock from inside a call, as a bug in a call would.
        let code = call("poison", || {
            let _g = lock();
            panic!("while holding the lock")
        });
        assert_eq!(code, G6_ERR_INTERNAL);
        assert!(LIB.is_poisoned());
        // The next call recovers the lock (npipes takes it, open or not).
        assert!(g6_npipes() > 0);
        assert!(!LIB.is_poisoned());
    }
}
