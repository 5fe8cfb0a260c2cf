//! The one error type of the library.

use std::path::PathBuf;

/// Everything that can go wrong, each message naming the offending value.
///
/// No public function of this crate panics on bad input; it returns one of these.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A simulation needs at least one body.
    #[error("no bodies: N = 0, a simulation needs at least one body")]
    NoBodies,

    /// More bodies than the kernels can index with 32-bit integers.
    #[error(
        "N = {n} bodies is more than {max}, the most the kernels can index with 32-bit integers"
    )]
    TooManyBodies {
        /// Requested number of bodies.
        n: usize,
        /// The limit ([`gpu_kernels::shape::MAX_BODIES`]).
        max: usize,
    },

    /// Position, velocity and mass arrays of different lengths.
    #[error(
        "mismatched array lengths: {positions} positions, {velocities} velocities, {masses} masses (all must be equal)"
    )]
    LengthMismatch {
        /// Number of positions.
        positions: usize,
        /// Number of velocities.
        velocities: usize,
        /// Number of masses.
        masses: usize,
    },

    /// A mass that is NaN, infinite or negative.
    #[error("body {index}: mass {mass} must be finite and >= 0")]
    InvalidMass {
        /// Index of the body.
        index: usize,
        /// The offending mass.
        mass: f32,
    },

    /// A position or velocity with a NaN or infinite component.
    #[error("body {index}: {quantity} {value:?} is not finite")]
    NonFiniteInput {
        /// Index of the body.
        index: usize,
        /// `"position"` or `"velocity"`.
        quantity: &'static str,
        /// The offending vector.
        value: [f32; 3],
    },

    /// A time step that is not finite and positive (also in `f32`).
    #[error("time step dt = {0} must be finite and > 0 (in f32)")]
    InvalidTimeStep(f64),

    /// A softening length that is negative or not finite.
    #[error("softening length eps = {0} must be finite and >= 0 (and eps^2 finite in f32)")]
    InvalidSoftening(f64),

    /// A gravitational constant that is not finite and positive.
    #[error("gravitational constant G = {0} must be finite and > 0 (in f32)")]
    InvalidGravitationalConstant(f64),

    /// A physical or numerical parameter out of range: Lennard-Jones
    /// `epsilon`, `sigma`, cutoff, a box length, the neighbour skin, a
    /// rebuild interval, an initial-condition setting.
    #[error("{name} = {value} {requirement}")]
    InvalidParameter {
        /// The parameter.
        name: &'static str,
        /// The offending value.
        value: f64,
        /// What it must be.
        requirement: &'static str,
    },

    /// Settings that are each valid but make no physical or numerical
    /// sense together (gravity in a periodic box, a cutoff plus skin
    /// longer than half the box, a cell list for a force without a cutoff).
    #[error("{0}")]
    InvalidCombination(String),

    /// Two bodies so close that the short-range force between them is not
    /// finite in `f32` (`r -> 0`): duplicated or overlapping atoms.
    #[error(
        "bodies {a} and {b} overlap: {distance:e} apart, where the Lennard-Jones force overflows (r -> 0); separate them or remove the duplicate"
    )]
    Overlapping {
        /// One body (index as given).
        a: usize,
        /// The other.
        b: usize,
        /// Their distance (minimum image in a periodic box).
        distance: f64,
    },

    /// Two bodies at the same position with gravity at softening 0, where
    /// their force is infinite (the collisional integrator, `hermite`).
    #[error(
        "bodies {a} and {b} coincide at {position:?} with softening 0, where their force is infinite; separate them, remove one or set a softening length"
    )]
    CoincidentBodies {
        /// One body (index as given).
        a: usize,
        /// The other.
        b: usize,
        /// Where both are.
        position: [f64; 3],
    },

    /// A block size the kernel cannot use.
    #[error("block size {block} for the {kernel} kernel must be a power of two in 32..={max}")]
    InvalidBlockSize {
        /// The offending block size.
        block: u32,
        /// Kernel name.
        kernel: &'static str,
        /// The largest block the kernel accepts (1024, or 512 for the
        /// register-blocked triangle kernel).
        max: u32,
    },

    /// A block size whose shared memory the device cannot provide.
    #[error(
        "block size {block} for the {kernel} kernel needs {needed} bytes of shared memory per block; the device allows {available}"
    )]
    SharedMemoryExceeded {
        /// The block size.
        block: u32,
        /// Kernel name.
        kernel: &'static str,
        /// Bytes the launch needs.
        needed: u32,
        /// Bytes the device allows per block.
        available: u32,
    },

    /// A block size larger than a kernel can run on this device after the
    /// driver's JIT: its registers per thread (or a `.maxntid`) allow fewer
    /// threads per block. Found before anything is launched.
    #[error(
        "block size {block} is too large for the {kernel} kernel on this device: after the JIT it uses {registers} registers per thread, which allows at most {max} threads per block; use a block of at most {max}"
    )]
    BlockExceedsKernelLimit {
        /// The entry point (`nbody_tiled_euler`, ...).
        kernel: &'static str,
        /// The block size asked for.
        block: u32,
        /// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK` of the compiled kernel.
        max: u32,
        /// `CU_FUNC_ATTRIBUTE_NUM_REGS` of the compiled kernel.
        registers: u32,
    },

    /// A launch grid larger than CUDA allows (triangle kernel, very large N).
    #[error(
        "the {kernel} kernel with block size {block} cannot schedule N = {n}: {blocks} blocks exceed the grid limit {max}; use a larger block"
    )]
    GridTooLarge {
        /// Kernel name.
        kernel: &'static str,
        /// Number of bodies.
        n: usize,
        /// Block size.
        block: u32,
        /// Blocks needed.
        blocks: u64,
        /// The limit.
        max: u32,
    },

    /// Not enough device memory, found before allocating anything.
    #[error("N = {n} needs {needed} bytes of device memory; the device has {available} bytes free")]
    DeviceMemoryExceeded {
        /// Number of bodies.
        n: usize,
        /// Bytes needed.
        needed: u64,
        /// Bytes free on the device.
        available: u64,
    },

    /// The state turned non-finite during a run (a close encounter with too
    /// little softening, or too large a time step).
    #[error(
        "the simulation became non-finite at step {step} (body {body}): a close encounter with too little softening, overlapping atoms, or too large a time step"
    )]
    Diverged {
        /// First step after which a position or velocity was not finite.
        step: u64,
        /// A body that was not finite (the lowest index the backend saw).
        body: usize,
    },

    /// A barostat shrank the periodic box below what the cutoff needs (the
    /// minimum image, and the lists' skin): the run stops there.
    #[error(
        "at step {step} the barostat shrank the box to a shortest length of {length}, under \
         {needed} (twice the cutoff plus skin, which the minimum image needs): the target \
         pressure is far from the state's, or Pdamp too short"
    )]
    BoxTooSmall {
        /// The step after which the box was too small.
        step: u64,
        /// Its shortest length then.
        length: f64,
        /// The least the cutoff allows.
        needed: f64,
    },

    /// The run blew up, found by its physics rather than (only) by a
    /// non-finite value: a body moved more than half the periodic box in
    /// one step, or lies so far out that squared distances overflow `f32`
    /// (which turns every force NaN).
    #[error("the simulation exploded at step {step}: body {body} {reason}")]
    Exploded {
        /// The step after which it was found.
        step: u64,
        /// The body to blame.
        body: usize,
        /// What the body did, and the likely cause.
        reason: String,
    },

    /// Refusing to write a snapshot of a run that diverged (non-finite or
    /// exploded).
    #[error(
        "refusing to write {path}: body {body} is not finite or exploded (the simulation diverged)"
    )]
    NonFiniteSnapshot {
        /// The file not written.
        path: PathBuf,
        /// The body the divergence was blamed on.
        body: usize,
    },

    /// The crate was built without the `cuda` feature.
    #[error("this build has no CUDA support: rebuild nbody-host with `--features cuda`")]
    CudaNotCompiled,

    /// The `cuda` feature is on but no usable device or driver was found.
    #[error("no usable CUDA device: {0}")]
    CudaUnavailable(String),

    /// An error reported by the CUDA driver.
    #[error("CUDA error during {during}: {message}")]
    Cuda {
        /// What the backend was doing.
        during: String,
        /// The driver's message.
        message: String,
    },

    /// The emulator caught a kernel bug: a shared-memory race, an
    /// out-of-bounds access or a deadlock at a barrier.
    #[error("emulator: {0}")]
    Emulator(String),

    /// A parameter the chosen backend does not support.
    #[error("{0}")]
    Unsupported(String),

    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },

    /// A file that is not what it should be (wrong format, truncated, corrupt).
    #[error("{}: not a valid {format} file: {reason}", path.display())]
    InvalidFile {
        /// The file.
        path: PathBuf,
        /// The expected format (`"npy"`, `"checkpoint"`, ...).
        format: &'static str,
        /// What is wrong, naming the offending value.
        reason: String,
    },

    /// A rendering setting out of range (feature `render`): image size,
    /// camera, frame interval or plot data.
    #[error("render: {what} = {value} {requirement}")]
    InvalidRenderSetting {
        /// The setting.
        what: &'static str,
        /// The offending value.
        value: String,
        /// What it must be.
        requirement: &'static str,
    },

    /// A setting of the short-range (Lennard-Jones) GPU plan out of range:
    /// box, cutoff, skin, epsilon, sigma, cells or block sizes.
    #[error("Lennard-Jones: {what} = {value} {requirement}")]
    InvalidMdSetting {
        /// The setting.
        what: &'static str,
        /// The offending value.
        value: f64,
        /// What it must be.
        requirement: &'static str,
    },

    /// Not enough host memory for `N` bodies, found before allocating them.
    #[error(
        "N = {n} bodies need about {needed} bytes of host memory for {what}; {available} bytes are available"
    )]
    HostMemoryExceeded {
        /// Number of bodies.
        n: usize,
        /// What needs the memory (`"the initial conditions"`, `"the engine"`).
        what: &'static str,
        /// Bytes needed (an estimate, rounded up).
        needed: u64,
        /// Bytes available to this process (RAM, free swap and `ulimit -v`).
        available: u64,
    },

    /// The energy is not finite: bodies that coincide at softening 0, or
    /// a state too large for `f32`. Reported as a divergence of the run.
    #[error(
        "the energy at step {step} is not finite (kinetic {kinetic}, potential {potential}): bodies that coincide at softening eps = 0, or a state that overflowed"
    )]
    NonFiniteEnergy {
        /// The step of the state.
        step: u64,
        /// Kinetic energy.
        kinetic: f64,
        /// Potential energy.
        potential: f64,
    },

    /// A body index beyond the simulation's bodies.
    #[error("body index {index} is out of range: the simulation has {n} bodies")]
    NoSuchBody {
        /// The index asked for.
        index: usize,
        /// Number of bodies.
        n: usize,
    },

    /// No body has this stable id ([`Simulation::ids`](crate::Simulation::ids)).
    #[error("no body has id {id} (removed, or never given)")]
    NoSuchId {
        /// The id asked for.
        id: u64,
    },

    /// A distributed run (feature `mpi`) stopped because another rank
    /// failed; that rank's own error says why.
    #[error("rank {rank} of the distributed run failed (its own error says why)")]
    OtherRank {
        /// The lowest rank that failed.
        rank: usize,
    },

    /// A target time that is not finite or lies before the current time.
    #[error(
        "cannot integrate to t = {target}: it must be finite and not before the current time {now}"
    )]
    InvalidTargetTime {
        /// The requested time.
        target: f64,
        /// The simulation's time.
        now: f64,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
