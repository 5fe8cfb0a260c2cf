//! The MD binning kernel of the committed PTX (`nbody_md_bin`) at its clamp:
//! a position just below the box length whose `x * n / L` rounds up to `n`
//! in f32 must land in the last cell, as the host's `Grid::cell_coords`
//! (the builder's own cell function) puts it. The plan's tests check
//! binning on the emulator, and their softcuda runs never hit the clamp;
//! this one does, on every side, with `counts` exactly `nx ny nz` words so
//! a cell index past the end is an illegal address.
//!
//! Also the kernel's counters against Nsight Compute's on the H200
//! (docs/gpu/ncu-issue24/ncu_lj_256.csv): its `atom.global.add` with 16
//! lanes on each of two counters costs 16 sectors a warp there, not 1.

mod common;

use common::*;
use gpu_kernels::periodic::{Grid, STATUS_DUE, STATUS_WORDS, wrap};
use gpu_kernels::shape;
use gpu_kernels::vec4::Vec4;
use softcuda::Device;

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

/// `nbody_md_bin`'s device buffers and arguments for `count` bodies at
/// `pos` in a cubic box of side `l` and `n` cells a side: zeroed tags,
/// cells, slots and `n^3` counts, and the status words of a step that
/// builds (the kernel bins only then).
struct Binning {
    cell: u64,
    counts: u64,
    args: [Arg; 13],
}

fn binning(dev: &mut Device, pos: &[u8], count: u32, l: f32, n: u32) -> Binning {
    let p = upload(dev, pos);
    let tag = upload(dev, &vec![0u8; 16 * count as usize]);
    let cell = upload(dev, &vec![0u8; 4 * count as usize]);
    let slot = upload(dev, &vec![0u8; 4 * count as usize]);
    let counts = upload(dev, &vec![0u8; 4 * (n * n * n) as usize]);
    let mut due = vec![0u32; STATUS_WORDS as usize];
    due[STATUS_DUE as usize] = 1;
    let due: Vec<u8> = due.iter().flat_map(|w| w.to_le_bytes()).collect();
    let status = upload(dev, &due);
    let args = [
        Arg::Ptr(p),
        Arg::Ptr(tag),
        Arg::Ptr(cell),
        Arg::Ptr(slot),
        Arg::Ptr(counts),
        Arg::Ptr(status),
        Arg::U32(count),
        Arg::F32(l),
        Arg::F32(l),
        Arg::F32(l),
        Arg::U32(n),
        Arg::U32(n),
        Arg::U32(n),
    ];
    Binning { cell, counts, args }
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
            let Binning { cell, counts, args } = binning(&mut dev, &pos, count, l, n);
            let s = shape::per_body(count, 32);
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

/// Nsight Compute's `metric` for the first launch of `kernel` in the
/// committed H200 CSV of `lj_melt --cells 4` (issue 24).
fn ncu_lj_256(kernel: &str, metric: &str) -> u64 {
    let csv = include_str!("../../docs/gpu/ncu-issue24/ncu_lj_256.csv");
    let row = csv
        .lines()
        .find(|l| l.contains(&format!("\"{kernel}\"")) && l.contains(&format!("\"{metric}\"")))
        .unwrap_or_else(|| panic!("no {kernel} {metric} in the CSV"));
    let value = row.rsplit(",\"").next().expect("a last field");
    value
        .trim_end_matches('"')
        .replace(',', "")
        .parse()
        .expect("a count")
}

#[test]
fn md_bin_counters_match_nsight_compute_on_the_lj_melt_lattice() {
    // lj_melt's atoms: fcc, 4 x 4 x 4 unit cells at density 0.8442, in
    // nbody_host::ic::fcc_lattice's order (x fastest, four basis atoms a
    // cell), binned into 2 x 2 x 2 cells as that run did (grid 2 x 128).
    const BASIS: [[f64; 3]; 4] = [
        [0.0, 0.0, 0.0],
        [0.5, 0.5, 0.0],
        [0.5, 0.0, 0.5],
        [0.0, 0.5, 0.5],
    ];
    let a = (4.0f64 / 0.8442).cbrt();
    let mut pos = Vec::new();
    for k in 0..4 {
        for j in 0..4 {
            for i in 0..4 {
                for b in BASIS {
                    let c = [i as f64 + b[0], j as f64 + b[1], k as f64 + b[2]];
                    pos.extend(c.map(|c| (c * a) as f32));
                    pos.push(1.0f32);
                }
            }
        }
    }
    let count = 256u32;
    let l = (4.0 * a) as f32;
    let n = 2u32;
    let pos: Vec<u8> = pos.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut dev = device();
    let m = module();
    let Binning { counts, args, .. } = binning(&mut dev, &pos, count, l, n);
    let s = launch(
        &mut dev,
        &m,
        "nbody_md_bin",
        2,
        128,
        0,
        &args,
        softcuda::Schedule::Deterministic,
    )
    .expect("nbody_md_bin runs");
    // The same inputs as the profiled run: loads and stores agree.
    let ncu = |metric| ncu_lj_256("nbody_md_bin", metric);
    assert_eq!(
        (
            s.global_load_sectors,
            s.global_sectors - s.global_load_sectors
        ),
        (
            ncu("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
            ncu("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
        ),
        "load and store sectors"
    );
    // Each warp: 32 lanes, two cells, 16 lanes on each counter.
    let per_cell = words(&download(&mut dev, counts, 4 * 8));
    assert_eq!(per_cell, vec![32; 8], "atoms per cell");
    assert_eq!(
        s.global_atomic_sectors,
        ncu("l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum")
            + ncu("l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum"),
        "atomic sectors"
    );
}
