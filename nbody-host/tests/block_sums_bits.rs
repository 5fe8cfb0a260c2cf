//! The bits of every kernel that ends in a block tree reduction of `f64`
//! (issue 24: `gpu_kernels::reduce::block_sums`, one helper for the four
//! copies that were in `energy`, `block_pair`, `md_ensemble::pass` and the
//! pair kernel's thermo sums), pinned on `Backend::Cuda`: the constants are
//! FNV-1a hashes of the results' bits recorded on the software CUDA device
//! (`scripts/with-softcuda.sh cargo test -p nbody-host --features cuda
//! --test block_sums_bits`) from the PTX before the helper replaced the four
//! copies, so a refactor of the tree that changes the order of one addition
//! fails here. The reductions are in a fixed order and none of these
//! kernels uses float atomics, so the bits are the same on every schedule;
//! the recorded values are the software device's (its `rsqrt.approx` is the
//! H200's table), not claimed for any other device.
#![cfg(feature = "cuda")]

mod block_pair_oracle;

use block_pair_oracle::{block_seeded, params};
use nbody_host::{Backend, Ensemble, ForceLaw, Integrator, Kernel, Neighbours, Simulation, ic};

const CUDA: Backend = Backend::Cuda { device: 0 };

/// FNV-1a over the 64-bit words.
fn fnv(words: impl IntoIterator<Item = u64>) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for w in words {
        for b in w.to_le_bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn check(what: &str, got: u64, want: u64) {
    assert_eq!(
        got, want,
        "{what}: the bits changed (hash {got:#018x}, recorded {want:#018x})"
    );
}

/// The gravity energy kernel (kinetic and potential partials per block) on
/// 1,000 bodies (not a multiple of the block) after 10 steps. The two
/// blocks' values differ in the last bits (their trees add in different
/// orders): the hashes see the order of the additions.
#[test]
fn energy_bits_are_the_recorded_ones() {
    for (block, want) in [(128, 0x5f32_7e6f_e91f_95d1), (256, 0x8d23_5a99_3660_7c12)] {
        let mut sim = Simulation::builder(ic::plummer(1000, 11))
            .backend(CUDA)
            .kernel(Kernel::Tiled { block })
            .integrator(Integrator::Leapfrog)
            .softening(0.05)
            .dt(0.001)
            .build()
            .unwrap();
        sim.step(10).unwrap();
        let e = sim.energy().unwrap();
        check(
            &format!("energy, block {block}: {e:?}"),
            fnv([e.kinetic.to_bits(), e.potential.to_bits()]),
            want,
        );
    }
}

/// The block-pair potential (one partial per block) between blocks of 300
/// and 170 bodies and within the first.
#[test]
fn block_pair_potential_bits_are_the_recorded_ones() {
    let (i, j) = (block_seeded(300, 1), block_seeded(170, 2));
    let max_mass = i.iter().chain(&j).fold(0.0f32, |m, p| m.max(p.w));
    let mut f = CUDA.block_forces(&params(0.1, 64), max_mass).unwrap();
    let between = f.potential_between(&i, &j).unwrap();
    let within = f.potential_within(&i).unwrap();
    check(
        &format!("block pair: between {between}, within {within}"),
        fnv([between.to_bits(), within.to_bits()]),
        0xc7ff_1637_5b92_9c77,
    );
}

/// The MD plan: the pair kernel's thermo sums (NVE: potential and virial)
/// and the ensemble pass's sums (Nosé–Hoover, Langevin: the kinetic energy
/// and the thermostat's work, which steer every later step) on 255 atoms
/// (one removed from in.lj's 256: the last block is partial) after 60 steps.
#[test]
fn md_thermo_and_ensemble_bits_are_the_recorded_ones() {
    for (e, want) in [
        (Ensemble::Nve, 0x5e9a_1ee5_33a8_cd3a),
        (Ensemble::nvt(1.0, 0.5), 0x840f_7b9b_3257_f5fb),
        (Ensemble::langevin(1.0, 0.5, 42), 0x1f7e_4b9d_d6c3_00fd),
    ] {
        let (mut atoms, boundary) = ic::fcc_lattice(4, 0.8442, 1.44, 87287).unwrap();
        atoms.remove(atoms.len() - 1);
        let mut sim = Simulation::builder(atoms)
            .force(ForceLaw::lennard_jones(1.0, 1.0, 2.5, true).unwrap())
            .boundary(boundary)
            .neighbours(Neighbours::cells(0.3).every(10))
            .integrator(Integrator::VELOCITY_VERLET)
            .ensemble(e)
            .dt(0.005)
            .backend(CUDA)
            .build()
            .unwrap();
        sim.step(60).unwrap();
        let t = sim.thermo().unwrap();
        let b = sim.bodies().unwrap();
        let words = b
            .positions
            .iter()
            .chain(&b.velocities)
            .flat_map(|p| p.to_array())
            .map(|x| x.to_bits() as u64)
            .chain([t.kinetic, t.potential, t.virial, t.conserved].map(f64::to_bits));
        check(&format!("{e}: {t:?}"), fnv(words), want);
    }
}
