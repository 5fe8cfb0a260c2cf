//! The optional sections of checkpoints (version 4) and archive records
//! (version 2): what a short-range run adds to a gravity file. Each is a
//! 4-byte tag, a `u32` payload length and the payload, little-endian; a
//! reader skips tags it does not know.
//!
//! | tag | payload |
//! | --- | --- |
//! | `LJ12` | Lennard-Jones: `epsilon`, `sigma`, `r_c` (`f32`), shift (`u8`) |
//! | `PBOX` | the periodic box: `Lx, Ly, Lz` (`f64`) |
//! | `NBRS` | the enumeration: kind (`u8`: 0 auto, 1 all pairs, 2 cells), skin (`f64`), rebuild (`u8`: 0 auto, 1 every), `k` (`u32`), lists (`u8`: 0 auto, 1 half, 2 full), bin size (`f64`) |
//! | `IMGS` | `N` image counters `[i32; 3]`, in body order |
//! | `NREF` | where the lists were built: steps since (`u64`), then `N` positions `[f32; 3]` in body order |
//! | `IDS8` | the bodies' stable ids, `N` `u64` in body order (only where they are not `0..N`) |
//!
//! A file without `IDS8` (every file of the earlier versions) has the ids
//! `0..N`. Gravity files have no sections but that one (their force law, softening and `G`, is
//! in the fixed header; a Lennard-Jones file stores gravity's defaults there).

use super::reader::Reader;
use crate::config::Params;
use crate::force::ForceLaw;
use crate::md::{Boundary, CellList, Lists, MdState, NeighbourOrigin, Neighbours, Rebuild};

/// What the sections of a file held.
#[derive(Debug, Default)]
pub(super) struct Sections {
    pub force: Option<ForceLaw>,
    pub boundary: Option<Boundary>,
    pub neighbours: Option<Neighbours>,
    pub images: Option<Vec<[i32; 3]>>,
    pub origin: Option<NeighbourOrigin>,
    pub ids: Option<Vec<u64>>,
}

fn section(out: &mut Vec<u8>, tag: &[u8; 4], payload: &[u8]) {
    out.extend_from_slice(tag);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
}

/// The sections of `params`, `md` and the bodies' `ids` (none for gravity
/// in open space with the ids `0..N`).
pub(super) fn encode(params: &Params, md: Option<&MdState>, ids: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    if !crate::state::are_default_ids(ids) {
        let p: Vec<u8> = ids.iter().flat_map(|id| id.to_le_bytes()).collect();
        section(&mut out, b"IDS8", &p);
    }
    if let ForceLaw::LennardJones(lj) = params.force() {
        let mut p = Vec::with_capacity(13);
        for x in [lj.epsilon(), lj.sigma(), lj.cutoff()] {
            p.extend_from_slice(&x.to_le_bytes());
        }
        p.push(u8::from(lj.shift()));
        section(&mut out, b"LJ12", &p);
    }
    if let Boundary::Periodic { lengths } = params.boundary() {
        let p: Vec<u8> = lengths.iter().flat_map(|l| l.to_le_bytes()).collect();
        section(&mut out, b"PBOX", &p);
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
        }
    }
    out
}

/// Reads the sections in `bytes` (exactly), for `n` bodies.
pub(super) fn decode(bytes: &[u8], n: usize) -> Result<Sections, String> {
    let mut s = Sections::default();
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
                    ForceLaw::lennard_jones(e as f64, sg as f64, c as f64, shift)
                        .map_err(|e| bad(&e.to_string()))?,
                );
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
                });
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
        let force = self.force.unwrap_or(base.force());
        Params::new(base.dt_f64(), force, base.kernel(), base.integrator())?.with_boundary(
            self.boundary.unwrap_or_default(),
            self.neighbours.unwrap_or_default(),
        )
    }

    /// The bodies' ids: the file's, or `0..n`.
    pub fn ids(&mut self, n: usize) -> Vec<u64> {
        self.ids
            .take()
            .unwrap_or_else(|| crate::state::default_ids(n))
    }

    /// The continuation of a short-range run, if the file holds one.
    pub fn md_state(self) -> Option<MdState> {
        if self.images.is_none() && self.origin.is_none() {
            return None;
        }
        Some(MdState {
            images: self.images.unwrap_or_default(),
            neighbours: self.origin,
        })
    }
}
