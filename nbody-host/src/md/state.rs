//! What a short-range run reports ([`Thermo`], [`MdStats`]) and carries
//! from one engine to the next ([`MdState`]).

/// LAMMPS's thermo quantities (`thermo_style custom step temp pe ke etotal
/// press ecouple econserve vol density`) in its definitions for `units lj`: energies per atom
/// (`thermo_modify norm yes`, LAMMPS's default for LJ units), the
/// temperature with `3N - 3` degrees of freedom (the total momentum
/// removed), `k_B = 1`, the pressure from the virial. Sums in `f64`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thermo {
    /// Steps taken.
    pub step: u64,
    /// Number of atoms `N`.
    pub atoms: usize,
    /// `T = 2 KE / (3N - 3)` (0 for one atom).
    pub temperature: f64,
    /// Kinetic energy per atom, `KE / N`.
    pub kinetic: f64,
    /// Potential energy per atom, `U / N` (`U = sum_{i<j} u(r_ij)`).
    pub potential: f64,
    /// `(KE + U) / N`.
    pub total: f64,
    /// `P = (2 KE + W) / (3 V)`, `W = sum_{i<j} r_ij . F_ij`; `None` for
    /// open boundaries (no volume).
    pub pressure: Option<f64>,
    /// The virial `W` (total, not per atom).
    pub virial: f64,
    /// The energy the thermostat and barostat took from the atoms, per
    /// atom (LAMMPS's `ecouple`: the thermostats' and barostat's own energy
    /// for Nosé–Hoover, the cumulative exchange for Langevin and
    /// rescaling; 0 for NVE).
    pub coupling: f64,
    /// `total + coupling`: what the extended system conserves (LAMMPS's
    /// `econserve`), per atom.
    pub conserved: f64,
    /// The box's volume (`None` in open space); it changes under a barostat.
    pub volume: Option<f64>,
    /// Number density `N / V` (`None` in open space).
    pub density: Option<f64>,
}

impl Thermo {
    /// From the totals: kinetic and potential energy, virial, coupling energy.
    pub(crate) fn from_sums(
        step: u64,
        atoms: usize,
        sums: ThermoSums,
        volume: Option<f64>,
    ) -> Thermo {
        let ThermoSums {
            kinetic,
            potential,
            virial,
            coupling,
        } = sums;
        let n = atoms as f64;
        let dof = 3.0 * n - 3.0;
        Thermo {
            step,
            atoms,
            temperature: if dof > 0.0 { 2.0 * kinetic / dof } else { 0.0 },
            kinetic: kinetic / n,
            potential: potential / n,
            total: (kinetic + potential) / n,
            pressure: volume.map(|v| (2.0 * kinetic + virial) / (3.0 * v)),
            virial,
            coupling: coupling / n,
            conserved: (kinetic + potential + coupling) / n,
            volume,
            density: volume.map(|v| n / v),
        }
    }
}

/// Totals an engine reports for [`Thermo`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ThermoSums {
    pub kinetic: f64,
    pub potential: f64,
    pub virial: f64,
    /// The ensemble's coupling energy ([`Thermo::coupling`], total).
    pub coupling: f64,
}

/// Counters and the time split of a short-range run, as LAMMPS prints them
/// after a run ("Pair", "Neigh", "Modify" for the integrator, "Other").
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MdStats {
    /// Neighbour-list builds (the first included).
    pub builds: u64,
    /// [`Rebuild::Every`](super::Rebuild::Every) builds at which some body had moved more than
    /// half the skin since the previous one (a pair may have been missed).
    pub dangerous_builds: u64,
    /// Verlet-list entries per atom at the last build (each pair once,
    /// within `r_c + skin`; LAMMPS's "Ave neighs/atom").
    pub neighbours_per_atom: f64,
    /// The lanes the force loop computes per atom at the last build: the
    /// list entries padded to whole vectors (the padding's lanes are masked).
    pub lanes_per_atom: f64,
    /// Cells per side (x, y, z) of the last build's grid.
    pub cells: [usize; 3],
    /// Seconds in the force loop.
    pub pair_seconds: f64,
    /// Seconds binning, sorting, reordering and building lists (and
    /// checking whether to).
    pub neighbour_seconds: f64,
    /// Seconds in kicks, drifts, wrapping and the divergence checks.
    pub integrate_seconds: f64,
    /// Seconds in energy and virial sums (thermo).
    pub thermo_seconds: f64,
}

/// What a short-range run carries from one engine to the next (a resume, a
/// clone, an added body) beyond the bodies: their atom types, the image
/// counters and, for a bit-identical continuation, the positions the
/// neighbour lists were last built from.
///
/// [`Simulation::md_state`](crate::Simulation::md_state) reads it;
/// checkpoints and archive records store it; [`SimulationBuilder::md_state`](crate::SimulationBuilder::md_state)
/// starts from it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MdState {
    /// Per body (user order), how many box lengths its unwrapped position
    /// lies from the wrapped one along x, y, z: unwrapped `= x + image * L`.
    pub images: Vec<[i32; 3]>,
    /// Per body (user order), its atom type, numbered from 0: the row and
    /// column of the pair potential's coefficients
    /// ([`PairPotential`](crate::PairPotential)). Empty: every body is of
    /// type 0.
    pub types: Vec<u32>,
    /// The neighbour lists' origin, if the engine had lists.
    pub(crate) neighbours: Option<NeighbourOrigin>,
    /// The thermostat's and barostat's state, under an ensemble other than NVE.
    pub(crate) ensemble: Option<super::ensemble::EnsembleState>,
}

impl MdState {
    /// Image counters only (zero for bodies given inside the box): what a
    /// new run starts from.
    pub fn with_images(images: Vec<[i32; 3]>) -> MdState {
        MdState {
            images,
            types: Vec::new(),
            neighbours: None,
            ensemble: None,
        }
    }

    /// These atom types (see [`types`](Self::types)) and no image counters.
    pub fn with_types(types: Vec<u32>) -> MdState {
        MdState {
            types,
            ..MdState::default()
        }
    }

    /// Body `i`'s atom type (0 where none are given).
    pub fn type_of(&self, i: usize) -> u32 {
        self.types.get(i).copied().unwrap_or(0)
    }

    /// Whether it records where the neighbour lists were built (for a
    /// bit-identical continuation).
    pub fn has_neighbour_origin(&self) -> bool {
        self.neighbours.is_some()
    }
}

/// Where and when the lists were last built.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct NeighbourOrigin {
    /// Positions at the last build, user order.
    pub reference: Vec<[f32; 3]>,
    /// Steps since that build.
    pub since_build: u64,
    /// The box at that build, where a barostat has changed it since
    /// (`None`: the box now).
    pub lengths: Option<[f32; 3]>,
    /// The positions as the engine holds them between builds (user order),
    /// where it does not wrap them every step: the GPU plan keeps them in
    /// the last build's frame, up to half the skin outside the box, and a
    /// wrapped position below 0 loses bits (`x + L` rounds), so a
    /// bit-identical continuation needs these (`None`: the CPU, which wraps
    /// every step).
    pub frame: Option<Vec<[f32; 3]>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thermo_follows_the_lammps_definitions() {
        // 4 atoms, KE 3: T = 2 * 3 / 9; P = (2 KE + W) / 3V.
        let sums = |kinetic, potential, virial, coupling| ThermoSums {
            kinetic,
            potential,
            virial,
            coupling,
        };
        let t = Thermo::from_sums(7, 4, sums(3.0, -8.0, 6.0, 1.0), Some(2.0));
        assert_eq!(t.temperature, 6.0 / 9.0);
        assert_eq!((t.kinetic, t.potential, t.total), (0.75, -2.0, -1.25));
        assert_eq!(t.pressure, Some(2.0));
        assert_eq!((t.coupling, t.conserved), (0.25, -1.0));
        assert_eq!((t.volume, t.density), (Some(2.0), Some(2.0)));
        let one = Thermo::from_sums(0, 1, sums(1.0, 0.0, 0.0, 0.0), None);
        assert_eq!((one.temperature, one.density), (0.0, None));
    }
}
