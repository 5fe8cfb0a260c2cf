//! Per-launch accounting: what a kernel costs on a GPU, counted as the
//! interpreter executes it warp by warp.
//!
//! - instructions: warp-level (issue slots: one per warp per instruction,
//!   whatever the active mask) and thread-level (summed active lanes);
//! - shared memory: for every warp-level request, the wavefronts the shared
//!   pipeline needs, with 32 banks of 4 bytes: accesses of 4 bytes or less
//!   form one phase of 32 lanes, 8-byte accesses two half-warp phases (words
//!   already delivered to the first phase are free: broadcast); a phase
//!   costs the largest number of distinct words any bank must deliver.
//!   16-byte accesses run as two half-warp passes that share nothing, each
//!   with an active lane costing at least one wavefront: a warp-wide
//!   broadcast `LDS.128` costs 2 on sm_90, as Nsight Compute counts it (the
//!   tiled kernel at N = 16,384: 8,454,144 here, 8,458,686 by ncu; the
//!   triangle kernel's permuted 512-byte accesses, 4 each: 13,248,512 here,
//!   13,237,088 by ncu; README, "Counters against Nsight Compute");
//! - global memory: for every warp-level request, the distinct 32-byte
//!   sectors its lanes touch (coalescing), loads apart (what ncu's
//!   `l1tex__t_sectors_pipe_lsu_mem_global_op_ld` counts), stores, and
//!   atomics and reductions (`..._op_atom` + `..._op_red`). A reduction
//!   (`red`) costs its distinct sectors; an atomic that returns the old
//!   value (`atom`) is serialised on a repeated address: pass `k` serves
//!   the `k`-th lane of every address, and each pass costs its distinct
//!   sectors (`nbody_md_bin` on the H200: 16 lanes on each of 2 counters
//!   in one sector, 16 sectors a warp, 128 in all as ncu counts them, not
//!   1 a warp; docs/gpu/ncu-issue24/README.md).
//!
//! On an SM, four schedulers issue one warp-instruction each per clock and
//! the shared pipeline delivers one wavefront per clock, so a kernel's
//! throughput is bounded by both `warp_instructions / 4` and
//! `shared_wavefronts`. These counts are exact for the deterministic
//! schedule, where warps execute in lockstep; under the adversarial schedule
//! threads run alone and every request is a one-lane request.

use std::fmt::Write;

/// Counters of one launch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Warp-level instructions issued (issue slots).
    pub warp_instructions: u64,
    /// Thread-level instructions (active lanes summed).
    pub thread_instructions: u64,
    /// Warp-level shared-memory requests (loads, stores, atomics).
    pub shared_requests: u64,
    /// Shared-memory wavefronts of those requests.
    pub shared_wavefronts: u64,
    /// Warp-level global-memory loads and stores.
    pub global_requests: u64,
    /// 32-byte sectors those requests touch.
    pub global_sectors: u64,
    /// Of the global requests, the loads.
    pub global_load_requests: u64,
    /// Sectors the loads touch (ncu: `l1tex__t_sectors_pipe_lsu_mem_global_op_ld`).
    pub global_load_sectors: u64,
    /// Warp-level global atomics and reductions.
    pub global_atomic_requests: u64,
    /// Sectors the atomics touch.
    pub global_atomic_sectors: u64,
    /// Block barriers completed (`bar.sync`), summed over blocks.
    pub barriers: u64,
    /// Warp barriers completed (`bar.warp.sync`), summed over warps.
    pub warp_barriers: u64,
    /// Branches at which a warp diverged.
    pub divergent_branches: u64,
    /// Blocks run.
    pub blocks: u64,
}

impl Stats {
    /// Adds `o` to `self`.
    pub fn add(&mut self, o: &Stats) {
        self.warp_instructions += o.warp_instructions;
        self.thread_instructions += o.thread_instructions;
        self.shared_requests += o.shared_requests;
        self.shared_wavefronts += o.shared_wavefronts;
        self.global_requests += o.global_requests;
        self.global_sectors += o.global_sectors;
        self.global_load_requests += o.global_load_requests;
        self.global_load_sectors += o.global_load_sectors;
        self.global_atomic_requests += o.global_atomic_requests;
        self.global_atomic_sectors += o.global_atomic_sectors;
        self.barriers += o.barriers;
        self.warp_barriers += o.warp_barriers;
        self.divergent_branches += o.divergent_branches;
        self.blocks += o.blocks;
    }

    /// The counters as JSON object members (no braces), for log lines.
    pub fn json_fields(&self) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "\"warp_instructions\":{},\"thread_instructions\":{},\"shared_requests\":{},\"shared_wavefronts\":{},\"global_requests\":{},\"global_sectors\":{},\"global_load_requests\":{},\"global_load_sectors\":{},\"global_atomic_requests\":{},\"global_atomic_sectors\":{},\"barriers\":{},\"warp_barriers\":{},\"divergent_branches\":{},\"blocks\":{}",
            self.warp_instructions,
            self.thread_instructions,
            self.shared_requests,
            self.shared_wavefronts,
            self.global_requests,
            self.global_sectors,
            self.global_load_requests,
            self.global_load_sectors,
            self.global_atomic_requests,
            self.global_atomic_sectors,
            self.barriers,
            self.warp_barriers,
            self.divergent_branches,
            self.blocks
        );
        s
    }
}

/// What a warp-level memory request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// `ld`, `ldu`
    Load,
    /// `st`
    Store,
    /// `red`, and an `atom` whose lanes all hit distinct addresses
    Atomic,
    /// `atom` (returns the old value): lanes on the same address take one
    /// pass each ([`atomic_return_sectors`])
    AtomicReturn,
}

impl Stats {
    /// Accounts one warp-level request: its shared-memory accesses
    /// `(lane, byte offset)` and its global addresses, `bytes` each.
    pub fn request(&mut self, shared: &[(u32, u64)], global: &[u64], bytes: u32, access: Access) {
        if !shared.is_empty() {
            self.shared_requests += 1;
            self.shared_wavefronts += shared_wavefronts(shared, bytes);
        }
        if !global.is_empty() {
            if access == Access::AtomicReturn {
                self.global_atomic_requests += 1;
                self.global_atomic_sectors += atomic_return_sectors(global, bytes);
                return;
            }
            let sectors = global_sectors(global, bytes);
            if access == Access::Atomic {
                self.global_atomic_requests += 1;
                self.global_atomic_sectors += sectors;
            } else {
                self.global_requests += 1;
                self.global_sectors += sectors;
                if access == Access::Load {
                    self.global_load_requests += 1;
                    self.global_load_sectors += sectors;
                }
            }
        }
    }
}

/// Shared-memory wavefronts of one warp-level request: `accesses` holds
/// `(lane, byte offset)` of the active lanes, each accessing `bytes` bytes.
pub fn shared_wavefronts(accesses: &[(u32, u64)], bytes: u32) -> u64 {
    let Some(&(_, first)) = accesses.first() else {
        return 0;
    };
    if bytes > 8 {
        // Two half-warp passes sharing nothing.
        let (lo, hi): (Vec<_>, Vec<_>) = accesses.iter().partition(|&&(lane, _)| lane < 16);
        return [lo, hi]
            .iter()
            .filter(|half| !half.is_empty())
            .map(|half| phase_wavefronts(half, bytes))
            .sum();
    }
    // Every lane on the same bytes: one wavefront (a broadcast).
    if accesses.iter().all(|&(_, o)| o == first) {
        return 1;
    }
    let lanes_per_phase = match bytes {
        0..=4 => 32,
        5..=8 => 16,
        _ => 8,
    };
    let words_per_access = bytes.div_ceil(4).clamp(1, 4) as u64;
    // (word, phase) of every word a lane touches: at most 32 x 4.
    let mut items = [(0u64, 0u32); 128];
    let mut n = 0;
    for &(lane, off) in accesses {
        let first = off / 4;
        for w in first..first + words_per_access {
            items[n] = (w, lane / lanes_per_phase);
            n += 1;
        }
    }
    let items = &mut items[..n];
    items.sort_unstable();
    // A word costs a bank access in the first phase that wants it; later
    // phases get it for free (broadcast).
    let mut per_bank = [[0u32; 32]; 4];
    let mut prev = None;
    for &(w, phase) in items.iter() {
        if prev != Some(w) {
            per_bank[phase as usize][(w % 32) as usize] += 1;
            prev = Some(w);
        }
    }
    let total: u64 = per_bank
        .iter()
        .map(|banks| u64::from(*banks.iter().max().expect("32 banks")))
        .sum();
    total.max(1)
}

/// Wavefronts of one pass of a 16-byte request: the most distinct words
/// any bank must deliver (at least one).
fn phase_wavefronts(accesses: &[(u32, u64)], bytes: u32) -> u64 {
    let words_per_access = bytes.div_ceil(4).clamp(1, 4) as u64;
    let mut words = [0u64; 64];
    let mut n = 0;
    for &(_, off) in accesses {
        for w in off / 4..off / 4 + words_per_access {
            if n < words.len() {
                words[n] = w;
                n += 1;
            }
        }
    }
    let words = &mut words[..n];
    words.sort_unstable();
    let mut per_bank = [0u64; 32];
    let mut prev = None;
    for &w in words.iter() {
        if prev != Some(w) {
            per_bank[(w % 32) as usize] += 1;
            prev = Some(w);
        }
    }
    per_bank.iter().copied().max().unwrap_or(0).max(1)
}

/// Distinct 32-byte sectors touched by `addrs` (one per lane), each access
/// `bytes` long.
pub fn global_sectors(addrs: &[u64], bytes: u32) -> u64 {
    let span = |a: u64| (a / 32, (a + u64::from(bytes.max(1)) - 1) / 32);
    let Some(&a0) = addrs.first() else {
        return 0;
    };
    if addrs.iter().all(|&a| a == a0) {
        let (f, l) = span(a0);
        return l - f + 1;
    }
    let mut sectors = [0u64; 32 * 4];
    let mut n = 0;
    for &a in addrs {
        let (f, l) = span(a);
        for s in f..=l {
            if n < sectors.len() {
                sectors[n] = s;
                n += 1;
            }
        }
    }
    let sectors = &mut sectors[..n];
    sectors.sort_unstable();
    1 + sectors.windows(2).filter(|w| w[0] != w[1]).count() as u64
}

/// Sectors of one warp-level `atom` with addresses `addrs` (one per lane,
/// in lane order): lanes on the same address are served one per pass, pass
/// `k` taking the `k`-th lane of every distinct address, and each pass
/// costs the distinct sectors it touches. Distinct addresses: one pass,
/// [`global_sectors`].
pub fn atomic_return_sectors(addrs: &[u64], bytes: u32) -> u64 {
    // (address, rank among the lanes on that address), at most 32.
    let mut ranked = [(0u64, 0u32); 32];
    let n = addrs.len().min(32);
    for (i, &a) in addrs[..n].iter().enumerate() {
        let rank = addrs[..i].iter().filter(|&&b| b == a).count() as u32;
        ranked[i] = (a, rank);
    }
    let passes = ranked[..n].iter().map(|&(_, r)| r + 1).max().unwrap_or(0);
    let mut pass = [0u64; 32];
    (0..passes)
        .map(|k| {
            let mut m = 0;
            for &(a, r) in &ranked[..n] {
                if r == k {
                    pass[m] = a;
                    m += 1;
                }
            }
            global_sectors(&pass[..m], bytes)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lanes(f: impl Fn(u32) -> u64) -> Vec<(u32, u64)> {
        (0..32).map(|l| (l, f(l))).collect()
    }

    #[test]
    fn shared_wavefronts_follow_banks_phases_and_broadcasts() {
        // 32-bit: consecutive words, one wavefront; stride 2 words, two-way
        // conflict; stride 32 words, 32-way; all the same word, broadcast.
        assert_eq!(shared_wavefronts(&lanes(|l| 4 * l as u64), 4), 1);
        assert_eq!(shared_wavefronts(&lanes(|l| 8 * l as u64), 4), 2);
        assert_eq!(shared_wavefronts(&lanes(|l| 128 * l as u64), 4), 32);
        assert_eq!(shared_wavefronts(&lanes(|_| 64), 4), 1);
        // 64-bit consecutive: two half-warp phases of 128 bytes.
        assert_eq!(shared_wavefronts(&lanes(|l| 8 * l as u64), 8), 2);
        // 128-bit consecutive: 256 bytes per half-warp, 2 wavefronts each.
        assert_eq!(shared_wavefronts(&lanes(|l| 16 * l as u64), 16), 4);
        // 128-bit, every lane the same body (the tiled kernel): one per
        // half-warp, as ncu counts it on sm_90.
        assert_eq!(shared_wavefronts(&lanes(|_| 256), 16), 2);
        // ... and one if only one half-warp is active.
        let lower: Vec<(u32, u64)> = (0..16).map(|l| (l, 256)).collect();
        assert_eq!(shared_wavefronts(&lower, 16), 1);
        // 128-bit, the triangle kernel's rotation (lane l reads slot
        // (l + 5) mod 32 of 32 consecutive 16-byte slots): 4.
        assert_eq!(
            shared_wavefronts(&lanes(|l| 16 * ((l as u64 + 5) % 32)), 16),
            4
        );
        // 128-bit with stride 32 bytes: 512 bytes per half, 4 per bank.
        assert_eq!(shared_wavefronts(&lanes(|l| 32 * l as u64), 16), 8);
        // A single lane.
        assert_eq!(shared_wavefronts(&[(3, 16)], 16), 1);
    }

    #[test]
    fn loads_stores_and_atomics_are_counted_apart() {
        let mut s = Stats::default();
        let v4: Vec<u64> = (0..32).map(|l| 4096 + 16 * l).collect();
        s.request(&[], &v4, 16, Access::Load);
        s.request(&[], &v4[..8], 16, Access::Store);
        s.request(&[], &[4096; 32], 4, Access::Atomic);
        s.request(&lanes(|_| 256), &[], 16, Access::Load);
        assert_eq!((s.global_requests, s.global_sectors), (2, 16 + 4));
        assert_eq!((s.global_load_requests, s.global_load_sectors), (1, 16));
        assert_eq!((s.global_atomic_requests, s.global_atomic_sectors), (1, 1));
        assert_eq!((s.shared_requests, s.shared_wavefronts), (1, 2));
    }

    #[test]
    fn atomics_returning_values_take_a_pass_per_lane_on_an_address() {
        // Distinct addresses: one pass, the distinct sectors.
        let distinct: Vec<u64> = (0..32).map(|l| 4096 + 4 * l).collect();
        assert_eq!(atomic_return_sectors(&distinct, 4), 4);
        // nbody_md_bin: 16 lanes on each of two counters in one sector.
        let two: Vec<u64> = (0..32).map(|l| 4096 + 4 * (l / 16)).collect();
        assert_eq!(atomic_return_sectors(&two, 4), 16);
        // Every lane on one address: 32 passes; one lane: one.
        assert_eq!(atomic_return_sectors(&[4096; 32], 4), 32);
        assert_eq!(atomic_return_sectors(&[4096], 4), 1);
        // Two addresses in different sectors, 3 and 1 lanes: passes of
        // 2, 1 and 1 sectors.
        assert_eq!(atomic_return_sectors(&[0, 64, 0, 0], 4), 4);
        // A `red` on the same addresses still costs its distinct sectors.
        let mut s = Stats::default();
        s.request(&[], &two, 4, Access::Atomic);
        s.request(&[], &two, 4, Access::AtomicReturn);
        assert_eq!(
            (s.global_atomic_requests, s.global_atomic_sectors),
            (2, 1 + 16)
        );
        assert_eq!(s.global_requests, 0);
    }

    #[test]
    fn global_sectors_count_coalescing() {
        let consecutive: Vec<u64> = (0..32).map(|l| 4096 + 4 * l).collect();
        assert_eq!(global_sectors(&consecutive, 4), 4);
        let v4: Vec<u64> = (0..32).map(|l| 4096 + 16 * l).collect();
        assert_eq!(global_sectors(&v4, 16), 16);
        assert_eq!(global_sectors(&[4096; 32], 16), 1);
        let strided: Vec<u64> = (0..32).map(|l| 4096 + 64 * l).collect();
        assert_eq!(global_sectors(&strided, 4), 32);
        assert_eq!(global_sectors(&[4100], 32), 2);
    }
}
