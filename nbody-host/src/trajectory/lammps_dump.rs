//! LAMMPS's text dump (`dump custom ... id type x y z ix iy iz [vx vy vz]`):
//! what `rerun` and `read_dump` read back exactly (wrapped `f32` positions
//! as the shortest decimals of their `f64` values, which LAMMPS parses to
//! the very same numbers, and the image counters), and OVITO and MDAnalysis
//! (`LAMMPSDUMP`) read too.
//!
//! ```text
//! ITEM: TIMESTEP
//! 100
//! ITEM: NUMBER OF ATOMS
//! 4
//! ITEM: BOX BOUNDS pp pp pp
//! 0 10
//! 0 10
//! 0 12.5
//! ITEM: ATOMS id type x y z ix iy iz
//! 1 1 0.25 1.5 3 0 -1 0   (0.1 as an f32: 0.10000000149011612)
//! ...
//! ```
//!
//! Atom ids are `1..N` in the user's order, types LAMMPS's (`1, 2, ..`).

use super::{Frame, WriterOptions, push_f32s};
use std::fmt::Write;

/// One frame's text.
pub(super) fn encode(frame: &Frame, options: &WriterOptions) -> Vec<u8> {
    let mut text = String::with_capacity(80 * frame.len() + 200);
    let [lx, ly, lz] = frame.lengths;
    // Writing to a String cannot fail.
    let _ = write!(
        text,
        "ITEM: TIMESTEP\n{}\nITEM: NUMBER OF ATOMS\n{}\nITEM: BOX BOUNDS pp pp pp\n0 {lx}\n0 {ly}\n\
         0 {lz}\nITEM: ATOMS id type x y z ix iy iz{}\n",
        frame.step,
        frame.len(),
        if options.velocities { " vx vy vz" } else { "" }
    );
    for i in 0..frame.len() {
        let _ = write!(text, "{} {}", i + 1, frame.type_of(i) + 1);
        push_f32s(&mut text, &frame.positions[i]);
        let m = frame.image(i);
        let _ = write!(text, " {} {} {}", m[0], m[1], m[2]);
        if options.velocities {
            push_f32s(&mut text, &frame.velocities[i]);
        }
        text.push('\n');
    }
    text.into_bytes()
}
