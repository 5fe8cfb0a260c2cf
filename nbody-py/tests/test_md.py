"""nbody.LennardJones against lj_melt (the Rust API on the same input): the
trajectory bit for bit, the thermo table as printed."""

from __future__ import annotations

import numpy as np

import nbody
from conftest import fcc, result_fields, run_example
from test_gravity import same_bits


def thermo_rows(stdout: str) -> list[list[str]]:
    """lj_melt's thermo table, as printed (Step Temp PotEng KinEng TotEng Press)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["Step", "Temp"])
    rows = []
    for line in lines[start + 1:]:
        words = line.split()
        if len(words) != 6 or not words[0].isdigit():
            break
        rows.append(words)
    return rows


def test_trajectory_and_thermo_equal_lj_melt(examples, tmp_path):
    atoms, side = fcc(6, seed=11)  # 864 atoms, as scripts/ci-lammps.sh
    np.save(tmp_path / "b.npy", atoms)
    out = run_example(examples, "lj_melt", "--init", tmp_path / "b.npy", "--box", repr(side), "--steps", "100",
                      "--thermo", "25", "--save", tmp_path / "out.npy").stdout
    lj = nbody.LennardJones(atoms, box=side, cutoff=2.5, skin=0.3, dt=0.005, rebuild_every=20, backend="cpu")
    printed = []
    for _ in range(5):
        t = lj.thermo()
        printed.append([str(t["step"])] + ["%.10g" % t[k] for k in ("temp", "pe", "ke", "etotal", "press")])
        if t["step"] < 100:
            lj.step(25)
    assert printed == thermo_rows(out)
    assert same_bits(lj.bodies, np.load(tmp_path / "out.npy"))
    fields = result_fields(out)
    t = lj.thermo()
    assert t["etotal"] == float(fields["etotal"]) and t["temp"] == float(fields["temp"])


def test_thermo_definitions():
    atoms, side = fcc(5)
    lj = nbody.LennardJones(atoms, box=[side, side, side], backend="cpu")
    t = lj.thermo(exact=True)
    assert set(t) == {"step", "temp", "pe", "ke", "etotal", "press", "atoms", "virial",
                      "coupling", "conserved", "volume", "density"}
    n = len(atoms)
    v = atoms[:, 3:6].astype(np.float64)
    ke = 0.5 * (v * v).sum()
    assert abs(t["ke"] - ke / n) < 1e-12 * ke  # per atom
    assert abs(t["temp"] - 2 * ke / (3 * n - 3)) < 1e-9  # 3N - 3 degrees of freedom
    assert abs(t["etotal"] - (t["pe"] + t["ke"])) < 1e-12
    volume = float(np.float32(side)) ** 3  # the library's box is float32, as its positions
    assert abs(t["press"] - (2 * ke + t["virial"]) / (3 * volume)) < 1e-12
    assert t["coupling"] == 0.0 and t["conserved"] == t["etotal"]  # NVE: nothing exchanged
    assert abs(t["volume"] - volume) < 1e-9 * volume and abs(t["density"] - n / volume) < 1e-12
    rounded = lj.thermo()
    assert all(rounded[k] == float("%.10g" % t[k]) for k in ("temp", "pe", "ke", "etotal", "press"))
    assert np.array_equal(lj.box, [side] * 3) and lj.box.dtype == np.float64
    assert lj.stats()["builds"] == 1


def test_energy_is_conserved_with_the_shifted_potential():
    atoms, side = fcc(5, temperature=1.44, seed=2)
    lj = nbody.LennardJones(atoms, box=side, shift=True, backend="cpu")
    e0 = lj.thermo(exact=True)["etotal"]
    lj.step(400)
    assert abs(lj.thermo(exact=True)["etotal"] - e0) < 5e-3
    assert lj.stats()["builds"] > 1  # the lists were rebuilt as atoms moved
