//! Analysis of trajectory frames ([`Frame`](crate::trajectory::Frame)), in
//! LAMMPS's definitions so that its `compute`s check them:
//!
//! | file | what | LAMMPS |
//! | --- | --- | --- |
//! | `rdf.rs` | [`Rdf`]: the radial distribution function `g(r)` per pair of atom types, and the coordination number, accumulated over frames; `O(N)` per frame through a cell list | `compute rdf Nbin [itype jtype ...] [cutoff Rc]` averaged by `fix ave/time` |
//! | `msd.rs` | [`Msd`]: the mean-squared displacement from the first frame, unwrapped with the image counters, per component and total | `compute msd` (`com no`) |
//!
//! Both give the same bits on any thread count: histograms are integer
//! counts, and every floating-point sum runs in a fixed order.

mod msd;
mod rdf;

pub use msd::Msd;
pub use rdf::{Rdf, RdfTable};
