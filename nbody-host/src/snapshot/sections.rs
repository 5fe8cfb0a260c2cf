//! The optional sections of checkpoints (version 4) and archive records
//! (version 2): what a short-range run adds to a gravity file. Each is a
//! 4-byte tag, a `u32` payload length and the payload, little-endian; a
//! reader skips tags it does not know.
//!
//! | tag | payload |
//! | --- | --- |
//! | `PAIR` | a pair potential: the style's name (`u8` length, UTF-8: LAMMPS's, `lj/cut`, `morse`, ...), the number of atom types `T` (`u32`), shift (`u8`), coefficients per pair `P` (`u8`) plus `0x80`, the mixing rule (`u8`: 0 none, 1 geometric, 2 arithmetic, 3 sixthpower), then for each pair of types `i <= j` in row order: mixed (`u8`; a mixed pair stores nothing more, the rule remakes it), else its `P` coefficients and its cutoff (`f64`) and its tabulated data (`u32` count, then that many `f64`: the `table` style's) |
//! | `PAIR` (before mixing and tables; read only) | the same up to `P` (without `0x80`), then for each pair its `P` coefficients and its cutoff (`f32`) |
//! | `TYPE` | `N` atom types (`u32`), in body order (absent: all 0) |
//! | `LJ12` | (read only: what files before `PAIR` wrote for Lennard-Jones) `epsilon`, `sigma`, `r_c` (`f32`), shift (`u8`) |
//! | `PBOX` | the periodic box: `Lx, Ly, Lz` (`f64`) |
//! | `NBRS` | the enumeration: kind (`u8`: 0 auto, 1 all pairs, 2 cells), skin (`f64`), rebuild (`u8`: 0 auto, 1 every), `k` (`u32`), lists (`u8`: 0 auto, 1 half, 2 full), bin size (`f64`) |
//! | `IMGS` | `N` image counters `[i32; 3]`, in body order |
//! | `NREF` | where the lists were built: steps since (`u64`), then `N` positions `[f32; 3]` in body order |
//! | `NBOX` | the box of that build, where a barostat has changed it since: `Lx, Ly, Lz` (`f32`) |
//! | `NFRM` | the positions in that build's frame (the GPU plan's, unwrapped up to half the skin): `N` × `[f32; 3]` in body order |
//! | `ENSM` | the ensemble (`md::Ensemble`): a code (`u8`: 1 NVT, 2 Langevin, 3 rescaling, 4 NPT) and its values (`f64` temperatures, times and pressure, `u32` chains and interval, `u64` seed and ramp); absent for NVE |
//! | `ENST` | the ensemble's state: the Nosé–Hoover chains (`eta`, `eta_dot`, `eta_dotdot`, 8, 9, 8 `f64`; the barostat's likewise), `omega`, `omega_dot`, the MTK term, `V0`, the thermostat's temperature, the box (3), the exchanged energy, the last step's (`f64`), the steps taken (`u64`) |
//! | `KICK` | Langevin's last friction and random force over mass per body, `[f32; 3]` in body order |
//! | `HRM4` | Hermite (`crate::hermite`): `eta`, `eta_s` (`f64`), precision (`u8`: 0 f64, 1 mixed), `G`, `eps` (`f64`), block steps, force evaluations (`u64`), then per body `x[3] v[3] m a[3] j[3] snap[3] crackle[3] last_dt` (20 `f64`) |
//! | `IDS8` | the bodies' stable ids, `N` `u64` in body order (only where they are not `0..N`) |
//!
//! A file without `IDS8` (every file of the earlier versions) has the ids
//! `0..N`. Fixed-step gravity files have no sections but that one (their
//! force law, softening and `G`, is in the fixed header; a pair potential's
//! file stores gravity's defaults there, unused). Builds from before `PAIR`
//! skip it and the `TYPE` section: checkpoints with them are version 5,
//! which those builds refuse. An ensemble other than NVE writes version 6
//! (builds that would skip `ENSM` and run NVE refuse it); NVE files stay
//! version 5. Archive records keep their version: a build from before the
//! ensembles reads such a record's state and box but not its thermostat.

use super::reader::Reader;
use crate::config::Params;
use crate::force::ForceLaw;
use crate::hermite::{HermiteSettings, HermiteState, HermiteStats, Precision};
use crate::integrator::Integrator;
use crate::md::ensemble::EnsembleState;
use crate::md::{
    Boundary, CellList, Ensemble, Lists, MdState, NeighbourOrigin, Neighbours, Rebuild,
};
use crate::pair::{Mixing, PairPotential, PairStyle};

/// What the sections of a file held.
#[derive(Debug, Default)]
pub(super) struct Sections {
    pub force: Option<ForceLaw>,
    pub boundary: Option<Boundary>,
    pub neighbours: Option<Neighbours>,
    pub images: Option<Vec<[i32; 3]>>,
    pub types: Option<Vec<u32>>,
    pub origin: Option<NeighbourOrigin>,
    /// `NBOX` (joined to `origin` at the end: the sections come in any order).
    pub build_box: Option<[f32; 3]>,
    /// `NFRM` (joined to `origin` at the end, as `NBOX`).
    pub frame: Option<Vec<[f32; 3]>>,
    pub ensemble: Option<Ensemble>,
    /// The `ENST` and `KICK` payloads (decoded with the ensemble, in any order).
    pub ensemble_state: Option<Vec<u8>>,
    pub kicks: Option<Vec<u8>>,
    /// The bodies.
    pub n: usize,
    /// Hermite: settings, `G` and `eps` in f64, the per-body state.
    pub hermite: Option<(HermiteSettings, f64, f64, HermiteState)>,
    pub ids: Option<Vec<u64>>,
}

fn section(out: &mut Vec<u8>, tag: &[u8; 4], payload: &[u8]) {
    out.extend_from_slice(tag);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
}

/// The sections of `params`, `md`, a Hermite run's state and the bodies'
/// `ids` (none for gravity in open space with a fixed-step integrator and
/// the ids `0..N`).
pub(super) fn encode(
    params: &Params,
    md: Option<&MdState>,
    hermite: Option<&HermiteState>,
    ids: &[u64],
) -> Vec<u8> {
    let mut out = Vec::new();
    if !crate::state::are_default_ids(ids) {
        let p: Vec<u8> = ids.iter().flat_map(|id| id.to_le_bytes()).collect();
        section(&mut out, b"IDS8", &p);
    }
    if let (Some(settings), Some(h)) = (params.integrator().hermite(), hermite) {
        let g = params.gravity().unwrap_or_default();
        let mut p = Vec::with_capacity(49 + 160 * h.pos.len());
        let mut f = |x: f64| p.extend_from_slice(&x.to_le_bytes());
        f(settings.eta());
        f(settings.eta_s());
        p.push(match settings.precision() {
            Precision::Mixed => 1,
            _ => 0,
        });
        for x in [g.g_f64(), g.softening_f64()] {
            p.extend_from_slice(&x.to_le_bytes());
        }
        for c in [h.stats.block_steps, h.stats.force_evals] {
            p.extend_from_slice(&c.to_le_bytes());
        }
        for i in 0..h.pos.len() {
            let body = h.pos[i]
                .iter()
                .chain(&h.vel[i])
                .chain([&h.mass[i]])
                .chain(&h.acc[i])
                .chain(&h.jerk[i])
                .chain(&h.snap[i])
                .chain(&h.crackle[i])
                .chain([&h.last_dt[i]]);
            for x in body {
                p.extend_from_slice(&x.to_le_bytes());
            }
        }
        section(&mut out, b"HRM4", &p);
    }
    if let Some(pair) = params.force().as_pair() {
        section(&mut out, b"PAIR", &encode_pair(pair));
    }
    if let Boundary::Periodic { lengths } = params.boundary() {
        let p: Vec<u8> = lengths.iter().flat_map(|l| l.to_le_bytes()).collect();
        section(&mut out, b"PBOX", &p);
    }
    if params.ensemble() != Ensemble::Nve {
        section(&mut out, b"ENSM", &params.ensemble().encode());
    }
    let neighbours = params.neighbours();
    if neighbours != Neighbours::Auto {
        let (kind, c) = match neighbours {
            Neighbours::AllPairs => (1u8, CellList::new(0.0)),
            Neighbours::Cells(c) => (2, c),
            _ => (0, CellList::new(0.0)),
        };
        let mut p = vec![kind];
        p.extend_from_slice(&c.skin.to_le_bytes());
        let (rebuild, k) = match c.rebuild {
            Rebuild::Every(k) => (1u8, k),
            _ => (0, 0),
        };
        p.push(rebuild);
        p.extend_from_slice(&k.to_le_bytes());
        p.push(match c.lists {
            Lists::Half => 1,
            Lists::Full => 2,
            _ => 0,
        });
        p.extend_from_slice(&c.bin_size.to_le_bytes());
        section(&mut out, b"NBRS", &p);
    }
    if let Some(md) = md {
        if !md.types.is_empty() {
            let p: Vec<u8> = md.types.iter().flat_map(|t| t.to_le_bytes()).collect();
            section(&mut out, b"TYPE", &p);
        }
        if !md.images.is_empty() {
            let p: Vec<u8> = md
                .images
                .iter()
                .flatten()
                .flat_map(|i| i.to_le_bytes())
                .collect();
            section(&mut out, b"IMGS", &p);
        }
        if let Some(origin) = &md.neighbours {
            let mut p = origin.since_build.to_le_bytes().to_vec();
            p.extend(
                origin
                    .reference
                    .iter()
                    .flatten()
                    .flat_map(|x| x.to_le_bytes()),
            );
            section(&mut out, b"NREF", &p);
            if let Some(l) = origin.lengths {
                let p: Vec<u8> = l.iter().flat_map(|x| x.to_le_bytes()).collect();
                section(&mut out, b"NBOX", &p);
            }
            if let Some(frame) = &origin.frame {
                let p: Vec<u8> = frame
                    .iter()
                    .flatten()
                    .flat_map(|x| x.to_le_bytes())
                    .collect();
                section(&mut out, b"NFRM", &p);
            }
        }
        if let Some(state) = &md.ensemble {
            let (p, kicks) = state.encode();
            section(&mut out, b"ENST", &p);
            if !kicks.is_empty() {
                section(&mut out, b"KICK", &kicks);
            }
        }
    }
    out
}

/// Set in the `PAIR` coefficient count: the payload is the `f64` layout
/// with mixing and tabulated data.
const PAIR_F64: u8 = 0x80;

/// The `PAIR` payload of `pair`.
fn encode_pair(pair: &PairPotential) -> Vec<u8> {
    let name = pair.style().name().as_bytes();
    let mut p = vec![name.len() as u8];
    p.extend_from_slice(name);
    p.extend_from_slice(&pair.types().to_le_bytes());
    p.push(u8::from(pair.shift()));
    p.push(pair.style().params().len() as u8 | PAIR_F64);
    p.push(match pair.mixing() {
        None => 0,
        Some(Mixing::Geometric) => 1,
        Some(Mixing::Arithmetic) => 2,
        Some(Mixing::SixthPower) => 3,
    });
    for i in 0..pair.types() {
        for j in i..pair.types() {
            let c = pair.coeff(i, j);
            p.push(u8::from(c.is_mixed()));
            if c.is_mixed() {
                continue;
            }
            for x in c.params().iter().chain([&c.cutoff_f64()]) {
                p.extend_from_slice(&x.to_le_bytes());
            }
            p.extend_from_slice(&(c.data().len() as u32).to_le_bytes());
            for x in c.data() {
                p.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
    p
}

/// A `PAIR` payload back to its potential, validated as when it was made.
fn decode_pair(payload: &[u8]) -> Result<PairPotential, String> {
    let short = || format!("section PAIR: {} bytes, cut short", payload.len());
    let len = *payload.first().ok_or_else(short)? as usize;
    let name = payload.get(1..1 + len).ok_or_else(short)?;
    let name = String::from_utf8_lossy(name);
    let style = PairStyle::from_name(&name)
        .ok_or_else(|| format!("section PAIR: unknown pair style {name:?}"))?;
    let fixed = payload.get(1 + len..1 + len + 6).ok_or_else(short)?;
    let mut r = Reader::new(fixed, 0);
    let (types, shift, count) = (r.u32(), r.u8() != 0, r.u8());
    let wide = count & PAIR_F64 != 0;
    let count = (count & !PAIR_F64) as usize;
    if count != style.params().len() {
        return Err(format!(
            "section PAIR: {count} coefficients per pair for {name}, which has {}",
            style.params().len()
        ));
    }
    if !(1..=crate::pair::MAX_TYPES).contains(&types) {
        return Err(format!("section PAIR: {types} atom types"));
    }
    let pairs = (types as usize) * (types as usize + 1) / 2;
    let mut builder = PairPotential::builder(style, types).shift(shift);
    if !wide {
        let want = 1 + len + 6 + pairs * (count + 1) * 4;
        if payload.len() != want {
            return Err(format!(
                "section PAIR: {} bytes, expected {want}",
                payload.len()
            ));
        }
        let mut r = Reader::new(payload, 1 + len + 6);
        for i in 0..types {
            for j in i..types {
                let params: Vec<f64> = (0..count).map(|_| decimal(r.f32())).collect();
                builder = builder.coeff(i, j, &params, decimal(r.f32()));
            }
        }
        return builder.build().map_err(|e| format!("section PAIR: {e}"));
    }
    // The f64 layout: every read checked against the payload's end.
    let mut at = 1 + len + 6;
    let mut take = |n: usize| -> Result<&[u8], String> {
        let b = payload.get(at..at + n).ok_or_else(short)?;
        at += n;
        Ok(b)
    };
    let f64_at = |b: &[u8]| f64::from_le_bytes(b.try_into().expect("8 bytes"));
    builder = match take(1)?[0] {
        0 => builder,
        1 => builder.mix(Mixing::Geometric),
        2 => builder.mix(Mixing::Arithmetic),
        3 => builder.mix(Mixing::SixthPower),
        other => return Err(format!("section PAIR: mixing code {other}")),
    };
    for i in 0..types {
        for j in i..types {
            if take(1)?[0] != 0 {
                continue;
            }
            let params: Vec<f64> = (0..count)
                .map(|_| take(8).map(f64_at))
                .collect::<Result<_, _>>()?;
            let cutoff = f64_at(take(8)?);
            let n = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
            if n > payload.len() / 8 {
                return Err(short());
            }
            let data: Vec<f64> = (0..n)
                .map(|_| take(8).map(f64_at))
                .collect::<Result<_, _>>()?;
            builder = builder.coeff_data(i, j, &params, cutoff, data.into());
        }
    }
    if at != payload.len() {
        return Err(format!(
            "section PAIR: {} bytes, expected {at}",
            payload.len()
        ));
    }
    builder.build().map_err(|e| format!("section PAIR: {e}"))
}

/// An `f32` of the files before the `f64` coefficients as the shortest
/// decimal that rounds to it: what the user gave (`1.2`, not
/// `1.2000000476837158`), so the potential read back is the one they build.
fn decimal(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(x as f64)
}

/// Reads the sections in `bytes` (exactly), for `n` bodies.
pub(super) fn decode(bytes: &[u8], n: usize) -> Result<Sections, String> {
    let mut s = Sections {
        n,
        ..Sections::default()
    };
    let mut at = 0;
    while at < bytes.len() {
        let frame = bytes
            .get(at..at + 8)
            .ok_or_else(|| format!("a section header cut short at byte {at}"))?;
        let tag: [u8; 4] = frame[..4].try_into().expect("4 bytes");
        let len = u32::from_le_bytes(frame[4..8].try_into().expect("4 bytes")) as usize;
        let end = (at + 8)
            .checked_add(len)
            .filter(|&end| end <= bytes.len())
            .ok_or_else(|| format!("section {tag:?} overruns its file"))?;
        let payload = &bytes[at + 8..end];
        let bad = |what: &str| format!("section {}: {what}", String::from_utf8_lossy(&tag));
        let want = |size: usize| {
            if payload.len() == size {
                Ok(())
            } else {
                Err(bad(&format!("{} bytes, expected {size}", payload.len())))
            }
        };
        let mut r = Reader::new(payload, 0);
        match &tag {
            b"LJ12" => {
                want(13)?;
                let (e, sg, c) = (r.f32(), r.f32(), r.f32());
                let shift = r.u8() != 0;
                s.force = Some(
                    ForceLaw::lennard_jones(decimal(e), decimal(sg), decimal(c), shift)
                        .map_err(|e| bad(&e.to_string()))?,
                );
            }
            b"PAIR" => s.force = Some(ForceLaw::Pair(decode_pair(payload)?)),
            b"TYPE" => {
                want(4 * n)?;
                s.types = Some((0..n).map(|_| r.u32()).collect());
            }
            b"PBOX" => {
                want(24)?;
                let lengths = [0; 3].map(|_| f64::from_bits(r.u64()));
                s.boundary = Some(Boundary::Periodic { lengths });
            }
            b"NBRS" => {
                want(23)?;
                let kind = r.u8();
                let skin = f64::from_bits(r.u64());
                let rebuild = match (r.u8(), r.u32()) {
                    (0, _) => Rebuild::Auto,
                    (1, k) => Rebuild::Every(k),
                    (other, _) => return Err(bad(&format!("rebuild code {other}"))),
                };
                let lists = match r.u8() {
                    0 => Lists::Auto,
                    1 => Lists::Half,
                    2 => Lists::Full,
                    other => return Err(bad(&format!("list code {other}"))),
                };
                let bin_size = f64::from_bits(r.u64());
                s.neighbours = Some(match kind {
                    0 => Neighbours::Auto,
                    1 => Neighbours::AllPairs,
                    2 => Neighbours::Cells(CellList {
                        skin,
                        rebuild,
                        lists,
                        bin_size,
                    }),
                    other => return Err(bad(&format!("enumeration code {other}"))),
                });
            }
            b"IMGS" => {
                want(12 * n)?;
                s.images = Some((0..n).map(|_| [0; 3].map(|_| r.u32() as i32)).collect());
            }
            b"NREF" => {
                want(8 + 12 * n)?;
                let since_build = r.u64();
                let reference = (0..n).map(|_| [0; 3].map(|_| r.f32())).collect();
                s.origin = Some(NeighbourOrigin {
                    reference,
                    since_build,
                    lengths: None,
                    frame: None,
                });
            }
            b"NBOX" => {
                want(12)?;
                let l = [0; 3].map(|_| r.f32());
                s.build_box = Some(l);
            }
            b"NFRM" => {
                want(12 * n)?;
                s.frame = Some((0..n).map(|_| [0; 3].map(|_| r.f32())).collect());
            }
            b"ENSM" => s.ensemble = Some(Ensemble::decode(payload)?),
            b"ENST" => s.ensemble_state = Some(payload.to_vec()),
            b"KICK" => s.kicks = Some(payload.to_vec()),
            b"HRM4" => {
                want(49 + 160 * n)?;
                let (eta, eta_s) = (f64::from_bits(r.u64()), f64::from_bits(r.u64()));
                let precision = match r.u8() {
                    0 => Precision::F64,
                    1 => Precision::Mixed,
                    other => return Err(bad(&format!("precision code {other}"))),
                };
                let settings = HermiteSettings::new(eta)
                    .and_then(|s| s.with_eta_s(eta_s))
                    .map_err(|e| bad(&e.to_string()))?
                    .with_precision(precision);
                let (g, eps) = (f64::from_bits(r.u64()), f64::from_bits(r.u64()));
                let stats = HermiteStats {
                    block_steps: r.u64(),
                    force_evals: r.u64(),
                };
                let mut h = HermiteState {
                    stats,
                    ..HermiteState::default()
                };
                for _ in 0..n {
                    let mut v = || [0; 3].map(|_| f64::from_bits(r.u64()));
                    h.pos.push(v());
                    h.vel.push(v());
                    h.mass.push(f64::from_bits(r.u64()));
                    let mut v = || [0; 3].map(|_| f64::from_bits(r.u64()));
                    h.acc.push(v());
                    h.jerk.push(v());
                    h.snap.push(v());
                    h.crackle.push(v());
                    h.last_dt.push(f64::from_bits(r.u64()));
                }
                s.hermite = Some((settings, g, eps, h));
            }
            b"IDS8" => {
                want(8 * n)?;
                let ids: Vec<u64> = (0..n).map(|_| r.u64()).collect();
                let mut sorted = ids.clone();
                sorted.sort_unstable();
                if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
                    return Err(bad(&format!("id {} appears twice", w[0])));
                }
                s.ids = Some(ids);
            }
            _ => {} // a later version's: skipped
        }
        at = end;
    }
    Ok(s)
}

impl Sections {
    /// `base` (from a file's fixed header) with the force law, box and
    /// enumeration of the sections, validated together.
    pub fn params(&self, base: Params) -> crate::Result<Params> {
        let (force, integrator) = match &self.hermite {
            Some((settings, g, eps, _)) => {
                (ForceLaw::gravity(*g, *eps)?, Integrator::Hermite(*settings))
            }
            None => (
                self.force.clone().unwrap_or_else(|| base.force().clone()),
                base.integrator(),
            ),
        };
        Params::new(base.dt_f64(), force, base.kernel(), integrator)?
            .with_boundary(
                self.boundary.unwrap_or_default(),
                self.neighbours.unwrap_or_default(),
            )?
            .with_ensemble(self.ensemble.unwrap_or_default())
    }

    /// The bodies' ids: the file's, or `0..n`.
    pub fn ids(&mut self, n: usize) -> Vec<u64> {
        self.ids
            .take()
            .unwrap_or_else(|| crate::state::default_ids(n))
    }

    /// The continuation of a short-range run, if the file holds one (an
    /// `ENST` section without its `ENSM` one is an error).
    pub fn md_state(self) -> Result<Option<MdState>, String> {
        let ensemble = match (self.ensemble, &self.ensemble_state) {
            (Some(e), Some(p)) => Some(EnsembleState::decode(e, p, self.kicks.as_deref(), self.n)?),
            (None, Some(_)) => return Err("section ENST without an ENSM section".into()),
            _ => None,
        };
        if self.images.is_none()
            && self.origin.is_none()
            && self.types.is_none()
            && ensemble.is_none()
        {
            return Ok(None);
        }
        let neighbours = self.origin.map(|o| NeighbourOrigin {
            lengths: self.build_box,
            frame: self.frame,
            ..o
        });
        Ok(Some(MdState {
            images: self.images.unwrap_or_default(),
            types: self.types.unwrap_or_default(),
            neighbours,
            ensemble,
        }))
    }
}
