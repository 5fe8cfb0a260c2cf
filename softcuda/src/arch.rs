//! The modelled GPUs: the limits the driver reports (and enforces), and a
//! simple cost model that turns a launch's counts into a modelled time.
//!
//! The numbers are those of NVIDIA's data-center parts of each generation
//! (V100-SXM2, A100-SXM4, H100-SXM5). The time model is deliberately
//! simple and always labelled *modelled*: a launch takes the largest of its
//! issue time (warp-instructions / 4 schedulers), its shared-memory time (one
//! wavefront per clock) and its DRAM time (sectors x 32 bytes at the
//! memory bandwidth), spread over the SMs its blocks can occupy, plus a
//! fixed launch overhead.

use crate::account::Stats;

/// A modelled device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Arch {
    /// `sm_70`, `sm_80` or `sm_90`.
    pub name: &'static str,
    /// Marketing-style name the driver reports.
    pub device_name: &'static str,
    /// Compute capability major.
    pub major: u32,
    /// Compute capability minor.
    pub minor: u32,
    /// Streaming multiprocessors.
    pub sms: u32,
    /// SM clock, kHz (as CU_DEVICE_ATTRIBUTE_CLOCK_RATE).
    pub clock_khz: u32,
    /// Memory clock, kHz.
    pub memory_clock_khz: u32,
    /// Memory bus width, bits.
    pub bus_width: u32,
    /// DRAM bandwidth, bytes per second.
    pub bandwidth: f64,
    /// Device memory, bytes.
    pub memory_bytes: u64,
    /// Shared memory a block may use with the opt-in attribute.
    pub shared_optin: u32,
    /// Shared memory per SM.
    pub shared_per_sm: u32,
    /// Shared memory a block may use without opting in.
    pub shared_default: u32,
    /// Registers per SM (and per block).
    pub registers: u32,
    /// Threads per SM.
    pub threads_per_sm: u32,
    /// Blocks per SM.
    pub blocks_per_sm: u32,
    /// L2 cache bytes.
    pub l2_bytes: u32,
}

/// Volta, V100-SXM2-16GB.
pub const SM70: Arch = Arch {
    name: "sm_70",
    device_name: "softcuda sm_70 (modelled Tesla V100-SXM2-16GB)",
    major: 7,
    minor: 0,
    sms: 80,
    clock_khz: 1_530_000,
    memory_clock_khz: 877_000,
    bus_width: 4096,
    bandwidth: 900e9,
    memory_bytes: 16 << 30,
    shared_optin: 98_304,
    shared_per_sm: 98_304,
    shared_default: 49_152,
    registers: 65_536,
    threads_per_sm: 2048,
    blocks_per_sm: 32,
    l2_bytes: 6 << 20,
};

/// Ampere, A100-SXM4-40GB.
pub const SM80: Arch = Arch {
    name: "sm_80",
    device_name: "softcuda sm_80 (modelled A100-SXM4-40GB)",
    major: 8,
    minor: 0,
    sms: 108,
    clock_khz: 1_410_000,
    memory_clock_khz: 1_215_000,
    bus_width: 5120,
    bandwidth: 1555e9,
    memory_bytes: 40 << 30,
    shared_optin: 166_912,
    shared_per_sm: 167_936,
    shared_default: 49_152,
    registers: 65_536,
    threads_per_sm: 2048,
    blocks_per_sm: 32,
    l2_bytes: 40 << 20,
};

/// Hopper, H100-SXM5-80GB.
pub const SM90: Arch = Arch {
    name: "sm_90",
    device_name: "softcuda sm_90 (modelled H100-SXM5-80GB)",
    major: 9,
    minor: 0,
    sms: 132,
    clock_khz: 1_980_000,
    memory_clock_khz: 2_619_000,
    bus_width: 5120,
    bandwidth: 3350e9,
    memory_bytes: 80 << 30,
    shared_optin: 232_448,
    shared_per_sm: 233_472,
    shared_default: 49_152,
    registers: 65_536,
    threads_per_sm: 2048,
    blocks_per_sm: 32,
    l2_bytes: 50 << 20,
};

/// Launch overhead of the model, seconds.
pub const LAUNCH_OVERHEAD_S: f64 = 3e-6;

impl Arch {
    /// The model named `sm_70`, `sm_80` or `sm_90` (also `70`, `sm70`...).
    pub fn by_name(name: &str) -> Option<Arch> {
        let digits: String = name.chars().filter(char::is_ascii_digit).collect();
        match digits.as_str() {
            "70" => Some(SM70),
            "80" => Some(SM80),
            "90" => Some(SM90),
            _ => None,
        }
    }

    /// Modelled seconds of a launch of `blocks` blocks with counts `s`.
    pub fn model_seconds(&self, s: &Stats, blocks: u64) -> f64 {
        let sms = (self.sms as u64).min(blocks.max(1)) as f64;
        let clock = self.clock_khz as f64 * 1e3;
        let issue = s.warp_instructions as f64 / 4.0 / sms / clock;
        let shared = s.shared_wavefronts as f64 / sms / clock;
        let dram = (s.global_sectors + s.global_atomic_sectors) as f64 * 32.0 / self.bandwidth;
        LAUNCH_OVERHEAD_S + issue.max(shared).max(dram)
    }

    /// The most threads a block of a function using `registers` registers
    /// per thread can have (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK` after
    /// the JIT): registers are allocated per warp in units of 256 (a
    /// thread's count rounded up to 8), and a block's warps are spread over
    /// the SM's four sub-partitions, each with a quarter of the register
    /// file (16 Ki of 64 Ki), so the count is 4 x what one quarter holds:
    /// 64 registers still allow 1024 threads, 72 allow 896, 80 768 and 96
    /// 640, as the H200's JIT reported (`data/sm90_jit_registers.tsv`; a
    /// whole-file division gave 800 and 672). Capped at 1024.
    pub fn max_threads_for_registers(&self, registers: u32) -> u32 {
        let per_warp = registers.max(1).div_ceil(8) * 8 * 32;
        ((self.registers / 4 / per_warp) * 4 * 32).min(1024)
    }

    /// Blocks of `threads` threads, each using `registers` registers, whose
    /// registers fit on one SM at once (warps allocated as in
    /// [`Arch::max_threads_for_registers`]).
    pub fn blocks_for_registers(&self, registers: u32, threads: u32) -> u32 {
        let per_warp = registers.max(1).div_ceil(8) * 8 * 32;
        (self.registers / per_warp) / threads.div_ceil(32).max(1)
    }

    /// Modelled seconds of copying `bytes` between host and device (PCIe).
    pub fn model_copy_seconds(&self, bytes: u64) -> f64 {
        5e-6 + bytes as f64 / 20e9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_limit_threads_per_block() {
        for arch in [SM70, SM80, SM90] {
            assert_eq!(arch.max_threads_for_registers(32), 1024);
            assert_eq!(arch.max_threads_for_registers(64), 1024);
            // 72 registers: 2304 per warp, 28 warps in 64 Ki registers.
            assert_eq!(arch.max_threads_for_registers(72), 896);
            // 65 rounds up to 72.
            assert_eq!(arch.max_threads_for_registers(65), 896);
            // 76 rounds up to 80: 2560 per warp, 6 warps in each 16 Ki
            // quarter (a whole-file division would give 25 warps).
            assert_eq!(arch.max_threads_for_registers(76), 768);
            assert_eq!(arch.max_threads_for_registers(96), 640);
            assert_eq!(arch.max_threads_for_registers(128), 512);
            assert_eq!(arch.max_threads_for_registers(255), 256);
            // The triangle kernel (65 registers on the H200) at block 256:
            // 28 warps' registers fit, 3 blocks of 8 warps.
            assert_eq!(arch.blocks_for_registers(65, 256), 3);
            assert_eq!(arch.blocks_for_registers(32, 256), 8);
            assert_eq!(arch.blocks_for_registers(40, 1024), 1);
        }
    }
}
