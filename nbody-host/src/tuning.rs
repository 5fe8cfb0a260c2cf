//! Tuning profiles: the winner of an autotuning sweep (`examples/autotune.rs`),
//! saved as a small JSON file and applied with
//! [`SimulationBuilder::tuned_for`](crate::SimulationBuilder::tuned_for).
//!
//! ```
//! use nbody_host::{BackendKind, CpuTuning, Isa, Kernel, Simulation, TuningProfile, ic};
//!
//! let profile = TuningProfile {
//!     backend: BackendKind::Cpu { isa: Isa::Scalar, threads: 1 },
//!     n: 4096,
//!     kernel: Kernel::Triangle { block: 256 },
//!     cpu_tuning: Some(CpuTuning { i_block: 512, ..CpuTuning::default() }),
//!     pips: 6.5e9,
//! };
//! let again = TuningProfile::from_json(&profile.to_json()).unwrap();
//! assert_eq!(again, profile);
//! let mut sim = Simulation::builder(ic::plummer(100, 1))
//!     .tuned_for(&again)
//!     .build()?;
//! assert_eq!(sim.params().kernel(), Kernel::Triangle { block: 256 });
//! sim.step(2)?;
//! # Ok::<(), nbody_host::Error>(())
//! ```

use std::path::Path;

use serde_json::{Value, json};

use crate::{BackendKind, CpuTuning, Error, Isa, Kernel, Result};

/// The best configuration a sweep found on one machine.
#[derive(Clone, Debug, PartialEq)]
pub struct TuningProfile {
    /// The backend it was measured on (CPU instruction set and threads, or
    /// the CUDA device).
    pub backend: BackendKind,
    /// Bodies in the sweep: the profile is best near this N.
    pub n: usize,
    /// The winning kernel and block size.
    pub kernel: Kernel,
    /// The winning CPU blocking; `None` for the GPU backends.
    pub cpu_tuning: Option<CpuTuning>,
    /// Interactions per second the winner reached.
    pub pips: f64,
}

const FORMAT: &str = "tuning profile";
/// Version of the JSON layout. [`TuningProfile::from_json`] also reads
/// version 1, whose backend was a name plus a `"device"` description.
const VERSION: u64 = 2;

impl TuningProfile {
    /// The profile as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        let cpu = self.cpu_tuning.map(|t| {
            json!({
                "isa": t.isa.map(Isa::name),
                "i_block": t.i_block,
                "j_tile": t.j_tile,
                "third_law_min_n": t.third_law_min_n,
            })
        });
        let backend = match &self.backend {
            BackendKind::Cpu { isa, threads } => {
                json!({"kind": "cpu", "isa": isa.name(), "threads": threads})
            }
            BackendKind::Cuda { device, name } => {
                json!({"kind": "cuda", "device": device, "name": name})
            }
            BackendKind::Emulator => json!({"kind": "emulator"}),
        };
        let value = json!({
            "nbody_tuning_profile": VERSION,
            "backend": backend,
            "n": self.n,
            "kernel": self.kernel.name(),
            "block": self.kernel.block(),
            "split": self.kernel.split(),
            "cpu_tuning": cpu,
            "pips": self.pips,
        });
        let mut text = serde_json::to_string_pretty(&value).expect("a JSON value serialises");
        text.push('\n');
        text
    }

    /// Parses [`to_json`](Self::to_json)'s output; the error names the bad field.
    pub fn from_json(text: &str) -> std::result::Result<TuningProfile, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let version = match v.get("nbody_tuning_profile").and_then(Value::as_u64) {
            Some(version @ (1 | VERSION)) => version,
            Some(other) => {
                return Err(format!("version {other}, this build reads 1 and {VERSION}"));
            }
            None => return Err("no \"nbody_tuning_profile\" version field".into()),
        };
        let string = |key: &str| -> std::result::Result<String, String> {
            v.get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("\"{key}\" missing or not a string"))
        };
        let count = |obj: &Value, key: &str| -> std::result::Result<usize, String> {
            obj.get(key)
                .and_then(Value::as_u64)
                .and_then(|x| usize::try_from(x).ok())
                .ok_or_else(|| format!("\"{key}\" missing or not a non-negative integer"))
        };
        let backend = if version == 1 {
            // A name and the machine's description: the description is the
            // backend's display form.
            let name = string("backend")?;
            let device = string("device")?;
            BackendKind::parse(&device)
                .filter(|kind| kind.name() == name)
                .ok_or_else(|| format!("backend {name:?} on device {device:?} is not known"))?
        } else {
            let b = v.get("backend").ok_or("\"backend\" missing")?;
            let kind = b.get("kind").and_then(Value::as_str).unwrap_or("");
            match kind {
                "cpu" => {
                    let isa = b.get("isa").and_then(Value::as_str).unwrap_or("");
                    BackendKind::Cpu {
                        isa: Isa::from_name(isa)
                            .ok_or_else(|| format!("backend.isa {isa:?} is not known"))?,
                        threads: count(b, "threads")?,
                    }
                }
                "cuda" => BackendKind::Cuda {
                    device: u32::try_from(count(b, "device")?)
                        .map_err(|_| "\"device\" out of range".to_string())?,
                    name: b
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or("\"backend.name\" missing or not a string")?
                        .to_owned(),
                },
                "emulator" => BackendKind::Emulator,
                other => {
                    return Err(format!(
                        "backend kind {other:?} is not \"cpu\", \"emulator\" or \"cuda\""
                    ));
                }
            }
        };
        let block =
            u32::try_from(count(&v, "block")?).map_err(|_| "\"block\" out of range".to_string())?;
        let name = string("kernel")?;
        let mut kernel = Kernel::from_name(&name, block)
            .ok_or_else(|| format!("kernel {name:?} is not simt, tiled, triangle or split"))?;
        // Absent in profiles saved before the split kernel existed.
        if let (Kernel::Split { block, .. }, Some(_)) = (kernel, v.get("split")) {
            let split = u32::try_from(count(&v, "split")?)
                .map_err(|_| "\"split\" out of range".to_string())?;
            kernel = Kernel::Split { block, split };
            kernel.validate().map_err(|e| e.to_string())?;
        }
        kernel.validate().map_err(|e| e.to_string())?;
        let cpu_tuning = match v.get("cpu_tuning") {
            None | Some(Value::Null) => None,
            Some(t) => {
                let isa = match t.get("isa") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(
                        Isa::from_name(s)
                            .ok_or_else(|| format!("cpu_tuning.isa {s:?} is not known"))?,
                    ),
                    Some(other) => return Err(format!("cpu_tuning.isa {other} is not a string")),
                };
                let (i_block, j_tile) = (count(t, "i_block")?, count(t, "j_tile")?);
                if i_block == 0 || j_tile == 0 {
                    return Err(format!(
                        "cpu_tuning i_block = {i_block}, j_tile = {j_tile}: both must be at least 1"
                    ));
                }
                // Absent in profiles saved before the field existed.
                let third_law_min_n = match t.get("third_law_min_n") {
                    None => CpuTuning::default().third_law_min_n,
                    Some(_) => count(t, "third_law_min_n")?,
                };
                Some(CpuTuning {
                    isa,
                    i_block,
                    j_tile,
                    third_law_min_n,
                })
            }
        };
        let pips = v
            .get("pips")
            .and_then(Value::as_f64)
            .filter(|p| p.is_finite() && *p >= 0.0)
            .ok_or("\"pips\" missing or not a finite number >= 0")?;
        Ok(TuningProfile {
            backend,
            n: count(&v, "n")?,
            kernel,
            cpu_tuning,
            pips,
        })
    }

    /// Writes the profile atomically (temporary file and rename).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        crate::snapshot::write_atomically(path.as_ref(), self.to_json().as_bytes())
    }

    /// Reads a profile; a malformed one is [`Error::InvalidFile`] naming the field.
    pub fn load(path: impl AsRef<Path>) -> Result<TuningProfile> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        TuningProfile::from_json(&text).map_err(|reason| Error::InvalidFile {
            path: path.to_path_buf(),
            format: FORMAT,
            reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> TuningProfile {
        TuningProfile {
            backend: BackendKind::Cpu {
                isa: Isa::Avx2Fma,
                threads: 2,
            },
            n: 16384,
            kernel: Kernel::Tiled { block: 128 },
            cpu_tuning: Some(CpuTuning {
                isa: Some(Isa::Scalar),
                i_block: 512,
                j_tile: 4096,
                third_law_min_n: usize::MAX,
            }),
            pips: 5.5e9,
        }
    }

    #[test]
    fn round_trips_through_json_and_a_file() {
        let p = profile();
        assert_eq!(TuningProfile::from_json(&p.to_json()).unwrap(), p);
        let gpu = TuningProfile {
            backend: BackendKind::Cuda {
                device: 1,
                name: "NVIDIA H100".into(),
            },
            cpu_tuning: None,
            ..p.clone()
        };
        assert_eq!(TuningProfile::from_json(&gpu.to_json()).unwrap(), gpu);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("best.json");
        p.save(&path).unwrap();
        assert_eq!(TuningProfile::load(&path).unwrap(), p);
    }

    #[test]
    fn third_law_min_n_round_trips_defaults_when_absent_and_is_checked() {
        let good = profile().to_json();
        let field = format!("\"third_law_min_n\": {}", usize::MAX);
        assert!(good.contains(&field), "{good}");
        // A profile written before the field existed: the default.
        let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
        v["cpu_tuning"]
            .as_object_mut()
            .unwrap()
            .remove("third_law_min_n")
            .unwrap();
        let old = v.to_string();
        let loaded = TuningProfile::from_json(&old).unwrap();
        assert_eq!(
            loaded.cpu_tuning.unwrap().third_law_min_n,
            CpuTuning::default().third_law_min_n
        );
        let err =
            TuningProfile::from_json(&good.replace(&field, "\"third_law_min_n\": -3")).unwrap_err();
        assert!(err.contains("third_law_min_n"), "{err}");
    }

    /// A GPU profile of the split kernel (what `autotune` saves when it
    /// wins at small N) keeps its threads per body, and the builder
    /// applies it; a bad split is named.
    #[test]
    fn split_profiles_round_trip_and_apply() {
        let split = Kernel::Split {
            block: 512,
            split: 32,
        };
        let p = TuningProfile {
            backend: BackendKind::Emulator,
            n: 4096,
            kernel: split,
            cpu_tuning: None,
            pips: 1e9,
        };
        let text = p.to_json();
        assert!(text.contains("\"split\": 32"), "{text}");
        assert_eq!(TuningProfile::from_json(&text).unwrap(), p);
        let sim = crate::Simulation::builder(crate::ic::plummer(64, 1))
            .tuned_for(&p)
            .backend(crate::Backend::emulator())
            .build()
            .unwrap();
        assert_eq!(sim.params().kernel(), split);
        let err =
            TuningProfile::from_json(&text.replace("\"split\": 32", "\"split\": 3")).unwrap_err();
        assert!(err.contains("split"), "{err}");
        // Profiles of the other kernels carry split 1, and older ones none.
        assert!(profile().to_json().contains("\"split\": 1"));
    }

    #[test]
    fn version_1_profiles_still_load() {
        let v1 = r#"{
  "nbody_tuning_profile": 1,
  "backend": "cpu",
  "device": "cpu (avx2+fma, 2 threads)",
  "n": 4096,
  "kernel": "triangle",
  "block": 256,
  "cpu_tuning": {"isa": null, "i_block": 512, "j_tile": 2048},
  "pips": 1.5e10
}"#;
        let p = TuningProfile::from_json(v1).unwrap();
        assert_eq!(
            p.backend,
            BackendKind::Cpu {
                isa: Isa::Avx2Fma,
                threads: 2
            }
        );
        assert_eq!(p.kernel, Kernel::Triangle { block: 256 });
        let bad = v1.replace("avx2+fma, 2", "avx9, 2");
        assert!(TuningProfile::from_json(&bad).unwrap_err().contains("avx9"));
    }

    #[test]
    fn bad_fields_are_named() {
        let good = profile().to_json();
        for (from, to, says) in [
            ("\"tiled\"", "\"warp\"", "warp"),
            ("\"block\": 128", "\"block\": 100", "100"),
            ("\"i_block\": 512", "\"i_block\": 0", "i_block = 0"),
            ("\"scalar\"", "\"neon9\"", "neon9"),
            ("\"cpu\"", "\"tpu\"", "tpu"),
            ("\"avx2+fma\"", "\"sse9\"", "sse9"),
            (
                "\"nbody_tuning_profile\": 2",
                "\"nbody_tuning_profile\": 7",
                "version 7",
            ),
            ("\"pips\": 5500000000.0", "\"pips\": -1.0", "pips"),
        ] {
            assert!(good.contains(from), "{from} is not in {good}");
            let bad = good.replace(from, to);
            let err = TuningProfile::from_json(&bad).unwrap_err();
            assert!(err.contains(says), "{from} -> {to}: {err}");
        }
        assert!(
            TuningProfile::from_json("{")
                .unwrap_err()
                .contains("not JSON")
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        std::fs::write(&path, good.replace("\"tiled\"", "\"warp\"")).unwrap();
        let err = TuningProfile::load(&path).unwrap_err();
        assert!(matches!(err, Error::InvalidFile { .. }), "{err}");
        assert!(err.to_string().contains("warp"), "{err}");
    }
}
