//! The j-particle memory: what `g6_set_j_particle` stores at each address,
//! which addresses carry which particle index (the self-interaction is
//! skipped by index, as Sapporo2 does), and the prediction of the first
//! `nj` addresses to the time `ti`.

use std::collections::HashMap;

use nbody_host::hermite::Sources;

use crate::error::{
    G6_ERR_ADDRESS, G6_ERR_ARGUMENT, G6_ERR_NJ, G6_ERR_NOT_FINITE, G6Error, Result,
};

/// One j-particle as `g6_set_j_particle` passes it (GRAPE-6's scaled
/// derivatives: `a2 = a / 2`, `j6 = jerk / 6`; `k18 = snap / 18` and `dtj`
/// are not used by a 4th-order predictor).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct JParticle {
    /// The particle's index (ID): an i-particle skips the j-particles with its index.
    pub index: i32,
    /// The time of `x`, `v`, `a2`, `j6`.
    pub tj: f64,
    /// Mass.
    pub mass: f64,
    /// Acceleration over 2.
    pub a2: [f64; 3],
    /// Jerk over 6.
    pub j6: [f64; 3],
    /// Velocity.
    pub v: [f64; 3],
    /// Position.
    pub x: [f64; 3],
}

/// The addresses that carry one index (almost always one).
#[derive(Clone, Debug)]
enum Slots {
    One(u32),
    Many(Vec<u32>),
}

/// The predicted first `nj` j-particles.
#[derive(Debug, Default)]
pub(crate) struct Predicted {
    /// What the prediction was for: (`ti` bits, `nj`, j-memory generation).
    key: Option<(u64, usize, u64)>,
    /// Positions and velocities at `ti`.
    pub xp: Vec<[f64; 3]>,
    pub vp: Vec<[f64; 3]>,
    /// The same with the masses, in the force loops' layout.
    pub sources: Sources,
    /// Each address's index.
    pub index: Vec<i32>,
}

/// The stored j-particles.
#[derive(Debug)]
pub(crate) struct JMemory {
    /// Addresses accepted: `0..capacity`.
    capacity: usize,
    p: Vec<JParticle>,
    set: Vec<bool>,
    /// Addresses `0..filled` have all been set.
    filled: usize,
    /// Bumped by every store: a prediction is of one generation.
    generation: u64,
    by_index: HashMap<i32, Slots>,
}

impl JMemory {
    pub fn new(capacity: usize) -> JMemory {
        JMemory {
            capacity,
            p: Vec::new(),
            set: Vec::new(),
            filled: 0,
            generation: 0,
            by_index: HashMap::new(),
        }
    }

    /// Addresses `0..filled()` have all been set.
    pub fn filled(&self) -> usize {
        self.filled
    }

    /// The particle stored at `address`, if one was.
    pub fn get(&self, address: usize) -> Option<&JParticle> {
        self.set
            .get(address)
            .and_then(|&s| s.then(|| &self.p[address]))
    }

    /// Stores `p` at `address` (checked: in range, every value finite).
    pub fn store(&mut self, address: i32, p: JParticle) -> Result<()> {
        if address < 0 || address as usize >= self.capacity {
            return Err(G6Error::new(
                G6_ERR_ADDRESS,
                format!(
                    "address {address} is outside the j-particle memory (addresses 0 to {}; \
                     GRAPE6_JMEM sets its size)",
                    self.capacity - 1
                ),
            ));
        }
        let a = address as usize;
        let finite3 = |v: [f64; 3]| v.iter().all(|c| c.is_finite());
        for (what, ok, value) in [
            ("position x", finite3(p.x), format!("{:?}", p.x)),
            ("velocity v", finite3(p.v), format!("{:?}", p.v)),
            (
                "a2 (acceleration / 2)",
                finite3(p.a2),
                format!("{:?}", p.a2),
            ),
            ("j6 (jerk / 6)", finite3(p.j6), format!("{:?}", p.j6)),
            ("mass", p.mass.is_finite(), format!("{:?}", p.mass)),
            ("time tj", p.tj.is_finite(), format!("{:?}", p.tj)),
        ] {
            if !ok {
                return Err(G6Error::new(
                    G6_ERR_NOT_FINITE,
                    format!(
                        "j-particle at address {a} (index {}): its {what} is not finite: {value}",
                        p.index
                    ),
                ));
            }
        }
        if a >= self.p.len() {
            self.p.resize(a + 1, JParticle::default());
            self.set.resize(a + 1, false);
        }
        if self.set[a] {
            let old = self.p[a].index;
            self.unlink(old, a as u32);
        }
        self.link(p.index, a as u32);
        self.p[a] = p;
        self.set[a] = true;
        while self.filled < self.set.len() && self.set[self.filled] {
            self.filled += 1;
        }
        self.generation += 1;
        Ok(())
    }

    fn link(&mut self, index: i32, a: u32) {
        match self.by_index.get_mut(&index) {
            None => {
                self.by_index.insert(index, Slots::One(a));
            }
            Some(Slots::One(b)) => {
                let b = *b;
                self.by_index.insert(index, Slots::Many(vec![b, a]));
            }
            Some(Slots::Many(v)) => v.push(a),
        }
    }

    fn unlink(&mut self, index: i32, a: u32) {
        let remove = match self.by_index.get_mut(&index) {
            Some(Slots::One(b)) => *b == a,
            Some(Slots::Many(v)) => {
                v.retain(|&b| b != a);
                if v.len() == 1 {
                    let only = v[0];
                    self.by_index.insert(index, Slots::One(only));
                }
                false
            }
            None => false,
        };
        if remove {
            self.by_index.remove(&index);
        }
    }

    /// The address below `nj` that carries `index`, if one does; an error
    /// if several do (the force loops skip one slot).
    pub fn slot_of(&self, index: i32, nj: usize) -> Result<Option<usize>> {
        match self.by_index.get(&index) {
            None => Ok(None),
            Some(Slots::One(a)) => Ok(((*a as usize) < nj).then_some(*a as usize)),
            Some(Slots::Many(v)) => {
                let mut below: Vec<u32> =
                    v.iter().copied().filter(|&a| (a as usize) < nj).collect();
                below.sort_unstable();
                match below.as_slice() {
                    [] => Ok(None),
                    [a] => Ok(Some(*a as usize)),
                    [a, b, ..] => Err(G6Error::new(
                        G6_ERR_ARGUMENT,
                        format!(
                            "index {index} is carried by more than one j-particle below nj = {nj} \
                             (addresses {a} and {b}): an i-particle with that index cannot skip \
                             itself; give every j-particle its own index"
                        ),
                    )),
                }
            }
        }
    }

    /// `nj` checked against the addresses set: `0..nj` must all be.
    pub fn check_nj(&self, nj: i32) -> Result<usize> {
        if nj < 0 {
            return Err(G6Error::new(G6_ERR_NJ, format!("nj = {nj} is negative")));
        }
        let nj = nj as usize;
        if nj > self.filled {
            return Err(G6Error::new(
                G6_ERR_NJ,
                format!(
                    "nj = {nj}, but j-particle address {} was never set by g6_set_j_particle \
                     (addresses 0 to nj - 1 must all be set; {} are)",
                    self.filled, self.filled
                ),
            ));
        }
        Ok(nj)
    }

    /// Predicts addresses `0..nj` to `ti` into `out` unless it already
    /// holds that (4th order: `x + dt (v + dt (a2 + dt j6))`,
    /// `v + dt (2 a2 + 3 dt j6)`, `dt = ti - tj`, in that order of operations).
    pub fn predict(&self, ti: f64, nj: usize, out: &mut Predicted) -> Result<()> {
        let key = (ti.to_bits(), nj, self.generation);
        if out.key == Some(key) {
            return Ok(());
        }
        out.key = None;
        out.xp.clear();
        out.vp.clear();
        out.index.clear();
        let mut mass = Vec::with_capacity(nj);
        for (a, p) in self.p[..nj].iter().enumerate() {
            let dt = ti - p.tj;
            let x: [f64; 3] =
                std::array::from_fn(|k| p.x[k] + dt * (p.v[k] + dt * (p.a2[k] + dt * p.j6[k])));
            let v: [f64; 3] =
                std::array::from_fn(|k| p.v[k] + dt * (2.0 * p.a2[k] + 3.0 * dt * p.j6[k]));
            if !x.iter().chain(&v).all(|c| c.is_finite()) {
                return Err(G6Error::new(
                    G6_ERR_NOT_FINITE,
                    format!(
                        "j-particle at address {a} (index {}) predicted from tj = {} to ti = {ti} \
                         is not finite: position {x:?}, velocity {v:?}",
                        p.index, p.tj
                    ),
                ));
            }
            out.xp.push(x);
            out.vp.push(v);
            out.index.push(p.index);
            mass.push(p.mass);
        }
        out.sources.set(&out.xp, &out.vp, &mass);
        out.key = Some(key);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(index: i32) -> JParticle {
        JParticle {
            index,
            mass: 1.0,
            ..JParticle::default()
        }
    }

    #[test]
    fn index_map_follows_overwrites() {
        let mut m = JMemory::new(10);
        m.store(0, p(7)).unwrap();
        m.store(1, p(8)).unwrap();
        assert_eq!(m.slot_of(7, 2).unwrap(), Some(0));
        assert_eq!(m.slot_of(7, 0).unwrap(), None);
        // Address 1 now carries index 7 too: ambiguous below nj = 2 only.
        m.store(1, p(7)).unwrap();
        assert_eq!(m.slot_of(8, 2).unwrap(), None);
        assert_eq!(m.slot_of(7, 1).unwrap(), Some(0));
        assert_eq!(m.slot_of(7, 2).unwrap_err().code, G6_ERR_ARGUMENT);
        // Back to one carrier.
        m.store(0, p(3)).unwrap();
        assert_eq!(m.slot_of(7, 2).unwrap(), Some(1));
        assert_eq!(m.slot_of(3, 2).unwrap(), Some(0));
    }

    #[test]
    fn filled_counts_the_set_prefix() {
        let mut m = JMemory::new(10);
        m.store(2, p(2)).unwrap();
        assert_eq!(m.filled(), 0);
        assert_eq!(m.check_nj(1).unwrap_err().code, G6_ERR_NJ);
        m.store(0, p(0)).unwrap();
        assert_eq!(m.filled(), 1);
        m.store(1, p(1)).unwrap();
        assert_eq!(m.filled(), 3);
        assert_eq!(m.check_nj(3).unwrap(), 3);
        assert_eq!(m.check_nj(-1).unwrap_err().code, G6_ERR_NJ);
    }
}
