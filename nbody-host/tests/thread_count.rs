//! The CPU backend's results do not depend on the number of threads
//! (issue 14, defect 2): docs/library.md promises bit-identical runs "on any
//! thread count". The same simulation, at the default tuning, runs in rayon
//! pools of 1, 2, 3 and 5 threads and must give the same bits of positions,
//! velocities and energy.

use nbody_host::{Backend, Bodies, Integrator, Kernel, Simulation, ic};

/// Every bit a run produces: positions, velocities, then kinetic and
/// potential energy.
fn fingerprint(bodies: Bodies, kernel: Kernel, integrator: Integrator) -> Vec<u64> {
    let mut sim = Simulation::builder(bodies)
        .kernel(kernel)
        .integrator(integrator)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    sim.step(2).unwrap();
    let state = sim.state().unwrap();
    let energy = sim.energy().unwrap();
    state
        .bodies
        .positions
        .iter()
        .chain(&state.bodies.velocities)
        .flat_map(|v| v.to_array())
        .map(|x| x.to_bits() as u64)
        .chain([energy.kinetic.to_bits(), energy.potential.to_bits()])
        .collect()
}

#[test]
fn cpu_results_are_bit_identical_on_1_2_3_and_5_threads() {
    let pools: Vec<(usize, rayon::ThreadPool)> = [1, 2, 3, 5]
        .into_iter()
        .map(|t| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap();
            (t, pool)
        })
        .collect();
    // 1000 runs the all-pairs loop at the default tuning; the others the
    // Newton's-third-law loop, whose blocks once followed the thread count.
    for n in [1000, 1024, 2048, 5000] {
        let bodies = ic::uniform_cube(n, 7);
        for kernel in [
            Kernel::Simt { block: 256 },
            Kernel::Tiled { block: 256 },
            Kernel::Triangle { block: 256 },
        ] {
            for integrator in [Integrator::SemiImplicitEuler, Integrator::Leapfrog] {
                let runs: Vec<(usize, Vec<u64>)> = pools
                    .iter()
                    .map(|(t, pool)| {
                        let b = bodies.clone();
                        (*t, pool.install(|| fingerprint(b, kernel, integrator)))
                    })
                    .collect();
                let (_, first) = &runs[0];
                for (threads, bits) in &runs[1..] {
                    let differing = first.iter().zip(bits).filter(|(a, b)| a != b).count();
                    assert_eq!(
                        differing,
                        0,
                        "N = {n}, {kernel}, {integrator}: {threads} threads differ from 1 thread \
                         in {differing} of {} values",
                        first.len()
                    );
                }
            }
        }
    }
}

/// Short-range forces (Lennard-Jones in a periodic box, one atom type and
/// a two-type mixture): every enumeration gives the same bits of
/// positions, velocities, image counters and thermo sums on 1, 2, 3 and 5
/// threads, through list rebuilds and reorders.
#[test]
fn lennard_jones_results_are_bit_identical_on_1_2_3_and_5_threads() {
    use nbody_host::md::{CellList, Lists};
    use nbody_host::{Boundary, ForceLaw, PairPotential, PairStyle};

    // in.lj's Lennard-Jones, and every style's example with two types.
    let mut laws = vec![(
        ForceLaw::lennard_jones(1.0, 1.0, 2.5, false).unwrap(),
        false,
    )];
    for &style in PairStyle::ALL {
        let two = PairPotential::example(style, 2, Some(2.5), false).unwrap();
        laws.push((ForceLaw::Pair(two), true));
    }

    let pools: Vec<(usize, rayon::ThreadPool)> = [1, 2, 3, 5]
        .into_iter()
        .map(|t| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap();
            (t, pool)
        })
        .collect();
    // 4^3 unit cells: 256 atoms, 2 cells per side (each cell its own
    // neighbour across both faces: the stencils' duplicates); 6^3: 864
    // atoms, 3 cells per side (an odd number of layers: the half lists'
    // wrap); 8^3: 2048 atoms, 4 per side.
    for (cells, per_side) in [(4, 2), (6, 3), (8, 4)] {
        let (atoms, boundary): (Bodies, Boundary) =
            ic::fcc_lattice(cells, 0.8442, 1.44, 3).unwrap();
        let mut enumerations = vec![nbody_host::Neighbours::AllPairs];
        for lists in [Lists::Half, Lists::Full] {
            let c = nbody_host::Neighbours::Cells(CellList {
                lists,
                ..CellList::new(0.3)
            });
            enumerations.extend([c, c.every(10)]);
        }
        let mixed: Vec<u32> = (0..atoms.len()).map(|i| u32::from(i % 5 == 4)).collect();
        for (neighbours, (force, typed)) in enumerations
            .iter()
            .flat_map(|&e| laws.iter().map(move |l| (e, l)))
        {
            let types = if *typed { mixed.clone() } else { Vec::new() };
            let runs: Vec<(usize, Vec<u64>)> = pools
                .iter()
                .map(|(t, pool)| {
                    let atoms = atoms.clone();
                    let bits = pool.install(|| {
                        let mut sim = Simulation::builder(atoms)
                            .force(force.clone())
                            .types(types.clone())
                            .boundary(boundary)
                            .neighbours(neighbours)
                            .integrator(Integrator::VELOCITY_VERLET)
                            .dt(0.005)
                            .backend(Backend::cpu())
                            .build()
                            .unwrap();
                        sim.step(30).unwrap();
                        if let nbody_host::Neighbours::Cells(_) = neighbours {
                            let grid = sim.md_stats().unwrap().cells;
                            assert_eq!(grid, [per_side; 3], "{cells}^3 unit cells");
                        }
                        let state = sim.state().unwrap();
                        let t = sim.thermo().unwrap();
                        state
                            .bodies
                            .positions
                            .iter()
                            .chain(&state.bodies.velocities)
                            .flat_map(|v| v.to_array())
                            .map(|x| x.to_bits() as u64)
                            .chain(
                                sim.images()
                                    .unwrap()
                                    .unwrap()
                                    .iter()
                                    .flatten()
                                    .map(|&i| i as u64),
                            )
                            .chain([
                                t.potential.to_bits(),
                                t.virial.to_bits(),
                                t.kinetic.to_bits(),
                            ])
                            .collect()
                    });
                    (*t, bits)
                })
                .collect();
            let (_, first) = &runs[0];
            for (threads, bits) in &runs[1..] {
                let differing = first.iter().zip(bits).filter(|(a, b)| a != b).count();
                assert_eq!(
                    differing,
                    0,
                    "{cells}^3 cells, {neighbours:?}, {}: {threads} threads differ from 1 thread in \
                     {differing} of {} values",
                    force,
                    first.len()
                );
            }
        }
    }
}
