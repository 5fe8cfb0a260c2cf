//! Streams and the memory model across launches (issue 24 item 3): work on
//! streams CUDA does not order (two created streams, a non-blocking stream
//! and the legacy stream, an event recorded on the wrong stream) is checked
//! for races across launches and copies, and runs overlapped in the
//! adversarial schedule; stream order, events and host synchronisation
//! order it, and then nothing is reported.
//!
//! Drives `state::Driver` directly with its own configuration, so the
//! schedule and the instruction limit can differ per test.

use softcuda::{LaunchConfig, Module, Schedule};
use softcuda_driver::config::{Config, LogTarget};
use softcuda_driver::state::{Driver, STREAM_NON_BLOCKING, StreamRef};

const LAUNCH_FAILED: u32 = 719;
const LAUNCH_TIMEOUT: u32 = 702;

const HEADER: &str = ".version 7.0\n.target sm_70\n.address_size 64\n";

/// `add_one(a, b, n)`: `b[i] = a[i] + 1`; `spin(flag)`: thread 0 waits until
/// `flag` is 1 (acquire); `set(flag)`: thread 0 stores 1 to `flag` (release).
fn ptx() -> String {
    format!(
        "{HEADER}.visible .entry add_one(.param .u64 a, .param .u64 b, .param .u32 n)\n{{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n\tld.param.u64 %rd1, [a];\n\tld.param.u64 %rd2, [b];\n\tld.param.u32 %r1, [n];\n\tcvta.to.global.u64 %rd1, %rd1;\n\tcvta.to.global.u64 %rd2, %rd2;\n\tmov.u32 %r2, %tid.x;\n\tmov.u32 %r3, %ctaid.x;\n\tmov.u32 %r4, %ntid.x;\n\tmad.lo.s32 %r5, %r3, %r4, %r2;\n\tsetp.ge.u32 %p1, %r5, %r1;\n\t@%p1 bra END;\n\tmul.wide.u32 %rd3, %r5, 4;\n\tadd.s64 %rd4, %rd1, %rd3;\n\tadd.s64 %rd5, %rd2, %rd3;\n\tld.global.u32 %r6, [%rd4];\n\tadd.u32 %r6, %r6, 1;\n\tst.global.u32 [%rd5], %r6;\nEND:\n\tret;\n}}\n\
.visible .entry spin(.param .u64 f)\n{{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<4>;\n\tld.param.u64 %rd1, [f];\n\tcvta.to.global.u64 %rd1, %rd1;\n\tmov.u32 %r1, %tid.x;\n\tsetp.ne.u32 %p1, %r1, 0;\n\t@%p1 bra END;\nSPIN:\n\tld.acquire.gpu.global.u32 %r2, [%rd1];\n\tsetp.eq.u32 %p2, %r2, 0;\n\t@%p2 bra SPIN;\nEND:\n\tret;\n}}\n\
.visible .entry set(.param .u64 f)\n{{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<4>;\n\tld.param.u64 %rd1, [f];\n\tcvta.to.global.u64 %rd1, %rd1;\n\tmov.u32 %r1, %tid.x;\n\tsetp.ne.u32 %p1, %r1, 0;\n\t@%p1 bra END;\n\tmov.u32 %r2, 1;\n\tst.release.gpu.global.u32 [%rd1], %r2;\nEND:\n\tret;\n}}\n"
    )
}

const N: u32 = 256;

struct Dev {
    d: Driver,
    ctx: u32,
    add_one: u32,
    spin: u32,
    set: u32,
}

fn dev(schedule: Schedule, log: LogTarget) -> Dev {
    let mut d = Driver::new(Config {
        schedule,
        log,
        max_instructions: 1 << 20,
        ..Config::default()
    });
    let ctx = d.create_context(0);
    let m = d.load_module(ctx, ptx().as_bytes()).unwrap();
    let add_one = d.get_function(m, "add_one").unwrap();
    let spin = d.get_function(m, "spin").unwrap();
    let set = d.get_function(m, "set").unwrap();
    Dev {
        d,
        ctx,
        add_one,
        spin,
        set,
    }
}

impl Dev {
    fn buffer(&mut self, value: u32) -> u64 {
        let p = self
            .d
            .ctx(self.ctx)
            .unwrap()
            .dev
            .memory
            .alloc(4 * N as u64)
            .unwrap();
        let bytes: Vec<u8> = (0..N).flat_map(|_| value.to_le_bytes()).collect();
        self.d
            .ctx(self.ctx)
            .unwrap()
            .dev
            .memory
            .write(p, &bytes)
            .unwrap();
        p
    }

    fn stream(&mut self, flags: u32) -> StreamRef {
        StreamRef::Id(self.d.create_stream(self.ctx, flags, 0).unwrap())
    }

    /// `b[i] = a[i] + 1` on `stream`.
    fn add_one(&mut self, a: u64, b: u64, stream: StreamRef) {
        let m = Module::from_ptx(&ptx()).unwrap();
        let params = m
            .kernel("add_one")
            .unwrap()
            .pack_params(&[&a.to_le_bytes(), &b.to_le_bytes(), &N.to_le_bytes()])
            .unwrap();
        let cfg = LaunchConfig::linear(N / 64, 64, 0);
        self.d
            .launch(self.ctx, self.add_one, cfg, params, stream)
            .unwrap();
    }

    fn flag_kernel(&mut self, function: u32, flag: u64, stream: StreamRef) {
        let cfg = LaunchConfig::linear(1, 32, 0);
        self.d
            .launch(self.ctx, function, cfg, flag.to_le_bytes().to_vec(), stream)
            .unwrap();
    }

    fn sync(&mut self) -> Result<(), u32> {
        self.d.synchronize(self.ctx)
    }

    fn read(&mut self, p: u64) -> Vec<u32> {
        let mut out = vec![0u8; 4 * N as usize];
        self.d
            .ctx(self.ctx)
            .unwrap()
            .dev
            .memory
            .read(p, &mut out)
            .unwrap();
        out.chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
}

fn schedules() -> [Schedule; 3] {
    [
        Schedule::Deterministic,
        Schedule::Adversarial { seed: 1 },
        Schedule::Adversarial { seed: 7 },
    ]
}

/// `a -> b` on `first`, then `b -> c` on `second`, with `order` run in
/// between (an event, a synchronisation, or nothing): the result.
fn two_launches(
    schedule: Schedule,
    first: u32,
    second: u32,
    order: impl Fn(&mut Dev, StreamRef, StreamRef),
) -> Result<Vec<u32>, u32> {
    let mut v = dev(schedule, LogTarget::Off);
    let (a, b, c) = (v.buffer(5), v.buffer(0), v.buffer(0));
    let s1 = if first == u32::MAX {
        StreamRef::Legacy
    } else {
        v.stream(first)
    };
    let s2 = v.stream(second);
    v.add_one(a, b, s1);
    order(&mut v, s1, s2);
    v.add_one(b, c, s2);
    v.sync()?;
    Ok(v.read(c))
}

#[test]
fn kernels_on_unordered_streams_race_across_launches() {
    let nothing = |_: &mut Dev, _, _| {};
    for schedule in schedules() {
        // Two non-blocking streams, and two blocking (created) streams:
        // CUDA orders neither pair, so the read of b races with its write.
        for flags in [STREAM_NON_BLOCKING, 0] {
            assert_eq!(
                two_launches(schedule, flags, flags, nothing),
                Err(LAUNCH_FAILED),
                "{schedule:?}, flags {flags}"
            );
        }
        // The legacy stream and a non-blocking stream.
        assert_eq!(
            two_launches(schedule, u32::MAX, STREAM_NON_BLOCKING, nothing),
            Err(LAUNCH_FAILED),
            "{schedule:?}, legacy then non-blocking"
        );
        // Ordered: the legacy stream and a blocking stream.
        assert_eq!(
            two_launches(schedule, u32::MAX, 0, nothing),
            Ok(vec![7; N as usize]),
            "{schedule:?}, legacy then blocking"
        );
    }
}

#[test]
fn events_stream_order_and_host_synchronisation_order_launches() {
    for schedule in schedules() {
        let want = Ok(vec![7; N as usize]);
        // One stream.
        let mut v = dev(schedule, LogTarget::Off);
        let (a, b, c) = (v.buffer(5), v.buffer(0), v.buffer(0));
        let s = v.stream(STREAM_NON_BLOCKING);
        v.add_one(a, b, s);
        v.add_one(b, c, s);
        assert_eq!(
            v.sync().map(|_| v.read(c)),
            want,
            "{schedule:?}, one stream"
        );
        // An event recorded after the first launch, waited for by the second stream.
        let event = |v: &mut Dev, s1, s2| {
            let e = v.d.create_event(v.ctx, 0).unwrap();
            v.d.record(e, s1).unwrap();
            v.d.wait_event(v.ctx, s2, e).unwrap();
        };
        assert_eq!(
            two_launches(schedule, STREAM_NON_BLOCKING, STREAM_NON_BLOCKING, event),
            want,
            "{schedule:?}, event"
        );
        // The host waits for the first stream before queueing the second launch.
        let host = |v: &mut Dev, s1, _| v.d.stream_synchronize(v.ctx, s1).unwrap();
        assert_eq!(
            two_launches(schedule, STREAM_NON_BLOCKING, STREAM_NON_BLOCKING, host),
            want,
            "{schedule:?}, stream synchronised"
        );
        let host = |v: &mut Dev, _, _| v.d.synchronize(v.ctx).unwrap();
        assert_eq!(
            two_launches(schedule, STREAM_NON_BLOCKING, STREAM_NON_BLOCKING, host),
            want,
            "{schedule:?}, context synchronised"
        );
    }
}

#[test]
fn an_event_recorded_on_the_wrong_stream_orders_nothing() {
    for schedule in schedules() {
        let wrong = |v: &mut Dev, _, s2| {
            let other = v.stream(STREAM_NON_BLOCKING);
            let e = v.d.create_event(v.ctx, 0).unwrap();
            v.d.record(e, other).unwrap();
            v.d.wait_event(v.ctx, s2, e).unwrap();
        };
        assert_eq!(
            two_launches(schedule, STREAM_NON_BLOCKING, STREAM_NON_BLOCKING, wrong),
            Err(LAUNCH_FAILED),
            "{schedule:?}"
        );
    }
}

#[test]
fn a_copy_on_another_stream_races_with_a_kernel_and_names_both() {
    let log = std::env::temp_dir().join(format!("softcuda-streams-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    for (schedule, with_event) in [
        (Schedule::Deterministic, false),
        (Schedule::Adversarial { seed: 3 }, false),
        (Schedule::Deterministic, true),
        (Schedule::Adversarial { seed: 3 }, true),
    ] {
        let mut v = dev(schedule, LogTarget::File(log.display().to_string()));
        let (a, b) = (v.buffer(0), v.buffer(0));
        let (s1, s2) = (v.stream(STREAM_NON_BLOCKING), v.stream(STREAM_NON_BLOCKING));
        let host: Vec<u8> = (0..N).flat_map(|_| 9u32.to_le_bytes()).collect();
        v.d.copy_htod(v.ctx, a, &host, Some(s1)).unwrap();
        if with_event {
            let e = v.d.create_event(v.ctx, 0).unwrap();
            v.d.record(e, s1).unwrap();
            v.d.wait_event(v.ctx, s2, e).unwrap();
        }
        v.add_one(a, b, s2);
        let r = v.sync();
        if with_event {
            assert_eq!(r, Ok(()), "{schedule:?}");
            assert_eq!(v.read(b), vec![10; N as usize], "{schedule:?}");
        } else {
            assert_eq!(r, Err(LAUNCH_FAILED), "{schedule:?}");
        }
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let race = text
        .lines()
        .find(|l| l.contains("global memory race"))
        .unwrap_or_else(|| panic!("no race logged:\n{text}"));
    assert!(
        race.contains("host-to-device copy") && race.contains("add_one"),
        "{race}"
    );
    let _ = std::fs::remove_file(&log);
}

#[test]
fn kernels_on_independent_streams_overlap_in_the_adversarial_schedule() {
    // `spin` waits for a flag that `set`, queued after it on another
    // stream, sets: it completes only if the two kernels run together.
    let run = |schedule, same_stream: bool| {
        let mut v = dev(schedule, LogTarget::Off);
        let flag = v.buffer(0);
        let s1 = v.stream(STREAM_NON_BLOCKING);
        let s2 = if same_stream {
            s1
        } else {
            v.stream(STREAM_NON_BLOCKING)
        };
        v.flag_kernel(v.spin, flag, s1);
        v.flag_kernel(v.set, flag, s2);
        v.sync()
    };
    for seed in 0..6 {
        assert_eq!(
            run(Schedule::Adversarial { seed }, false),
            Ok(()),
            "seed {seed}"
        );
        // Stream order: `spin` runs alone and never sees the flag.
        assert_eq!(
            run(Schedule::Adversarial { seed }, true),
            Err(LAUNCH_TIMEOUT),
            "seed {seed}"
        );
    }
    // The deterministic schedule runs launches one at a time.
    assert_eq!(run(Schedule::Deterministic, false), Err(LAUNCH_TIMEOUT));
}
