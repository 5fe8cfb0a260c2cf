//! Batches (issue 23): builds decided on the device, one status read per
//! batch, and the replay of a batch whose build needed more ghost slots or
//! list entries than the buffers held: the same bits as buffers large
//! enough from the start, on the emulator and the committed PTX.

use super::*;
use gpu_kernels::periodic::STATUS_MOVED;

/// The hot fcc liquid of the bit-for-bit test (108 bodies, 2 cells per
/// side, ghosts everywhere).
fn liquid() -> Case {
    let (pos, l) = states::fcc(3, 0.8442);
    let n = pos.len();
    let mut case = Case::new(
        "fcc N 108 hot",
        pos,
        states::velocities(n, 1.44, 4),
        params([l as f32; 3], 2.2, 0.3, None, 32),
    );
    case.params.scan_block = 32;
    case
}

/// What the test compares: the bodies' buffers, builds, ghosts and entries.
type Bits = (Vec<Vec<u32>>, u64, u32, u64);

/// A run on some device with the buffers shrunk by the closure given.
type Runner<'a> = dyn FnMut(&dyn Fn(&mut MdPlan)) -> (Bits, MdPlan) + 'a;

/// Starts `case`, shrinks the buffers with `shrink` (nothing for the
/// reference), makes the next step build (the trigger set by hand), then
/// runs `steps` steps in one batch.
fn run<D: Device<MdBuf>>(
    dev: &mut D,
    case: &Case,
    shrink: impl Fn(&mut MdPlan),
    steps: u64,
) -> (Bits, MdPlan) {
    let mut plan = case.start(dev);
    shrink(&mut plan);
    dev.write(MdBuf::Status, STATUS_MOVED as usize, &[1])
        .unwrap();
    assert_eq!(plan.step(dev, steps).unwrap(), None);
    let n = 4 * plan.n() as usize;
    let bufs = [
        MdBuf::Pos,
        MdBuf::Vel,
        MdBuf::Tag,
        MdBuf::Acc,
        MdBuf::Reference,
    ]
    .map(|b| dev.read(b, 0, n).unwrap());
    let bits = (
        bufs.to_vec(),
        plan.builds(),
        plan.ghosts(),
        (plan.entries_per_body() * plan.n() as f64) as u64,
    );
    (bits, plan)
}

/// A build on the device that overflows the list capacity, or the ghost
/// slots, sets a sticky word; the batch is replayed from its saved start
/// with grown buffers and ends with the bits of a run whose buffers were
/// large enough (lists rebuilt from the saved reference positions are the
/// lists that batch started with).
#[test]
fn an_overflowing_batch_is_replayed_to_the_bits_of_large_enough_buffers() {
    let case = liquid();
    let steps = 30;
    let check = |dev: &mut Runner, what: &str| {
        let (want, reference) = dev(&|_| {});
        assert!(
            want.1 >= 3,
            "{what}: the reference rebuilt ({} builds)",
            want.1
        );
        let (got, plan) = dev(&|p| p.set_capacity(4));
        assert!(
            plan.capacity() > 4 && plan.capacity() >= reference.capacity() / 2,
            "{what}: the lists grew ({})",
            plan.capacity()
        );
        assert!(got == want, "{what}: the list overflow's replay differs");
        let (got, plan) = dev(&|p| p.set_ghost_capacity(8));
        assert!(plan.ghosts() > 8, "{what}: more than 8 ghosts");
        assert!(got == want, "{what}: the ghost overflow's replay differs");
    };
    check(
        &mut |shrink| run(&mut emulator(), &case, shrink, steps),
        "emulator",
    );
    check(
        &mut |shrink| {
            run(
                &mut SoftMd::new(Schedule::Deterministic),
                &case,
                shrink,
                steps,
            )
        },
        "softcuda",
    );
}

/// Everything a step reads: the bodies, the lists (each body's entries up
/// to its count: the words past it are left from older builds and never
/// read) and the ghosts' sources and shifts, the status words; `ghosts`
/// those of the build the lists come from (the host's count is the last
/// status read's).
fn step_inputs<D: Device<MdBuf>>(dev: &mut D, plan: &MdPlan, ghosts: u32) -> Vec<Vec<u32>> {
    let n = plan.n() as usize;
    let ghosts = ghosts as usize;
    let cap = plan.capacity();
    let mut out = [
        (MdBuf::Pos, 4 * n),
        (MdBuf::Vel, 4 * n),
        (MdBuf::Tag, 4 * n),
        (MdBuf::Type, n + ghosts),
        (MdBuf::Acc, 4 * n),
        (MdBuf::Reference, 4 * n),
        (MdBuf::NCount, n),
        (
            MdBuf::NList,
            shape::neighbour_stride(plan.n()) as usize * cap as usize,
        ),
        (MdBuf::GhostSrc, ghosts),
        (MdBuf::GhostShift, 4 * ghosts),
        (MdBuf::Status, STATUS_WORDS as usize),
    ]
    .map(|(b, words)| dev.read(b, 0, words).unwrap())
    .to_vec();
    let (counts, lists) = (&out[6], &out[7]);
    let entries: Vec<u32> = (0..n as u32)
        .flat_map(|i| {
            (0..counts[i as usize]).map(move |k| lists[neighbour_slot(i, k, cap) as usize])
        })
        .collect();
    out[7] = entries;
    out
}

/// The replay's foundation: a saved batch start, restored after steps that
/// rebuilt the lists, gives back every input of the next step, the lists
/// rebuilt from the saved reference positions equal to those the start had
/// (entries, counts, ghosts), on the emulator and on the committed PTX.
#[test]
fn a_restored_batch_start_has_the_lists_it_was_saved_with() {
    fn check<D: Device<MdBuf>>(mut dev: D, what: &str) {
        let case = liquid();
        let mut plan = case.start(&mut dev);
        assert_eq!(plan.step(&mut dev, 12).unwrap(), None);
        let builds = plan.builds();
        let ghosts = plan.ghosts();
        // A batch's start: its report words cleared, then saved (the
        // batch below clears and saves the same again).
        plan.clear_batch_words(&mut dev).unwrap();
        let saved = step_inputs(&mut dev, &plan, ghosts);
        plan.save(&mut dev).unwrap();
        assert_eq!(plan.step(&mut dev, 30).unwrap(), None);
        assert!(plan.builds() > builds, "{what}: builds after the save");
        assert!(
            step_inputs(&mut dev, &plan, ghosts) != saved,
            "{what}: the steps changed things"
        );
        plan.restore(&mut dev).unwrap();
        let restored = step_inputs(&mut dev, &plan, ghosts);
        let names = [
            "Pos",
            "Vel",
            "Tag",
            "Type",
            "Acc",
            "Reference",
            "NCount",
            "NList",
            "GhostSrc",
            "GhostShift",
            "Status",
        ];
        for (k, name) in names.iter().enumerate() {
            assert!(
                restored[k] == saved[k],
                "{what}: {name} differs after the restore"
            );
        }
    }
    check(emulator(), "emulator");
    check(SoftMd::new(Schedule::Deterministic), "softcuda");
}

/// NPT (`npt.rs`): a step whose build overflowed the list capacity or the
/// ghost slots is replayed from its start with the barostat's state and
/// the box restored (the host's copies and the device's), and ends with the
/// bits of a run whose buffers were large enough: the bodies, the
/// ensemble's state words (chains, barostat, box) and the box.
#[test]
fn an_overflowing_npt_step_is_replayed_with_its_box_and_barostat() {
    use super::ensemble::EnsPlan;
    use crate::md::Ensemble;
    use gpu_kernels::md_ensemble::ENS_WORDS;
    // 256 bodies in a box of 6.72 (2 cells of r_list 2.5 per side).
    let (pos, l) = states::fcc(4, 0.8442);
    let n = pos.len();
    let case = Case::new(
        "fcc N 256 NPT",
        pos,
        states::velocities(n, 1.44, 4),
        params([l as f32; 3], 2.2, 0.3, None, 32),
    );
    let run = |shrink: &dyn Fn(&mut MdPlan)| {
        let mut dev = emulator();
        let mut plan = case.start(&mut dev);
        let ens = EnsPlan::new(Ensemble::npt(1.44, 0.5, 0.5, 0.2), n, 0.005).unwrap();
        let vel = Case::vec4(&case.vel, &vec![0.0; n]);
        let masses: Vec<f32> = case.mass.iter().map(|&m| m as f32).collect();
        let lengths = [l as f32 as f64; 3];
        plan.start_ensemble(&mut dev, ens, &vel, &masses, lengths, None, 2.5)
            .unwrap();
        shrink(&mut plan);
        // The first step builds (the trigger set by hand, as `run` above):
        // the lists are gated, and steps before a build would read the lists
        // of the start with the shrunk capacity (`set_capacity` is for the
        // next build), which no run does.
        dev.write(MdBuf::Status, STATUS_MOVED as usize, &[1])
            .unwrap();
        assert_eq!(plan.step(&mut dev, 12).unwrap(), None);
        let mut bits: Vec<Vec<u32>> = [MdBuf::Pos, MdBuf::Vel, MdBuf::Tag, MdBuf::Acc]
            .map(|b| dev.read(b, 0, 4 * n).unwrap())
            .to_vec();
        bits.push(
            dev.read(MdBuf::Ensemble, 0, 2 * ENS_WORDS as usize)
                .unwrap(),
        );
        let box_now = plan.npt_lengths().unwrap();
        (bits, box_now, plan)
    };
    let (want, box_want, reference) = run(&|_| {});
    assert_ne!(box_want, [l as f32 as f64; 3], "the barostat moved the box");
    let (got, box_got, plan) = run(&|p| p.set_capacity(4));
    assert!(plan.capacity() > 4, "the lists grew ({})", plan.capacity());
    assert!(
        got == want && box_got == box_want,
        "the list overflow's replay differs"
    );
    let (got, box_got, plan) = run(&|p| p.set_ghost_capacity(8));
    assert!(plan.ghosts() > 8, "more than 8 ghosts");
    assert!(
        got == want && box_got == box_want,
        "the ghost overflow's replay differs"
    );
    assert_eq!(plan.builds(), reference.builds(), "the same builds");
}
