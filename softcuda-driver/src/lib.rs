//! `libcuda.so.1` for the software CUDA device: the CUDA Driver API
//! functions cust 0.3.2 calls, over the [`softcuda`] interpreter, with the
//! most hostile semantics CUDA allows (see [`state`]).
//!
//! Built as a `cdylib` with the soname `libcuda.so.1` (build.rs), so a
//! program linked against it, or finding it first on `LD_LIBRARY_PATH`,
//! runs on the software device: `scripts/with-softcuda.sh` arranges both.
//!
//! | variable | values | default |
//! | --- | --- | --- |
//! | `SOFTCUDA_ARCH` | `sm_70`, `sm_80`, `sm_90`: device attributes, limits and the time model | `sm_90` |
//! | `SOFTCUDA_SCHEDULE` | `deterministic` (lockstep warps, one block and launch at a time) or `adversarial` (independent threads, resident blocks and overlapping launches interleaved) | `deterministic` |
//! | `SOFTCUDA_SEED` | seed of the adversarial schedule (launch `k` uses seed + k) | `0` |
//! | `SOFTCUDA_MEMORY_BYTES` | device memory (`512M`, `16G`, ...) | the modelled card's |
//! | `SOFTCUDA_SHARED_BYTES` | shared memory a block may use with the opt-in | the architecture's |
//! | `SOFTCUDA_DEVICES` | `0` (cuInit fails with CUDA_ERROR_NO_DEVICE) or `1` | `1` |
//! | `SOFTCUDA_ORDERING` | `hostile` (queued work runs only when forced) or `eager` | `hostile` |
//! | `SOFTCUDA_RACES` | race detection: `off`, `shared`, `all` (shared and global, across unordered launches and copies too) | `all` |
//! | `SOFTCUDA_LOG` | `stderr` or a file path: every call; `off`: nothing | errors and notices on stderr |
//! | `SOFTCUDA_STATS` | a file: one JSON line of counts per launch | none |
//! | `SOFTCUDA_REGISTERS` | registers per thread: `N`, `entry=N,...` or both | the H200 JIT's count, or an estimate (`softcuda::regalloc`) |
//! | `SOFTCUDA_MUFU` | `sm90` (the H200's approximate-instruction bits; uncaptured ones refused) or `ieee` (correctly rounded) | `sm90` |
//! | `SOFTCUDA_MAX_INSTRUCTIONS` | warp-instructions per launch before CUDA_ERROR_LAUNCH_TIMEOUT | `2^40` |
#![deny(missing_docs)]

pub mod api;
pub mod config;
pub mod errors;
pub mod jit;
pub mod log;
pub mod order;
pub mod state;
