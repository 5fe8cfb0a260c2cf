//! Pair potentials as data: one small type per law (one file each, LAMMPS's
//! one-file-per-pair-style and HOOMD-blue's `EvaluatorPair*` in spirit), one
//! generic driver per place that evaluates them.
//!
//! A law ([`PairLaw`]) gives `F(r) / r` and `u(r)` from `r^2` and a *row*
//! of `f32` words for the pair's types ([`Row`]): [`HEADER`] words every law
//! has (the cutoff squared, the energy offset of the shift), then the law's
//! own [`PairLaw::WORDS`], precomputed once from the user's coefficients by
//! [`PairSetup::prepare`]. A run's coefficients are a symmetric table of
//! `types x types` rows (LAMMPS's `pair_coeff I J`), a body's type indexes
//! it. The drivers, each written once for every law:
//!
//! - the GPU force kernel over neighbour lists, [`forces`] (the kernel
//!   table's two entries per style, plain and thermo);
//! - the host's SIMD loops (`nbody-host/src/cpu/md/loops.rs`), generic over
//!   the vector type through [`Lane`];
//! - the host's `f64` oracle (`nbody-host/src/oracle.rs`), from
//!   [`PairSetup::reference`]: the law's textbook formula in `f64`, from the
//!   user's coefficients (not from the precomputed words);
//! - checkpoints and archives, which store the style's name and the user's
//!   coefficients per type pair.
//!
//! # Adding a law
//! A file beside `lj.rs` with the law's type, its [`PairLaw`] and
//! [`PairSetup`] impls, and one line in `pair_styles!` (this file); then
//! `scripts/build-ptx.sh` (the line adds two kernels to the table). Every
//! backend, the oracle and the file formats take it from there. Math that
//! [`Real`](crate::Real) lacks is in [`math`] ([`math::exp`],
//! [`math::sqrt`]), built from FMAs, products and exact bit operations.

pub mod math;

mod kernel;

pub use kernel::{THERMO_PARTIALS, forces};
pub use math::Lane;

/// Row word: `r_c^2` of the type pair (a pair interacts where `r^2 < r_c^2`).
pub const CUTOFF2: usize = 0;
/// Row word: what each pair within the cutoff subtracts from its energy:
/// `u(r_c)` with the shift (LAMMPS `pair_modify shift yes`), else 0.
pub const OFFSET: usize = 1;
/// Words every row starts with; the law's own follow.
pub const HEADER: usize = 2;
/// The most words a row may have (header included): rows fit fixed arrays.
pub const MAX_ROW: usize = 8;
/// The most coefficients a law may take from the user (the cutoff apart).
pub const MAX_PARAMS: usize = 6;

/// A row of coefficients for one lane's type pair: word `k` as a lane.
///
/// Uniform rows (one type) are held in registers ([`[R; MAX_ROW]`]); the
/// GPU kernel's typed rows load from the table, the CPU's gather per lane.
pub trait Row<R> {
    /// Word `k` of the row (see [`CUTOFF2`], [`OFFSET`], and the law's own
    /// from [`HEADER`] on).
    fn word(&self, k: usize) -> R;
}

impl<R: Copy> Row<R> for [R; MAX_ROW] {
    #[inline(always)]
    fn word(&self, k: usize) -> R {
        self[k]
    }
}

/// A pair law: `F(r) / r` and `u(r)` from `r^2` and a row of its words.
///
/// Both are called for pairs within the cutoff (the drivers select 0
/// beyond it, and subtract [`OFFSET`] from the energy); `F(r) / r =
/// -u'(r) / r` is positive where the pair repels, and body `i` feels
/// `(F / r) (x_i - x_j)`, LAMMPS's `fpair`.
pub trait PairLaw: 'static {
    /// The style's name, LAMMPS's `pair_style` (`"lj/cut"`, `"morse"`).
    const STYLE: &'static str;
    /// The law's name in prose (`"Lennard-Jones"`), for messages.
    const TITLE: &'static str;
    /// The user's coefficients, in LAMMPS's `pair_coeff` order (the
    /// optional cutoff, which every style takes last, apart).
    const PARAMS: &'static [&'static str];
    /// The law's own words per row, after the [`HEADER`].
    const WORDS: usize;

    /// `F(r) / r`.
    fn force<R: Lane, W: Row<R>>(w: &W, r2: R) -> R;

    /// `(u(r), F(r) / r)`, `u` unshifted.
    fn energy_force<R: Lane, W: Row<R>>(w: &W, r2: R) -> (R, R);
}

/// Words in a row of law `L`: the header and the law's own.
pub const fn row_words<L: PairLaw>() -> u32 {
    (HEADER + L::WORDS) as u32
}

/// A coefficient the law refuses, named, with the value and what it must be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Invalid {
    /// What it is (`"Lennard-Jones sigma"`).
    pub name: &'static str,
    /// The value given.
    pub value: f64,
    /// What it must be.
    pub requirement: &'static str,
}

/// One pair's energy and force in `f64`, with the magnitudes their terms
/// add up to (the scale of the `f32` evaluation's rounding error, which a
/// relative bound on a difference of cancelling terms would not give).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reference {
    /// `u(r)`, unshifted.
    pub energy: f64,
    /// `F(r) / r = -u'(r) / r`.
    pub fpair: f64,
    /// The sum of the absolute values of `u`'s terms.
    pub energy_scale: f64,
    /// The sum of the absolute values of `F / r`'s terms.
    pub fpair_scale: f64,
    /// The largest `|d ln t / d ln r|` over the terms `t` of `u` and `F`
    /// (13 for Lennard-Jones' `r^-13`): a relative error `d` in `r` moves
    /// each term by at most about `slope d` relatively.
    pub slope: f64,
}

/// What the host needs of a law beyond its evaluation: validating and
/// precomputing the user's coefficients, its `f64` reference. Host only
/// (`f64` math from `libm`).
#[cfg(not(target_arch = "nvptx64"))]
pub trait PairSetup: PairLaw {
    /// Which coefficient is the law's length scale (LJ's `sigma`, Morse's
    /// `r0`), for the default neighbour skin (`0.3` of it); `None`: 0.3.
    const LENGTH: Option<usize>;
    /// A typical coefficient set and cutoff (tests, examples).
    const EXAMPLE: &'static [f32];

    /// Checks the user's coefficients (`PARAMS.len()` of them) and writes
    /// the law's words, `words[..WORDS]`, rounded to `f32` once.
    fn prepare(params: &[f64], words: &mut [f32]) -> Result<(), Invalid>;

    /// The energy and force at `r^2` in `f64`, from the user's
    /// coefficients, written from the textbook formula.
    fn reference(params: &[f64], r2: f64) -> Reference;
}

/// A row of law `L` for coefficients `params` (each a finite number),
/// cutoff `r_c` and the shift, into `row[..row_words::<L>()]`.
#[cfg(not(target_arch = "nvptx64"))]
pub fn fill_row<L: PairSetup>(
    params: &[f64],
    cutoff: f64,
    shift: bool,
    row: &mut [f32],
) -> Result<(), Invalid> {
    L::prepare(params, &mut row[HEADER..HEADER + L::WORDS])?;
    row[CUTOFF2] = (cutoff * cutoff) as f32;
    row[OFFSET] = if shift {
        L::reference(params, cutoff * cutoff).energy as f32
    } else {
        0.0
    };
    Ok(())
}

/// Something to do with a law chosen at run time ([`Style::visit`]): the
/// host's way to instantiate its generic loops for the style of a run.
#[cfg(not(target_arch = "nvptx64"))]
pub trait Visitor {
    /// What it makes.
    type Output;
    /// Does it with law `L`.
    fn visit<L: PairSetup>(self) -> Self::Output;
}

/// The registry of pair styles, one line each: `Style in module =>
/// plain entry = PTX symbol, thermo entry = PTX symbol;`. Expanded twice:
/// here into the modules, [`Style`] and its methods, and in the kernel
/// table (`entry.rs`) into the two force kernels of each style.
macro_rules! pair_styles {
    ($m:ident! { $($pre:tt)* }) => {
        $m! { $($pre)* @pair_styles
            /// Lennard-Jones 12-6, LAMMPS's `lj/cut`: [`lj::LennardJones`].
            LennardJones in lj => LjForces = nbody_lj_forces,
                LjForcesThermo = nbody_lj_forces_thermo;
            /// Morse, LAMMPS's `morse`: [`morse::Morse`].
            Morse in morse => MorseForces = nbody_morse_forces,
                MorseForcesThermo = nbody_morse_forces_thermo;
        }
    };
}
pub(crate) use pair_styles;

/// The modules and [`Style`] from the registry's lines.
macro_rules! style_registry {
    (@pair_styles $(
        $(#[$doc:meta])*
        $style:ident in $module:ident => $plain:ident = $psym:ident, $thermo:ident = $tsym:ident;
    )*) => {
        $(pub mod $module;)*
        $(pub use $module::$style;)*

        /// Every pair law, by name: what a run chooses and files record.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Style {
            $($(#[$doc])* $style,)*
        }

        impl Style {
            /// Every style, in registry order.
            pub const ALL: &'static [Style] = &[$(Style::$style),*];

            /// LAMMPS's name of the style.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Style::$style => <$style as PairLaw>::STYLE,)*
                }
            }

            /// The law's name in prose (`"Lennard-Jones"`), for messages.
            pub const fn title(self) -> &'static str {
                match self {
                    $(Style::$style => <$style as PairLaw>::TITLE,)*
                }
            }

            /// The style of a name ([`name`](Self::name)). Host only (a
            /// string compare the PTX must not carry).
            #[cfg(not(target_arch = "nvptx64"))]
            pub fn from_name(name: &str) -> Option<Style> {
                Style::ALL.iter().copied().find(|s| s.name() == name)
            }

            /// The user's coefficients, in `pair_coeff` order (no cutoff).
            pub const fn params(self) -> &'static [&'static str] {
                match self {
                    $(Style::$style => <$style as PairLaw>::PARAMS,)*
                }
            }

            /// Words per row of the coefficient table.
            pub const fn row_words(self) -> u32 {
                match self {
                    $(Style::$style => row_words::<$style>(),)*
                }
            }

            /// What an engine that runs this style calls its method:
            /// `"lj-cells"` (neighbour lists) or `"lj-all-pairs"`, after the
            /// style's module.
            pub const fn method(self, lists: bool) -> &'static str {
                match (self, lists) {
                    $(
                        (Style::$style, true) => concat!(stringify!($module), "-cells"),
                        (Style::$style, false) => concat!(stringify!($module), "-all-pairs"),
                    )*
                }
            }

            /// Runs `v` with this style's law.
            #[cfg(not(target_arch = "nvptx64"))]
            pub fn visit<V: Visitor>(self, v: V) -> V::Output {
                match self {
                    $(Style::$style => v.visit::<$style>(),)*
                }
            }
        }
    };
}

pair_styles!(style_registry! {});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_style_has_a_unique_name_and_fits_the_fixed_arrays() {
        for (k, s) in Style::ALL.iter().enumerate() {
            assert_eq!(Style::from_name(s.name()), Some(*s));
            assert!(s.row_words() as usize <= MAX_ROW, "{}", s.name());
            assert!(s.params().len() <= MAX_PARAMS, "{}", s.name());
            for t in &Style::ALL[k + 1..] {
                assert_ne!(s.name(), t.name());
            }
        }
        assert_eq!(Style::from_name("no/such"), None);
    }

    /// For every law: the `f32` evaluation from the precomputed words
    /// against the `f64` reference from the user's coefficients, over the
    /// range a run meets (0.8 of the law's length scale to the cutoff);
    /// `F / r` also against a central difference of the reference's `u`.
    #[test]
    fn every_law_agrees_with_its_reference() {
        struct Check;
        impl Visitor for Check {
            type Output = ();
            fn visit<L: PairSetup>(self) {
                let n = L::PARAMS.len();
                let params: [f64; MAX_PARAMS] =
                    core::array::from_fn(|k| L::EXAMPLE.get(k).copied().unwrap_or(0.0) as f64);
                let cutoff = L::EXAMPLE[n] as f64;
                let mut row = [0.0f32; MAX_ROW];
                fill_row::<L>(&params[..n], cutoff, true, &mut row).unwrap();
                let length = L::LENGTH.map_or(1.0, |k| params[k]);
                let mut r = 0.8 * length;
                while r < cutoff {
                    let r2 = (r * r) as f32;
                    let want = L::reference(&params[..n], r2 as f64);
                    let (u, f) = L::energy_force(&row, r2);
                    let f_only = L::force(&row, r2);
                    assert_eq!(f.to_bits(), f_only.to_bits(), "{}: r {r}", L::STYLE);
                    let tol = 1e-5;
                    assert!(
                        (u as f64 - want.energy).abs() <= tol * want.energy_scale,
                        "{}: u({r}) = {u} vs {}",
                        L::STYLE,
                        want.energy
                    );
                    assert!(
                        (f as f64 - want.fpair).abs() <= tol * want.fpair_scale,
                        "{}: F/r({r}) = {f} vs {}",
                        L::STYLE,
                        want.fpair
                    );
                    let rr = r2 as f64;
                    let h = 1e-6 * rr.sqrt();
                    let s = rr.sqrt();
                    let du = (L::reference(&params[..n], (s + h) * (s + h)).energy
                        - L::reference(&params[..n], (s - h) * (s - h)).energy)
                        / (2.0 * h);
                    assert!(
                        (-du / s - want.fpair).abs() <= 1e-6 * want.fpair_scale,
                        "{}: -u'/r at {r}: {} vs {}",
                        L::STYLE,
                        -du / s,
                        want.fpair
                    );
                    r += 0.01 * length;
                }
                // The shift: the energy is 0 at the cutoff.
                let at = L::reference(&params[..n], cutoff * cutoff).energy;
                assert_eq!(row[OFFSET], at as f32);
            }
        }
        for s in Style::ALL {
            s.visit(Check);
        }
    }
}
