//! What a velocity-Verlet step launches besides the build (forces, kicks)
//! and what the host reads: thermo sums, the state. The step loop, in
//! batches, is `batch.rs`.

use gpu_kernels::Vec4;
use gpu_kernels::entry::{Launch, PairForces};
use gpu_kernels::pair::THERMO_PARTIALS;
use gpu_kernels::periodic;
use gpu_kernels::shape;

use super::{MdBuf, MdPlan, words_tag};
use crate::error::Result;
use crate::md::NeighbourOrigin;
use crate::plan::device::{Device, Section, words_vec4};

/// Energies and pressure of the current state, summed in `f64`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Thermo {
    /// Total kinetic energy.
    pub kinetic: f64,
    /// Total potential energy (shifted if the parameters say so).
    pub potential: f64,
    /// The virial `sum over pairs r_ij . F_ij`.
    pub virial: f64,
    /// Pressure `(2 K + W) / (3 V)`.
    pub pressure: f64,
}

/// Bodies as the plan holds them, back in the caller's order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MdState {
    /// Positions wrapped into the box, and masses.
    pub positions: Vec<Vec4>,
    /// Velocities.
    pub velocities: Vec<Vec4>,
    /// Image counters: unwrapped position = position + image * L.
    pub images: Vec<[i32; 3]>,
}

impl MdPlan {
    /// Accelerations at the current positions; with `thermo` also the
    /// partial sums of [`MdPlan::thermo`].
    pub(super) fn forces<D: Device<MdBuf>>(&self, dev: &mut D, thermo: bool) -> Result<()> {
        let pair = &self.params.pair;
        let launch = pair.style().forces_launch(
            thermo,
            PairForces {
                pos: MdBuf::Pos,
                types: MdBuf::Type,
                nlist: MdBuf::NList,
                ncount: MdBuf::NCount,
                acc: MdBuf::Acc,
                vel: MdBuf::Vel,
                partials: MdBuf::Partials,
                table: MdBuf::PairTable,
                n: self.n,
                // The ghosts' count is on the device: the slots bound them.
                extent: self.n + self.gcap,
                cap: self.cap,
                ntypes: pair.types(),
                table_len: pair.table().len() as u32,
            },
        );
        dev.launch(
            launch,
            shape::pair_forces(self.n, self.params.block, thermo),
        )
    }

    pub(super) fn kick<D: Device<MdBuf>>(&self, dev: &mut D) -> Result<()> {
        dev.launch(
            Launch::Kick {
                vel: MdBuf::Vel,
                acc: MdBuf::Acc,
                n: self.n,
                dt: 0.5 * self.params.dt,
            },
            self.per_body(self.n),
        )
    }

    /// Kinetic and potential energy, virial and pressure of the current
    /// state (recomputes the forces, which are unchanged).
    pub(crate) fn thermo<D: Device<MdBuf>>(&self, dev: &mut D) -> Result<Thermo> {
        dev.mark(Some(Section::Thermo))?;
        self.forces(dev, true)?;
        dev.mark(None)?;
        self.read_thermo(dev)
    }

    /// [`MdPlan::thermo`]'s sums from the partials of the last force
    /// launch with thermo (also the barostat's virial each step, `npt.rs`).
    pub(super) fn read_thermo<D: Device<MdBuf>>(&self, dev: &mut D) -> Result<Thermo> {
        let blocks = shape::pair_partials(self.n, self.params.block) / THERMO_PARTIALS;
        let words = dev.read(MdBuf::Partials, 0, 2 * (THERMO_PARTIALS * blocks) as usize)?;
        let values: Vec<f64> = words
            .chunks_exact(2)
            .map(|w| f64::from_bits(w[0] as u64 | (w[1] as u64) << 32))
            .collect();
        let sum = |k: usize| {
            values
                .iter()
                .skip(k)
                .step_by(THERMO_PARTIALS as usize)
                .sum::<f64>()
        };
        // Each pair is in both bodies' lists.
        let (potential, virial, kinetic) = (0.5 * sum(0), 0.5 * sum(1), sum(2));
        let volume: f64 = self.grid.l.iter().map(|&l| l as f64).product();
        Ok(Thermo {
            kinetic,
            potential,
            virial,
            pressure: (2.0 * kinetic + virial) / (3.0 * volume),
        })
    }

    /// Where the lists were built, in the caller's order: the reference
    /// positions, the positions in that build's frame (as the device holds
    /// them, unwrapped), the steps since the build, and its box where a
    /// barostat has moved it since.
    pub(crate) fn read_origin<D: Device<MdBuf>>(&self, dev: &mut D) -> Result<NeighbourOrigin> {
        let n = self.n as usize;
        let pos = words_vec4(&dev.read(MdBuf::Pos, 0, 4 * n)?);
        let reference = words_vec4(&dev.read(MdBuf::Reference, 0, 4 * n)?);
        let tags = words_tag(&dev.read(MdBuf::Tag, 0, 4 * n)?);
        let (mut r, mut f) = (vec![[0.0; 3]; n], vec![[0.0; 3]; n]);
        for ((p, q), t) in pos.iter().zip(&reference).zip(&tags) {
            f[t.id as usize] = [p.x, p.y, p.z];
            r[t.id as usize] = [q.x, q.y, q.z];
        }
        Ok(NeighbourOrigin {
            reference: r,
            since_build: self.since_build,
            // A barostat's box moves between builds (`npt.rs`).
            lengths: (self.built.l != self.grid.l).then_some(self.built.l),
            frame: Some(f),
        })
    }

    /// The bodies in the caller's order: positions wrapped into the box with
    /// their image counters, velocities.
    pub(crate) fn read_state<D: Device<MdBuf>>(&self, dev: &mut D) -> Result<MdState> {
        let n = self.n as usize;
        let pos = words_vec4(&dev.read(MdBuf::Pos, 0, 4 * n)?);
        let vel = words_vec4(&dev.read(MdBuf::Vel, 0, 4 * n)?);
        let tags = words_tag(&dev.read(MdBuf::Tag, 0, 4 * n)?);
        let mut state = MdState {
            positions: vec![Vec4::ZERO; n],
            velocities: vec![Vec4::ZERO; n],
            images: vec![[0; 3]; n],
        };
        let [lx, ly, lz] = self.grid.l;
        for ((p, v), t) in pos.iter().zip(&vel).zip(&tags) {
            // Bodies drift up to skin / 2 out of the box between builds.
            let ((x, kx), (y, ky), (z, kz)) = (
                periodic::wrap(p.x, lx),
                periodic::wrap(p.y, ly),
                periodic::wrap(p.z, lz),
            );
            let id = t.id as usize;
            state.positions[id] = Vec4::new(x, y, z, p.w);
            state.velocities[id] = *v;
            state.images[id] = [
                t.ix.wrapping_add(kx),
                t.iy.wrapping_add(ky),
                t.iz.wrapping_add(kz),
            ];
        }
        Ok(state)
    }
}
