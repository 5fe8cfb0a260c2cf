mod common;
use common::*;
use softcuda::Schedule;

#[test]
fn smoke_tiled() {
    let m = module();
    for k in &m.kernels {
        eprintln!(
            "{} insts={} r32={} r64={} p={} params={:?}",
            k.name,
            k.len(),
            0,
            0,
            0,
            k.params
                .iter()
                .map(|p| (p.offset, p.size))
                .collect::<Vec<_>>()
        );
    }
    let n = 100usize;
    let p = bodies(n, 7);
    let mut dev = device();
    let pos = upload(&mut dev, &to_bytes(&p));
    let acc = upload(&mut dev, &vec![0u8; 16 * n]);
    let block = 32;
    let grid = (n as u32).div_ceil(2 * block);
    let st = launch(
        &mut dev,
        &m,
        "nbody_tiled_accel",
        grid,
        block,
        block * 16,
        &[
            Arg::Ptr(pos),
            Arg::Ptr(acc),
            Arg::U32(n as u32),
            Arg::F32(1.0),
            Arg::F32(0.01),
        ],
        Schedule::Deterministic,
    );
    eprintln!("{st:?}");
    let st = st.unwrap();
    let a = from_bytes(&download(&mut dev, acc, 16 * n));
    let r = reference_accel(&p, 1.0, 0.01);
    for i in 0..n {
        for k in 0..3 {
            let e = (a[i][k] as f64 - r[i].0[k]).abs();
            assert!(
                e <= accel_tolerance(n) * r[i].1[k] + 1e-30,
                "i={i} k={k} {} vs {}",
                a[i][k],
                r[i].0[k]
            );
        }
    }
    eprintln!("{}", st.json_fields());
}

#[test]
fn smoke_triangle_adv() {
    let m = module();
    let n = 100usize;
    let p = bodies(n, 7);
    for sched in schedules() {
        let mut dev = device();
        let pos = upload(&mut dev, &to_bytes(&p));
        let acc = upload(&mut dev, &vec![0u8; 16 * n]);
        let block = 32u32;
        let groups = (n as u32 - 2) / block + 1;
        let grid = groups * (groups + 1) / 2;
        let st = launch(
            &mut dev,
            &m,
            "nbody_triangle_accel",
            grid,
            block,
            2 * block * 16,
            &[
                Arg::Ptr(pos),
                Arg::Ptr(acc),
                Arg::U32(n as u32),
                Arg::F32(1.0),
                Arg::F32(0.01),
            ],
            sched,
        );
        eprintln!("{sched:?} {st:?}");
        let _st = st.unwrap();
        let a = from_bytes(&download(&mut dev, acc, 16 * n));
        let r = reference_accel(&p, 1.0, 0.01);
        for i in 0..n {
            for k in 0..3 {
                let e = (a[i][k] as f64 - r[i].0[k]).abs();
                assert!(
                    e <= accel_tolerance(2 * n) * r[i].1[k] + 1e-30,
                    "i={i} k={k} {} vs {}",
                    a[i][k],
                    r[i].0[k]
                );
            }
        }
    }
}

#[test]
fn smoke_counts() {
    let m = module();
    for n in [33usize, 64, 100] {
        let p = bodies(n, 7);
        let mut counts = vec![];
        for sched in schedules() {
            let mut dev = device();
            let pos = upload(&mut dev, &to_bytes(&p));
            let acc = upload(&mut dev, &vec![0u8; 16 * n]);
            let block = 32u32;
            let groups = (n as u32 - 2) / block + 1;
            let grid = groups * (groups + 1) / 2;
            let st = launch(
                &mut dev,
                &m,
                "nbody_triangle_accel",
                grid,
                block,
                2 * block * 16,
                &[
                    Arg::Ptr(pos),
                    Arg::Ptr(acc),
                    Arg::U32(n as u32),
                    Arg::F32(1.0),
                    Arg::F32(0.01),
                ],
                sched,
            )
            .unwrap();
            counts.push(st.thread_instructions);
        }
        eprintln!("n={n} {counts:?}");
    }
}
