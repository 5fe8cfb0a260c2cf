//! The MD binning kernel of the committed PTX (`nbody_md_bin`) at its clamp:
//! a position just below the box length whose `x * n / L` rounds up to `n`
//! in f32 must land in the last cell, as the host's `Grid::cell_coords`
//! (the builder's own cell function) puts it. The plan's tests check
//! binning on the emulator, and their softcuda runs never hit the clamp;
//! this one does, on every side, with `counts` exactly `nx ny nz` words so
//! a cell index past the end is an illegal address.

mod common;

use common::*;
use gpu_kernels::periodic::{Grid, wrap};
use gpu_kernels::shape;
use gpu_kernels::vec4::Vec4;

/// The largest f32 below `l` whose cell coordinate `(x * (n / l)) as u32`
/// is `n` (one past the last cell), if one is within 64 ulps of `l`.
fn rounds_up(l: f32, n: u32) -> Option<f32> {
    let per_length = n as f32 / l;
    let mut x = l;
    for _ in 0..64 {
        x = f32::from_bits(x.to_bits() - 1);
        if (x * per_length) as u32 >= n {
            return Some(x);
        }
    }
    None
}

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn bodies_just_below_the_box_length_land_in_the_last_cell() {
    let m = module();
    // (box length, cells per side) pairs whose clamp matters, found below.
    let mut cases = Vec::new();
    for l in [5.5f32, 6.3, 7.7, 9.1, 13.0, 17.9, 23.3, 31.7] {
        for n in 2..12u32 {
            if let Some(x) = rounds_up(l, n) {
                cases.push((l, n, x));
            }
        }
    }
    assert!(cases.len() >= 8, "too few clamp cases: {cases:?}");
    for &(l, n, x) in &cases {
        let grid = Grid::new(l, l, l, n, n, n);
        // The clamp body on each side and in the corner, and bodies inside.
        let mut bodies = vec![
            [x, 0.5 * l, 0.25 * l],
            [0.5 * l, x, 0.75 * l],
            [0.1 * l, 0.9 * l, x],
            [x, x, x],
        ];
        let mut g = Gen::new(n as u64);
        for _ in 0..60 {
            bodies.push([g.uniform(0.0, l), g.uniform(0.0, l), g.uniform(0.0, l)]);
        }
        let count = bodies.len() as u32;
        let pos: Vec<u8> = bodies
            .iter()
            .flat_map(|p| [p[0], p[1], p[2], 1.0])
            .flat_map(f32::to_le_bytes)
            .collect();
        for schedule in schedules() {
            let mut dev = device();
            let p = upload(&mut dev, &pos);
            let tag = upload(&mut dev, &vec![0u8; 16 * count as usize]);
            let cell = upload(&mut dev, &vec![0u8; 4 * count as usize]);
            let slot = upload(&mut dev, &vec![0u8; 4 * count as usize]);
            let counts = upload(&mut dev, &vec![0u8; 4 * grid.cells() as usize]);
            let s = shape::per_body(count, 32);
            let args = [
                Arg::Ptr(p),
                Arg::Ptr(tag),
                Arg::Ptr(cell),
                Arg::Ptr(slot),
                Arg::Ptr(counts),
                Arg::U32(count),
                Arg::F32(l),
                Arg::F32(l),
                Arg::F32(l),
                Arg::U32(n),
                Arg::U32(n),
                Arg::U32(n),
            ];
            launch(
                &mut dev,
                &m,
                "nbody_md_bin",
                s.grid,
                s.block,
                s.shared_bytes,
                &args,
                schedule,
            )
            .unwrap_or_else(|e| panic!("L {l} n {n} {schedule:?}: {e}"));
            let got = words(&download(&mut dev, cell, 4 * count as usize));
            for (i, b) in bodies.iter().enumerate() {
                let w = Vec4::new(wrap(b[0], l).0, wrap(b[1], l).0, wrap(b[2], l).0, 1.0);
                let want = grid.cell_index(grid.cell_coords(w));
                assert_eq!(got[i], want, "L {l} n {n} body {i} at {b:?}, {schedule:?}");
            }
            let per_cell = words(&download(&mut dev, counts, 4 * grid.cells() as usize));
            assert_eq!(per_cell.iter().sum::<u32>(), count, "L {l} n {n}");
            assert_eq!(
                per_cell[grid.cells() as usize - 1],
                1 + bodies[4..]
                    .iter()
                    .filter(|b| {
                        let w = Vec4::new(b[0], b[1], b[2], 1.0);
                        grid.cell_coords(w) == [n - 1; 3]
                    })
                    .count() as u32,
                "L {l} n {n}: the corner body in the last cell"
            );
        }
    }
}
