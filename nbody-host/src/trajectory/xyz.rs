//! Extended XYZ (ASE's, OVITO's): per frame the atom count, a comment line
//! of `key=value` pairs, one line per atom.
//!
//! ```text
//! 4
//! Lattice="10 0 0 0 10 0 0 0 12.5" Properties=species:S:1:pos:R:3:vel:R:3 Time=0.5 Step=100 pbc="T T T"
//! 1 0.25 1.5 3 0.1 -0.2 0.3
//! ...
//! ```
//!
//! The species column is LAMMPS's type number (`1, 2, ..`, as `dump xyz`
//! writes it); every number is the shortest decimal of the `f32` (box
//! lengths: `f64`) as an `f64`, exact whichever precision reads it.

use super::{Frame, WriterOptions, push_f32s};
use std::fmt::Write;

/// One frame's text.
pub(super) fn encode(frame: &Frame, options: &WriterOptions) -> Vec<u8> {
    let [lx, ly, lz] = frame.lengths;
    let mut text = String::with_capacity(64 * frame.len() + 200);
    let properties = if options.velocities {
        "species:S:1:pos:R:3:vel:R:3"
    } else {
        "species:S:1:pos:R:3"
    };
    // Writing to a String cannot fail.
    let _ = writeln!(text, "{}", frame.len());
    let _ = writeln!(
        text,
        "Lattice=\"{lx} 0 0 0 {ly} 0 0 0 {lz}\" Properties={properties} Time={} Step={} \
         pbc=\"T T T\"",
        frame.time, frame.step
    );
    for i in 0..frame.len() {
        let _ = write!(text, "{}", frame.type_of(i) + 1);
        push_f32s(
            &mut text,
            &super::written_position(frame, i, options.unwrapped),
        );
        if options.velocities {
            push_f32s(&mut text, &frame.velocities[i]);
        }
        text.push('\n');
    }
    text.into_bytes()
}
