//! [`PairSpec`]: LAMMPS's pair commands as text, `pair_style NAME ARGS`,
//! `pair_coeff I J COEFFS [CUTOFF]` and `pair_modify shift|mix`, made into
//! a [`PairPotential`] with LAMMPS's semantics: types numbered from 1, `I <=
//! J` (`*` and ranges as LAMMPS's `utils::bounds`), a later `pair_coeff`
//! overriding an earlier one, the style's global cutoff where a pair gives
//! none, pairs of unlike types not given mixed by the `pair_modify mix`
//! rule (geometric unless told) for the styles LAMMPS mixes. What the `md`
//! example's `--pair NAME ARGS` and `--pair-coeff I J ...` parse into.
//!
//! ```
//! use nbody_host::pair::PairSpec;
//!
//! // pair_style lj/cut 2.5; pair_coeff 1 1 1.0 1.0; pair_coeff 2 2 0.5 0.88 2.2;
//! // pair_modify mix arithmetic shift yes
//! let mut spec = PairSpec::parse_lammps(&["lj/cut", "2.5"])?;
//! spec.pair_coeff(&["1", "1", "1.0", "1.0"])?;
//! spec.pair_coeff(&["2", "2", "0.5", "0.88", "2.2"])?;
//! spec.pair_modify(&["mix", "arithmetic", "shift", "yes"])?;
//! let ka = spec.build(2)?;
//! // 1-2 mixed: eps sqrt(0.5), sigma (1 + 0.88) / 2, cutoff (2.5 + 2.2) / 2.
//! let c = ka.coeff(0, 1);
//! assert!(c.is_mixed() && (c.params()[1] - 0.94).abs() < 1e-15);
//! assert!((c.cutoff_f64() - 2.35).abs() < 1e-15);
//! // A missing like pair, an unknown type: one clear line each.
//! assert!(spec.build(3).unwrap_err().to_string().contains("types 3 3"));
//! assert!(spec.pair_coeff(&["2", "1", "1", "1"]).is_err());
//! # Ok::<(), nbody_host::Error>(())
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{LinearTable, Mixing, PairPotential, PairStyle, TableFile};
use crate::error::{Error, Result};

/// One `pair_coeff`, as given.
#[derive(Clone, Debug, PartialEq)]
struct Coeff {
    i: String,
    j: String,
    args: Vec<String>,
}

/// LAMMPS's pair commands, parsed and checked as they come, made into a
/// potential by [`build`](Self::build) (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct PairSpec {
    style: PairStyle,
    /// `wca`: `lj/cut` cut at `2^(1/6) sigma`, shifted.
    wca: bool,
    /// The `pair_style` cutoff.
    cutoff: Option<f64>,
    /// `yukawa`'s `kappa`.
    kappa: Option<f64>,
    /// `table linear N`'s `N`.
    points: Option<usize>,
    coeffs: Vec<Coeff>,
    shift: bool,
    mixing: Mixing,
    /// Where relative table files are read from (`None`: the working
    /// directory).
    dir: Option<PathBuf>,
}

/// A number of a command, or the error naming it.
fn number(command: &str, what: &str, word: &str) -> Result<f64> {
    word.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| {
            Error::InvalidCombination(format!(
                "{command}: {what} = {word:?} is not a finite number"
            ))
        })
}

/// The names `pair_style` takes: LAMMPS's, and `lj` (= `lj/cut`) and
/// `wca` (`lj/cut` at `2^(1/6) sigma`, shifted).
pub const STYLE_NAMES: &[&str] = &[
    "lj/cut",
    "lj",
    "wca",
    "lj/smooth/linear",
    "morse",
    "yukawa",
    "soft",
    "born",
    "buck",
    "table",
];

impl PairSpec {
    /// `pair_style NAME ARGS` (`args[0]` the name): `lj/cut` (or `lj`),
    /// `lj/smooth/linear`, `morse`, `soft`, `born`, `buck` take the global
    /// cutoff (optional here if every `pair_coeff` gives one); `yukawa
    /// KAPPA [CUTOFF]`; `table linear N`; `wca` none (each pair's cutoff is
    /// `2^(1/6) sigma`, shifted).
    pub fn parse_lammps<S: AsRef<str>>(args: &[S]) -> Result<PairSpec> {
        let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
        let Some((&name, rest)) = args.split_first() else {
            return Err(Error::InvalidCombination(format!(
                "pair_style: no style named (one of {})",
                STYLE_NAMES.join(", ")
            )));
        };
        let command = format!("pair_style {}", args.join(" "));
        let (style, wca) = match name {
            "lj" => (PairStyle::LennardJones, false),
            "wca" => (PairStyle::LennardJones, true),
            other => match PairStyle::from_name(other) {
                Some(s) => (s, false),
                None => {
                    return Err(Error::InvalidCombination(format!(
                        "{command}: unknown pair style {other:?} (one of {})",
                        STYLE_NAMES.join(", ")
                    )));
                }
            },
        };
        let mut spec = PairSpec {
            style,
            wca,
            cutoff: None,
            kappa: None,
            points: None,
            coeffs: Vec::new(),
            shift: wca,
            mixing: Mixing::Geometric,
            dir: None,
        };
        let too_many = |most: usize| -> Result<()> {
            if rest.len() > most {
                Err(Error::InvalidCombination(format!(
                    "{command}: {} arguments, {name} takes at most {most}",
                    rest.len()
                )))
            } else {
                Ok(())
            }
        };
        match (style, wca) {
            (_, true) => too_many(0)?,
            (PairStyle::Yukawa, _) => {
                too_many(2)?;
                let Some(kappa) = rest.first() else {
                    return Err(Error::InvalidCombination(format!(
                        "{command}: yukawa needs kappa (pair_style yukawa KAPPA [CUTOFF])"
                    )));
                };
                spec.kappa = Some(number(&command, "kappa", kappa)?);
                if let Some(c) = rest.get(1) {
                    spec.cutoff = Some(number(&command, "cutoff", c)?);
                }
            }
            (PairStyle::Table, _) => {
                if rest.len() != 2 || rest[0] != "linear" {
                    return Err(Error::InvalidCombination(format!(
                        "{command}: the table style here is LAMMPS's `pair_style table linear N` \
                         (lookup, spline and bitmap interpolation are not implemented)"
                    )));
                }
                let n = rest[1].parse::<usize>().ok().filter(|&n| n >= 2);
                spec.points = Some(n.ok_or_else(|| {
                    Error::InvalidCombination(format!(
                        "{command}: N = {:?} must be an integer >= 2",
                        rest[1]
                    ))
                })?);
            }
            _ => {
                too_many(1)?;
                if let Some(c) = rest.first() {
                    spec.cutoff = Some(number(&command, "cutoff", c)?);
                }
            }
        }
        Ok(spec)
    }

    /// Where relative table file names are read from.
    pub fn table_dir(mut self, dir: impl Into<PathBuf>) -> PairSpec {
        self.dir = Some(dir.into());
        self
    }

    /// The style.
    pub fn style(&self) -> PairStyle {
        self.style
    }

    /// `pair_coeff I J COEFFS [CUTOFF]`: `I` and `J` LAMMPS's type numbers
    /// (from 1; `*`, `n*`, `*n`, `m*n` ranges), `I <= J`; the style's
    /// coefficients in LAMMPS's order (`table`: `FILE KEYWORD`; `yukawa`:
    /// `A`; `wca`: `epsilon sigma`, no cutoff). Numbers and counts checked
    /// now; types against the number of types at [`build`](Self::build).
    pub fn pair_coeff<S: AsRef<str>>(&mut self, args: &[S]) -> Result<()> {
        let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
        let command = format!("pair_coeff {}", args.join(" "));
        let names = self.coeff_names();
        let (most, least) = match self.wca {
            true => (2 + names.len(), 2 + names.len()),
            false => (3 + names.len(), 2 + names.len()),
        };
        if args.len() < least || args.len() > most {
            let cutoff = if self.wca { "" } else { " [CUTOFF]" };
            return Err(Error::InvalidCombination(format!(
                "{command}: {} arguments; {} takes I J {}{cutoff}",
                args.len(),
                self.name(),
                names.join(" ")
            )));
        }
        let (ilo, ihi) = bounds(&command, args[0], u32::MAX)?;
        let (jlo, jhi) = bounds(&command, args[1], u32::MAX)?;
        if ilo > jhi || (ilo == ihi && jlo == jhi && ilo > jlo) {
            return Err(Error::InvalidCombination(format!(
                "{command}: LAMMPS takes I <= J (write pair_coeff {} {})",
                args[1], args[0]
            )));
        }
        if self.style != PairStyle::Table {
            for (k, name) in names.iter().enumerate() {
                number(&command, name, args[2 + k])?;
            }
        }
        if let Some(c) = args.get(2 + names.len()) {
            number(&command, "cutoff", c)?;
        }
        self.coeffs.push(Coeff {
            i: args[0].to_owned(),
            j: args[1].to_owned(),
            args: args[2..].iter().map(|s| s.to_string()).collect(),
        });
        Ok(())
    }

    /// `pair_modify shift yes|no` and `pair_modify mix
    /// geometric|arithmetic|sixthpower` (either or both, in one call as
    /// LAMMPS takes them).
    pub fn pair_modify<S: AsRef<str>>(&mut self, args: &[S]) -> Result<()> {
        let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
        let command = format!("pair_modify {}", args.join(" "));
        let mut k = 0;
        while k < args.len() {
            let value = args.get(k + 1).copied().unwrap_or("");
            match args[k] {
                "shift" => {
                    self.shift = match value {
                        "yes" => true,
                        "no" => false,
                        other => {
                            return Err(Error::InvalidCombination(format!(
                                "{command}: shift {other:?} (yes or no)"
                            )));
                        }
                    }
                }
                "mix" => {
                    self.mixing = Mixing::from_name(value).ok_or_else(|| {
                        Error::InvalidCombination(format!(
                            "{command}: mix {value:?} (geometric, arithmetic or sixthpower)"
                        ))
                    })?
                }
                other => {
                    return Err(Error::InvalidCombination(format!(
                        "{command}: {other:?} is not a pair_modify keyword here (shift, mix)"
                    )));
                }
            }
            k += 2;
        }
        Ok(())
    }

    /// Sets the shift (`pair_modify shift yes|no`; `wca` is always shifted).
    pub fn shift(mut self, shift: bool) -> PairSpec {
        self.shift = shift || self.wca;
        self
    }

    /// Sets the mixing rule (`pair_modify mix`; geometric unless set, as
    /// in LAMMPS).
    pub fn mix(mut self, rule: Mixing) -> PairSpec {
        self.mixing = rule;
        self
    }

    /// The name as given to `pair_style`.
    fn name(&self) -> &'static str {
        if self.wca { "wca" } else { self.style.name() }
    }

    /// What `pair_coeff` takes after `I J`, the cutoff apart.
    fn coeff_names(&self) -> Vec<&'static str> {
        match self.style {
            PairStyle::Yukawa => vec!["A"],
            PairStyle::Table => vec!["FILE", "KEYWORD"],
            s => s.params().to_vec(),
        }
    }

    /// The highest type number the `pair_coeff`s name (ranges' explicit
    /// ends; 0 if none): at least how many types a run has.
    pub fn highest_type(&self) -> u32 {
        let end = |w: &str| {
            w.rsplit('*')
                .next()
                .and_then(|x| x.parse::<u32>().ok())
                .unwrap_or(0)
        };
        self.coeffs
            .iter()
            .map(|c| end(&c.i).max(end(&c.j)))
            .max()
            .unwrap_or(0)
    }

    /// The potential for `types` atom types (LAMMPS's `create_box` count):
    /// every type named exists, every pair is given or mixed (the styles
    /// that do not mix need every pair, as in LAMMPS), every value valid,
    /// table files read and covering their cutoffs; each error one line
    /// naming the command or pair.
    pub fn build(&self, types: u32) -> Result<PairPotential> {
        let n = self.style.params().len();
        let mut b = PairPotential::builder(self.style, types)
            .numbered_from(1)
            .shift(self.shift)
            .mix(self.mixing);
        let mut files: HashMap<PathBuf, TableFile> = HashMap::new();
        for c in &self.coeffs {
            let command = format!("pair_coeff {} {} {}", c.i, c.j, c.args.join(" "));
            let (ilo, ihi) = bounds(&command, &c.i, types)?;
            let (jlo, jhi) = bounds(&command, &c.j, types)?;
            let names = self.coeff_names().len();
            let cutoff = match c.args.get(names) {
                Some(w) => Some(number(&command, "cutoff", w)?),
                None => self.cutoff,
            };
            let mut count = 0;
            for i in ilo..=ihi {
                for j in jlo.max(i)..=jhi {
                    count += 1;
                    b = match self.style {
                        PairStyle::Table => {
                            let path = self.path_of(&c.args[0]);
                            if !files.contains_key(&path) {
                                let file = TableFile::read(&path)?;
                                files.insert(path.clone(), file);
                            }
                            let section = files[&path].section(&c.args[1])?;
                            let points = self.points.unwrap_or(2);
                            let table =
                                LinearTable::new(&section, points, cutoff).map_err(|e| {
                                    Error::InvalidCombination(format!("{command}: {e}"))
                                })?;
                            b.tabulated(i - 1, j - 1, &table)
                        }
                        _ => {
                            let mut params = Vec::with_capacity(n);
                            for (k, name) in self.coeff_names().iter().enumerate() {
                                params.push(number(&command, name, &c.args[k])?);
                            }
                            if let Some(kappa) = self.kappa {
                                params.push(kappa);
                            }
                            let cutoff = if self.wca {
                                2f64.powf(1.0 / 6.0) * params[1]
                            } else {
                                cutoff.ok_or_else(|| {
                                    Error::InvalidCombination(format!(
                                        "{command}: no cutoff (give it last here, or in \
                                         pair_style {} CUTOFF)",
                                        self.name()
                                    ))
                                })?
                            };
                            b.coeff(i - 1, j - 1, &params, cutoff)
                        }
                    };
                }
            }
            if count == 0 {
                return Err(Error::InvalidCombination(format!(
                    "{command}: names no pair I <= J"
                )));
            }
        }
        b.build()
    }

    /// A table file's path: relative ones from [`table_dir`](Self::table_dir).
    fn path_of(&self, name: &str) -> PathBuf {
        match &self.dir {
            Some(dir) if Path::new(name).is_relative() => dir.join(name),
            _ => PathBuf::from(name),
        }
    }
}

/// LAMMPS's `utils::bounds` for types `1..=types`: `n`, `*`, `n*`, `*n`,
/// `m*n`, each end checked (`u32::MAX`: only the form).
fn bounds(command: &str, word: &str, types: u32) -> Result<(u32, u32)> {
    let parse = |w: &str, default: u32| -> Result<u32> {
        if w.is_empty() {
            return Ok(default);
        }
        w.parse::<u32>().map_err(|_| {
            Error::InvalidCombination(format!(
                "{command}: type {word:?} is not a type number (1, 2, ..., or a range as * 2* *3 1*3)"
            ))
        })
    };
    let (lo, hi) = match word.split_once('*') {
        None => {
            let t = parse(word, 0)?;
            (t, t)
        }
        Some((a, b)) => (parse(a, 1)?, parse(b, types)?),
    };
    if lo == 0 {
        return Err(Error::InvalidCombination(format!(
            "{command}: type {word:?}: LAMMPS numbers types from 1"
        )));
    }
    if types != u32::MAX && hi > types {
        return Err(Error::InvalidCombination(format!(
            "{command}: type {hi} is beyond the {types} atom type{} (1 to {types})",
            if types == 1 { "" } else { "s" }
        )));
    }
    if lo > hi {
        return Err(Error::InvalidCombination(format!(
            "{command}: the range {word:?} is empty"
        )));
    }
    Ok((lo, hi))
}

/// Atom types as LAMMPS numbers them (a column of `1.0, 2.0, ...`, an
/// `(N, 8)` state's last) to this library's (from 0), each checked: an
/// integer `>= 1`, the first bad one named with its body.
pub fn types_from_lammps(column: &[f32]) -> Result<Vec<u32>> {
    column
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            if t >= 1.0 && t == t.trunc() && t <= super::MAX_TYPES as f32 {
                Ok(t as u32 - 1)
            } else {
                Err(Error::InvalidCombination(format!(
                    "body {i}: atom type {t} is not a LAMMPS type number (an integer from 1 to {})",
                    super::MAX_TYPES
                )))
            }
        })
        .collect()
}
