//! What the short-range (neighbour-list) loops need of a vector type beyond
//! [`Simd`]: index vectors, gathers and scatters through them, lane masks;
//! and the vector types' [`Lane`] (what a pair law needs: constants,
//! a reciprocal, rounding, powers of two, `min` and `max`).
//!
//! An index vector ([`Lanes::Idx`]) is made only by [`Lanes::load_idx`] or
//! [`Lanes::iota_idx`], which clamp every lane to `bound - 1`, and it
//! carries `bound`; [`Lanes::gather`] and [`Lanes::scatter`] check once that
//! the slice holds `bound` values. So every lane's access is in bounds
//! whatever the indices were (a wrong index gives a wrong value, never an
//! access outside the slice), for one `vpminud` per index vector.
//!
//! (Over 600 lines: two traits and their implementations for every vector
//! type, meant to be read side by side.)
//!
//! The scatter writes the lanes in increasing order; lanes with equal
//! indices leave the last one's value (the loops only repeat an index where
//! every such lane writes the same value).

use gpu_kernels::pair::Lane;

use super::simd::Simd;

/// Index vectors, gathers, scatters and masks (see the module documentation).
pub(crate) trait Lanes: Simd + Lane {
    /// `LANES` indices, each below the bound it carries.
    type Idx: Copy;
    /// One flag per lane.
    type Mask: Copy;

    /// `src[..LANES]`, each clamped to `bound - 1` (`bound >= 1`).
    fn load_idx(cap: Self::Cap, src: &[u32], bound: u32) -> Self::Idx;

    /// `first, first + 1, ..`, each clamped to `bound - 1` (`bound >= 1`).
    fn iota_idx(cap: Self::Cap, first: u32, bound: u32) -> Self::Idx;

    /// `base[idx[k]]` in every lane (panics if `base` is shorter than the bound).
    fn gather(cap: Self::Cap, base: &[f32], idx: Self::Idx) -> Self;

    /// `src[idx[k]]` in every lane, each clamped to `bound - 1` (`bound >=
    /// 1`; panics if `src` is shorter than `idx`'s bound): indices read
    /// through indices (a pair's atom type).
    fn gather_idx(cap: Self::Cap, src: &[u32], idx: Self::Idx, bound: u32) -> Self::Idx;

    /// `base[idx[k]] = self[k]` for every lane in increasing `k` (panics if
    /// `base` is shorter than the bound).
    fn scatter(self, base: &mut [f32], idx: Self::Idx);

    /// The lanes whose index is not `skip` and below `end`.
    fn valid(idx: Self::Idx, skip: u32, end: u32) -> Self::Mask;

    /// The mask as bits, lane `k` in bit `k`.
    fn bits(mask: Self::Mask) -> u32;

    /// Appends `first + k + shift` (wrapping) for every lane `k` set in
    /// `mask`, in increasing `k`. Without a compress instruction, one push
    /// per set bit; AVX-512 stores them with one `vpcompressd`.
    #[inline(always)]
    fn append_selected(
        cap: Self::Cap,
        mask: Self::Mask,
        first: u32,
        shift: u32,
        out: &mut Vec<u32>,
    ) {
        let _ = cap;
        let mut bits = Self::bits(mask);
        while bits != 0 {
            out.push((first + bits.trailing_zeros()).wrapping_add(shift));
            bits &= bits - 1;
        }
    }

    /// `mask` and `self < bound`, lane by lane (false for NaN).
    fn lt_and(self, bound: Self, mask: Self::Mask) -> Self::Mask;

    /// `self` where `mask` is set, `+0` elsewhere.
    fn zero_unless(self, mask: Self::Mask) -> Self;

    /// The integer-valued lanes as indices, each clamped to `bound - 1`
    /// (`bound >= 1`; negatives and NaN clamp too): a table's words.
    fn to_idx(self, bound: u32) -> Self::Idx;

    /// `(base[at], base[at + 1])` for the integer-valued lanes `at` (a
    /// table's segment), each clamped as [`Lanes::to_idx`] clamps (panics
    /// if `base` is empty). AVX-512 reads each lane's two words with one
    /// 64-bit gather (8 lanes per instruction, not 16 per word), clamping
    /// `at` to `len - 2`: a lane outside the table reads other words of it.
    #[inline(always)]
    fn gather_pair(cap: Self::Cap, base: &[f32], at: Self) -> (Self, Self) {
        let n = base.len() as u32;
        let one = at.lit(1.0);
        (
            Self::gather(cap, base, at.to_idx(n)),
            Self::gather(cap, base, (at + one).to_idx(n)),
        )
    }

    /// Lane `k` is `vs[k].sum()`, bit for bit (`vs` holds `LANES` vectors):
    /// the sums of several bodies' force vectors reduced together, which
    /// AVX-512 does in one transposing tree of the same additions (15
    /// shuffle-and-add steps for 16 sums, not 16 x 4 of each).
    #[inline(always)]
    fn sums(vs: &[Self]) -> Self {
        let mut s = [0f32; MAX_LANES];
        for (s, v) in s.iter_mut().zip(&vs[..Self::LANES]) {
            *s = v.sum();
        }
        Self::load(vs[0].cap(), &s)
    }
}

/// The most lanes a vector type has (AVX-512's 16).
pub(crate) const MAX_LANES: usize = 16;

impl Lanes for f32 {
    type Idx = u32;
    type Mask = bool;

    #[inline(always)]
    fn load_idx(_: (), src: &[u32], bound: u32) -> u32 {
        src[0].min(bound - 1)
    }

    #[inline(always)]
    fn iota_idx(_: (), first: u32, bound: u32) -> u32 {
        first.min(bound - 1)
    }

    #[inline(always)]
    fn gather(_: (), base: &[f32], idx: u32) -> f32 {
        base[idx as usize]
    }

    #[inline(always)]
    fn gather_idx(_: (), src: &[u32], idx: u32, bound: u32) -> u32 {
        src[idx as usize].min(bound - 1)
    }

    #[inline(always)]
    fn scatter(self, base: &mut [f32], idx: u32) {
        base[idx as usize] = self;
    }

    #[inline(always)]
    fn valid(idx: u32, skip: u32, end: u32) -> bool {
        idx != skip && idx < end
    }

    #[inline(always)]
    fn bits(mask: bool) -> u32 {
        mask as u32
    }

    #[inline(always)]
    fn lt_and(self, bound: f32, mask: bool) -> bool {
        mask && self < bound
    }

    #[inline(always)]
    fn zero_unless(self, mask: bool) -> f32 {
        if mask { self } else { 0.0 }
    }

    #[inline(always)]
    fn to_idx(self, bound: u32) -> u32 {
        // Saturating: NaN and negatives to 0.
        (self as u32).min(bound - 1)
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    use gpu_kernels::pair::Lane;

    use super::Lanes;
    use crate::cpu::simd::{F32x8, F32x16, Simd};

    // SAFETY (every `unsafe` block below that the comment does not repeat):
    // a value or token of the vector type exists, so the CPU has its
    // instructions (AVX-512F, or AVX2 and FMA; `super::super::simd`); every
    // memory access is within a slice whose length was checked against the
    // index vector's bound, and every lane of an index vector is below its
    // bound (clamped when it was made).

    const NEAREST: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const TOWARD_ZERO: i32 = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;

    /// Sixteen clamped indices and their bound.
    #[derive(Clone, Copy)]
    pub(crate) struct Idx16 {
        v: __m512i,
        bound: u32,
    }

    /// Eight clamped indices and their bound.
    #[derive(Clone, Copy)]
    pub(crate) struct Idx8 {
        v: __m256i,
        bound: u32,
    }

    impl Lanes for F32x16 {
        type Idx = Idx16;
        type Mask = __mmask16;

        #[inline(always)]
        fn load_idx(_: Self::Cap, src: &[u32], bound: u32) -> Idx16 {
            let src = &src[..16];
            // SAFETY: see above; `src` holds 16 u32.
            let v = unsafe {
                _mm512_min_epu32(
                    _mm512_loadu_si512(src.as_ptr().cast()),
                    _mm512_set1_epi32((bound - 1) as i32),
                )
            };
            Idx16 { v, bound }
        }

        #[inline(always)]
        fn iota_idx(_: Self::Cap, first: u32, bound: u32) -> Idx16 {
            // SAFETY: see above.
            let v = unsafe {
                let iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
                let at = _mm512_add_epi32(_mm512_set1_epi32(first as i32), iota);
                // Indices past u32::MAX wrap; the clamp keeps them in bounds anyway.
                _mm512_min_epu32(at, _mm512_set1_epi32((bound - 1) as i32))
            };
            Idx16 { v, bound }
        }

        #[inline(always)]
        fn sums(vs: &[Self]) -> Self {
            let v: &[Self; 16] = vs.try_into().expect("16 vectors");
            let cap = v[0].cap();
            // SAFETY: see above (register operations only).
            let out = unsafe {
                // The additions of `_mm512_reduce_add_ps`, in its order
                // (lane k with k + 8, then k + 4, k + 2, k + 1; an IEEE sum
                // is commutative), for 16 vectors at once. Level 1: pairs of
                // vectors, each 256-bit half one vector's `k + 8` sums.
                let l1: [__m512; 8] = core::array::from_fn(|p| {
                    let (a, b) = (v[2 * p].raw(), v[2 * p + 1].raw());
                    _mm512_add_ps(
                        _mm512_shuffle_f32x4::<0x44>(a, b),
                        _mm512_shuffle_f32x4::<0xEE>(a, b),
                    )
                });
                // Level 2: each 128-bit quarter one vector's `k + 4` sums
                // (vectors 4p..4p + 4 in order).
                let l2: [__m512; 4] = core::array::from_fn(|p| {
                    let (a, b) = (l1[2 * p], l1[2 * p + 1]);
                    _mm512_add_ps(
                        _mm512_shuffle_f32x4::<0x88>(a, b),
                        _mm512_shuffle_f32x4::<0xDD>(a, b),
                    )
                });
                // Level 3: quarter q holds vectors 8p + q and 8p + 4 + q's
                // `k + 2` sums, two lanes each.
                let l3: [__m512; 2] = core::array::from_fn(|p| {
                    let (a, b) = (_mm512_castps_pd(l2[2 * p]), _mm512_castps_pd(l2[2 * p + 1]));
                    _mm512_add_ps(
                        _mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
                        _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)),
                    )
                });
                // Level 4: lane 4q + r holds vector q + 4r's sum.
                let (a, b) = (l3[0], l3[1]);
                let l4 = _mm512_add_ps(
                    _mm512_shuffle_ps::<0b10_00_10_00>(a, b),
                    _mm512_shuffle_ps::<0b11_01_11_01>(a, b),
                );
                let order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
                _mm512_permutexvar_ps(order, l4)
            };
            F32x16::from_raw(cap, out)
        }

        #[inline(always)]
        fn gather_pair(cap: Self::Cap, base: &[f32], at: Self) -> (Self, Self) {
            if base.len() < 2 {
                let w = Self::gather(cap, base, at.to_idx(base.len() as u32));
                return (w, w);
            }
            // Every lane <= len - 2: both words within `base`.
            let idx = at.to_idx(base.len() as u32 - 1);
            // SAFETY: see above; each lane reads the 8 bytes at `base[idx]`,
            // `idx + 1 < base.len()` (unaligned gathers are allowed).
            let (f, g) = unsafe {
                let p = base.as_ptr().cast::<f64>();
                let lo =
                    _mm512_castpd_ps(_mm512_i32gather_pd::<4>(_mm512_castsi512_si256(idx.v), p));
                let hi = _mm512_castpd_ps(_mm512_i32gather_pd::<4>(
                    _mm512_extracti64x4_epi64::<1>(idx.v),
                    p,
                ));
                let even =
                    _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
                let odd =
                    _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
                (
                    _mm512_permutex2var_ps(lo, even, hi),
                    _mm512_permutex2var_ps(lo, odd, hi),
                )
            };
            (F32x16::from_raw(cap, f), F32x16::from_raw(cap, g))
        }

        #[inline(always)]
        fn gather(cap: Self::Cap, base: &[f32], idx: Idx16) -> Self {
            assert!(base.len() >= idx.bound as usize);
            // SAFETY: see above (every lane < bound <= base.len()).
            let v = unsafe { _mm512_i32gather_ps::<4>(idx.v, base.as_ptr()) };
            F32x16::from_raw(cap, v)
        }

        #[inline(always)]
        fn gather_idx(_: Self::Cap, src: &[u32], idx: Idx16, bound: u32) -> Idx16 {
            assert!(src.len() >= idx.bound as usize);
            // SAFETY: see above (every lane < idx.bound <= src.len()).
            let v = unsafe {
                _mm512_min_epu32(
                    _mm512_i32gather_epi32::<4>(idx.v, src.as_ptr().cast()),
                    _mm512_set1_epi32((bound - 1) as i32),
                )
            };
            Idx16 { v, bound }
        }

        #[inline(always)]
        fn scatter(self, base: &mut [f32], idx: Idx16) {
            assert!(base.len() >= idx.bound as usize);
            // SAFETY: see above (every lane < bound <= base.len()).
            unsafe { _mm512_i32scatter_ps::<4>(base.as_mut_ptr(), idx.v, self.raw()) }
        }

        #[inline(always)]
        fn valid(idx: Idx16, skip: u32, end: u32) -> __mmask16 {
            // SAFETY: see above.
            unsafe {
                let ne = _mm512_cmpneq_epi32_mask(idx.v, _mm512_set1_epi32(skip as i32));
                _mm512_mask_cmplt_epu32_mask(ne, idx.v, _mm512_set1_epi32(end as i32))
            }
        }

        #[inline(always)]
        fn bits(mask: __mmask16) -> u32 {
            mask as u32
        }

        #[inline(always)]
        fn append_selected(
            _: Self::Cap,
            mask: __mmask16,
            first: u32,
            shift: u32,
            out: &mut Vec<u32>,
        ) {
            // The mask reaches `vpcompressd` through an empty `asm!`, as an
            // opaque 16-bit integer in a general register (two `kmovw`):
            // otherwise LLVM folds the compare that made it straight into
            // the compress store, and its O0 instruction selection lowers
            // that fold by copying mask register k0 into an xmm register,
            // which it cannot emit ("Cannot emit physreg copy instruction").
            // Thin LTO re-runs O0 code generation on this crate's optimised
            // IR when the final crate is built at opt-level 0, as `cargo
            // test --release` builds doctests (issue 22, defect 9).
            // `std::hint::black_box` also works, through memory: with it a
            // build-bound run of lj_melt took 2 % more CPU time, with this
            // the same as before (farm-bench, 11 pairs).
            let mut bits = mask;
            // SAFETY: an empty assembly template that touches nothing: the
            // compiler only loses track of the value of `bits`.
            unsafe {
                std::arch::asm!(
                    "/* {0:x} */",
                    inout(reg) bits,
                    options(pure, nomem, nostack, preserves_flags)
                );
            }
            let mask = bits;
            out.reserve(16);
            let len = out.len();
            // SAFETY: see above; `reserve` made room for 16 more u32 after
            // `len`, of which `vpcompressd` writes the `popcount(mask)` it
            // stores, all initialised before the length covers them.
            unsafe {
                let iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
                let at =
                    _mm512_add_epi32(_mm512_set1_epi32(first.wrapping_add(shift) as i32), iota);
                _mm512_mask_compressstoreu_epi32(out.as_mut_ptr().add(len).cast(), mask, at);
                out.set_len(len + mask.count_ones() as usize);
            }
        }

        #[inline(always)]
        fn lt_and(self, bound: Self, mask: __mmask16) -> __mmask16 {
            // SAFETY: see above.
            unsafe { _mm512_mask_cmp_ps_mask::<_CMP_LT_OQ>(mask, self.raw(), bound.raw()) }
        }

        #[inline(always)]
        fn zero_unless(self, mask: __mmask16) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe { _mm512_maskz_mov_ps(mask, self.raw()) })
        }

        #[inline(always)]
        fn to_idx(self, bound: u32) -> Idx16 {
            // SAFETY: see above. NaN and out-of-range lanes convert to
            // 0x80000000, which the unsigned clamp sends to bound - 1.
            let v = unsafe {
                _mm512_min_epu32(
                    _mm512_cvttps_epi32(self.raw()),
                    _mm512_set1_epi32((bound - 1) as i32),
                )
            };
            Idx16 { v, bound }
        }
    }

    impl Lane for F32x16 {
        #[inline(always)]
        fn lit(self, v: f32) -> Self {
            Self::splat(self.cap(), v)
        }

        #[inline(always)]
        fn round_even(self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                _mm512_roundscale_ps::<NEAREST>(self.raw())
            })
        }

        /// `vrcp14ps` (relative error below 2^-14) and one Newton–Raphson
        /// step `y (2 - x y)`: about 2^-23 (`1 / 0 = inf`, then NaN after
        /// the step: coincident bodies end as NaN, a divergence, not a
        /// silent zero).
        #[inline(always)]
        fn recip(self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                let y = _mm512_rcp14_ps(self.raw());
                _mm512_mul_ps(y, _mm512_fnmadd_ps(self.raw(), y, _mm512_set1_ps(2.0)))
            })
        }

        /// `vscalefps`: `1 * 2^self`, exact.
        #[inline(always)]
        fn pow2i(self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                _mm512_scalef_ps(_mm512_set1_ps(1.0), self.raw())
            })
        }

        #[inline(always)]
        fn min(self, other: Self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                _mm512_min_ps(self.raw(), other.raw())
            })
        }

        #[inline(always)]
        fn max(self, other: Self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                _mm512_max_ps(self.raw(), other.raw())
            })
        }

        #[inline(always)]
        fn trunc(self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                _mm512_roundscale_ps::<TOWARD_ZERO>(self.raw())
            })
        }

        #[inline(always)]
        fn lt_select(self, bound: Self, yes: Self, no: Self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                let m = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(self.raw(), bound.raw());
                _mm512_mask_blend_ps(m, no.raw(), yes.raw())
            })
        }
    }

    impl Lanes for F32x8 {
        type Idx = Idx8;
        /// All-ones or all-zeros lanes.
        type Mask = __m256;

        #[inline(always)]
        fn load_idx(_: Self::Cap, src: &[u32], bound: u32) -> Idx8 {
            let src = &src[..8];
            // SAFETY: see above; `src` holds 8 u32.
            let v = unsafe {
                _mm256_min_epu32(
                    _mm256_loadu_si256(src.as_ptr().cast()),
                    _mm256_set1_epi32((bound - 1) as i32),
                )
            };
            Idx8 { v, bound }
        }

        #[inline(always)]
        fn iota_idx(_: Self::Cap, first: u32, bound: u32) -> Idx8 {
            // SAFETY: see above.
            let v = unsafe {
                let iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
                let at = _mm256_add_epi32(_mm256_set1_epi32(first as i32), iota);
                _mm256_min_epu32(at, _mm256_set1_epi32((bound - 1) as i32))
            };
            Idx8 { v, bound }
        }

        #[inline(always)]
        fn gather(cap: Self::Cap, base: &[f32], idx: Idx8) -> Self {
            assert!(base.len() >= idx.bound as usize);
            // SAFETY: see above (every lane < bound <= base.len()).
            let v = unsafe { _mm256_i32gather_ps::<4>(base.as_ptr(), idx.v) };
            F32x8::from_raw(cap, v)
        }

        #[inline(always)]
        fn gather_idx(_: Self::Cap, src: &[u32], idx: Idx8, bound: u32) -> Idx8 {
            assert!(src.len() >= idx.bound as usize);
            // SAFETY: see above (every lane < idx.bound <= src.len()).
            let v = unsafe {
                _mm256_min_epu32(
                    _mm256_i32gather_epi32::<4>(src.as_ptr().cast(), idx.v),
                    _mm256_set1_epi32((bound - 1) as i32),
                )
            };
            Idx8 { v, bound }
        }

        /// AVX2 has no scatter: eight stores.
        #[inline(always)]
        fn scatter(self, base: &mut [f32], idx: Idx8) {
            let (mut at, mut v) = ([0u32; 8], [0f32; 8]);
            // SAFETY: see above; `at` holds 8 u32.
            unsafe { _mm256_storeu_si256(at.as_mut_ptr().cast(), idx.v) };
            self.store(&mut v);
            for k in 0..8 {
                base[at[k] as usize] = v[k];
            }
        }

        #[inline(always)]
        fn valid(idx: Idx8, skip: u32, end: u32) -> __m256 {
            // SAFETY: see above.
            unsafe {
                let eq = _mm256_cmpeq_epi32(idx.v, _mm256_set1_epi32(skip as i32));
                // idx < end, unsigned: min(idx, end - 1) == idx (end >= 1).
                let below = if end == 0 {
                    _mm256_setzero_si256()
                } else {
                    let last = _mm256_set1_epi32((end - 1) as i32);
                    _mm256_cmpeq_epi32(_mm256_min_epu32(idx.v, last), idx.v)
                };
                _mm256_castsi256_ps(_mm256_andnot_si256(eq, below))
            }
        }

        #[inline(always)]
        fn bits(mask: __m256) -> u32 {
            // SAFETY: see above.
            unsafe { _mm256_movemask_ps(mask) as u32 }
        }

        #[inline(always)]
        fn lt_and(self, bound: Self, mask: __m256) -> __m256 {
            // SAFETY: see above.
            unsafe { _mm256_and_ps(mask, _mm256_cmp_ps::<_CMP_LT_OQ>(self.raw(), bound.raw())) }
        }

        #[inline(always)]
        fn zero_unless(self, mask: __m256) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe { _mm256_and_ps(self.raw(), mask) })
        }

        #[inline(always)]
        fn to_idx(self, bound: u32) -> Idx8 {
            // SAFETY: see above. NaN and out-of-range lanes convert to
            // 0x80000000, which the unsigned clamp sends to bound - 1.
            let v = unsafe {
                _mm256_min_epu32(
                    _mm256_cvttps_epi32(self.raw()),
                    _mm256_set1_epi32((bound - 1) as i32),
                )
            };
            Idx8 { v, bound }
        }
    }

    impl Lane for F32x8 {
        #[inline(always)]
        fn lit(self, v: f32) -> Self {
            Self::splat(self.cap(), v)
        }

        #[inline(always)]
        fn round_even(self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                _mm256_round_ps::<NEAREST>(self.raw())
            })
        }

        /// `vrcpps` (relative error below 1.5 * 2^-12) and one Newton–Raphson
        /// step: about 2^-22.
        #[inline(always)]
        fn recip(self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                let y = _mm256_rcp_ps(self.raw());
                _mm256_mul_ps(y, _mm256_fnmadd_ps(self.raw(), y, _mm256_set1_ps(2.0)))
            })
        }

        /// The exponent field `k + 127` shifted into place: exact.
        #[inline(always)]
        fn pow2i(self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                let k = _mm256_cvtps_epi32(self.raw());
                let e = _mm256_add_epi32(k, _mm256_set1_epi32(127));
                _mm256_castsi256_ps(_mm256_slli_epi32::<23>(e))
            })
        }

        #[inline(always)]
        fn min(self, other: Self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                _mm256_min_ps(self.raw(), other.raw())
            })
        }

        #[inline(always)]
        fn max(self, other: Self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                _mm256_max_ps(self.raw(), other.raw())
            })
        }

        #[inline(always)]
        fn trunc(self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                _mm256_round_ps::<TOWARD_ZERO>(self.raw())
            })
        }

        #[inline(always)]
        fn lt_select(self, bound: Self, yes: Self, no: Self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                let m = _mm256_cmp_ps::<_CMP_LT_OQ>(self.raw(), bound.raw());
                _mm256_blendv_ps(no.raw(), yes.raw(), m)
            })
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use core::arch::aarch64::*;

    use gpu_kernels::pair::Lane;

    use super::Lanes;
    use crate::cpu::simd::{F32x4, Simd};

    // SAFETY (every `unsafe` block below that the comment does not repeat):
    // NEON is part of the aarch64 base architecture; memory accesses are
    // bounds-checked slice accesses.

    /// Four clamped indices and their bound.
    #[derive(Clone, Copy)]
    pub(crate) struct Idx4 {
        v: [u32; 4],
        bound: u32,
    }

    impl Lanes for F32x4 {
        type Idx = Idx4;
        /// All-ones or all-zeros lanes.
        type Mask = uint32x4_t;

        #[inline(always)]
        fn load_idx(_: Self::Cap, src: &[u32], bound: u32) -> Idx4 {
            let mut v = [0u32; 4];
            for k in 0..4 {
                v[k] = src[k].min(bound - 1);
            }
            Idx4 { v, bound }
        }

        #[inline(always)]
        fn iota_idx(_: Self::Cap, first: u32, bound: u32) -> Idx4 {
            let v = [0u32, 1, 2, 3].map(|k| first.wrapping_add(k).min(bound - 1));
            Idx4 { v, bound }
        }

        #[inline(always)]
        fn gather(cap: Self::Cap, base: &[f32], idx: Idx4) -> Self {
            assert!(base.len() >= idx.bound as usize);
            let lanes = idx.v.map(|i| base[i as usize]);
            F32x4::load(cap, &lanes)
        }

        #[inline(always)]
        fn gather_idx(_: Self::Cap, src: &[u32], idx: Idx4, bound: u32) -> Idx4 {
            assert!(src.len() >= idx.bound as usize);
            Idx4 {
                v: idx.v.map(|i| src[i as usize].min(bound - 1)),
                bound,
            }
        }

        #[inline(always)]
        fn scatter(self, base: &mut [f32], idx: Idx4) {
            assert!(base.len() >= idx.bound as usize);
            let mut v = [0f32; 4];
            self.store(&mut v);
            for k in 0..4 {
                base[idx.v[k] as usize] = v[k];
            }
        }

        #[inline(always)]
        fn valid(idx: Idx4, skip: u32, end: u32) -> uint32x4_t {
            let flags = idx
                .v
                .map(|i| if i != skip && i < end { u32::MAX } else { 0 });
            // SAFETY: see above; `flags` holds 4 u32.
            unsafe { vld1q_u32(flags.as_ptr()) }
        }

        #[inline(always)]
        fn bits(mask: uint32x4_t) -> u32 {
            let mut lanes = [0u32; 4];
            // SAFETY: see above; `lanes` holds 4 u32.
            unsafe { vst1q_u32(lanes.as_mut_ptr(), mask) };
            lanes
                .iter()
                .enumerate()
                .map(|(k, &l)| u32::from(l != 0) << k)
                .sum()
        }

        #[inline(always)]
        fn lt_and(self, bound: Self, mask: uint32x4_t) -> uint32x4_t {
            // SAFETY: see above.
            unsafe { vandq_u32(mask, vcltq_f32(self.raw(), bound.raw())) }
        }

        #[inline(always)]
        fn zero_unless(self, mask: uint32x4_t) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(self.raw()), mask))
            })
        }

        #[inline(always)]
        fn to_idx(self, bound: u32) -> Idx4 {
            let mut lanes = [0f32; 4];
            self.store(&mut lanes);
            // Saturating: NaN and negatives to 0.
            Idx4 {
                v: lanes.map(|x| (x as u32).min(bound - 1)),
                bound,
            }
        }
    }

    impl Lane for F32x4 {
        #[inline(always)]
        fn lit(self, v: f32) -> Self {
            Self::splat(self.cap(), v)
        }

        #[inline(always)]
        fn round_even(self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe { vrndnq_f32(self.raw()) })
        }

        /// `frecpe` (about 8 bits) and two Newton–Raphson steps (`frecps`).
        #[inline(always)]
        fn recip(self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                let x = self.raw();
                let y = vrecpeq_f32(x);
                let y = vmulq_f32(y, vrecpsq_f32(x, y));
                vmulq_f32(y, vrecpsq_f32(x, y))
            })
        }

        /// The exponent field `k + 127` shifted into place: exact.
        #[inline(always)]
        fn pow2i(self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                let e = vaddq_s32(vcvtnq_s32_f32(self.raw()), vdupq_n_s32(127));
                vreinterpretq_f32_s32(vshlq_n_s32::<23>(e))
            })
        }

        #[inline(always)]
        fn min(self, other: Self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe { vminq_f32(self.raw(), other.raw()) })
        }

        #[inline(always)]
        fn max(self, other: Self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe { vmaxq_f32(self.raw(), other.raw()) })
        }

        #[inline(always)]
        fn trunc(self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe { vrndq_f32(self.raw()) })
        }

        #[inline(always)]
        fn lt_select(self, bound: Self, yes: Self, no: Self) -> Self {
            // SAFETY: see above.
            Self::from_raw(self.cap(), unsafe {
                vbslq_f32(vcltq_f32(self.raw(), bound.raw()), yes.raw(), no.raw())
            })
        }
    }
}
