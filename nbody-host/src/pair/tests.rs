//! The potential's tables, mixing, WCA, LAMMPS's commands and table files.

use super::*;
use crate::error::Error;

#[test]
fn tables_are_symmetric_and_every_pair_is_needed() {
    let lj = PairStyle::LennardJones;
    let p = PairPotential::builder(lj, 3)
        .coeff(0, 0, &[1.0, 1.0], 2.5)
        .coeff(2, 0, &[1.5, 0.8], 2.0)
        .coeff(0, 1, &[1.2, 0.9], 2.2)
        .coeff(1, 1, &[0.5, 0.88], 2.2)
        .coeff(1, 2, &[0.7, 1.1], 2.4)
        .coeff(2, 2, &[0.9, 0.95], 2.3)
        .build()
        .unwrap();
    let w = lj.row_words() as usize;
    assert_eq!(p.table().len(), 9 * w);
    for i in 0..3u32 {
        for j in 0..3u32 {
            let (a, b) = ((i * 3 + j) as usize * w, (j * 3 + i) as usize * w);
            assert_eq!(p.table()[a..a + w], p.table()[b..b + w]);
            assert_eq!(p.coeff(i, j), p.coeff(j, i));
        }
    }
    assert_eq!(p.coeff(0, 2).params(), &[1.5, 0.8]);
    assert_eq!(p.max_cutoff(), 2.5);
    let missing = PairPotential::builder(lj, 2)
        .coeff(0, 0, &[1.0, 1.0], 2.5)
        .coeff(1, 1, &[1.0, 1.0], 2.5)
        .build()
        .unwrap_err();
    assert!(missing.to_string().contains("types 0 1"), "{missing}");
    assert!(missing.to_string().contains("no mixing rule"), "{missing}");
    let e = PairPotential::builder(lj, 2)
        .coeff(0, 2, &[1.0, 1.0], 2.5)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("types 0 2"), "{e}");
    let e = PairPotential::new(lj, &[1.0], 2.5, false).unwrap_err();
    assert!(e.to_string().contains("epsilon sigma"), "{e}");
    for bad in [0.0, -1.0, f64::NAN, 1e-50, 1e300] {
        let e = PairPotential::new(lj, &[1.0, 1.0], bad, false).unwrap_err();
        assert!(e.to_string().contains("cutoff"), "{e}");
    }
    assert!(PairPotential::builder(lj, 0).build().is_err());
    assert!(p.check_types(&[0, 2, 1]).is_ok());
    let e = p.check_types(&[0, 3]).unwrap_err();
    assert!(
        e.to_string().contains("atom type = 3 must be below")
            && e.to_string().contains("from 1 in LAMMPS"),
        "{e}"
    );
}

#[test]
fn examples_give_every_pair_of_types_its_own_coefficients() {
    for &style in PairStyle::ALL {
        let one = PairPotential::example(style, 1, None, false).unwrap();
        assert_eq!(one.coeff(0, 0).params().len(), style.params().len());
        let three = PairPotential::example(style, 3, Some(2.0), true).unwrap();
        let c: Vec<&PairCoeff> = [(0, 0), (0, 1), (1, 1), (0, 2), (2, 2)]
            .iter()
            .map(|&(i, j)| three.coeff(i, j))
            .collect();
        for (k, a) in c.iter().enumerate() {
            for b in &c[k + 1..] {
                assert_ne!(a, b, "{}", style.name());
            }
        }
        assert_eq!(three.max_cutoff(), 2.0);
    }
}

#[test]
fn the_offset_is_the_energy_at_the_cutoff() {
    let p = PairPotential::new(PairStyle::LennardJones, &[1.0, 1.0], 2.5, true).unwrap();
    assert!((p.offset(0, 0) + 0.016316891136).abs() < 1e-12);
    assert_eq!(p.default_skin(), 0.3f32 as f64);
    assert_eq!(
        p.to_string(),
        "lj/cut (epsilon 1, sigma 1, cutoff 2.5, shifted)"
    );
}

#[test]
fn mixing_follows_lammps_per_style_and_refuses_the_styles_lammps_does_not_mix() {
    let lj = PairPotential::builder(PairStyle::LennardJones, 3)
        .coeff(0, 0, &[1.0, 1.0], 2.5)
        .coeff(1, 1, &[0.25, 2.0], 3.0)
        .coeff(2, 2, &[4.0, 0.5], 1.5)
        .coeff(1, 2, &[0.3, 0.3], 1.0)
        .mix(Mixing::Geometric)
        .build()
        .unwrap();
    let c = lj.coeff(0, 1);
    assert!(c.is_mixed());
    assert_eq!(c.params(), &[0.5, 2f64.sqrt()]);
    assert_eq!(c.cutoff_f64(), 7.5f64.sqrt());
    assert!(!lj.coeff(1, 2).is_mixed());
    assert_eq!(lj.coeff(2, 1).params(), &[0.3, 0.3]);
    let ar = PairPotential::builder(PairStyle::LennardJones, 2)
        .coeff(0, 0, &[1.0, 1.0], 2.5)
        .coeff(1, 1, &[0.25, 2.0], 3.0)
        .mix(Mixing::Arithmetic)
        .build()
        .unwrap();
    assert_eq!(ar.coeff(0, 1).params(), &[0.5, 1.5]);
    assert_eq!(ar.coeff(0, 1).cutoff_f64(), 2.75);
    // soft: the prefactor always geometric, the cutoff by the rule.
    let soft = PairPotential::builder(PairStyle::Soft, 2)
        .coeff(0, 0, &[1.0], 1.0)
        .coeff(1, 1, &[4.0], 2.0)
        .mix(Mixing::Arithmetic)
        .build()
        .unwrap();
    assert_eq!(soft.coeff(0, 1).params(), &[2.0]);
    assert_eq!(soft.coeff(0, 1).cutoff_f64(), 1.5);
    // yukawa: A by mix_energy(A, A, 1, 1), kappa kept.
    let y = PairPotential::builder(PairStyle::Yukawa, 2)
        .coeff(0, 0, &[1.0, 2.0], 2.0)
        .coeff(1, 1, &[9.0, 2.0], 2.0)
        .mix(Mixing::SixthPower)
        .build()
        .unwrap();
    assert_eq!(y.coeff(0, 1).params(), &[3.0, 2.0]);
    for style in [PairStyle::Morse, PairStyle::Born, PairStyle::Buckingham] {
        let ex = PairPotential::example(style, 1, None, false).unwrap();
        let p = ex.coeff(0, 0).params().to_vec();
        let e = PairPotential::builder(style, 2)
            .coeff(0, 0, &p, 2.5)
            .coeff(1, 1, &p, 2.5)
            .mix(Mixing::Geometric)
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("does not mix"), "{e}");
        assert!(e.to_string().contains("types 0 1"), "{e}");
    }
    // Mixing needs both like pairs.
    let e = PairPotential::builder(PairStyle::LennardJones, 2)
        .coeff(0, 0, &[1.0, 1.0], 2.5)
        .mix(Mixing::Geometric)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("types 1 1"), "{e}");
}

#[test]
fn wca_is_lj_cut_at_the_minimum_shifted() {
    let w = PairPotential::wca(1.0, 1.0).unwrap();
    assert_eq!(w.style(), PairStyle::LennardJones);
    assert!(w.shift());
    let rc = w.coeff(0, 0).cutoff_f64();
    assert_eq!(rc, 2f64.powf(1.0 / 6.0));
    // Zero force and (shifted) zero energy at the cutoff, eps at contact.
    let at = w.reference(0, 0, rc * rc);
    assert!(at.fpair.abs() < 1e-12);
    assert!((w.offset(0, 0) + 1.0).abs() < 1e-12);
}

#[test]
fn the_table_style_refuses_the_shift_and_lays_out_its_data_after_the_rows() {
    let two = PairPotential::example(PairStyle::Table, 2, None, false).unwrap();
    let words = PairStyle::Table.row_words() as usize;
    let rows = 4 * words;
    // Three pairs of 499 segments of 4 words.
    assert_eq!(two.table().len(), rows + 3 * 499 * 4);
    // Each pair's row finds its data: the base word.
    let base = |i: u32, j: u32| two.table()[(i * 2 + j) as usize * words + 4];
    assert_eq!(base(0, 0), rows as f32);
    assert_eq!(base(0, 1), (rows + 1996) as f32);
    assert_eq!(base(1, 0), base(0, 1));
    assert_eq!(base(1, 1), (rows + 2 * 1996) as f32);
    let e = PairPotential::builder(PairStyle::Table, 1)
        .coeff_data(0, 0, &[], 2.5, two.coeff(0, 0).data.clone())
        .shift(true)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("takes no shift"), "{e}");
}

/// A table file of Lennard-Jones in the three spacings.
fn lj_file(n: usize) -> String {
    let mut s = String::from("# Lennard-Jones, three ways\n\n");
    for (key, params) in [
        ("PLAIN", format!("N {n}")),
        ("LINR", format!("N {n} R 0.8 2.5")),
        ("LINRSQ", format!("N {n} RSQ 0.8 2.5")),
    ] {
        s += &format!("{key}\n{params}\n\n");
        for i in 0..n {
            let t = i as f64 / (n - 1) as f64;
            let r = if key == "LINRSQ" {
                (0.64 + (6.25 - 0.64) * t).sqrt()
            } else {
                0.8 + 1.7 * t
            };
            let (s6, s12) = (r.powi(-6), r.powi(-12));
            s += &format!(
                "{} {r:.12} {:.12e} {:.12e}\n",
                i + 1,
                4.0 * (s12 - s6),
                24.0 * (2.0 * s12 - s6) / r
            );
        }
        s += "\n";
    }
    s
}

#[test]
fn table_files_are_read_as_lammps_reads_them() {
    let file = TableFile::parse(&lj_file(300), "lj.table").unwrap();
    assert_eq!(file.keywords(), ["PLAIN", "LINR", "LINRSQ"]);
    for key in ["PLAIN", "LINR", "LINRSQ"] {
        let s = file.section(key).unwrap();
        assert_eq!(s.r().len(), 300);
        assert_eq!(s.range(), (0.8, 2.5));
        for n in [300, 1000] {
            let t = LinearTable::new(&s, n, Some(2.2)).unwrap();
            assert_eq!(t.points(), n);
            assert_eq!(t.cutoff(), 2.2);
            let p = PairPotential::builder(PairStyle::Table, 1)
                .tabulated(0, 0, &t)
                .build()
                .unwrap();
            for r in [0.85f64, 1.0, 1.12, 1.5, 2.1] {
                let want = 24.0 * (2.0 * r.powi(-12) - r.powi(-6)) / (r * r);
                let got = p.reference(0, 0, r * r).fpair;
                assert!(
                    (got - want).abs() < 2e-2 * want.abs().max(1.0),
                    "{key} {n} r {r}: {got} vs {want}"
                );
            }
        }
    }
    // The RSQ section at its own N and cutoff is used as is (LAMMPS's match).
    let s = file.section("LINRSQ").unwrap();
    let t = LinearTable::new(&s, 300, None).unwrap();
    assert_eq!(t.data()[4..304], s.e()[..]);
}

#[test]
fn bad_tables_are_one_clear_error_each() {
    let file = TableFile::parse(&lj_file(50), "lj.table").unwrap();
    let s = file.section("LINR").unwrap();
    let e = LinearTable::new(&s, 100, Some(3.0)).unwrap_err();
    assert!(
        e.to_string()
            .contains("pair table cutoff 3 is outside the table LINR"),
        "{e}"
    );
    let e = LinearTable::new(&s, 100, Some(0.8)).unwrap_err();
    assert!(e.to_string().contains("outside"), "{e}");
    let e = file.section("NOPE").unwrap_err();
    assert!(
        e.to_string()
            .contains("no section \"NOPE\" (sections: PLAIN, LINR, LINRSQ)"),
        "{e}"
    );
    let cases: [(&str, &str); 6] = [
        ("K\nN 3\n\n1 1.0 1 1\n2 1.1 1 1\n", "2 point lines, N = 3"),
        (
            "K\nN 2 R 1.0\n\n1 1.0 1 1\n2 1.1 1 1\n",
            "rhi is not a finite number",
        ),
        ("K\nN 2 BITMAP 1 2\n\n1 1.0 1 1\n2 1.1 1 1\n", "BITMAP"),
        ("K\nN 2\n1 1.0 1 1\n2 1.1 1 1\n", "expected the blank line"),
        (
            "K\nN 2\n\n1 1.0 1 x\n2 1.1 1 1\n",
            "expected \"index r e f\"",
        ),
        (
            "K\nN 2\n\n1 1.1 1 1\n2 1.0 1 1\n",
            "r must be > 0 and increasing",
        ),
    ];
    for (text, want) in cases {
        let e = TableFile::parse(text, "t.table")
            .and_then(|f| f.section("K"))
            .unwrap_err();
        assert!(matches!(e, Error::InvalidFile { .. }), "{e}");
        assert!(e.to_string().contains(want), "{want}: {e}");
    }
    let e = TableFile::parse("K\nNX 2\n", "t.table").unwrap_err();
    assert!(e.to_string().contains("sets no N"), "{e}");
    let e = TableFile::read("/no/such/file.table").unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
}

#[test]
fn lammps_commands_build_the_potentials_they_name() {
    // Kob-Andersen, as in.ka would write it.
    let mut ka = PairSpec::parse_lammps(&["lj/cut", "2.5"]).unwrap();
    for c in ["1 1 1.0 1.0", "1 2 1.5 0.8 2.0", "2 2 0.5 0.88 2.2"] {
        ka.pair_coeff(&c.split(' ').collect::<Vec<_>>()).unwrap();
    }
    ka.pair_modify(&["shift", "yes"]).unwrap();
    let p = ka.build(2).unwrap();
    assert!(p.shift());
    assert_eq!(p.coeff(0, 0).cutoff_f64(), 2.5);
    assert_eq!(p.coeff(0, 1).params(), &[1.5, 0.8]);
    assert_eq!(p.coeff(1, 1).cutoff_f64(), 2.2);
    assert_eq!(ka.highest_type(), 2);
    // Wildcards, and later commands override earlier ones.
    let mut w = PairSpec::parse_lammps(&["morse", "2.5"]).unwrap();
    w.pair_coeff(&["*", "*", "1.0", "3.0", "1.1"]).unwrap();
    w.pair_coeff(&["2", "3", "2.0", "3.0", "1.1", "2.0"])
        .unwrap();
    let p = w.build(3).unwrap();
    assert_eq!(p.coeff(2, 2).params(), &[1.0, 3.0, 1.1]);
    assert_eq!(p.coeff(1, 2).params(), &[2.0, 3.0, 1.1]);
    assert_eq!(p.coeff(1, 2).cutoff_f64(), 2.0);
    // Yukawa: kappa from pair_style; wca: lj/cut at 2^(1/6) sigma, shifted.
    let mut y = PairSpec::parse_lammps(&["yukawa", "1.5", "3.0"]).unwrap();
    y.pair_coeff(&["1", "1", "2.0"]).unwrap();
    assert_eq!(y.build(1).unwrap().coeff(0, 0).params(), &[2.0, 1.5]);
    let mut wca = PairSpec::parse_lammps(&["wca"]).unwrap();
    wca.pair_coeff(&["1", "1", "1.0", "2.0"]).unwrap();
    let p = wca.build(1).unwrap();
    assert!(p.shift() && p.coeff(0, 0).cutoff_f64() == 2.0 * 2f64.powf(1.0 / 6.0));
    // One clear line each.
    let errors: Vec<(Result<PairPotential>, &str)> = vec![
        (
            PairSpec::parse_lammps(&["lj/cutt", "2.5"]).map(|_| unreachable!()),
            "unknown pair style \"lj/cutt\"",
        ),
        (
            PairSpec::parse_lammps(&["yukawa"]).map(|_| unreachable!()),
            "needs kappa",
        ),
        (
            PairSpec::parse_lammps(&["table", "spline", "100"]).map(|_| unreachable!()),
            "table linear N",
        ),
        (
            PairSpec::parse_lammps(&["lj/cut", "x"]).map(|_| unreachable!()),
            "cutoff = \"x\"",
        ),
        (ka.build(1), "type 2 is beyond the 1 atom type"),
    ];
    for (r, want) in errors {
        let e = r.unwrap_err();
        assert!(e.to_string().contains(want), "{want}: {e}");
    }
    let mut s = PairSpec::parse_lammps(&["lj/cut"]).unwrap();
    for (args, want) in [
        (vec!["2", "1", "1", "1"], "I <= J"),
        (vec!["0", "1", "1", "1"], "from 1"),
        (vec!["1", "1", "1"], "takes I J epsilon sigma [CUTOFF]"),
        (vec!["1", "1", "one", "1"], "epsilon = \"one\""),
        (vec!["a", "1", "1", "1"], "not a type number"),
    ] {
        let e = s.pair_coeff(&args).unwrap_err();
        assert!(e.to_string().contains(want), "{want}: {e}");
    }
    s.pair_coeff(&["1", "1", "1", "1"]).unwrap();
    let e = s.build(1).unwrap_err();
    assert!(e.to_string().contains("no cutoff"), "{e}");
    let e = s.pair_modify(&["mix", "harmonic"]).unwrap_err();
    assert!(e.to_string().contains("mix \"harmonic\""), "{e}");
    // Morse does not mix: LAMMPS's "All pair coeffs are not set".
    let mut m = PairSpec::parse_lammps(&["morse", "2.5"]).unwrap();
    m.pair_coeff(&["1", "1", "1", "3", "1.1"]).unwrap();
    m.pair_coeff(&["2", "2", "1", "3", "1.1"]).unwrap();
    let e = m.build(2).unwrap_err();
    assert!(
        e.to_string()
            .contains("types 1 2: pair style morse does not mix"),
        "{e}"
    );
    assert_eq!(types_from_lammps(&[1.0, 2.0, 1.0]).unwrap(), [0, 1, 0]);
    for bad in [0.0, 1.5, -1.0, f32::NAN] {
        let e = types_from_lammps(&[1.0, bad]).unwrap_err();
        assert!(e.to_string().contains("body 1: atom type"), "{e}");
    }
}

#[test]
fn table_commands_read_their_files() {
    let dir = std::env::temp_dir().join(format!("nbody-pair-spec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("lj.table"), lj_file(200)).unwrap();
    let mut t = PairSpec::parse_lammps(&["table", "linear", "1000"])
        .unwrap()
        .table_dir(&dir);
    t.pair_coeff(&["1", "1", "lj.table", "LINR"]).unwrap();
    t.pair_coeff(&["1", "2", "lj.table", "PLAIN", "2.0"])
        .unwrap();
    t.pair_coeff(&["2", "2", "lj.table", "LINRSQ"]).unwrap();
    let p = t.build(2).unwrap();
    assert_eq!(p.coeff(0, 0).cutoff_f64(), 2.5);
    assert_eq!(p.coeff(0, 1).cutoff_f64(), 2.0);
    assert_eq!(p.coeff(1, 1).data().len(), 4 + 2000);
    let mut bad = PairSpec::parse_lammps(&["table", "linear", "1000"])
        .unwrap()
        .table_dir(&dir);
    bad.pair_coeff(&["1", "1", "lj.table", "LINR", "2.6"])
        .unwrap();
    let e = bad.build(1).unwrap_err();
    assert!(e.to_string().contains("outside the table"), "{e}");
    let mut shifted = t.clone();
    shifted.pair_modify(&["shift", "yes"]).unwrap();
    assert!(
        shifted
            .build(2)
            .unwrap_err()
            .to_string()
            .contains("no shift")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
