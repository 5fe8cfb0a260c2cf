//! [`DistributedSimulation`]: one rank's part of a run over MPI, and the
//! collective operations on the whole.

use std::path::Path;

use glam::Vec3;
use gpu_kernels::Vec4;
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use super::header::Header;
use super::ring::{Ring, RingTimings};
use super::schedule::{PairWork, Partition, third_law_shifts, third_law_work};
use super::{RingScheme, agree, transfer};
use crate::block_pair::{BlockForces, gravity_of};
use crate::config::Params;
use crate::engine::BackendKind;
use crate::error::{Error, Result};
use crate::force::Gravity;
use crate::integrator::Stage;
use crate::memory;
use crate::simulation::{SimulationBuilder, clock_after};
use crate::snapshot::{self, ArchiveWriter, Checkpoint};
use crate::state::{Bodies, Energy, State};

/// One rank's part of a simulation distributed over the ranks of an MPI
/// communicator (see the [module documentation](super)): its block of
/// bodies, its backend's block-pair primitive, and the ring.
///
/// Every method that touches more than this rank's block is **collective**:
/// all ranks call it, in the same order, and get the same outcome (errors
/// included: [`agree`](super::agree)).
///
/// ```no_run
/// use nbody_host::distributed::{DistributedSimulation, RingScheme};
/// use nbody_host::{Backend, Bodies, Simulation, ic};
///
/// let universe = mpi::initialize_with_threading(mpi::Threading::Funneled).unwrap().0;
/// let world = universe.world();
/// // Rank 0's bodies and parameters are the run's; the others may pass none.
/// let bodies = if mpi::traits::Communicator::rank(&world) == 0 {
///     ic::plummer(65_536, 1)
/// } else {
///     Bodies::default()
/// };
/// let builder = Simulation::builder(bodies).dt(1e-3).backend(Backend::cpu());
/// let mut sim = DistributedSimulation::build(&world, builder, RingScheme::ThirdLaw)?;
/// let e0 = sim.energy()?;
/// sim.step(10)?;
/// sim.save_checkpoint("run.ckpt")?; // rank 0 writes the whole state
/// println!("dE/E = {:.1e}", sim.energy()?.relative_change_from(&e0));
/// # Ok::<(), nbody_host::Error>(())
/// ```
pub struct DistributedSimulation {
    comm: SimpleCommunicator,
    rank: usize,
    part: Partition,
    /// This rank's bodies: positions and masses, velocities, accelerations
    /// (`G`-scaled, what the next kick uses).
    pos: Vec<Vec4>,
    vel: Vec<Vec4>,
    acc: Vec<Vec4>,
    forces: Box<dyn BlockForces>,
    kind: BackendKind,
    params: Params,
    /// The force law's parameters (a distributed run is gravity only).
    gravity: Gravity,
    scheme: RingScheme,
    step: u64,
    time: f64,
    diverged: Option<(u64, usize)>,
    energy: Option<Energy>,
    timings: RingTimings,
    /// The bodies' stable ids, on rank 0 (empty elsewhere): written with
    /// the state, so that they survive the run and its checkpoints.
    ids: Vec<u64>,
}

impl DistributedSimulation {
    /// Starts a distributed run (collective over `comm`, which it
    /// duplicates: its messages never mix with the caller's).
    ///
    /// Rank 0's `builder` is the run: its bodies (split into contiguous
    /// blocks, one per rank), parameters and start (step, time, for a
    /// resumed run). The other ranks' builders give only their own backend
    /// ([`SimulationBuilder::backend`](crate::SimulationBuilder::backend):
    /// CPU, CUDA device, emulator); their bodies are ignored (pass
    /// [`Bodies::default`]). Errors: rank 0's invalid bodies or parameters,
    /// a force law other than gravity ([`Error::Unsupported`]), too little
    /// memory or an unavailable backend on any rank; for leapfrog, the
    /// first accelerations are computed here.
    pub fn build<C: Communicator>(
        comm: &C,
        builder: SimulationBuilder,
        scheme: RingScheme,
    ) -> Result<DistributedSimulation> {
        let comm = comm.duplicate();
        let rank = comm.rank() as usize;
        let root = comm.process_at_rank(0);
        let mut ids = Vec::new();
        let checked = if rank == 0 {
            builder.params().and_then(|params| {
                gravity_of(&params)?;
                if params.integrator().hermite().is_some() {
                    return Err(Error::Unsupported(
                        "the Hermite integrator does not run over MPI ranks (yet): use Simulation"
                            .into(),
                    ));
                }
                builder.bodies.validate()?;
                ids = crate::simulation::check_ids(builder.ids.clone(), builder.bodies.len())?;
                let max_mass = builder.bodies.masses.iter().fold(0.0f32, |m, &w| m.max(w));
                Ok(Header {
                    n: builder.bodies.len(),
                    step: builder.start_step,
                    time: builder.start_time,
                    params,
                    max_mass,
                })
            })
        } else {
            Ok(Header {
                n: 0,
                step: 0,
                time: 0.0,
                params: Params::default(),
                max_mass: 0.0,
            })
        };
        let mut header = agree(&comm, checked.map(|h| h.encode()))?;
        root.broadcast_into(&mut header[..]);
        let header = agree(&comm, Header::decode(&header))?;
        let part = Partition::new(header.n, comm.size() as usize);
        let (all_pos, all_vel) = if rank == 0 {
            builder.bodies.to_device_layout()
        } else {
            (Vec::new(), Vec::new())
        };
        let pos = transfer::scatter(&comm, &part, &all_pos);
        let vel = transfer::scatter(&comm, &part, &all_vel);
        drop((all_pos, all_vel));
        let forces = agree(
            &comm,
            // (A rank owns no bodies when there are more ranks than bodies.)
            match pos.len() {
                0 => Ok(()),
                n => memory::check(n, memory::ENGINE_BYTES_PER_BODY, "this rank's bodies"),
            }
            .and_then(|()| {
                builder
                    .backend
                    .block_forces(&header.params, header.max_mass)
            }),
        )?;
        let kind = forces.kind();
        // Checked on rank 0 before the header was sent: gravity.
        let gravity = gravity_of(&header.params)?;
        let mut sim = DistributedSimulation {
            acc: vec![Vec4::ZERO; pos.len()],
            comm,
            rank,
            part,
            pos,
            vel,
            forces,
            kind,
            params: header.params,
            gravity,
            scheme,
            step: header.step,
            time: header.time,
            diverged: None,
            energy: None,
            timings: RingTimings::default(),
            ids,
        };
        for stage in sim.params.integrator().prepare() {
            sim.run_stage(*stage)?;
        }
        Ok(sim)
    }

    /// Advances `steps` time steps (collective), as
    /// [`Simulation::step`](crate::Simulation::step) does: every step is
    /// checked for non-finite bodies after each drift and at its end, the
    /// first bad step reported as [`Error::Diverged`] (with the body's index
    /// in the whole system), after which the run refuses to step.
    pub fn step(&mut self, steps: u64) -> Result<()> {
        if let Some((step, body)) = self.diverged {
            return Err(Error::Diverged { step, body });
        }
        if self.step.checked_add(steps).is_none() {
            return Err(Error::Unsupported(format!(
                "{steps} more steps would overflow the step counter (at step {})",
                self.step
            )));
        }
        for _ in 0..steps {
            self.energy = None;
            let mut bad = None;
            for &stage in self.params.integrator().step() {
                self.run_stage(stage)?;
                if matches!(stage, Stage::Drift(_)) && bad.is_none() {
                    bad = self.first_non_finite();
                }
            }
            let bad = bad.or_else(|| self.first_non_finite());
            self.time = clock_after(self.time, self.params.dt_f64(), 1);
            self.step += 1;
            if let Some(body) = bad {
                self.diverged = Some((self.step, body));
                return Err(Error::Diverged {
                    step: self.step,
                    body,
                });
            }
        }
        Ok(())
    }

    /// One integrator stage on this rank's block (the ring for forces).
    fn run_stage(&mut self, stage: Stage) -> Result<()> {
        let dt = self.params.dt();
        match stage {
            Stage::Accelerations => self.acc = self.ring_accelerations()?,
            Stage::Kick(f) => axpy(&mut self.vel, &self.acc, f * dt),
            Stage::Drift(f) => axpy(&mut self.pos, &self.vel, f * dt),
        }
        Ok(())
    }

    /// The accelerations (`G`-scaled) of this rank's bodies: one trip
    /// around the ring.
    fn ring_accelerations(&mut self) -> Result<Vec<Vec4>> {
        let Self {
            comm,
            rank,
            part,
            pos,
            forces,
            scheme,
            timings,
            ..
        } = &mut *self;
        let (own, r) = (&pos[..], *rank);
        let mut sum = vec![Vec4::ZERO; own.len()];
        let ring = Ring::new(comm);
        let (outcome, reactions) = match scheme {
            RingScheme::AllPairs => {
                ring.run(part, own, part.ranks() - 1, false, timings, |(_, v, _)| {
                    forces.pull(own, v, &mut sum)
                })
            }
            RingScheme::ThirdLaw => {
                let shifts = third_law_shifts(part.ranks());
                ring.run(part, own, shifts, true, timings, |(s, v, react)| {
                    if s == 0 {
                        return forces.pull_within(own, &mut sum);
                    }
                    match third_law_work(part, r, s) {
                        PairWork::Full => forces.pull_pair(own, v, &mut sum, react),
                        PairWork::Own(k) => {
                            forces.pull_pair(&own[k.clone()], v, &mut sum[k], react)
                        }
                        PairWork::Visitor(k) => {
                            forces.pull_pair(own, &v[k.clone()], &mut sum, &mut react[k])
                        }
                    }
                })
            }
        };
        agree(comm, outcome)?;
        let g = self.gravity.g();
        Ok(sum
            .iter()
            .zip(reactions.iter().chain(std::iter::repeat(&Vec4::ZERO)))
            .map(|(a, b)| Vec4::new((a.x + b.x) * g, (a.y + b.y) * g, (a.z + b.z) * g, 0.0))
            .collect())
    }

    /// The lowest index (in the whole system) of a body whose position or
    /// velocity is not finite, on any rank (collective).
    fn first_non_finite(&self) -> Option<usize> {
        let start = self.part.range(self.rank).start;
        let mine = crate::state::first_non_finite(&self.pos, &self.vel)
            .map_or(u64::MAX, |k| (start + k) as u64);
        let mut lowest = u64::MAX;
        self.comm
            .all_reduce_into(&mine, &mut lowest, SystemOperation::min());
        (lowest != u64::MAX).then_some(lowest as usize)
    }

    /// Kinetic and softened potential energy of the whole system, summed in
    /// `f64` on each rank and across ranks (collective; kept until the next
    /// step). The pair potential takes the third-law ring's half of the
    /// shifts whatever the [`RingScheme`]. A non-finite energy is an
    /// [`Error::NonFiniteEnergy`].
    pub fn energy(&mut self) -> Result<Energy> {
        if let Some(e) = self.energy {
            return Ok(e);
        }
        let Self {
            comm,
            rank,
            part,
            pos,
            vel,
            forces,
            timings,
            ..
        } = &mut *self;
        let (own, r) = (&pos[..], *rank);
        let kinetic: f64 = own
            .iter()
            .zip(vel.iter())
            .map(|(p, v)| {
                let (vx, vy, vz) = (v.x as f64, v.y as f64, v.z as f64);
                0.5 * p.w as f64 * (vx * vx + vy * vy + vz * vz)
            })
            .sum();
        let mut pairs = 0.0f64;
        let ring = Ring::new(comm);
        let shifts = third_law_shifts(part.ranks());
        let (outcome, _) = ring.run(part, own, shifts, false, timings, |(s, v, _)| {
            if s == 0 {
                pairs += forces.potential_within(own)?;
                return Ok(());
            }
            pairs += match third_law_work(part, r, s) {
                PairWork::Full => forces.potential_between(own, v)?,
                PairWork::Own(k) => forces.potential_between(&own[k], v)?,
                PairWork::Visitor(k) => forces.potential_between(own, &v[k])?,
            };
            Ok(())
        });
        agree(comm, outcome)?;
        let (mut total_k, mut total_p) = (0.0f64, 0.0f64);
        comm.all_reduce_into(&kinetic, &mut total_k, SystemOperation::sum());
        comm.all_reduce_into(&pairs, &mut total_p, SystemOperation::sum());
        let energy = Energy {
            kinetic: total_k,
            potential: -(self.gravity.g() as f64) * total_p,
        };
        if !(energy.kinetic.is_finite() && energy.potential.is_finite()) {
            return Err(Error::NonFiniteEnergy {
                step: self.step,
                kinetic: energy.kinetic,
                potential: energy.potential,
            });
        }
        self.energy = Some(energy);
        Ok(energy)
    }

    /// Accelerations (`G`-scaled) of the whole system at the current
    /// positions, by the ring (collective): `Some` on rank 0, `None` on the
    /// others. The stored accelerations are left as they are.
    pub fn accelerations(&mut self) -> Result<Option<Vec<Vec3>>> {
        let acc = self.ring_accelerations()?;
        Ok(transfer::gather(&self.comm, &self.part, &acc)
            .map(|all| all.iter().map(|a| Vec3::new(a.x, a.y, a.z)).collect()))
    }

    /// The whole state (collective): `Some` on rank 0, `None` on the others.
    pub fn gather_state(&self) -> Option<State> {
        let pos = transfer::gather(&self.comm, &self.part, &self.pos);
        let vel = transfer::gather(&self.comm, &self.part, &self.vel);
        Some(State {
            bodies: Bodies::from_device_layout(&pos?, &vel?),
            time: self.time,
            step: self.step,
            ids: self.ids.clone(),
        })
    }

    /// Gathers the state and lets rank 0 write it with `write`
    /// (collective); refuses a diverged run ([`Error::NonFiniteSnapshot`]).
    fn write_on_root(&self, path: &Path, write: impl FnOnce(State) -> Result<()>) -> Result<()> {
        if let Some((_, body)) = self.diverged {
            return Err(Error::NonFiniteSnapshot {
                path: path.to_path_buf(),
                body,
            });
        }
        let outcome = match self.gather_state() {
            Some(state) => write(state),
            None => Ok(()),
        };
        agree(&self.comm, outcome)
    }

    /// Writes a [`Checkpoint`] of the whole system, atomically, from rank 0
    /// (collective): resumable on any number of ranks, or in one process.
    pub fn save_checkpoint(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        self.write_on_root(path, |state| {
            Checkpoint {
                state,
                params: self.params.clone(),
                backend: self.kind.clone(),
            }
            .save(path)
        })
    }

    /// Saves the whole system as an `(N, 7)` `.npy` file from rank 0
    /// (collective), as [`Simulation::save_npy`](crate::Simulation::save_npy).
    pub fn save_npy(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        self.write_on_root(path, |state| snapshot::save_npy(path, &state.bodies))
    }

    /// Appends a snapshot of the whole system to `archive`, which rank 0
    /// holds (the others pass `None`; collective). A diverged run is refused
    /// as by [`ArchiveWriter::append`].
    pub fn append_to(&self, archive: Option<&mut ArchiveWriter>) -> Result<()> {
        let path = Path::new("the archive");
        self.write_on_root(path, |state| match archive {
            Some(archive) => archive.append_state(&state, &self.params),
            None => Ok(()),
        })
    }

    /// The communicator of the run (a duplicate of the one it was built on).
    pub fn communicator(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks.
    pub fn ranks(&self) -> usize {
        self.part.ranks()
    }

    /// The indices (in the whole system) of this rank's bodies.
    pub fn local_range(&self) -> std::ops::Range<usize> {
        self.part.range(self.rank)
    }

    /// Number of bodies of the whole system.
    pub fn len(&self) -> usize {
        self.part.range(self.part.ranks() - 1).end
    }

    /// Whether the system has no bodies (never: a run has at least one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Steps taken since the start (including steps before a resumed checkpoint).
    pub fn steps_done(&self) -> u64 {
        self.step
    }

    /// Simulated time, as [`Simulation::time`](crate::Simulation::time).
    pub fn time(&self) -> f64 {
        self.time
    }

    /// The validated parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// This rank's backend.
    pub fn backend(&self) -> BackendKind {
        self.kind.clone()
    }

    /// The ring scheme.
    pub fn scheme(&self) -> RingScheme {
        self.scheme
    }

    /// What enumerates the pairs: `"ring-all-pairs"` or `"ring-third-law"`.
    pub fn method(&self) -> &'static str {
        match self.scheme {
            RingScheme::AllPairs => "ring-all-pairs",
            RingScheme::ThirdLaw => "ring-third-law",
        }
    }

    /// Where this rank's ring time went so far.
    pub fn ring_timings(&self) -> RingTimings {
        self.timings
    }
}

/// `dst.xyz += src.xyz * h`, one rounding per component: the CPU engine's
/// kick and drift, bit for bit.
fn axpy(dst: &mut [Vec4], src: &[Vec4], h: f32) {
    for (d, s) in dst.iter_mut().zip(src) {
        d.x = s.x.mul_add(h, d.x);
        d.y = s.y.mul_add(h, d.y);
        d.z = s.z.mul_add(h, d.z);
    }
}
