//! `g(r)` and the mean-squared displacement (`nbody_host::analysis`)
//! against `f64` references written here: an `O(N^2)` all-pairs `g(r)` from
//! the textbook definition (ordered pairs over the ideal-gas count of the
//! shell), and the MSD summed atom by atom; both backends of `Rdf` (cell
//! list, all pairs for boxes under three cells wide); the same bits on 1, 2,
//! 3 and 5 threads; bad settings are clear errors. LAMMPS's `compute rdf`
//! and `compute msd` on the same trajectories: `scripts/ci-trajectory.sh`.

use nbody_host::analysis::{Msd, Rdf, RdfTable};
use nbody_host::trajectory::Frame;

/// SplitMix64: uniform numbers in [0, 1).
struct Random(u64);

impl Random {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `n` atoms, one in four of type 1, uniformly in an orthorhombic box
/// scaled by `s` (an NPT-like change from frame to frame), with image
/// counters.
fn frame(n: usize, s: f64, seed: u64, step: u64) -> Frame {
    let mut rng = Random(seed);
    let lengths = [8.1, 9.3, 10.7].map(|l: f64| (l * s) as f32 as f64);
    Frame {
        step,
        time: 0.0,
        lengths,
        positions: (0..n)
            .map(|_| {
                std::array::from_fn(|a| {
                    ((rng.next() * lengths[a]) as f32).min((lengths[a] as f32).next_down())
                })
            })
            .collect(),
        images: (0..n)
            .map(|_| std::array::from_fn(|_| (rng.next() * 5.0) as i32 - 2))
            .collect(),
        velocities: vec![],
        types: (0..n).map(|i| (i % 4 == 3) as u32).collect(),
    }
}

/// The reference `g(r)` of one frame for the type pair `(ti, tj)` (`None`:
/// any type): every ordered pair, minimum image by rounding, over the
/// ideal-gas count `N_I (N_J - [same set]) V_shell / V`.
fn reference(f: &Frame, bins: usize, rc: f64, ti: Option<u32>, tj: Option<u32>) -> Vec<f64> {
    let n = f.len();
    let is = |sel: Option<u32>, i: usize| sel.is_none_or(|t| f.types[i] == t);
    let mut count = vec![0.0f64; bins];
    for a in (0..n).filter(|&a| is(ti, a)) {
        for b in (0..n).filter(|&b| b != a && is(tj, b)) {
            let mut r2 = 0.0;
            for k in 0..3 {
                let d = f.positions[a][k] as f64 - f.positions[b][k] as f64;
                let d = d - f.lengths[k] * (d / f.lengths[k]).round();
                r2 += d * d;
            }
            let r = r2.sqrt();
            if r < rc {
                count[(r / (rc / bins as f64)) as usize] += 1.0;
            }
        }
    }
    let ni = (0..n).filter(|&i| is(ti, i)).count() as f64;
    let nj = (0..n).filter(|&i| is(tj, i)).count() as f64;
    let same = if ti == tj { 1.0 } else { 0.0 };
    let volume: f64 = f.lengths.iter().product();
    let dr = rc / bins as f64;
    (0..bins)
        .map(|k| {
            let shell = 4.0 / 3.0
                * std::f64::consts::PI
                * (((k + 1) as f64 * dr).powi(3) - (k as f64 * dr).powi(3));
            count[k] / (ni * (nj - same) * shell / volume)
        })
        .collect()
}

fn assert_close(ours: &[f64], reference: &[f64], what: &str) {
    let scale = reference.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    for (k, (a, b)) in ours.iter().zip(reference).enumerate() {
        assert!(
            (a - b).abs() <= 1e-12 * scale,
            "{what}, bin {k}: {a} against the reference {b}"
        );
    }
}

#[test]
fn g_of_r_per_type_pair_equals_the_all_pairs_reference_over_changing_boxes() {
    let pairs = [(0, 0), (0, 1), (1, 0), (1, 1)];
    // 2.6: 3 x 3 x 4 cells (the cell list); 3.9: 2 cells along x (all pairs).
    for rc in [2.6, 3.9] {
        let frames: Vec<Frame> = (0..3)
            .map(|k| frame(700, 1.0 + 0.02 * k as f64, k as u64 + 1, k as u64))
            .collect();
        let mut typed = Rdf::new(50, rc, &pairs).unwrap();
        let mut all = Rdf::new(50, rc, &[]).unwrap();
        for f in &frames {
            typed.add(f).unwrap();
            all.add(f).unwrap();
        }
        let (typed, all) = (typed.table(), all.table());
        assert_eq!((typed.frames, typed.g.len(), all.g.len()), (3, 4, 1));
        let mean = |ti, tj| -> Vec<f64> {
            let per: Vec<Vec<f64>> = frames
                .iter()
                .map(|f| reference(f, 50, rc, ti, tj))
                .collect();
            (0..50)
                .map(|k| per.iter().map(|g| g[k]).sum::<f64>() / 3.0)
                .collect()
        };
        for (m, &(i, j)) in pairs.iter().enumerate() {
            assert_close(
                &typed.g[m],
                &mean(Some(i), Some(j)),
                &format!("rc {rc}, pair {i}-{j}"),
            );
        }
        assert_close(&all.g[0], &mean(None, None), &format!("rc {rc}, all atoms"));
        // An ideal gas: g near 1 in the outer bins (a few percent of noise).
        let outer: f64 = all.g[0][25..].iter().sum::<f64>() / 25.0;
        assert!((outer - 1.0).abs() < 0.03, "ideal gas g = {outer}");
        // The coordination number is the running integral of g.
        let dr = rc / 50.0;
        // (Each frame's coordination uses its own density; their mean.)
        let rho = frames
            .iter()
            .map(|f| (700.0 - 1.0) / f.lengths.iter().product::<f64>())
            .sum::<f64>()
            / 3.0;
        let shell = |k: usize| {
            4.0 / 3.0
                * std::f64::consts::PI
                * (((k + 1) as f64 * dr).powi(3) - (k as f64 * dr).powi(3))
        };
        let integral: f64 = (0..50).map(|k| all.g[0][k] * rho * shell(k)).sum();
        assert!(
            (all.coordination[0][49] / integral - 1.0).abs() < 0.01,
            "{} vs {integral}",
            all.coordination[0][49]
        );
    }
}

#[test]
fn an_fcc_crystal_has_its_shells_at_the_lattice_distances() {
    let (atoms, boundary) = nbody_host::ic::fcc_lattice(5, 0.8442, 0.0, 1).unwrap();
    let f = Frame {
        step: 0,
        time: 0.0,
        lengths: boundary.lengths().unwrap().map(|l| l as f32 as f64),
        positions: atoms.positions.iter().map(|p| p.to_array()).collect(),
        images: vec![],
        velocities: vec![],
        types: vec![],
    };
    let mut rdf = Rdf::new(200, 2.5, &[]).unwrap();
    rdf.add(&f).unwrap();
    let t = rdf.table();
    let a = (4.0f64 / 0.8442).cbrt();
    // Shells at a / sqrt(2) (12), a (6), a sqrt(3/2) (24), a sqrt(2) (12):
    // cumulative 12, 18, 42, 54 within 2.5.
    let coordination_at = |r: f64| t.coordination[0][(r / (2.5 / 200.0)) as usize];
    for (r, c) in [
        (a / 2f64.sqrt(), 12.0),
        (a, 18.0),
        (a * 1.5f64.sqrt(), 42.0),
        (a * 2f64.sqrt(), 54.0),
    ] {
        assert!(
            (coordination_at(r + 0.02) - c).abs() < 1e-9,
            "r {r}: {} not {c}",
            coordination_at(r + 0.02)
        );
        assert!(
            (coordination_at(r - 0.02) - c).abs() > 1.0,
            "r {r}: the shell is where it should be"
        );
    }
}

#[test]
fn msd_unwraps_with_the_image_counters_and_matches_a_per_atom_sum() {
    let f0 = frame(1000, 1.0, 9, 0);
    let mut f1 = frame(1000, 1.0, 10, 50);
    f1.lengths = f0.lengths;
    let mut msd = Msd::new(&f0);
    assert_eq!(msd.sample(&f0).unwrap(), [0.0; 4]);
    let got = msd.sample(&f1).unwrap();
    let mut want = [0.0f64; 4];
    for i in 0..1000 {
        for a in 0..3 {
            let u = |f: &Frame| f.positions[i][a] as f64 + f.images[i][a] as f64 * f.lengths[a];
            let d = u(&f1) - u(&f0);
            want[a] += d * d / 1000.0;
            want[3] += d * d / 1000.0;
        }
    }
    for a in 0..4 {
        assert!(
            (got[a] - want[a]).abs() <= 1e-12 * want[a],
            "component {a}: {} vs {}",
            got[a],
            want[a]
        );
    }
    // Images of +-2 box lengths: far more than the wrapped positions could give.
    assert!(got[3] > 3.0 * 8.1 * 8.1, "{got:?}");
    assert_eq!(msd.samples().len(), 2);
    let text = msd.to_text();
    assert!(
        text.starts_with("# step dx2 dy2 dz2 total")
            && text.lines().nth(2).unwrap().starts_with("50 "),
        "{text}"
    );
    let wrong = frame(999, 1.0, 1, 60);
    assert!(
        msd.at(&wrong)
            .unwrap_err()
            .to_string()
            .contains("999 atoms, the reference 1000")
    );
}

#[test]
fn the_same_bits_on_any_thread_count() {
    let frames: Vec<Frame> = (0..2)
        .map(|k| frame(3000, 1.0 + 0.1 * k as f64, 20 + k as u64, k as u64))
        .collect();
    let run = |threads: usize| -> (RdfTable, Vec<[f64; 4]>) {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut rdf = Rdf::new(64, 2.5, &[(0, 0), (0, 1)]).unwrap();
            let mut msd = Msd::new(&frames[0]);
            for f in &frames {
                rdf.add(f).unwrap();
                msd.sample(f).unwrap();
            }
            (rdf.table(), msd.samples().iter().map(|s| s.1).collect())
        })
    };
    let one = run(1);
    let bits = |t: &(RdfTable, Vec<[f64; 4]>)| -> Vec<u64> {
        t.0.g
            .iter()
            .chain(&t.0.coordination)
            .flatten()
            .copied()
            .chain(t.1.iter().flatten().copied())
            .map(f64::to_bits)
            .collect()
    };
    for threads in [2, 3, 5] {
        assert_eq!(bits(&run(threads)), bits(&one), "{threads} threads");
    }
}

#[test]
fn bad_settings_are_errors_naming_the_value() {
    let e = Rdf::new(0, 2.5, &[]).unwrap_err().to_string();
    assert!(e.contains("bins = 0"), "{e}");
    for rc in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let e = Rdf::new(10, rc, &[]).unwrap_err().to_string();
        assert!(e.contains("g(r) cutoff"), "{e}");
    }
    let mut rdf = Rdf::new(10, 4.1, &[]).unwrap();
    let e = rdf.add(&frame(50, 1.0, 1, 0)).unwrap_err().to_string();
    assert!(
        e.contains("cutoff 4.1 is longer than half the box (shortest side 8.1"),
        "{e}"
    );
    assert_eq!(rdf.frames(), 0);
    let mut f = frame(50, 1.0, 1, 0);
    f.types.pop();
    let mut rdf = Rdf::new(10, 2.5, &[]).unwrap();
    assert!(rdf.add(&f).unwrap_err().to_string().contains("49 types"));
}

#[test]
fn the_table_text_has_lammps_s_columns() {
    let mut rdf = Rdf::new(4, 2.0, &[(0, 1)]).unwrap();
    rdf.add(&frame(200, 1.0, 3, 0)).unwrap();
    let text = rdf.table().to_text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[1], "# bin r g_1_2 coord_1_2");
    assert_eq!(lines.len(), 6);
    assert!(lines[2].starts_with("1 0.25 "), "{}", lines[2]);
    assert_eq!(lines[5].split_whitespace().count(), 4);
}
