//! Thermostats and the barostat of short-range MD as LAMMPS integrates
//! them, in scalar `f64` written once for the host and the GPU: the
//! Nosé–Hoover chains and the isotropic MTK barostat of `fix nvt` / `fix
//! npt` (LAMMPS's `fix_nh.cpp`: Martyna, Tuckerman, Tobias and Klein,
//! Mol. Phys. 87, 1117 (1996), with its half-step Trotter splitting), and
//! the counter-based random numbers of `fix langevin`.
//!
//! Everything here is plain `f64` arithmetic (`+ - * /`, an `exp` made of
//! products and sums and the exponent bits, and the correctly rounded
//! `sqrt`), never contracted into FMAs by the compiler, so the host and
//! the PTX get the same bits from the same state: the CPU engine calls
//! these functions between its passes over the atoms, and the GPU plan
//! runs them in a one-thread kernel on a state kept in device memory.
//!
//! Units are LAMMPS's `lj` units: `k_B = 1`, no unit conversions.

/// Runs the block once for each listed value of `k` (literals), so that
/// every index into a chain is a constant: on the GPU the chain then lives
/// in registers (a loop to a run-time length puts it in local memory).
macro_rules! each {
    ($k:ident in [$($v:literal),*] $body:block) => {
        $({
            let $k: usize = $v;
            $body
        })*
    };
}

/// The longest thermostat chain (LAMMPS's default is 3).
pub const MAX_CHAIN: usize = 8;
const _: () = assert!(MAX_CHAIN == 8, "`each!` lists the links 0..8");

/// `e^x` for `|x| <= 700`, within 2 ulps (clamped there): Cody–Waite
/// reduction `x = k ln 2 + r`, `|r| <= ln 2 / 2`, a degree-13 Taylor
/// polynomial for `e^r` (truncation below `5e-18`), times `2^k` from the
/// exponent bits. The thermostats' arguments are small (`dt` times a
/// friction), where it is all but exact.
#[inline(always)]
pub fn exp(x: f64) -> f64 {
    // ln 2 split so that `k * LN2_HI` is exact for |k| < 2^20 (fdlibm's).
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    // Adding and subtracting 1.5 * 2^52 rounds to the nearest integer.
    const ROUND: f64 = 6_755_399_441_055_744.0;
    let x = x.clamp(-700.0, 700.0);
    let k = (x * core::f64::consts::LOG2_E + ROUND) - ROUND;
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let mut p = 1.0;
    let mut i = 13;
    while i > 0 {
        p = 1.0 + p * r / i as f64;
        i -= 1;
    }
    p * f64::from_bits(((k as i64 + 1023) as u64) << 52)
}

/// The correctly rounded square root (IEEE `sqrt`: the same bits on the
/// host and the GPU).
#[inline(always)]
pub fn sqrt(x: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::sqrtf64(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        libm::sqrt(x)
    }
}

/// The constants of a Nosé–Hoover run (`fix nvt temp T T Tdamp`, `fix npt
/// temp T T Tdamp iso P P Pdamp`), `k_B = 1`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoseHoover {
    /// Target temperature.
    pub t_target: f64,
    /// `1 / Tdamp`.
    pub t_freq: f64,
    /// Thermostats in the chain (`tchain`, 1..=[`MAX_CHAIN`]).
    pub tchain: usize,
    /// Degrees of freedom of the temperature (`3N - 3`).
    pub dof: f64,
    /// Atoms `N` (the barostat's mass is `(N + 1) k T / Pfreq^2`).
    pub natoms: f64,
    /// The time step.
    pub dt: f64,
    /// The isotropic barostat: `Some((P, 1 / Pdamp, pchain))`.
    pub barostat: Option<(f64, f64, usize)>,
}

/// What a Nosé–Hoover run carries from step to step (LAMMPS's restart
/// record of `fix nh`, plus the temperature it last saw).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NhState {
    /// Thermostat positions `eta_k`.
    pub eta: [f64; MAX_CHAIN],
    /// Their velocities (one more, always 0, ends the chain).
    pub eta_dot: [f64; MAX_CHAIN + 1],
    /// Their accelerations.
    pub eta_dotdot: [f64; MAX_CHAIN],
    /// The barostat's thermostat chain.
    pub etap: [f64; MAX_CHAIN],
    /// Its velocities (one more, always 0).
    pub etap_dot: [f64; MAX_CHAIN + 1],
    /// Its accelerations.
    pub etap_dotdot: [f64; MAX_CHAIN],
    /// The barostat's strain `omega` (bookkeeping: `ln(V / V0) / 3`).
    pub omega: f64,
    /// Its rate `d omega / dt`.
    pub omega_dot: f64,
    /// The MTK term of the velocity scaling, `omega_dot / N` (iso).
    pub mtk_term2: f64,
    /// The volume the `P (V - V0)` energy counts from.
    pub vol0: f64,
    /// The temperature as the thermostat last saw it (after its scaling).
    pub t_current: f64,
    /// The box lengths (changed by the barostat).
    pub lengths: [f64; 3],
}

impl NhState {
    /// Everything at rest, in the box `lengths`.
    #[inline]
    pub const fn new(lengths: [f64; 3]) -> NhState {
        NhState {
            eta: [0.0; MAX_CHAIN],
            eta_dot: [0.0; MAX_CHAIN + 1],
            eta_dotdot: [0.0; MAX_CHAIN],
            etap: [0.0; MAX_CHAIN],
            etap_dot: [0.0; MAX_CHAIN + 1],
            etap_dotdot: [0.0; MAX_CHAIN],
            omega: 0.0,
            omega_dot: 0.0,
            mtk_term2: 0.0,
            vol0: 0.0,
            t_current: 0.0,
            lengths,
        }
    }

    /// The volume of the box.
    #[inline]
    pub fn volume(&self) -> f64 {
        self.lengths[0] * self.lengths[1] * self.lengths[2]
    }
}

impl NoseHoover {
    /// `Q_k`: `dof k T / f^2` for the first thermostat, `k T / f^2` for the others.
    fn eta_mass(&self, k: usize) -> f64 {
        let q = self.t_target / (self.t_freq * self.t_freq);
        if k == 0 { self.dof * q } else { q }
    }

    /// The barostat's mass `W = (N + 1) k T / Pfreq^2` (LAMMPS's since 2012;
    /// MTK's `(N_f + d) k T / 3 Pfreq^2` for `N_f = 3N`, `d = 3`) and its chain's
    /// masses `k T / Pfreq^2`.
    fn omega_masses(&self) -> (f64, f64) {
        let (_, p_freq, _) = self.barostat.unwrap_or((0.0, 1.0, 0));
        let kt = self.t_target;
        (
            (self.natoms + 1.0) * kt / (p_freq * p_freq),
            kt / (p_freq * p_freq),
        )
    }

    /// LAMMPS's `setup()`: the temperature `t_current` now, the reference
    /// volume (if none yet) and the chains' initial accelerations.
    #[inline]
    pub fn setup(&self, s: &mut NhState, t_current: f64) {
        s.t_current = t_current;
        if s.vol0 == 0.0 {
            s.vol0 = s.volume();
        }
        let kt = self.t_target;
        for k in 1..self.tchain {
            s.eta_dotdot[k] = (self.eta_mass(k - 1) * s.eta_dot[k - 1] * s.eta_dot[k - 1] - kt)
                / self.eta_mass(k);
        }
        if let Some((_, _, pchain)) = self.barostat {
            let (_, qp) = self.omega_masses();
            for k in 1..pchain {
                s.etap_dotdot[k] = (qp * s.etap_dot[k - 1] * s.etap_dot[k - 1] - kt) / qp;
            }
        }
    }

    /// Half a step of the thermostat chain (`nhc_temp_integrate`, one
    /// loop): returns the factor by which every velocity is scaled, and
    /// scales `t_current` by its square. (The chain's loops run over every
    /// possible link, each a constant index, skipping those past `tchain`:
    /// the same operations in the same order as loops to `tchain`, and on
    /// the GPU the state stays in registers, no stack frame; inlined so
    /// that it is not passed by address.)
    #[inline(always)]
    pub fn nhc_temp(&self, s: &mut NhState) -> f64 {
        let (m, dt) = (self.tchain, self.dt);
        let (dthalf, dt4, dt8) = (0.5 * dt, 0.25 * dt, 0.125 * dt);
        let kt = self.t_target;
        let ke_target = self.dof * kt;
        let mut ke_current = self.dof * s.t_current;
        s.eta_dotdot[0] = (ke_current - ke_target) / self.eta_mass(0);
        each!(k in [7, 6, 5, 4, 3, 2, 1] {
            if k < m {
                let expfac = exp(-dt8 * s.eta_dot[k + 1]);
                s.eta_dot[k] *= expfac;
                s.eta_dot[k] += s.eta_dotdot[k] * dt4;
                s.eta_dot[k] *= expfac;
            }
        });
        let expfac = exp(-dt8 * s.eta_dot[1]);
        s.eta_dot[0] *= expfac;
        s.eta_dot[0] += s.eta_dotdot[0] * dt4;
        s.eta_dot[0] *= expfac;
        let factor = exp(-dthalf * s.eta_dot[0]);
        s.t_current *= factor * factor;
        ke_current = self.dof * s.t_current;
        s.eta_dotdot[0] = (ke_current - ke_target) / self.eta_mass(0);
        each!(k in [0, 1, 2, 3, 4, 5, 6, 7] {
            if k < m {
                s.eta[k] += dthalf * s.eta_dot[k];
            }
        });
        s.eta_dot[0] *= expfac;
        s.eta_dot[0] += s.eta_dotdot[0] * dt4;
        s.eta_dot[0] *= expfac;
        each!(k in [1, 2, 3, 4, 5, 6, 7] {
            if k < m {
                let expfac = exp(-dt8 * s.eta_dot[k + 1]);
                s.eta_dot[k] *= expfac;
                s.eta_dotdot[k] = (self.eta_mass(k - 1) * s.eta_dot[k - 1] * s.eta_dot[k - 1]
                    - kt)
                    / self.eta_mass(k);
                s.eta_dot[k] += s.eta_dotdot[k] * dt4;
                s.eta_dot[k] *= expfac;
            }
        });
        factor
    }

    /// Half a step of the barostat's thermostat chain
    /// (`nhc_press_integrate`), which scales `omega_dot`.
    #[inline]
    pub fn nhc_press(&self, s: &mut NhState) {
        let Some((_, _, m)) = self.barostat else {
            return;
        };
        if m == 0 {
            return;
        }
        let dt = self.dt;
        let (dthalf, dt4, dt8) = (0.5 * dt, 0.25 * dt, 0.125 * dt);
        let kt = self.t_target;
        let (w, qp) = self.omega_masses();
        // Three barostatted dimensions, each with the same omega_dot.
        let mut ke_current = 3.0 * w * s.omega_dot * s.omega_dot;
        s.etap_dotdot[0] = (ke_current - kt) / qp;
        let mut k = m - 1;
        while k > 0 {
            let expfac = exp(-dt8 * s.etap_dot[k + 1]);
            s.etap_dot[k] *= expfac;
            s.etap_dot[k] += s.etap_dotdot[k] * dt4;
            s.etap_dot[k] *= expfac;
            k -= 1;
        }
        let expfac = exp(-dt8 * s.etap_dot[1]);
        s.etap_dot[0] *= expfac;
        s.etap_dot[0] += s.etap_dotdot[0] * dt4;
        s.etap_dot[0] *= expfac;
        for k in 0..m {
            s.etap[k] += dthalf * s.etap_dot[k];
        }
        s.omega_dot *= exp(-dthalf * s.etap_dot[0]);
        ke_current = 3.0 * w * s.omega_dot * s.omega_dot;
        s.etap_dotdot[0] = (ke_current - kt) / qp;
        s.etap_dot[0] *= expfac;
        s.etap_dot[0] += s.etap_dotdot[0] * dt4;
        s.etap_dot[0] *= expfac;
        for k in 1..m {
            let expfac = exp(-dt8 * s.etap_dot[k + 1]);
            s.etap_dot[k] *= expfac;
            s.etap_dotdot[k] = (qp * s.etap_dot[k - 1] * s.etap_dot[k - 1] - kt) / qp;
            s.etap_dot[k] += s.etap_dotdot[k] * dt4;
            s.etap_dot[k] *= expfac;
        }
    }

    /// Half a step of the barostat's velocity (`nh_omega_dot`, iso) from
    /// the pressure `p_current` (of the kinetic energy `dof t_current / 2`
    /// and the last virial, in the current volume); sets `mtk_term2`.
    #[inline]
    pub fn omega_dot(&self, s: &mut NhState, p_current: f64) {
        let Some((p_target, _, _)) = self.barostat else {
            return;
        };
        let (w, _) = self.omega_masses();
        let volume = s.volume();
        let mtk_term1 = self.dof * s.t_current / (3.0 * self.natoms);
        let f_omega = (p_current - p_target) * volume / w + mtk_term1 / w;
        s.omega_dot += f_omega * 0.5 * self.dt;
        s.mtk_term2 = 3.0 * s.omega_dot / (3.0 * self.natoms);
    }

    /// The factor of `nh_v_press`: every velocity times
    /// `exp(-dt/4 (omega_dot + mtk_term2))` twice.
    #[inline]
    pub fn v_press_factor(&self, s: &NhState) -> f64 {
        if self.barostat.is_none() {
            return 1.0;
        }
        let f = exp(-0.25 * self.dt * (s.omega_dot + s.mtk_term2));
        f * f
    }

    /// Half a step of the box (`remap`): `omega += dt/2 omega_dot`, every
    /// length times the returned `exp(dt/2 omega_dot)`, as every position
    /// must be (the box's corner stays at the origin, where LAMMPS keeps
    /// its centre: a translation of every atom, which changes nothing).
    #[inline]
    pub fn remap(&self, s: &mut NhState) -> f64 {
        if self.barostat.is_none() {
            return 1.0;
        }
        let dto = 0.5 * self.dt;
        s.omega += dto * s.omega_dot;
        let e = exp(dto * s.omega_dot);
        for l in &mut s.lengths {
            *l *= e;
        }
        e
    }

    /// The pressure LAMMPS's `compute pressure` gives for the kinetic
    /// energy `dof t / 2` and the virial `virial` in the current box.
    #[inline]
    pub fn pressure(&self, s: &NhState, virial: f64) -> f64 {
        (self.dof * s.t_current + virial) / (3.0 * s.volume())
    }

    /// The energy of the thermostats and the barostat (`compute_scalar`,
    /// LAMMPS's `ecouple` of `fix nvt` / `fix npt`): what the particles'
    /// energy plus this conserves.
    #[inline]
    pub fn energy(&self, s: &NhState) -> f64 {
        let kt = self.t_target;
        let mut e = self.dof * kt * s.eta[0] + 0.5 * self.eta_mass(0) * s.eta_dot[0] * s.eta_dot[0];
        for k in 1..self.tchain {
            e += kt * s.eta[k] + 0.5 * self.eta_mass(k) * s.eta_dot[k] * s.eta_dot[k];
        }
        if let Some((p_target, _, pchain)) = self.barostat {
            let (w, qp) = self.omega_masses();
            let volume = s.volume();
            for _ in 0..3 {
                e += 0.5 * s.omega_dot * s.omega_dot * w + p_target * (volume - s.vol0) / 3.0;
            }
            for k in 0..pchain {
                e += kt * s.etap[k] + 0.5 * qp * s.etap_dot[k] * s.etap_dot[k];
            }
        }
        e
    }
}

/// Philox4x32-10 (Salmon, Moraes, Dror and Shaw, SC'11; Random123's
/// `philox4x32`): four random words from a 128-bit counter and a 64-bit
/// key, by ten rounds of two 32x32-bit products. Counter-based: the same
/// counter gives the same words on any thread, in any order, on the host
/// and the GPU.
#[inline(always)]
pub fn philox4x32(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    const M0: u64 = 0xD251_1F53;
    const M1: u64 = 0xCD9E_8D57;
    const W0: u32 = 0x9E37_79B9;
    const W1: u32 = 0xBB67_AE85;
    let (mut c, mut k) = (counter, key);
    let mut round = 0;
    while round < 10 {
        if round > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let p0 = M0 * c[0] as u64;
        let p1 = M1 * c[2] as u64;
        c = [
            (p1 >> 32) as u32 ^ c[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ c[3] ^ k[1],
            p0 as u32,
        ];
        round += 1;
    }
    c
}

/// The three uniform numbers in `[-1/2, 1/2)` (multiples of `2^-24`,
/// exact in `f32`) that `fix langevin`'s random force of atom `id` at
/// step `step` draws from, for the run's `seed`.
#[inline(always)]
pub fn langevin_uniforms(seed: u64, step: u64, id: u32) -> [f32; 3] {
    let w = philox4x32(
        [id, step as u32, (step >> 32) as u32, 0x4C41_4E47],
        [seed as u32, (seed >> 32) as u32],
    );
    let u = |x: u32| (x >> 8) as f32 * (1.0 / 16_777_216.0) - 0.5;
    [u(w[0]), u(w[1]), u(w[2])]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_within_two_ulps() {
        let mut worst = 0.0f64;
        let mut x = -700.0;
        while x <= 700.0 {
            let (got, want) = (exp(x), libm::exp(x));
            let ulp = f64::from_bits(want.to_bits() + 1) - want;
            worst = worst.max((got - want).abs() / ulp);
            x += 0.0371;
        }
        for x in [0.0, 1e-12, -1e-9, 3e-4, -0.3465, 0.3466, 1.0] {
            let (got, want) = (exp(x), libm::exp(x));
            let ulp = f64::from_bits(want.to_bits() + 1) - want;
            worst = worst.max((got - want).abs() / ulp);
        }
        assert!(worst <= 2.0, "worst error {worst} ulps");
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(800.0), exp(700.0));
    }

    #[test]
    fn philox_gives_random123s_known_answers() {
        // Random123's kat_vectors for philox4x32 with 10 rounds.
        assert_eq!(
            philox4x32([0; 4], [0; 2]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }

    #[test]
    fn langevin_uniforms_cover_the_interval_with_the_right_moments() {
        let (mut sum, mut sum2, mut lo, mut hi) = (0.0f64, 0.0f64, 1.0f32, -1.0f32);
        let n = 200_000u32;
        for id in 0..n {
            for u in langevin_uniforms(87287, id as u64 / 7, id) {
                sum += u as f64;
                sum2 += (u as f64) * (u as f64);
                lo = lo.min(u);
                hi = hi.max(u);
            }
        }
        let m = 3.0 * n as f64;
        // Mean 0, variance 1/12, within a few standard errors.
        assert!(
            (sum / m).abs() < 4.0 * (1.0 / 12.0 / m).sqrt(),
            "{}",
            sum / m
        );
        assert!(
            (sum2 / m - 1.0 / 12.0).abs() < 4.0 * 0.0745 / m.sqrt() / 1.0,
            "{}",
            sum2 / m
        );
        assert!((-0.5..-0.4999).contains(&lo) && (0.4999..0.5).contains(&hi));
        // Different steps, atoms and seeds give different numbers.
        assert_ne!(langevin_uniforms(1, 0, 0), langevin_uniforms(1, 1, 0));
        assert_ne!(langevin_uniforms(1, 0, 0), langevin_uniforms(1, 0, 1));
        assert_ne!(langevin_uniforms(1, 0, 0), langevin_uniforms(2, 0, 0));
        assert_ne!(langevin_uniforms(1, 1 << 32, 0), langevin_uniforms(1, 0, 0));
    }

    fn nvt() -> NoseHoover {
        NoseHoover {
            t_target: 1.5,
            t_freq: 2.0,
            tchain: 3,
            dof: 3.0 * 500.0 - 3.0,
            natoms: 500.0,
            dt: 0.005,
            barostat: None,
        }
    }

    /// The largest `|E(t) - E(0)|` of the velocities' kinetic energy plus
    /// the chain's over `time`, when only the thermostat acts (no forces),
    /// from `T = 3` towards 1.5; and the mean temperature of the second half.
    fn chain_error(dt: f64, time: f64) -> (f64, f64) {
        let nh = NoseHoover { dt, ..nvt() };
        let mut s = NhState::new([10.0; 3]);
        nh.setup(&mut s, 3.0);
        let e = |s: &NhState| 0.5 * nh.dof * s.t_current + nh.energy(s);
        let e0 = e(&s);
        let (mut worst, mut mean): (f64, f64) = (0.0, 0.0);
        let steps = (time / dt) as usize;
        for k in 0..steps {
            nh.nhc_temp(&mut s);
            nh.nhc_temp(&mut s);
            worst = worst.max((e(&s) - e0).abs());
            if k >= steps / 2 {
                mean += s.t_current / (steps - steps / 2) as f64;
            }
        }
        (worst, mean)
    }

    #[test]
    fn a_chain_conserves_its_energy_to_second_order_and_holds_the_target() {
        // Measured: 0.085, 0.021, 0.0053 for dt = 0.01, 0.005, 0.0025.
        let errors = [0.01, 0.005, 0.0025].map(|dt| chain_error(dt, 100.0).0);
        for w in errors.windows(2) {
            let ratio = w[0] / w[1];
            assert!((3.5..4.5).contains(&ratio), "{errors:?}: not dt^2");
        }
        assert!(errors[1] < 1e-5 * 2245.5, "{errors:?}");
        // An undamped oscillation about the target: its time average.
        let mean = chain_error(0.005, 200.0).1;
        assert!((mean - 1.5).abs() < 0.1, "{mean}");
    }

    #[test]
    fn the_barostat_conserves_its_extended_energy() {
        // An ideal gas (pressure dof T / 3V) under the barostat, no
        // thermostat motion beyond its chains: particles' KE + the
        // coupling energy is conserved by the splitting to O(dt^2).
        let mut nh = nvt();
        nh.barostat = Some((1.0, 0.5, 3));
        let mut s = NhState::new([8.0; 3]);
        nh.setup(&mut s, 1.2);
        let ke = |s: &NhState| 0.5 * nh.dof * s.t_current;
        let e0 = ke(&s) + nh.energy(&s);
        let mut worst: f64 = 0.0;
        for _ in 0..10_000 {
            nh.nhc_press(&mut s);
            nh.nhc_temp(&mut s);
            let p = nh.pressure(&s, 0.0);
            nh.omega_dot(&mut s, p);
            let fp = nh.v_press_factor(&s);
            s.t_current *= fp * fp;
            nh.remap(&mut s);
            nh.remap(&mut s);
            s.t_current *= fp * fp;
            let p = nh.pressure(&s, 0.0);
            nh.omega_dot(&mut s, p);
            nh.nhc_temp(&mut s);
            nh.nhc_press(&mut s);
            worst = worst.max((ke(&s) + nh.energy(&s) - e0).abs());
        }
        assert!(worst < 1e-3 * e0.abs(), "{worst} of {e0}");
        // The volume moved towards the ideal gas's N T / P.
        assert!(s.volume() != 512.0);
    }
}
