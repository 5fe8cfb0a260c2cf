"""nbody.Simulation against the Rust API (through the example binary, which
drives it), the documented clock, adding and removing bodies, initial
conditions."""

from __future__ import annotations

import numpy as np
import pytest

import nbody
from conftest import cube, result_fields, run_example


def same_bits(a, b) -> bool:
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize(
    "kernel,integrator,n",
    [("triangle", "leapfrog", 700), ("simt", "euler", 300), ("tiled", "leapfrog", 1500)],
)
def test_every_kernel_and_integrator_equals_the_rust_api(examples, tmp_path, kernel, integrator, n):
    b = cube(n, seed=n)
    np.save(tmp_path / "b.npy", b)
    out = run_example(
        examples, "nbody_tiled", "--backend", "cpu", "--kernel", kernel, "--integrator", integrator,
        "--steps", "37", "--dt", "0.005", "--softening", "0.05",
        "--init", tmp_path / "b.npy", "--save", tmp_path / "out.npy",
    ).stdout
    sim = nbody.Simulation(b, softening=0.05, dt=0.005, kernel=kernel, integrator=integrator, backend="cpu")
    e0 = sim.energy()
    sim.step(37)
    assert same_bits(sim.bodies, np.load(tmp_path / "out.npy"))
    assert sim.method == result_fields(out)["kernel"]
    assert float("%.4e" % sim.energy().relative_change_from(e0)) == float(result_fields(out)["energy_rel_change"])


def test_batches_and_single_steps_give_the_same_bits(small):
    one = nbody.Simulation(small, integrator="leapfrog", backend="cpu")
    many = nbody.Simulation(small, integrator="leapfrog", backend="cpu")
    one.step(50)
    for _ in range(50):
        many.step(1)
    assert same_bits(one.bodies, many.bodies)
    assert (one.time, one.steps_done) == (many.time, many.steps_done)


def test_checkpoint_from_the_command_line_continues_bit_identically(examples, tmp_path, small):
    np.save(tmp_path / "b.npy", small)
    common = ["--backend", "cpu", "--integrator", "leapfrog", "--dt", "0.01", "--init", tmp_path / "b.npy"]
    run_example(examples, "nbody_tiled", *common, "--steps", "8", "--checkpoint", tmp_path / "run.ckpt")
    run_example(examples, "nbody_tiled", *common, "--steps", "20", "--save", tmp_path / "straight.npy")
    sim = nbody.Simulation.load_checkpoint(tmp_path / "run.ckpt", backend="cpu")
    assert (sim.steps_done, sim.integrator, sim.dt) == (8, "leapfrog", 0.01)
    sim.step(12)
    assert same_bits(sim.bodies, np.load(tmp_path / "straight.npy"))


def test_integrate_to_follows_the_documented_clock(small):
    sim = nbody.Simulation(small, dt=1e-3, backend="cpu")
    assert sim.integrate_to(0.25) == 250
    assert abs(sim.time - 0.25) < 1e-12
    assert sim.integrate_to(0.2505) == 1  # overshoots to 0.251
    assert sim.steps_done == 251
    t = 0.0
    for _ in range(251):
        t += 1e-3  # one float64 addition per step, as REBOUND's t += dt
    assert sim.time == t
    with pytest.raises(nbody.InvalidInputError, match="cannot integrate to t = 0.1"):
        sim.integrate_to(0.1)
    with pytest.raises(nbody.InvalidInputError, match="must be finite"):
        sim.integrate_to(float("nan"))
    assert sim.integrate_to(sim.time) == 0
    # The same trajectory as step(): integrate_to is step(count).
    other = nbody.Simulation(small, dt=1e-3, backend="cpu")
    other.step(251)
    assert same_bits(sim.bodies, other.bodies)
    one = nbody.Simulation(small, dt=1e-3, backend="cpu")
    assert one.integrate_to(1.0 - 1e-12) == 1000  # within 1e-6 dt counts as reached


def test_add_and_remove(small):
    sim = nbody.Simulation(small, softening=0.1, dt=0.01, backend="cpu")
    sim.step(5)
    comet = np.array([30.0, 0.0, 0.0, 0.0, -0.5, 0.0, 0.25], np.float32)
    before = sim.bodies.copy()
    sim.add(comet)
    assert len(sim) == 257 and sim.steps_done == 5
    # Continues exactly as a simulation built with those bodies at that moment.
    fresh = nbody.Simulation(np.vstack([before, comet]), softening=0.1, dt=0.01, backend="cpu")
    sim.step(3)
    fresh.step(3)
    assert same_bits(sim.bodies, fresh.bodies)
    sim.add(mass=0.5, position=(0.0, 40.0, 0.0))
    sim.add(np.zeros((2, 7)) + [50, 0, 0, 0, 0, 0, 1])  # float64 rows, exact: converted silently
    assert len(sim) == 260
    removed = sim.remove(-3)
    assert removed.dtype == np.float32 and removed[6] == 0.5 and removed[1] == 40.0
    assert len(sim) == 259
    with pytest.raises(nbody.OutOfRangeError, match="body index 259 is out of range: the simulation has 259"):
        sim.remove(259)
    with pytest.raises(IndexError):
        sim.remove(-260)
    with pytest.raises(nbody.InvalidInputError, match="mass -1 must be finite"):
        sim.add(mass=-1.0, position=(1, 2, 3))
    assert len(sim) == 259  # unchanged on error


def test_initial_conditions_are_the_library_s(examples, tmp_path):
    b = nbody.ic.uniform_cube(512, 42)
    assert b.shape == (512, 7) and b.dtype == np.float32
    run_example(examples, "nbody_tiled", "--backend", "cpu", "--n", "512", "--steps", "0", "--save", tmp_path / "c.npy")
    assert same_bits(b, np.load(tmp_path / "c.npy"))
    p = nbody.ic.plummer(1000, 3)
    assert abs(p[:, 6].sum() - 1.0) < 1e-5
    atoms, side = nbody.ic.fcc_lattice(3)
    assert atoms.shape == (108, 7) and abs(side - 3 * (4 / 0.8442) ** (1 / 3)) < 1e-12
    with pytest.raises(nbody.InvalidInputError, match='set-up "ring"'):
        nbody.ic.plummer.__globals__["_generate"]("ring", 10, 1)


def test_energy_and_accelerations(small):
    sim = nbody.Simulation(small, backend="cpu")
    e = sim.energy()
    assert e.kinetic > 0 and e.potential < 0 and e.total == e.kinetic + e.potential
    v = small[:, 3:6].astype(np.float64)
    assert abs(e.kinetic - 0.5 * (small[:, 6] * (v * v).sum(axis=1)).sum()) < 1e-9 * e.kinetic
    a = sim.accelerations()
    assert a.shape == (256, 3) and a.dtype == np.float32
    # Momentum conservation: sum m a = 0 to float32 rounding.
    assert np.abs((small[:, 6:7] * a).sum(axis=0)).max() < 1e-3 * np.abs(a).max()


def test_copy_continues_identically(small):
    a = nbody.Simulation(small, backend="cpu")
    a.step(3)
    b = a.copy()
    a.step(4)
    b.step(4)
    assert same_bits(a.bodies, b.bodies) and a.time == b.time


def test_gil_is_released_while_stepping():
    import threading
    import time

    sim = nbody.Simulation(cube(4096, seed=2), backend="cpu")
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    start = time.perf_counter()
    sim._rust_step_seconds(100)  # one Rust loop, no Python between steps
    end = time.perf_counter()
    done.set()
    t.join()
    during = [x for x in ticks if start < x < end]
    # The other thread ran throughout (a held GIL would let it tick at most once).
    assert end - start > 0.05 and len(during) >= 10, (end - start, len(during))
