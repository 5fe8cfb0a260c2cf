//! What an ensemble's run carries ([`EnsembleState`]) and its bytes in
//! files (the `ENST` and `KICK` sections).

use gpu_kernels::ensemble::NhState;

use super::Ensemble;

/// What an ensemble's run carries from one step to the next, and from an
/// engine to the next (checkpoints, clones): the thermostat's and
/// barostat's variables, the energy the thermostat exchanged, the steps
/// taken under it (the random forces' counter, the rescaling schedule),
/// and Langevin's last forces (per body, user order: the first half-kick
/// of the next step uses them).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct EnsembleState {
    /// Which ensemble it belongs to (its kind and chains must match to be used).
    pub ensemble: Ensemble,
    /// The Nosé–Hoover variables and the box (NVT, NPT).
    pub nh: NhState,
    /// Langevin: `sum dt sum_i F_i . v_i` of its forces, LAMMPS's `energy`;
    /// rescaling: the kinetic energy taken out.
    pub energy: f64,
    /// Langevin: the last step's `sum_i F_i . v_i`.
    pub onestep: f64,
    /// Steps taken under this ensemble.
    pub steps: u64,
    /// Langevin: each body's friction and random force over its mass, from
    /// the last force evaluation (user order; empty otherwise).
    pub kicks: Vec<[f32; 3]>,
}

/// Bytes of the `ENST` section: 60 `f64` and one `u64`.
const ENST_BYTES: usize = 61 * 8;

impl EnsembleState {
    /// A state at rest for `ensemble` in the box `lengths`.
    pub(crate) fn new(ensemble: Ensemble, lengths: [f64; 3]) -> EnsembleState {
        EnsembleState {
            ensemble,
            nh: NhState::new(lengths),
            energy: 0.0,
            onestep: 0.0,
            steps: 0,
            kicks: Vec::new(),
        }
    }

    /// Whether it can continue a run of `ensemble` with `n` bodies: the
    /// same kind, chains and (Langevin) one force per body.
    pub(crate) fn fits(&self, ensemble: &Ensemble, n: usize) -> bool {
        match (self.ensemble, *ensemble) {
            (Ensemble::Nvt { chain: a, .. }, Ensemble::Nvt { chain: b, .. }) => a == b,
            (
                Ensemble::Npt {
                    chain: a,
                    pchain: p,
                    ..
                },
                Ensemble::Npt {
                    chain: b,
                    pchain: q,
                    ..
                },
            ) => a == b && p == q,
            (Ensemble::Langevin { .. }, Ensemble::Langevin { .. }) => self.kicks.len() == n,
            (Ensemble::Rescale { .. }, Ensemble::Rescale { .. }) => true,
            _ => false,
        }
    }

    /// The `ENST` payload (and the `KICK` one, Langevin's forces).
    pub(crate) fn encode(&self) -> (Vec<u8>, Vec<u8>) {
        let mut p = Vec::with_capacity(ENST_BYTES);
        let words = nh_words(&self.nh).chain([self.energy, self.onestep]);
        for x in words {
            p.extend_from_slice(&x.to_le_bytes());
        }
        p.extend_from_slice(&self.steps.to_le_bytes());
        let kicks = self
            .kicks
            .iter()
            .flatten()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        (p, kicks)
    }

    /// The `ENST` (and `KICK`) payloads back, for `ensemble` and `n` bodies.
    pub(crate) fn decode(
        ensemble: Ensemble,
        p: &[u8],
        kicks: Option<&[u8]>,
        n: usize,
    ) -> std::result::Result<EnsembleState, String> {
        if p.len() != ENST_BYTES {
            return Err(format!(
                "section ENST: {} bytes, expected {ENST_BYTES}",
                p.len()
            ));
        }
        let mut words = p
            .chunks_exact(8)
            .map(|w| f64::from_le_bytes(w.try_into().expect("8 bytes")));
        let nh = nh_from_words(&mut words);
        let two = [0; 2].map(|_| words.next().expect("61"));
        let steps = u64::from_le_bytes(p[60 * 8..].try_into().expect("8 bytes"));
        let kicks = match kicks {
            None => Vec::new(),
            Some(k) if k.len() == 12 * n => k
                .chunks_exact(12)
                .map(|c| {
                    [0, 1, 2].map(|a| f32::from_le_bytes(c[4 * a..4 * a + 4].try_into().unwrap()))
                })
                .collect(),
            Some(k) => {
                return Err(format!(
                    "section KICK: {} bytes, expected {} for {n} bodies",
                    k.len(),
                    12 * n
                ));
            }
        };
        Ok(EnsembleState {
            ensemble,
            nh,
            energy: two[0],
            onestep: two[1],
            steps,
            kicks,
        })
    }
}

/// The [`NhState`]'s values in order (the checkpoint's `ENST` layout and the
/// GPU plan's `md_ensemble::ENS_NH` one): each chain, then omega, omega_dot,
/// mtk_term2, vol0, t_current, then the lengths.
pub(crate) fn nh_words(s: &NhState) -> impl Iterator<Item = f64> + '_ {
    s.eta
        .iter()
        .chain(&s.eta_dot)
        .chain(&s.eta_dotdot)
        .chain(&s.etap)
        .chain(&s.etap_dot)
        .chain(&s.etap_dotdot)
        .copied()
        .chain([s.omega, s.omega_dot, s.mtk_term2, s.vol0, s.t_current])
        .chain(s.lengths.iter().copied())
}

/// [`nh_words`] inverted: takes the state's values from `words`.
pub(crate) fn nh_from_words(words: &mut impl Iterator<Item = f64>) -> NhState {
    let mut nh = NhState::new([0.0; 3]);
    let mut fill = |v: &mut [f64]| v.iter_mut().for_each(|x| *x = words.next().expect("NH"));
    fill(&mut nh.eta);
    fill(&mut nh.eta_dot);
    fill(&mut nh.eta_dotdot);
    fill(&mut nh.etap);
    fill(&mut nh.etap_dot);
    fill(&mut nh.etap_dotdot);
    let mut five = [0.0; 5];
    fill(&mut five);
    [nh.omega, nh.omega_dot, nh.mtk_term2, nh.vol0, nh.t_current] = five;
    fill(&mut nh.lengths);
    nh
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_through_their_bytes() {
        let mut s = EnsembleState::new(Ensemble::langevin(1.0, 1.0, 3), [3.0, 4.0, 5.0]);
        s.nh.eta[2] = 0.25;
        s.nh.etap_dot[8] = -1.5;
        s.nh.t_current = 1.25;
        s.nh.vol0 = 60.0;
        s.energy = 3.5;
        s.onestep = -0.5;
        s.steps = 1 << 40;
        s.kicks = vec![[1.0, -2.0, 3.5], [0.0, 1e-30, -7.0]];
        let (p, k) = s.encode();
        let back = EnsembleState::decode(s.ensemble, &p, Some(&k), 2).unwrap();
        assert_eq!(back, s);
        assert!(EnsembleState::decode(s.ensemble, &p, Some(&k), 3).is_err());
        assert!(EnsembleState::decode(s.ensemble, &p[1..], None, 2).is_err());
    }
}
