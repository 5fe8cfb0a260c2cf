//! The kernel table: every PTX entry point declared once.
//!
//! One line per entry point names its PTX symbol, its generic body and its
//! parameters, buffers with their element type and length. From that one
//! declaration `kernel_table!` (below) generates:
//!
//! - on `nvptx64`, the `#[no_mangle] extern "ptx-kernel"` wrapper that turns
//!   raw pointers into [`Global`] views and calls the body with the GPU's
//!   [`Exec`];
//! - [`Entry`], the list of entry points with their PTX names and parameter
//!   types ([`Entry::params`]), which a test in `nbody-host` checks against the
//!   committed PTX;
//! - [`Launch`], one typed variant per entry point holding the launch's
//!   arguments (buffers as a handle type `B` of the host's choosing), whose
//!   [`Launch::args`] the CUDA engine marshals and whose [`Launch::run`] the
//!   emulator calls with its own `Exec`.
//!
//! So a kernel's signature exists in two places only, its body and its line
//! here, and the compiler holds them together: a wrong argument count or
//! type in the table is a compile error in the wrapper and in [`Launch::run`].
//! The pair styles' force kernels come from their registry
//! (`pair_styles!` in [`crate::pair`]), two entries per style.
//!
//! (Over 600 lines: the table and the macro that reads it are one thing,
//! read together.)
//!
//! (Over 600 lines: the kernel table is one declaration per entry point by design, and the macro that expands it sits beside it.)

use crate::exec::{Exec, Global, Word};
use crate::hermite::Vec4d;
#[cfg(target_arch = "nvptx64")]
use crate::nvptx::Gpu;
use crate::periodic::{STATUS_WORDS, Tag};
use crate::vec4::Vec4;
// The styles' laws by name, for the generic arguments of their entries.
use crate::pair::*;
use crate::{
    binning, block_pair, energy, hermite, integrate, md_ensemble, neighbours, pair, periodic, scan,
    shape, simt, split, tiled, triangle,
};

/// The PTX type of one kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// A device pointer (`.param .u64`).
    Ptr,
    /// A 32-bit unsigned integer (`.param .u32`).
    U32,
    /// A 32-bit float (`.param .f32`).
    F32,
    /// A 64-bit float (`.param .f64`): the collisional kernels' softening,
    /// times and tick length, which `f32` cannot hold.
    F64,
}

/// One argument of a [`Launch`]: a device buffer (by the host's handle `B`)
/// or a scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg<B> {
    /// A device buffer, passed as its address.
    Ptr(B),
    /// A `u32` scalar.
    U32(u32),
    /// An `f32` scalar.
    F32(f32),
    /// An `f64` scalar.
    F64(f64),
}

impl<B> Arg<B> {
    /// The PTX parameter type this argument is passed as.
    pub fn param(&self) -> Param {
        match self {
            Arg::Ptr(_) => Param::Ptr,
            Arg::U32(_) => Param::U32,
            Arg::F32(_) => Param::F32,
            Arg::F64(_) => Param::F64,
        }
    }
}

/// The most parameters an entry point may have ([`Args`] holds them inline).
pub const MAX_PARAMS: usize = 16;

/// The arguments of one launch in parameter order, held inline (no allocation).
#[derive(Clone, Copy, Debug)]
pub struct Args<B> {
    items: [Arg<B>; MAX_PARAMS],
    len: usize,
}

impl<B: Copy> Args<B> {
    fn new(args: &[Arg<B>]) -> Self {
        let mut items = [Arg::U32(0); MAX_PARAMS];
        items[..args.len()].copy_from_slice(args);
        Args {
            items,
            len: args.len(),
        }
    }

    /// The arguments, in the entry point's parameter order.
    pub fn as_slice(&self) -> &[Arg<B>] {
        &self.items[..self.len]
    }
}

/// What the host hands a kernel for a buffer parameter: a handle that can be
/// viewed as a [`Global`] of the element type the kernel declares.
///
/// The emulator implements it for its device memory; the CUDA engine never
/// needs it (it passes addresses through [`Launch::args`]).
pub trait Buffer: Copy {
    /// A view of the buffer as `len` elements of `T`.
    fn global<T: Word>(self, len: u32) -> Global<T>;
}

/// The PTX parameter type of a table entry's parameter.
macro_rules! param_kind {
    ($t:ident [$len:expr]) => {
        Param::Ptr
    };
    (u32) => {
        Param::U32
    };
    (f32) => {
        Param::F32
    };
    (f64) => {
        Param::F64
    };
}

/// The field type in [`Launch`]: the host's buffer handle, or the scalar.
macro_rules! field_type {
    ($b:ident; $t:ident [$len:expr]) => {
        $b
    };
    ($b:ident; $t:ident) => {
        $t
    };
}

/// One argument of [`Launch::args`].
macro_rules! to_arg {
    ($v:expr, $t:ident [$len:expr]) => {
        Arg::Ptr($v)
    };
    ($v:expr, u32) => {
        Arg::U32($v)
    };
    ($v:expr, f32) => {
        Arg::F32($v)
    };
    ($v:expr, f64) => {
        Arg::F64($v)
    };
}

/// The value [`Launch::run`] passes the body: a `Global` view, or the scalar.
macro_rules! host_value {
    ($v:ident, $t:ident [$len:expr]) => {
        Buffer::global::<$t>($v, $len)
    };
    ($v:ident, $t:ident) => {
        $v
    };
}

/// The nvptx wrapper's parameter type: a raw pointer, or the scalar.
#[cfg(target_arch = "nvptx64")]
macro_rules! ptx_type {
    ($t:ident [$len:expr]) => { *mut $t };
    ($t:ident) => { $t };
}

/// The value the nvptx wrapper passes the body: a `Global` view, or the scalar.
#[cfg(target_arch = "nvptx64")]
macro_rules! ptx_value {
    ($v:ident, $t:ident [$len:expr]) => {
        Global::new($v, $len)
    };
    ($v:ident, $t:ident) => {
        $v
    };
}

/// Declares the entry points; see the module documentation.
///
/// `|e|` names the thread's `Exec` for the buffer-length expressions, which
/// may use it and the scalar parameters. A body with const generics takes
/// them after its path, the `Exec` type inferred: `simt::simt_accel<_, true>`.
macro_rules! kernel_table {
    // The table as written in this file, with the pair styles'
    // lines appended by `pair::pair_styles!`: two entries per style, the
    // generic force kernel instantiated for its law, plain and thermo.
    (
        |$e:ident|
        $(
            $(#[$doc:meta])*
            $variant:ident = $symbol:ident => $($body:ident)::+ $(<$($generic:tt),+>)? (
                $($p:ident : $t:ident $([$len:expr])?),* $(,)?
            );
        )*
        @pair_styles $(
            $(#[$sdoc:meta])*
            $style:ident in $module:ident => $plain:ident = $psym:ident, $thermo:ident = $tsym:ident;
        )*
    ) => {
        kernel_table! { @table |$e|
            $(
                $(#[$doc])*
                $variant = $symbol => $($body)::+ $(<$($generic),+>)? ($($p : $t $([$len])?),*);
            )*
            $(
                $(#[$sdoc])*
                ///
                /// Forces over the neighbour lists: [`pair::forces`].
                $plain = $psym => pair::forces<_, $style, false>(
                    pos: Vec4[extent], types: u32[extent],
                    nlist: u32[shape::neighbour_stride(n) * cap], ncount: u32[n], acc: Vec4[n],
                    vel: Vec4[n], partials: f64[shape::pair_partials(n, $e.block_dim())],
                    table: f32[table_len],
                    n: u32, extent: u32, cap: u32, ntypes: u32, table_len: u32,
                );
                $(#[$sdoc])*
                ///
                /// Forces plus per-block potential, virial and kinetic sums:
                /// [`pair::forces`].
                $thermo = $tsym => pair::forces<_, $style, true>(
                    pos: Vec4[extent], types: u32[extent],
                    nlist: u32[shape::neighbour_stride(n) * cap], ncount: u32[n], acc: Vec4[n],
                    vel: Vec4[n], partials: f64[shape::pair_partials(n, $e.block_dim())],
                    table: f32[table_len],
                    n: u32, extent: u32, cap: u32, ntypes: u32, table_len: u32,
                );
            )*
        }

        impl Style {
            /// The style's two force kernels: plain and thermo.
            pub const fn forces_entries(self) -> [Entry; 2] {
                match self {
                    $(Style::$style => [Entry::$plain, Entry::$thermo],)*
                }
            }

            /// The launch of the style's force kernel (with `thermo`, the
            /// instance that also sums energy and virial).
            pub fn forces_launch<B: Copy>(self, thermo: bool, args: PairForces<B>) -> Launch<B> {
                let PairForces {
                    pos, types, nlist, ncount, acc, vel, partials, table, n, extent, cap, ntypes,
                    table_len,
                } = args;
                match (self, thermo) {
                    $(
                        (Style::$style, false) => Launch::$plain {
                            pos, types, nlist, ncount, acc, vel, partials, table, n, extent, cap,
                            ntypes, table_len,
                        },
                        (Style::$style, true) => Launch::$thermo {
                            pos, types, nlist, ncount, acc, vel, partials, table, n, extent, cap,
                            ntypes, table_len,
                        },
                    )*
                }
            }
        }
    };
    (
        @table |$e:ident|
        $(
            $(#[$doc:meta])*
            $variant:ident = $symbol:ident => $($body:ident)::+ $(<$($generic:tt),+>)? (
                $($p:ident : $t:ident $([$len:expr])?),* $(,)?
            );
        )*
    ) => {
        /// Every PTX entry point of the module.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Entry {
            $(
                $(#[$doc])*
                $variant,
            )*
        }

        impl Entry {
            /// Every entry point, in table order.
            pub const ALL: &'static [Entry] = &[$(Entry::$variant),*];

            /// The `#[no_mangle]` name in the PTX module. (`#[inline]`: host
            /// code, kept out of the PTX, where 53 arms made a `brx.idx`
            /// jump table the software device does not decode.)
            #[inline]
            pub const fn name(self) -> &'static str {
                match self {
                    $(Entry::$variant => stringify!($symbol),)*
                }
            }

            /// Parameter types, in order: what the PTX `.entry` declares.
            /// (`#[inline]`: host code, kept out of the PTX.)
            #[inline]
            pub const fn params(self) -> &'static [Param] {
                match self {
                    $(Entry::$variant => &[$(param_kind!($t $([$len])?)),*],)*
                }
            }
        }

        /// One kernel launch's entry point and arguments, buffers named by the
        /// host's handle `B`.
        // (`derive` cannot see through the field-type macro: the impls are below.)
        pub enum Launch<B> {
            $(
                $(#[$doc])*
                #[allow(missing_docs, reason = "the fields are the kernel's parameters, documented on its body")]
                $variant { $($p: field_type!(B; $t $([$len])?)),* },
            )*
        }

        impl<B: Copy> Clone for Launch<B> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<B: Copy> Copy for Launch<B> {}

        impl<B: Copy + PartialEq> PartialEq for Launch<B> {
            fn eq(&self, other: &Self) -> bool {
                self.entry() == other.entry() && self.args().as_slice() == other.args().as_slice()
            }
        }

        impl<B: core::fmt::Debug> core::fmt::Debug for Launch<B> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self {
                    $(Launch::$variant { $($p),* } => f
                        .debug_struct(stringify!($variant))
                        $(.field(stringify!($p), $p))*
                        .finish(),)*
                }
            }
        }

        impl<B: Copy> Launch<B> {
            /// The entry point this launch runs.
            pub const fn entry(&self) -> Entry {
                match self {
                    $(Launch::$variant { .. } => Entry::$variant,)*
                }
            }

            /// The arguments, in the PTX parameter order.
            pub fn args(&self) -> Args<B> {
                match *self {
                    $(Launch::$variant { $($p),* } => Args::new(&[$(to_arg!($p, $t $([$len])?)),*]),)*
                }
            }

            /// The same launch with every buffer handle mapped through `f`.
            pub fn map_buffers<C>(self, mut f: impl FnMut(B) -> C) -> Launch<C> {
                match self {
                    $(Launch::$variant { $($p),* } => Launch::$variant {
                        $($p: map_field!(f, $p, $t $([$len])?)),*
                    },)*
                }
            }
        }

        impl<B: Buffer> Launch<B> {
            /// Runs this thread's part of the launch: the entry point's body with
            /// `exec` as the execution model (the emulator's path).
            ///
            /// # Safety
            /// As for the body: every buffer holds the elements its length
            /// expression says, and the launch shape is the one the body's
            /// documentation requires.
            pub unsafe fn run<E: Exec>(self, exec: &E) {
                match self {
                    $(Launch::$variant { $($p),* } => {
                        let $e = exec;
                        // SAFETY: the caller's contract is the body's.
                        unsafe {
                            $($body)::+ $(::<$($generic),+>)? ($e, $(host_value!($p, $t $([$len])?)),*)
                        }
                    })*
                }
            }
        }

        /// The `extern "ptx-kernel"` wrappers: raw pointers in, `Global` views
        /// and the GPU's `Exec` handed to the generic bodies.
        #[cfg(target_arch = "nvptx64")]
        mod ptx_entry_points {
            use super::*;

            $(
                $(#[$doc])*
                #[unsafe(no_mangle)]
                pub unsafe extern "ptx-kernel" fn $symbol($($p: ptx_type!($t $([$len])?)),*) {
                    let $e = &Gpu;
                    // SAFETY: the host launches each entry point with the
                    // buffers and shape its body requires (nbody-host's plans,
                    // checked against this table and the PTX).
                    unsafe {
                        $($body)::+ $(::<$($generic),+>)? ($e, $(ptx_value!($p, $t $([$len])?)),*)
                    }
                }
            )*
        }
    };
}

/// The arguments of a pair style's force kernels (see
/// [`pair::forces`]), by name: [`Style::forces_launch`] makes the launch of
/// any style from them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairForces<B> {
    /// Positions and masses, bodies then ghosts.
    pub pos: B,
    /// Types, parallel to `pos`.
    pub types: B,
    /// The neighbour lists.
    pub nlist: B,
    /// Entries per list.
    pub ncount: B,
    /// Accelerations out.
    pub acc: B,
    /// Velocities (the thermo instance's kinetic energy).
    pub vel: B,
    /// Per-block sums (the thermo instance).
    pub partials: B,
    /// The coefficient table: `ntypes^2` rows, then the law's tabulated
    /// data (the `table` style's).
    pub table: B,
    /// Bodies.
    pub n: u32,
    /// Bodies and ghosts.
    pub extent: u32,
    /// The lists' capacity.
    pub cap: u32,
    /// Atom types.
    pub ntypes: u32,
    /// Words of `table` (rows and data).
    pub table_len: u32,
}

/// A buffer field mapped through the closure; scalars copied.
macro_rules! map_field {
    ($f:ident, $v:ident, $t:ident [$len:expr]) => {
        $f($v)
    };
    ($f:ident, $v:ident, $t:ident) => {
        $v
    };
}

pair::pair_styles! { kernel_table! {
    |e|
    /// All-pairs forces fused with a semi-implicit Euler step, one thread per
    /// body: [`simt::simt_euler`].
    SimtEuler = nbody_simt_euler => simt::simt_euler<_, false>(
        pos_in: Vec4[n], pos_out: Vec4[n], vel: Vec4[n], n: u32, dt: f32, g: f32, eps2: f32,
    );
    /// [`SimtEuler`](Entry::SimtEuler) with the guarded interaction (zero softening).
    SimtEulerGuarded = nbody_simt_euler_guarded => simt::simt_euler<_, true>(
        pos_in: Vec4[n], pos_out: Vec4[n], vel: Vec4[n], n: u32, dt: f32, g: f32, eps2: f32,
    );
    /// All-pairs accelerations, one thread per body: [`simt::simt_accel`].
    SimtAccel = nbody_simt_accel => simt::simt_accel<_, false>(
        pos: Vec4[n], acc: Vec4[n], n: u32, g: f32, eps2: f32,
    );
    /// [`SimtAccel`](Entry::SimtAccel) with the guarded interaction (zero softening).
    SimtAccelGuarded = nbody_simt_accel_guarded => simt::simt_accel<_, true>(
        pos: Vec4[n], acc: Vec4[n], n: u32, g: f32, eps2: f32,
    );
    /// Shared-memory tiled forces fused with a semi-implicit Euler step:
    /// [`tiled::tiled_euler`].
    TiledEuler = nbody_tiled_euler => tiled::tiled_euler<_, false>(
        pos_in: Vec4[n], pos_out: Vec4[n], vel: Vec4[n], n: u32, dt: f32, g: f32, eps2: f32,
    );
    /// [`TiledEuler`](Entry::TiledEuler) with the guarded interaction (zero softening).
    TiledEulerGuarded = nbody_tiled_euler_guarded => tiled::tiled_euler<_, true>(
        pos_in: Vec4[n], pos_out: Vec4[n], vel: Vec4[n], n: u32, dt: f32, g: f32, eps2: f32,
    );
    /// Shared-memory tiled accelerations: [`tiled::tiled_accel`].
    TiledAccel = nbody_tiled_accel => tiled::tiled_accel<_, false>(
        pos: Vec4[n], acc: Vec4[n], n: u32, g: f32, eps2: f32,
    );
    /// [`TiledAccel`](Entry::TiledAccel) with the guarded interaction (zero softening).
    TiledAccelGuarded = nbody_tiled_accel_guarded => tiled::tiled_accel<_, true>(
        pos: Vec4[n], acc: Vec4[n], n: u32, g: f32, eps2: f32,
    );
    /// Newton's-third-law accelerations, added to `acc`:
    /// [`triangle::triangle_accel`].
    TriangleAccel = nbody_triangle_accel => triangle::triangle_accel<_, false>(
        pos: Vec4[n], acc: Vec4[n], n: u32, g: f32, eps2: f32,
    );
    /// [`TriangleAccel`](Entry::TriangleAccel) with the guarded interaction (zero softening).
    TriangleAccelGuarded = nbody_triangle_accel_guarded => triangle::triangle_accel<_, true>(
        pos: Vec4[n], acc: Vec4[n], n: u32, g: f32, eps2: f32,
    );
    /// All-pairs accelerations, `split` threads per body: [`split::split_accel`].
    SplitAccel = nbody_split_accel => split::split_accel<_, false>(
        pos: Vec4[n], acc: Vec4[n], n: u32, split: u32, g: f32, eps2: f32,
    );
    /// [`SplitAccel`](Entry::SplitAccel) with the guarded interaction (zero softening).
    SplitAccelGuarded = nbody_split_accel_guarded => split::split_accel<_, true>(
        pos: Vec4[n], acc: Vec4[n], n: u32, split: u32, g: f32, eps2: f32,
    );
    /// Fused split force loop and Euler update: [`split::split_euler`].
    SplitEuler = nbody_split_euler => split::split_euler<_, false>(
        pos_in: Vec4[n], pos_out: Vec4[n], vel: Vec4[n], n: u32, split: u32, dt: f32, g: f32,
        eps2: f32,
    );
    /// [`SplitEuler`](Entry::SplitEuler) with the guarded interaction (zero softening).
    SplitEulerGuarded = nbody_split_euler_guarded => split::split_euler<_, true>(
        pos_in: Vec4[n], pos_out: Vec4[n], vel: Vec4[n], n: u32, split: u32, dt: f32, g: f32,
        eps2: f32,
    );
    /// Block `J`'s pull on block `I`, added to `acc` (no `G`):
    /// [`block_pair::block_pull`].
    BlockPull = nbody_block_pull => block_pair::block_pull<_, false>(
        pos_i: Vec4[ni], pos_j: Vec4[nj], acc: Vec4[ni], ni: u32, nj: u32, eps2: f32,
    );
    /// [`BlockPull`](Entry::BlockPull) with the guarded interaction (zero softening).
    BlockPullGuarded = nbody_block_pull_guarded => block_pair::block_pull<_, true>(
        pos_i: Vec4[ni], pos_j: Vec4[nj], acc: Vec4[ni], ni: u32, nj: u32, eps2: f32,
    );
    /// Every pair of blocks `I` and `J` once, both halves added (no `G`):
    /// [`block_pair::block_pair`].
    BlockPair = nbody_block_pair => block_pair::block_pair<_, false>(
        pos_i: Vec4[ni], pos_j: Vec4[nj], acc_i: Vec4[ni], react_j: Vec4[nj],
        ni: u32, nj: u32, eps2: f32,
    );
    /// [`BlockPair`](Entry::BlockPair) with the guarded interaction (zero softening).
    BlockPairGuarded = nbody_block_pair_guarded => block_pair::block_pair<_, true>(
        pos_i: Vec4[ni], pos_j: Vec4[nj], acc_i: Vec4[ni], react_j: Vec4[nj],
        ni: u32, nj: u32, eps2: f32,
    );
    /// Per-block sums of the potential between blocks `I` and `J`:
    /// [`block_pair::block_potential`].
    BlockPotential = nbody_block_potential => block_pair::block_potential(
        pos_i: Vec4[ni], pos_j: Vec4[nj], ni: u32, nj: u32, eps2: f32,
        partials: f64[shape::block_potential_partials(ni, e.block_dim())],
    );
    /// A kick then a drift by the same `dt`, from stored accelerations:
    /// [`integrate::kick_drift`].
    KickDrift = nbody_kick_drift => integrate::kick_drift(
        pos_in: Vec4[n], pos_out: Vec4[n], vel: Vec4[n], acc: Vec4[n], n: u32, dt: f32,
    );
    /// `v += a dt`: [`integrate::kick`].
    Kick = nbody_kick => integrate::kick(vel: Vec4[n], acc: Vec4[n], n: u32, dt: f32);
    /// `x' = x + v dt`: [`integrate::drift`].
    Drift = nbody_drift => integrate::drift(
        pos_in: Vec4[n], pos_out: Vec4[n], vel: Vec4[n], n: u32, dt: f32,
    );
    /// Per-block kinetic and potential energy sums: [`energy::energy_partials`].
    Energy = nbody_energy => energy::energy_partials(
        pos: Vec4[n], vel: Vec4[n], n: u32, eps2: f32,
        partials: f64[shape::energy_partials(n, e.block_dim())],
    );
    /// The divergence check: [`integrate::check_finite`].
    CheckFinite = nbody_check_finite => integrate::check_finite(
        pos: Vec4[n], vel: Vec4[n], n: u32, step: u32, flag: u32[2],
    );
    /// Short-range MD: the step's build decision and the cleared cell
    /// counts: [`periodic::gate`].
    MdGate = nbody_md_gate => periodic::gate(
        status: u32[STATUS_WORDS], counts: u32[len], len: u32, force: u32,
    );
    /// Short-range MD: wrap, cell key and slot by atomic count: [`binning::bin`].
    MdBin = nbody_md_bin => binning::bin(
        pos: Vec4[n], tag: Tag[n], cell: u32[n], slot: u32[n], counts: u32[nx * ny * nz],
        status: u32[STATUS_WORDS], n: u32, lx: f32, ly: f32, lz: f32, nx: u32, ny: u32, nz: u32,
    );
    /// Exclusive scan within each block, block totals out: [`scan::scan_blocks`].
    ScanBlocks = nbody_scan_blocks => scan::scan_blocks(
        data: u32[len], out: u32[len], sums: u32[e.grid_dim()], status: u32[STATUS_WORDS],
        len: u32,
    );
    /// Exclusive scan of the block totals, one block: [`scan::scan_sums`].
    ScanSums = nbody_scan_sums => scan::scan_sums(
        sums: u32[count], count: u32, status: u32[STATUS_WORDS], total_at: u32,
    );
    /// Block offsets added back: [`scan::scan_add`].
    ScanAdd = nbody_scan_add => scan::scan_add(
        out: u32[len], offsets: u32[e.grid_dim()], status: u32[STATUS_WORDS], len: u32,
    );
    /// Bodies grouped by cell: [`binning::scatter`].
    MdScatter = nbody_md_scatter => binning::scatter(
        cell: u32[n], slot: u32[n], start: u32[cells + 1], order: u32[n],
        status: u32[STATUS_WORDS], n: u32, cells: u32,
    );
    /// Rank by id within the cell and the move into cell order: [`binning::reorder`].
    MdReorder = nbody_md_reorder => binning::reorder(
        pos_in: Vec4[n], vel_in: Vec4[n], tag_in: Tag[n], type_in: u32[n], cell: u32[n],
        start: u32[cells + 1], order: u32[n], pos_out: Vec4[n], vel_out: Vec4[n], tag_out: Tag[n],
        type_out: u32[n], reference: Vec4[n], status: u32[STATUS_WORDS], n: u32, cells: u32,
    );
    /// The sorted bodies back where a step reads them: [`binning::copy_back`].
    MdCopyBack = nbody_md_copy_back => binning::copy_back(
        pos_from: Vec4[n], vel_from: Vec4[n], tag_from: Tag[n], type_from: u32[n],
        pos_to: Vec4[n], vel_to: Vec4[n], tag_to: Tag[n], type_to: u32[n],
        status: u32[STATUS_WORDS], n: u32,
    );
    /// Ghosts per body: [`periodic::ghost_count`].
    MdGhostCount = nbody_md_ghost_count => periodic::ghost_count(
        pos: Vec4[n], gcount: u32[n], status: u32[STATUS_WORDS], n: u32, lx: f32, ly: f32,
        lz: f32, rlist2: f32,
    );
    /// Ghost slots, shifts and positions: [`periodic::ghost_place`].
    MdGhostPlace = nbody_md_ghost_place => periodic::ghost_place(
        pos: Vec4[n + gcap], types: u32[n + gcap], goff: u32[n], src: u32[gcap],
        shift: Vec4[gcap], status: u32[STATUS_WORDS], n: u32, gcap: u32, lx: f32, ly: f32,
        lz: f32, rlist2: f32,
    );
    /// Ghosts moved with their bodies: [`periodic::ghost_update`].
    MdGhostUpdate = nbody_md_ghost_update => periodic::ghost_update(
        pos: Vec4[n + gcap], src: u32[gcap], shift: Vec4[gcap], status: u32[STATUS_WORDS],
        n: u32, gcap: u32, lx: f32, ly: f32, lz: f32,
    );
    /// Full neighbour lists from the cells: [`neighbours::build`].
    MdNeighbours = nbody_md_neighbours => neighbours::build(
        pos: Vec4[n], start: u32[nx * ny * nz + 1], goff: u32[n],
        nlist: u32[shape::neighbour_stride(n) * cap], ncount: u32[n], status: u32[STATUS_WORDS],
        n: u32, cap: u32, gcap: u32, lx: f32, ly: f32, lz: f32, nx: u32, ny: u32, nz: u32,
        rlist2: f32,
    );
    /// The lists' lengths added up: [`neighbours::count_entries`].
    MdCountEntries = nbody_md_count_entries => neighbours::count_entries(
        ncount: u32[n], status: u32[STATUS_WORDS], n: u32,
    );
    /// Drift in place and the rebuild trigger: [`periodic::drift_check`].
    MdDrift = nbody_md_drift => periodic::drift_check(
        pos: Vec4[n], vel: Vec4[n], reference: Vec4[n], status: u32[STATUS_WORDS],
        n: u32, dt: f32, limit2: f32, sx: f32, sy: f32, sz: f32,
    );
    /// Short-range MD ensembles: the step's first thermostat scaling:
    /// [`md_ensemble::begin`].
    MdEnsembleBegin = nbody_md_ensemble_begin => md_ensemble::begin(
        state: f64[md_ensemble::ENS_WORDS], cfg: f64[md_ensemble::CFG_WORDS],
    );
    /// Short-range MD ensembles: scale, Langevin's forces, kick, block sums:
    /// [`md_ensemble::pass`].
    MdEnsemblePass = nbody_md_ensemble_pass => md_ensemble::pass(
        pos: Vec4[n], vel: Vec4[n], acc: Vec4[n], tag: Tag[n], lang: Vec4[lang_len],
        state: f64[md_ensemble::ENS_WORDS], cfg: f64[md_ensemble::CFG_WORDS],
        partials: f64[2 * e.grid_dim()], n: u32, h: f32, flags: u32, ahead: u32, lang_len: u32,
    );
    /// Short-range MD ensembles: the sums in block order and the
    /// thermostat's update: [`md_ensemble::end`].
    MdEnsembleEnd = nbody_md_ensemble_end => md_ensemble::end(
        state: f64[md_ensemble::ENS_WORDS], cfg: f64[md_ensemble::CFG_WORDS],
        partials: f64[2 * blocks], blocks: u32,
    );
    /// Collisional gravity: every body predicted to the block time:
    /// [`hermite::hermite_predict`].
    HermitePredict = nbody_hermite_predict => hermite::hermite_predict(
        pos: Vec4d[n], vel: Vec4d[n], acc: Vec4d[n], jerk: Vec4d[n], ppos: Vec4d[n],
        pvel: Vec4d[n], n: u32, next: f64, per_tick: f64,
    );
    /// The active bodies' predicted states as i-bodies: [`hermite::hermite_gather`].
    HermiteGather = nbody_hermite_gather => hermite::hermite_gather(
        ppos: Vec4d[n], pvel: Vec4d[n], active: u32[ni], ipos: Vec4d[ni], ivel: Vec4d[ni],
        n: u32, ni: u32,
    );
    /// Corrected bodies written back: [`hermite::hermite_scatter`].
    HermiteScatter = nbody_hermite_scatter => hermite::hermite_scatter(
        update: Vec4d[4 * ni], active: u32[ni], pos: Vec4d[n], vel: Vec4d[n], acc: Vec4d[n],
        jerk: Vec4d[n], n: u32, ni: u32,
    );
    /// Force, jerk and potential of i-bodies from j-bodies in f64:
    /// [`hermite::hermite_force`].
    HermiteForce = nbody_hermite_force => hermite::hermite_force<_, false>(
        jpos: Vec4d[nj], jvel: Vec4d[nj], ipos: Vec4d[ni], ivel: Vec4d[ni], islot: u32[ni],
        partials: Vec4d[2 * ni * jparts], ni: u32, nj: u32, jparts: u32, eps2: f64,
    );
    /// [`HermiteForce`](Entry::HermiteForce) with the jerk in double-single
    /// and `f32` (mixed precision).
    HermiteForceMixed = nbody_hermite_force_mixed => hermite::hermite_force<_, true>(
        jpos: Vec4d[nj], jvel: Vec4d[nj], ipos: Vec4d[ni], ivel: Vec4d[ni], islot: u32[ni],
        partials: Vec4d[2 * ni * jparts], ni: u32, nj: u32, jparts: u32, eps2: f64,
    );
    /// The parts of a split force sum, added in order: [`hermite::hermite_reduce`].
    HermiteReduce = nbody_hermite_reduce => hermite::hermite_reduce(
        partials: Vec4d[2 * ni * jparts], out: Vec4d[2 * ni], ni: u32, jparts: u32,
    );
} }

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_prefixed() {
        for (k, a) in Entry::ALL.iter().enumerate() {
            assert!(a.name().starts_with("nbody_"), "{}", a.name());
            assert!(a.params().len() <= MAX_PARAMS, "{}", a.name());
            for b in &Entry::ALL[k + 1..] {
                assert_ne!(a.name(), b.name());
            }
        }
    }

    #[test]
    fn args_follow_the_declared_parameters() {
        let launch = Launch::TiledEuler {
            pos_in: 'a',
            pos_out: 'b',
            vel: 'c',
            n: 7,
            dt: 0.5,
            g: 2.0,
            eps2: 0.25,
        };
        assert_eq!(launch.entry(), Entry::TiledEuler);
        let args = launch.args();
        let kinds: [Param; 7] = core::array::from_fn(|k| args.as_slice()[k].param());
        assert_eq!(&kinds[..], Entry::TiledEuler.params());
        assert_eq!(
            args.as_slice(),
            &[
                Arg::Ptr('a'),
                Arg::Ptr('b'),
                Arg::Ptr('c'),
                Arg::U32(7),
                Arg::F32(0.5),
                Arg::F32(2.0),
                Arg::F32(0.25)
            ]
        );
        let mapped = launch.map_buffers(|c| c as u32);
        assert_eq!(mapped.args().as_slice()[1], Arg::Ptr('b' as u32));
    }
}
