//! The neighbour-list state of the engine: the build (sort, reorder, lists,
//! ghosts) and the policy that decides when to rebuild.

use std::time::Instant;

use rayon::prelude::*;

use super::build::{self, Lists};
use super::loops::Pos;
use super::{CHUNK, MdEngine};
use crate::error::{Error, Result};
use crate::md::cells::Grid;
use crate::md::{NeighbourOrigin, Rebuild};

/// The neighbour-list state of [`Enumeration::Cells`], made by each build.
#[derive(Clone, Debug)]
pub(super) struct Neighbours {
    pub(super) lists: Lists,
    /// `prev[l]`: the layer whose window ends with layer `l`'s bodies.
    pub(super) prev: Vec<Option<usize>>,
    /// Positions at the last build (slot order).
    pub(super) reference: [Vec<f32>; 3],
    /// The box at the last build (a barostat changes it).
    pub(super) lengths: [f32; 3],
    pub(super) since_build: u64,
    /// Reaction buffers, one window per layer.
    pub(super) bufs: Vec<[Vec<f32>; 3]>,
}

/// What a rebuild reuses from one build to the next (never cloned with a
/// view): the sort's vectors and one spare column per element type, into
/// which a column is permuted before the two swap. At 32,000 atoms fresh
/// vectors per build were most of the run's page faults (the kernel
/// zeroing each new page, 5-20 % of a run's time by `perf`).
#[derive(Debug, Default)]
pub(super) struct Spare {
    order: build::Order,
    f32s: Vec<f32>,
    u32s: Vec<u32>,
    images: Vec<[i32; 3]>,
}

/// `v` put in `order` (`order[new] = old`, so `v` ends `order.len()`
/// long), written into `spare`'s capacity, which then swaps with `v`.
fn permute<T: Copy + Send + Sync>(v: &mut Vec<T>, order: &[u32], spare: &mut Vec<T>) {
    spare.clear();
    let src = &v[..];
    spare.par_extend(
        order
            .par_iter()
            .with_min_len(CHUNK)
            .map(|&o| src[o as usize]),
    );
    std::mem::swap(v, spare);
}

impl MdEngine {
    /// The first build; from `origin`'s positions (a continuation), then
    /// the current positions put back.
    pub(super) fn start_lists(&mut self, origin: Option<&NeighbourOrigin>) -> Result<()> {
        let n = self.n;
        let current = match origin {
            Some(o) if o.reference.len() == n => {
                let now = self.pos.clone();
                for (a, pos) in self.pos.iter_mut().enumerate() {
                    for (u, r) in o.reference.iter().enumerate() {
                        pos[u] = r[a];
                    }
                }
                Some((now, o.since_build))
            }
            Some(o) => {
                return Err(Error::InvalidCombination(format!(
                    "a neighbour origin of {} positions for {n} bodies",
                    o.reference.len()
                )));
            }
            None => None,
        };
        // The build's box, where a barostat has changed it since.
        let box_now = self.lengths;
        if let (Some(built), Some(_)) = (origin.and_then(|o| o.lengths), box_now) {
            self.set_box(built);
        }
        let built = rayon::scope(|_| self.rebuild());
        if let Some(now) = box_now {
            self.set_box(now);
        }
        built?;
        if let Some((now, since)) = current {
            // The build moved the slots: put the current positions where
            // their bodies now are.
            for (pos, now) in self.pos.iter_mut().zip(&now) {
                for (p, &u) in pos.iter_mut().zip(&self.user) {
                    *p = now[u as usize];
                }
            }
            self.nbr.as_mut().expect("just built").since_build = since;
            // As the drifts' passes would have found it.
            self.moved_far = self.moved_half_skin();
        }
        Ok(())
    }

    /// The grid for the current positions.
    pub(super) fn grid(&self) -> Grid {
        let n = self.n;
        let max_cells = n.max(8);
        let side = self.r_list.max(self.bin_size);
        match self.lengths {
            Some(l) => Grid::periodic(l, side, max_cells),
            None => {
                let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
                for a in 0..3 {
                    for &x in &self.pos[a][..n] {
                        lo[a] = lo[a].min(x);
                        hi[a] = hi[a].max(x);
                    }
                }
                Grid::open(lo, hi, side, max_cells)
            }
        }
    }

    /// Sorts the bodies into cells, reorders every per-body array and
    /// builds the lists from the current positions; lists the memory does
    /// not hold are an [`Error::HostMemoryExceeded`].
    pub(super) fn rebuild(&mut self) -> Result<()> {
        let n = self.n;
        let grid = self.grid();
        let spare = &mut self.spare;
        build::sort(
            &grid,
            &self.pos[0][..n],
            &self.pos[1][..n],
            &self.pos[2][..n],
            &self.slot,
            &mut spare.order,
        );
        let o = &spare.order.order;
        let lanes = self.loops.lanes;
        for a in 0..3 {
            permute(&mut self.pos[a], o, &mut spare.f32s);
            // Room for the build's last vector loads.
            self.pos[a].resize(n + lanes, 0.0);
            permute(&mut self.vel[a], o, &mut spare.f32s);
            permute(&mut self.acc[a], o, &mut spare.f32s);
        }
        permute(&mut self.mass, o, &mut spare.f32s);
        if let Some(run) = &mut self.ens
            && !run.lang[0].is_empty()
        {
            for lang in &mut run.lang {
                permute(lang, o, &mut spare.f32s);
            }
        }
        permute(&mut self.types, o, &mut spare.u32s);
        permute(&mut self.inv_mass, o, &mut spare.f32s);
        permute(&mut self.images, o, &mut spare.images);
        permute(&mut self.user, o, &mut spare.u32s);
        for (s, &u) in self.user.iter().enumerate() {
            self.slot[u as usize] = s as u32;
        }
        let old = self.nbr.take();
        let (tasks, mut reference, mut bufs) = match old {
            Some(nbr) => (nbr.lists.tasks, nbr.reference, nbr.bufs),
            None => Default::default(),
        };
        let lists = build::lists(
            grid,
            &self.spare.order.cell_start,
            Pos {
                x: &self.pos[0],
                y: &self.pos[1],
                z: &self.pos[2],
                t: &[],
            },
            n,
            self.r_list,
            self.newton,
            &self.loops,
            &self.setup,
            tasks,
        )?;
        for (r, p) in reference.iter_mut().zip(&self.pos) {
            r.clear();
            r.extend_from_slice(&p[..n]);
        }
        for p in &mut self.pos {
            p.truncate(n);
            p.resize(n + lists.ghosts + lanes, 0.0);
        }
        // Ghost k is body k (layer 0) seen from across the box: its type.
        self.types.extend_from_within(..lists.ghosts);
        self.types.resize(n + lists.ghosts + lanes, 0);
        let mut prev = vec![None; lists.tasks.len()];
        for (p, layer) in lists.tasks.iter().enumerate() {
            if let Some(m) = layer.next {
                prev[m] = Some(p);
            }
        }
        if lists.half {
            bufs.resize_with(lists.tasks.len(), Default::default);
            for (buf, l) in bufs.iter_mut().zip(&lists.tasks) {
                for b in buf {
                    b.clear();
                    b.resize(l.window, 0.0);
                }
            }
        } else {
            bufs.clear();
        }
        self.stats.builds += 1;
        self.moved_far = false;
        self.stats.neighbours_per_atom = lists.pairs as f64 / n as f64;
        self.stats.cells = lists.grid.dims;
        self.stats.lanes_per_atom =
            lists.tasks.iter().map(|t| t.j.len()).sum::<usize>() as f64 / n as f64;
        self.nbr = Some(Neighbours {
            lists,
            prev,
            reference,
            lengths: self.lengths.unwrap_or([1.0; 3]),
            since_build: 0,
            bufs,
        });
        Ok(())
    }

    /// Copies layer 0's positions to the ghosts after the last body.
    pub(super) fn refresh_ghosts(&mut self) {
        if let Some(nbr) = &self.nbr {
            for p in &mut self.pos {
                p.copy_within(0..nbr.lists.ghosts, self.n);
            }
        }
    }

    /// Whether some body moved more than half the skin since the last
    /// build (more than the margin left by a box a barostat shrank; the
    /// build's positions scaled with the box: `scaled_margin`).
    pub(super) fn moved_half_skin(&self) -> bool {
        let (Some(nbr), Some((skin, _))) = (&self.nbr, self.cells) else {
            return false;
        };
        let (limit, scale) = self.scaled_margin(nbr.lengths, skin);
        let (pos, reference, lengths) = (&self.pos, &nbr.reference, self.lengths);
        (0..self.n).into_par_iter().with_min_len(CHUNK).any(|s| {
            let mut r2 = 0.0f32;
            for a in 0..3 {
                let mut d = pos[a][s] - reference[a][s] * scale[a];
                if let Some(l) = lengths {
                    if d > 0.5 * l[a] {
                        d -= l[a];
                    } else if d < -0.5 * l[a] {
                        d += l[a];
                    }
                }
                r2 += d * d;
            }
            // NaN compares false: a non-finite body is the divergence check's.
            r2 > limit
        })
    }

    /// Rebuilds the lists if the policy says so (before a force evaluation).
    pub(super) fn maybe_rebuild(&mut self) -> Result<()> {
        let (Some(nbr), Some((_, policy))) = (&self.nbr, self.cells) else {
            return Ok(());
        };
        let t = Instant::now();
        let due = match policy {
            // The last drift's pass found it (`integrate`).
            Rebuild::Auto => self.moved_far,
            Rebuild::Every(k) => {
                let due = nbr.since_build >= k as u64;
                if due && self.moved_half_skin() {
                    self.stats.dangerous_builds += 1;
                }
                due
            }
        };
        if due {
            self.rebuild()?;
        }
        self.stats.neighbour_seconds += t.elapsed().as_secs_f64();
        Ok(())
    }
}
