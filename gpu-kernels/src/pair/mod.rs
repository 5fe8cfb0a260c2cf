//! Pair potentials as data: one small type per law (one file each, LAMMPS's
//! one-file-per-pair-style and HOOMD-blue's `EvaluatorPair*` in spirit), one
//! generic driver per place that evaluates them. (Over 600 lines: the law
//! traits, the mixing rules and the registry with its tests are one thing.)
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
pub const MAX_ROW: usize = 10;
/// The most coefficients a law may take from the user (the cutoff apart).
pub const MAX_PARAMS: usize = 6;

/// A row of coefficients for one lane's type pair: word `k` as a lane, and
/// the run's tabulated data (the `table` style's) by index.
///
/// The GPU kernel's rows read the table buffer (one type: the row loaded
/// into registers once), the CPU's splat one row or gather per lane.
pub trait Row<R> {
    /// Word `k` of the row (see [`CUTOFF2`], [`OFFSET`], and the law's own
    /// from [`HEADER`] on).
    fn word(&self, k: usize) -> R;
    /// Word `at` of the run's data (laws with tabulated data, placed by
    /// [`PairSetup::tabulate`]): `at` holds an integer in every lane, an
    /// index of the coefficient table; one outside it (or NaN) reads a word
    /// of the table, never memory beyond it.
    fn data(&self, at: R) -> R;
    /// Words `at` and `at + 1` of the run's data, each [`Row::data`]'s
    /// where `at + 1` is in the table (a segment's two words: the host's
    /// AVX-512 loops read them with one 64-bit gather per lane, not two
    /// gathers).
    #[inline(always)]
    fn data_pair(&self, at: R) -> (R, R)
    where
        R: Lane,
    {
        (self.data(at), self.data(at + at.lit(1.0)))
    }
}

/// A row in `f32` with the run's data as a slice: how the host evaluates a
/// law on one pair outside the loops (tests, the software device's checks).
#[derive(Clone, Copy, Debug)]
pub struct Words<'a> {
    /// The row.
    pub row: [f32; MAX_ROW],
    /// The coefficient table (rows and data), which [`Row::data`] indexes.
    pub table: &'a [f32],
}

impl Row<f32> for Words<'_> {
    #[inline(always)]
    fn word(&self, k: usize) -> f32 {
        self.row[k]
    }

    #[inline(always)]
    fn data(&self, at: f32) -> f32 {
        match self.table.len() {
            0 => f32::NAN,
            len => self.table[(at as usize).min(len - 1)],
        }
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

/// One type pair's coefficients as the user gave them (or a mixing rule
/// made them), in `f64`: what a law's setup and reference read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Coeffs<'a> {
    /// In [`PairLaw::PARAMS`] order.
    pub params: &'a [f64],
    /// The cutoff `r_c`.
    pub cutoff: f64,
    /// The law's tabulated values (the `table` style's, see
    /// [`table`]), empty for the analytic laws.
    pub data: &'a [f64],
}

/// LAMMPS's `pair_modify mix`: how the coefficients of unlike types `i !=
/// j` that were not given follow from those of `i i` and `j j`, for the
/// laws that mix ([`PairSetup::mix`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mixing {
    /// `eps_ij = sqrt(eps_i eps_j)`, `sigma_ij = sqrt(sigma_i sigma_j)`
    /// (LAMMPS's default).
    #[default]
    Geometric,
    /// `eps_ij = sqrt(eps_i eps_j)`, `sigma_ij = (sigma_i + sigma_j) / 2`
    /// (Lorentz-Berthelot).
    Arithmetic,
    /// `eps_ij = 2 sqrt(eps_i eps_j) sigma_i^3 sigma_j^3 / (sigma_i^6 +
    /// sigma_j^6)`, `sigma_ij = ((sigma_i^6 + sigma_j^6) / 2)^(1/6)`.
    SixthPower,
}

impl Mixing {
    /// LAMMPS's name (`pair_modify mix NAME`).
    pub const fn name(self) -> &'static str {
        match self {
            Mixing::Geometric => "geometric",
            Mixing::Arithmetic => "arithmetic",
            Mixing::SixthPower => "sixthpower",
        }
    }

    /// The rule of a name ([`name`](Self::name)). Host only (a string
    /// compare the PTX must not carry).
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn from_name(name: &str) -> Option<Mixing> {
        [Mixing::Geometric, Mixing::Arithmetic, Mixing::SixthPower]
            .into_iter()
            .find(|m| m.name() == name)
    }

    /// LAMMPS's `Pair::mix_energy(eps1, eps2, sig1, sig2)`.
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn energy(self, eps1: f64, eps2: f64, sig1: f64, sig2: f64) -> f64 {
        match self {
            Mixing::Geometric | Mixing::Arithmetic => libm::sqrt(eps1 * eps2),
            Mixing::SixthPower => {
                2.0 * libm::sqrt(eps1 * eps2) * libm::pow(sig1, 3.0) * libm::pow(sig2, 3.0)
                    / (libm::pow(sig1, 6.0) + libm::pow(sig2, 6.0))
            }
        }
    }

    /// LAMMPS's `Pair::mix_distance(sig1, sig2)` (also how cutoffs mix).
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn distance(self, sig1: f64, sig2: f64) -> f64 {
        match self {
            Mixing::Geometric => libm::sqrt(sig1 * sig2),
            Mixing::Arithmetic => 0.5 * (sig1 + sig2),
            Mixing::SixthPower => libm::pow(
                0.5 * (libm::pow(sig1, 6.0) + libm::pow(sig2, 6.0)),
                1.0 / 6.0,
            ),
        }
    }
}

/// What the host needs of a law beyond its evaluation: validating and
/// precomputing the user's coefficients, mixing them, its `f64` reference.
/// Host only (`f64` math from `libm`).
#[cfg(not(target_arch = "nvptx64"))]
pub trait PairSetup: PairLaw {
    /// Which coefficient is the law's length scale (LJ's `sigma`, Morse's
    /// `r0`), for the default neighbour skin (`0.3` of it); `None`: 0.3.
    const LENGTH: Option<usize>;
    /// A typical coefficient set and cutoff (tests, examples).
    const EXAMPLE: &'static [f32];
    /// Whether the law takes LAMMPS's `pair_modify shift yes` (false: the
    /// `table` style, which LAMMPS does not shift, refuses it).
    const SHIFT: bool = true;
    /// Values of the example's data ([`example_data`](Self::example_data)).
    const EXAMPLE_DATA: usize = 0;

    /// Checks the coefficients (`PARAMS.len()` of them, and the cutoff,
    /// already checked finite and `> 0`) and writes the law's words,
    /// `words[..WORDS]`, each rounded to `f32` once.
    fn prepare(c: &Coeffs<'_>, words: &mut [f32]) -> Result<(), Invalid>;

    /// The energy and force at `r^2` in `f64`, from the coefficients,
    /// written from the textbook formula (LAMMPS's).
    fn reference(c: &Coeffs<'_>, r2: f64) -> Reference;

    /// LAMMPS's `init_one` for a pair of unlike types not given: the mixed
    /// coefficients into `params` and the mixed cutoff, from those of the
    /// like pairs `ii` and `jj`; `None` where LAMMPS does not mix the style
    /// ("All pair coeffs are not set").
    fn mix(rule: Mixing, ii: &Coeffs<'_>, jj: &Coeffs<'_>, params: &mut [f64]) -> Option<f64> {
        let _ = (rule, ii, jj, params);
        None
    }

    /// `f32` words of tabulated data the pair needs in the coefficient
    /// table (0 for the analytic laws).
    fn data_words(c: &Coeffs<'_>) -> usize {
        let _ = c;
        0
    }

    /// Writes the pair's tabulated data, `data_words(c)` words placed at
    /// `base` in the coefficient table, and the row words that find it.
    fn tabulate(c: &Coeffs<'_>, base: u32, words: &mut [f32], data: &mut [f32]) {
        let _ = (c, base, words, data);
    }

    /// The example's data for `cutoff` ([`EXAMPLE_DATA`](Self::EXAMPLE_DATA)
    /// values; none for the analytic laws).
    fn example_data(cutoff: f64, out: &mut [f64]) {
        let _ = (cutoff, out);
    }
}

/// `v` if finite and `> 0` (a normal `f32`), else the refusal naming it.
#[cfg(not(target_arch = "nvptx64"))]
pub fn positive(name: &'static str, v: f64) -> Result<f64, Invalid> {
    let v32 = v as f32;
    if v.is_finite() && v > 0.0 && v32.is_finite() && v32 >= f32::MIN_POSITIVE {
        Ok(v)
    } else {
        Err(Invalid {
            name,
            value: v,
            requirement: "must be finite and > 0 (a normal f32)",
        })
    }
}

/// `v` if finite and `>= 0` (a normal `f32` or 0), else the refusal.
#[cfg(not(target_arch = "nvptx64"))]
pub fn non_negative(name: &'static str, v: f64) -> Result<f64, Invalid> {
    if v == 0.0 {
        Ok(0.0)
    } else {
        positive(name, v).map_err(|e| Invalid {
            requirement: "must be finite and >= 0 (a normal f32 or 0)",
            ..e
        })
    }
}

/// `v` if finite (an `f32`, normal or 0), else the refusal.
#[cfg(not(target_arch = "nvptx64"))]
pub fn finite(name: &'static str, v: f64) -> Result<f64, Invalid> {
    let v32 = v as f32;
    if v.is_finite() && v32.is_finite() && (v == 0.0 || v32.abs() >= f32::MIN_POSITIVE) {
        Ok(v)
    } else {
        Err(Invalid {
            name,
            value: v,
            requirement: "must be finite (a normal f32 or 0)",
        })
    }
}

/// A derived word `v` (a product of coefficients) if a normal `f32`,
/// else the refusal naming it (units where the coefficients are near 1).
#[cfg(not(target_arch = "nvptx64"))]
pub fn normal(name: &'static str, v: f64) -> Result<f64, Invalid> {
    if v.abs() < f32::MAX as f64 && v.abs() > f32::MIN_POSITIVE as f64 {
        Ok(v)
    } else {
        Err(Invalid {
            name,
            value: v,
            requirement: "must be a normal f32 (choose units where the coefficients are near 1)",
        })
    }
}

/// A row of law `L` for coefficients `c` (each a finite number) and the
/// shift, into `row[..row_words::<L>()]`; its tabulated data, if any, into
/// `data` (`L::data_words(c)` words), which starts at `base` in the table.
#[cfg(not(target_arch = "nvptx64"))]
pub fn fill_row<L: PairSetup>(
    c: &Coeffs<'_>,
    shift: bool,
    row: &mut [f32],
    data: &mut [f32],
    base: u32,
) -> Result<(), Invalid> {
    L::prepare(c, &mut row[HEADER..HEADER + L::WORDS])?;
    L::tabulate(c, base, &mut row[HEADER..HEADER + L::WORDS], data);
    row[CUTOFF2] = (c.cutoff * c.cutoff) as f32;
    row[OFFSET] = if shift {
        L::reference(c, c.cutoff * c.cutoff).energy as f32
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
            /// Lennard-Jones with the force shifted to 0 at the cutoff,
            /// LAMMPS's `lj/smooth/linear`: [`lj_smooth_linear::LjSmoothLinear`].
            LjSmoothLinear in lj_smooth_linear => LjSmoothLinearForces = nbody_lj_smooth_linear_forces,
                LjSmoothLinearForcesThermo = nbody_lj_smooth_linear_forces_thermo;
            /// Screened Coulomb, LAMMPS's `yukawa`: [`yukawa::Yukawa`].
            Yukawa in yukawa => YukawaForces = nbody_yukawa_forces,
                YukawaForcesThermo = nbody_yukawa_forces_thermo;
            /// The cosine soft repulsion, LAMMPS's `soft`: [`soft::Soft`].
            Soft in soft => SoftForces = nbody_soft_forces,
                SoftForcesThermo = nbody_soft_forces_thermo;
            /// Born-Mayer-Huggins, LAMMPS's `born`: [`born::Born`].
            Born in born => BornForces = nbody_born_forces,
                BornForcesThermo = nbody_born_forces_thermo;
            /// Buckingham, LAMMPS's `buck`: [`buck::Buckingham`].
            Buckingham in buck => BuckForces = nbody_buck_forces,
                BuckForcesThermo = nbody_buck_forces_thermo;
            /// Tabulated, LAMMPS's `table linear`: [`table::Table`].
            Table in table => TableForces = nbody_table_forces,
                TableForcesThermo = nbody_table_forces_thermo;
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
                let mut data = [0.0f64; 4096];
                assert!(L::EXAMPLE_DATA <= data.len());
                L::example_data(cutoff, &mut data[..L::EXAMPLE_DATA]);
                let c = Coeffs {
                    params: &params[..n],
                    cutoff,
                    data: &data[..L::EXAMPLE_DATA],
                };
                let mut table = [0.0f32; 16384];
                let words = row_words::<L>() as usize;
                let (row, rest) = table.split_at_mut(words);
                fill_row::<L>(
                    &c,
                    L::SHIFT,
                    row,
                    &mut rest[..L::data_words(&c)],
                    words as u32,
                )
                .unwrap();
                let w = Words {
                    row: core::array::from_fn(|k| table.get(k).copied().unwrap_or(0.0)),
                    table: &table,
                };
                let length = L::LENGTH.map_or(1.0, |k| params[k]);
                let mut r = 0.8 * length;
                while r < cutoff {
                    let r2 = (r * r) as f32;
                    let want = L::reference(&c, r2 as f64);
                    let (u, f) = L::energy_force(&w, r2);
                    let f_only = L::force(&w, r2);
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
                    // A table's forces are its own samples, not its energies'
                    // slope (`table.rs` checks them against its function).
                    let rr = r2 as f64;
                    if L::EXAMPLE_DATA > 0 {
                        r += 0.01 * length;
                        continue;
                    }
                    let h = 1e-6 * rr.sqrt();
                    let s = rr.sqrt();
                    let du = (L::reference(&c, (s + h) * (s + h)).energy
                        - L::reference(&c, (s - h) * (s - h)).energy)
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
                if L::SHIFT {
                    let at = L::reference(&c, cutoff * cutoff).energy;
                    assert_eq!(table[OFFSET], at as f32);
                }
            }
        }
        for s in Style::ALL {
            s.visit(Check);
        }
    }

    #[test]
    fn mixing_rules_are_lammps_formulas() {
        let g = Mixing::Geometric;
        assert_eq!(g.energy(1.0, 4.0, 1.0, 2.0), 2.0);
        assert_eq!(g.distance(1.0, 4.0), 2.0);
        assert_eq!(Mixing::Arithmetic.distance(1.0, 4.0), 2.5);
        assert_eq!(Mixing::Arithmetic.energy(1.0, 4.0, 1.0, 2.0), 2.0);
        let e = Mixing::SixthPower.energy(1.0, 4.0, 1.0, 2.0);
        assert!((e - 2.0 * 2.0 * 8.0 / 65.0).abs() < 1e-15, "{e}");
        let d = Mixing::SixthPower.distance(1.0, 2.0);
        assert!((d - (32.5f64).powf(1.0 / 6.0)).abs() < 1e-15, "{d}");
        for m in [g, Mixing::Arithmetic, Mixing::SixthPower] {
            assert_eq!(Mixing::from_name(m.name()), Some(m));
        }
        assert_eq!(Mixing::from_name("harmonic"), None);
    }
}
