//! The CPU backend for short-range forces (pair potentials): [`MdEngine`].
//!
//! | file | what |
//! | --- | --- |
//! | `mod.rs` | `MdEngine`: its state (in cell order), construction, what it reports |
//! | `integrate.rs` | the integrator's passes (a kick and a drift fused into one), wrapping, the step loop |
//! | `ensemble.rs` | the thermostats' and barostat's steps (NVT, Langevin, rescaling, NPT): passes with the scalings fused in |
//! | `neighbours.rs` | when to rebuild, and the rebuild: sort, reorder, lists, ghosts |
//! | `forces.rs` | the force evaluation (half lists' buffers summed in a fixed order) and thermo sums |
//! | `build.rs` | counting sort into cells, half or full Verlet lists per task of cells |
//! | `loops.rs` | the SIMD force, energy and list-building loops, and the integrator's loop per axis (kick, drift, checks), per instruction set and pair law (each body's list prefetched 2 KiB ahead: at 256,000 atoms the lists stream from memory) |
//! | `rows.rs` | the box and the pair table, and how a loop reads a pair's coefficients (one type, or by type) |
//!
//! # Half or full lists
//! Both run ([`Lists`](crate::md::Lists)); full lists are the default,
//! because on an AVX-512 core (`docs/md.md`) the reaction of a half list,
//! a gather, a subtraction and a scatter of three force components per 16
//! pairs, costs more than evaluating each pair a second time: the force
//! loop took 0.51 s for in.lj's 100 steps with half lists against 0.26 s
//! with full lists, one thread, the lists' build 0.041 s against 0.070 s.
//!
//! # Determinism
//! Full lists: each body's force is its own list's sum, in list order, by
//! whichever thread: nothing is shared. Half lists: the reaction on `j` is
//! written by the task that owns the pair, so tasks sharing one force
//! array would make the sums depend on the thread count. Here each task (a
//! z-layer of cells, a decomposition fixed by the box and the cutoff, never
//! by the threads) adds into a buffer of its own window (its bodies, then
//! the next layer's), and a second pass forms each body's force as its own
//! layer's buffer plus the previous layer's, in that order: every sum has a
//! fixed order, so the bits are the same on any number of threads. Tasks
//! run all at once (the alternative, two colours of tasks writing in place,
//! needs a barrier between colours and `unsafe` disjoint writes); the price
//! is one `O(N)` pass and `2N` extra floats per axis, 2 % of the step.
//! `tests/thread_count.rs` checks the bits on 1, 2, 3 and 5 threads.
//!
//! # State
//! Bodies live in cell order (reordered at every list build, for locality);
//! `user[slot]` maps back to the order the user gave, in which every read
//! reports. In a periodic box positions are wrapped into `[0, L)` after each
//! drift, with integer image counters.

mod build;
mod ensemble;
mod forces;
mod integrate;
mod loops;
mod neighbours;
mod rows;

use glam::Vec3;

use gpu_kernels::pair::{PairSetup, Visitor};

use self::loops::MdLoops;
use self::neighbours::{Neighbours, Spare};
use self::rows::Setup;
use super::CpuTuning;
use super::isa::Isa;
use crate::config::Params;
use crate::engine::{BackendKind, Divergence, Engine};
use crate::error::{Error, Result};
use crate::md::{
    Enumeration, Lists as ListKind, MdState, MdStats, NeighbourOrigin, Rebuild, ThermoSums,
};
use crate::pair::PairStyle;
use crate::state::{Bodies, Energy};

/// Bodies per parallel task of the per-body passes and the all-pairs loop
/// (a fixed cut: the all-pairs energy sums chunk by chunk in this order).
const CHUNK: usize = 1024;

/// The short-range CPU engine.
pub(crate) struct MdEngine {
    loops: MdLoops,
    params: Params,
    /// The pair law.
    style: PairStyle,
    /// The box and the pair table.
    setup: Setup,
    lengths: Option<[f32; 3]>,
    r_list: f32,
    /// The skin and the rebuild policy, with cell lists.
    cells: Option<(f32, Rebuild)>,
    /// Half lists with Newton's third law, or full lists.
    newton: bool,
    /// The least cell side ([`CellList::bin_size`](crate::md::CellList::bin_size)).
    bin_size: f32,
    n: usize,
    /// Positions (slot order): `n` bodies, then the ghosts of the lists, or
    /// zero padding to whole vectors for all pairs.
    pos: [Vec<f32>; 3],
    vel: [Vec<f32>; 3],
    acc: [Vec<f32>; 3],
    mass: Vec<f32>,
    inv_mass: Vec<f32>,
    /// Atom types, parallel to `pos` (ghosts and padding included).
    types: Vec<u32>,
    images: Vec<[i32; 3]>,
    /// `user[slot]`: the index the user knows the body by.
    user: Vec<u32>,
    /// `slot[user]`.
    slot: Vec<u32>,
    nbr: Option<Neighbours>,
    /// The rebuild's reused buffers.
    spare: Spare,
    /// Whether a body has moved more than half the skin since the last
    /// build (found by the drifts' passes, with automatic rebuilds).
    moved_far: bool,
    stats: MdStats,
    /// The virial of the last force evaluation (a barostat's pressure).
    virial: f64,
    /// The thermostat and barostat, under an ensemble other than NVE.
    ens: Option<Box<self::ensemble::EnsembleRun>>,
}

impl MdEngine {
    /// Copies the bodies in (wrapping them into a periodic box), builds the
    /// lists and computes the first forces; an overlapping pair is an
    /// [`Error::Overlapping`] naming it.
    pub(crate) fn new(
        bodies: &Bodies,
        params: &Params,
        tuning: CpuTuning,
        start: Option<&MdState>,
    ) -> Result<MdEngine> {
        let Some(pair) = params.force().as_pair() else {
            return Err(Error::Unsupported(
                "the short-range engine runs short-range force laws only".into(),
            ));
        };
        bodies.validate()?;
        let n = bodies.len();
        if let Some(i) = bodies.masses.iter().position(|&m| m <= 0.0) {
            return Err(Error::InvalidCombination(format!(
                "body {i}: mass {} under {}, whose accelerations F / m need masses > 0",
                bodies.masses[i],
                pair.style().title()
            )));
        }
        let types = match start.map(|s| &s.types) {
            Some(t) if !t.is_empty() => {
                if t.len() != n {
                    return Err(Error::InvalidCombination(format!(
                        "{} atom types for {n} bodies",
                        t.len()
                    )));
                }
                pair.check_types(t)?;
                t.clone()
            }
            _ => vec![0; n],
        };
        let isa = tuning.isa.unwrap_or_else(Isa::detect);
        let support = isa.supported().ok_or_else(|| {
            Error::Unsupported(format!(
                "CPU instruction set {isa} is not available on this CPU"
            ))
        })?;
        let lengths = params.boundary().lengths_f32();
        let loops = pair.style().visit(LoopsFor {
            support,
            typed: pair.types() > 1,
            periodic: lengths.is_some(),
        });
        let setup = Setup::new(lengths, pair);
        let images = match start {
            Some(s) if !s.images.is_empty() => {
                if s.images.len() != n {
                    return Err(Error::InvalidCombination(format!(
                        "{} image counters for {n} bodies",
                        s.images.len()
                    )));
                }
                s.images.clone()
            }
            _ => vec![[0; 3]; n],
        };
        let columns = |v: &[Vec3]| [0, 1, 2].map(|a| v.iter().map(|p| p[a]).collect::<Vec<f32>>());
        let cutoff = pair.max_cutoff();
        let mut engine = MdEngine {
            loops,
            params: params.clone(),
            style: pair.style(),
            setup,
            lengths,
            r_list: cutoff,
            cells: None,
            newton: false,
            bin_size: 0.0,
            n,
            pos: columns(&bodies.positions),
            vel: columns(&bodies.velocities),
            acc: [vec![0.0; n], vec![0.0; n], vec![0.0; n]],
            mass: bodies.masses.clone(),
            inv_mass: bodies.masses.iter().map(|&m| 1.0 / m).collect(),
            types,
            images,
            user: (0..n as u32).collect(),
            slot: (0..n as u32).collect(),
            nbr: None,
            spare: Spare::default(),
            moved_far: false,
            stats: MdStats::default(),
            virial: 0.0,
            ens: None,
        };
        engine.wrap_all(0..n);
        match params.enumeration() {
            Enumeration::AllPairs => {
                let padded = n.div_ceil(engine.loops.lanes) * engine.loops.lanes;
                for p in &mut engine.pos {
                    p.resize(padded, 0.0);
                }
                engine.types.resize(padded, 0);
            }
            Enumeration::Cells {
                skin,
                rebuild,
                lists,
                bin_size,
            } => {
                engine.r_list = cutoff + skin;
                engine.cells = Some((skin, rebuild));
                // Full lists are the faster on the CPU (docs/md.md).
                engine.newton = lists == ListKind::Half;
                engine.bin_size = bin_size;
                let origin = start.and_then(|s| s.neighbours.as_ref());
                engine.start_lists(origin)?;
            }
        }
        rayon::scope(|_| engine.forces());
        engine.check_initial_forces()?;
        let ensemble = start.and_then(|s| s.ensemble.as_ref());
        rayon::scope(|_| engine.start_ensemble(ensemble));
        Ok(engine)
    }

    /// A copy whose lists are valid for the current positions: `self` when
    /// they are (or the policy is a fixed interval, as in LAMMPS), else a
    /// clone rebuilt now, so that a read never changes the run.
    fn valid_view(&self) -> Result<Option<MdEngine>> {
        let stale = matches!(self.cells, Some((_, Rebuild::Auto))) && self.moved_half_skin();
        if !stale {
            return Ok(None);
        }
        let mut copy = self.clone_state();
        copy.rebuild()?;
        Ok(Some(copy))
    }

    fn clone_state(&self) -> MdEngine {
        MdEngine {
            loops: self.loops,
            params: self.params.clone(),
            style: self.style,
            setup: self.setup.clone(),
            lengths: self.lengths,
            r_list: self.r_list,
            cells: self.cells,
            newton: self.newton,
            bin_size: self.bin_size,
            n: self.n,
            pos: self.pos.clone(),
            vel: self.vel.clone(),
            acc: self.acc.clone(),
            mass: self.mass.clone(),
            inv_mass: self.inv_mass.clone(),
            types: self.types.clone(),
            images: self.images.clone(),
            user: self.user.clone(),
            slot: self.slot.clone(),
            nbr: self.nbr.clone(),
            spare: Spare::default(),
            moved_far: self.moved_far,
            stats: self.stats,
            virial: self.virial,
            ens: self.ens.clone(),
        }
    }

    /// A per-slot column back in user order.
    fn by_user<T: Copy>(&self, v: &[T]) -> Vec<T> {
        self.slot.iter().map(|&s| v[s as usize]).collect()
    }
}

/// The CPU loops of a law, for [`PairStyle::visit`](crate::PairStyle::visit).
struct LoopsFor {
    support: super::isa::Supported,
    typed: bool,
    periodic: bool,
}

impl Visitor for LoopsFor {
    type Output = MdLoops;
    fn visit<L: PairSetup>(self) -> MdLoops {
        MdLoops::new::<L>(self.support, self.typed, self.periodic)
    }
}

impl Engine for MdEngine {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu {
            isa: self.loops.isa(),
            threads: rayon::current_num_threads(),
        }
    }

    fn method(&self) -> &'static str {
        self.style.method(self.nbr.is_some())
    }

    fn step(&mut self, steps: u64) -> Result<Option<Divergence>> {
        rayon::scope(|_| self.step_on_pool(steps))
    }

    fn read_state(&mut self) -> Result<Bodies> {
        let col = |a: usize| self.by_user(&self.pos[a][..self.n]);
        let (x, y, z) = (col(0), col(1), col(2));
        let vel = |a: usize| self.by_user(&self.vel[a]);
        let (vx, vy, vz) = (vel(0), vel(1), vel(2));
        Ok(Bodies {
            positions: (0..self.n).map(|u| Vec3::new(x[u], y[u], z[u])).collect(),
            velocities: (0..self.n)
                .map(|u| Vec3::new(vx[u], vy[u], vz[u]))
                .collect(),
            masses: self.by_user(&self.mass),
        })
    }

    fn energy(&mut self) -> Result<Energy> {
        let s = self.thermo_sums()?;
        Ok(Energy {
            kinetic: s.kinetic,
            potential: s.potential,
        })
    }

    fn accelerations(&mut self) -> Result<Vec<Vec3>> {
        let mut view = match self.valid_view()? {
            Some(view) => view,
            None => self.clone_state(),
        };
        rayon::scope(|_| view.forces());
        let acc = |a: usize| view.by_user(&view.acc[a]);
        let (x, y, z) = (acc(0), acc(1), acc(2));
        Ok((0..self.n).map(|u| Vec3::new(x[u], y[u], z[u])).collect())
    }

    fn thermo_sums(&mut self) -> Result<ThermoSums> {
        let sums = match self.valid_view()? {
            Some(mut view) => rayon::scope(|_| view.sums()),
            None => rayon::scope(|_| self.sums()),
        };
        Ok(sums)
    }

    fn images(&mut self) -> Result<Option<Vec<[i32; 3]>>> {
        Ok(self.lengths.map(|_| self.by_user(&self.images)))
    }

    fn md_stats(&self) -> Option<MdStats> {
        Some(self.stats)
    }

    fn md_state(&mut self) -> Result<Option<MdState>> {
        let neighbours = self.nbr.as_ref().map(|nbr| {
            let r = |a: usize| self.by_user(&nbr.reference[a]);
            let (x, y, z) = (r(0), r(1), r(2));
            NeighbourOrigin {
                reference: (0..self.n).map(|u| [x[u], y[u], z[u]]).collect(),
                since_build: nbr.since_build,
                lengths: (Some(nbr.lengths) != self.lengths).then_some(nbr.lengths),
                frame: None,
            }
        });
        Ok(Some(MdState {
            images: self.by_user(&self.images),
            types: self.by_user(&self.types[..self.n]),
            neighbours,
            ensemble: self.ensemble_state(),
        }))
    }

    fn box_lengths(&self) -> Option<[f64; 3]> {
        let run = self.ens.as_ref()?;
        run.ensemble.changes_box().then_some(run.state.nh.lengths)
    }

    fn stop_reason(&mut self) -> Option<Error> {
        let (step, length, needed) = self.ens.as_mut().and_then(|run| run.stop.take())?;
        Some(Error::BoxTooSmall {
            step,
            length,
            needed,
        })
    }
}
