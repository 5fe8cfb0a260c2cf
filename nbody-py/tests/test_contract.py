"""The two results the issue (27) fixes as contracts, against the Rust example
binaries run on the same input file."""

from __future__ import annotations

import numpy as np

import nbody
from conftest import cube, fcc, result_fields, run_example


def test_gravity_equals_nbody_tiled_bit_for_bit(examples, tmp_path):
    b = cube(1024, seed=7)
    np.save(tmp_path / "b.npy", b)
    run_example(
        examples, "nbody_tiled", "--backend", "cpu", "--kernel", "tiled", "--integrator", "euler",
        "--steps", "100", "--dt", "0.01", "--softening", "0.1",
        "--init", tmp_path / "b.npy", "--save", tmp_path / "out.npy",
    )
    expected = np.load(tmp_path / "out.npy")

    sim = nbody.Simulation(b, softening=0.1, dt=0.01, G=1.0, kernel="tiled", integrator="euler", backend="cpu")
    sim.step(100)
    got = np.asarray(sim.bodies)

    assert got.dtype == np.float32 and got.shape == (1024, 7)
    assert not np.array_equal(got, b), "nothing moved"
    # Bit for bit: the same float32 patterns, not merely close values.
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))


def test_lennard_jones_pe_equals_lj_melt_pe0(examples, tmp_path):
    b, side = fcc(5)  # 500 atoms; r_c + skin = 2.8 < L / 2
    np.save(tmp_path / "b.npy", b)
    out = run_example(examples, "lj_melt", "--init", tmp_path / "b.npy", "--box", repr(side), "--shift").stdout
    pe0 = result_fields(out)["pe0"]

    lj = nbody.LennardJones(b, box=side, cutoff=2.5, skin=0.3, dt=0.005, shift=True, backend="cpu")
    pe = lj.thermo()["pe"]

    assert pe == float(pe0)  # the float compares equal
    assert "%.10g" % pe == pe0  # and prints the same, as LAMMPS's %.10g
    assert pe < -5.0  # a dense liquid's potential energy per atom
    # The unrounded sum rounds to the same ten digits.
    assert "%.10g" % lj.thermo(exact=True)["pe"] == pe0
