//! The body layout: four `f32` in 16 bytes, loaded with one 128-bit access.

/// Four `f32` aligned to 16 bytes, so a warp reads consecutive bodies with one
/// coalesced 128-bit load per thread (`ld.global.v4.f32`, `LDS.128`).
///
/// | buffer | `x, y, z` | `w` |
/// | --- | --- | --- |
/// | positions | position | mass |
/// | velocities | velocity | unused (0) |
/// | accelerations | acceleration | unused (0) |
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Vec4 {
    /// x component.
    pub x: f32,
    /// y component.
    pub y: f32,
    /// z component.
    pub z: f32,
    /// Mass for positions; unused (0) for velocities and accelerations.
    pub w: f32,
}

impl Vec4 {
    /// All four components zero: also a massless padding body at the origin.
    pub const ZERO: Vec4 = Vec4::new(0.0, 0.0, 0.0, 0.0);

    /// A vector from its four components.
    #[inline(always)]
    pub const fn new(x: f32, y: f32, z: f32, w: f32) -> Self {
        Vec4 { x, y, z, w }
    }

    /// The components as an array `[x, y, z, w]`.
    #[inline(always)]
    pub const fn to_array(self) -> [f32; 4] {
        [self.x, self.y, self.z, self.w]
    }

    /// A vector from an array `[x, y, z, w]`.
    #[inline(always)]
    pub const fn from_array(a: [f32; 4]) -> Self {
        Vec4::new(a[0], a[1], a[2], a[3])
    }
}

impl From<[f32; 4]> for Vec4 {
    fn from(a: [f32; 4]) -> Self {
        Vec4::from_array(a)
    }
}

impl From<Vec4> for [f32; 4] {
    fn from(v: Vec4) -> Self {
        v.to_array()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_four_f32_in_16_aligned_bytes() {
        assert_eq!(core::mem::size_of::<Vec4>(), 16);
        assert_eq!(core::mem::align_of::<Vec4>(), 16);
        let v = Vec4::new(1.0, 2.0, 3.0, 4.0);
        // Field order is the memory order [x, y, z, m] the kernels and the
        // snapshot files rely on.
        // SAFETY: `Vec4` is `repr(C)`, four f32 without padding: the same 16 bytes as [f32; 4].
        let words: [f32; 4] = unsafe { core::mem::transmute(v) };
        assert_eq!(words, [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(Vec4::from(v.to_array()), v);
    }
}
