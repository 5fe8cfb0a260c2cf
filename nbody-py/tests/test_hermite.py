"""nbody.Simulation(integrator="hermite"): the float64 state, bit for bit
against ``nbody_tiled --integrator hermite`` (the Rust API in one process:
``--init`` read in float64, ``--save`` written in float64), the exact
``integrate_to``, the block-step statistics, checkpoints, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import nbody
from conftest import result_fields, run_example


def plummer64(n: int, seed: int) -> np.ndarray:
    """A small cluster drawn in numpy, float64 values that float32 cannot hold."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 0.5, (n, 3))
    v = rng.normal(0.0, 0.4, (n, 3))
    v -= v.mean(axis=0)
    m = np.full((n, 1), 1.0 / n) * (1 + 0.1 * rng.random((n, 1)))
    return np.hstack([x, v, m])


def same_bits64(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype == np.float64 and a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


@pytest.mark.parametrize("precision,eta", [("f64", 0.02), ("mixed", 0.01)])
def test_integrate_to_equals_nbody_tiled(examples, tmp_path, precision, eta):
    b = plummer64(96, seed=3)
    np.save(tmp_path / "b.npy", b)
    out = run_example(
        examples, "nbody_tiled", "--backend", "cpu", "--integrator", "hermite", "--eta", eta,
        "--precision", precision, "--softening", "0.01", "--dt", "0.125", "--t-end", "0.3",
        "--init", tmp_path / "b.npy", "--save", tmp_path / "out.npy",
    ).stdout
    sim = nbody.Simulation(b, integrator="hermite", eta=eta, precision=precision, softening=0.01, backend="cpu")
    assert (sim.dt, sim.eta, sim.eta_s, sim.precision) == (0.125, eta, eta / 20, precision)
    assert same_bits64(sim.bodies, b)  # started from the float64 values themselves
    assert sim.integrate_to(0.3) == 3  # 0.125, 0.25, then the shorter interval to 0.3
    assert sim.time == 0.3
    assert same_bits64(sim.bodies, np.load(tmp_path / "out.npy"))
    stats, fields = sim.stats(), result_fields(out)
    assert (stats["block_steps"], stats["force_evals"]) == (int(fields["block_steps"]), int(fields["force_evals"]))
    assert stats["mean_block"] == stats["force_evals"] / stats["block_steps"]


def test_steps_are_intervals_and_equal_nbody_tiled(examples, tmp_path):
    b = plummer64(64, seed=5)
    np.save(tmp_path / "b.npy", b)
    run_example(
        examples, "nbody_tiled", "--backend", "cpu", "--integrator", "hermite", "--softening", "0.02",
        "--dt", "0.0625", "--steps", "6", "--init", tmp_path / "b.npy", "--save", tmp_path / "out.npy",
    )
    sim = nbody.Simulation(b, integrator="hermite", softening=0.02, dt=0.0625, backend="cpu")
    held = sim.bodies  # the same array, updated in place
    for _ in range(3):
        sim.step(2)
    assert sim.time == 0.375 and sim.steps_done == 6
    assert held is sim.bodies and same_bits64(held, np.load(tmp_path / "out.npy"))
    assert sim.positions.base is not None and sim.positions.dtype == np.float64


def test_checkpoint_continues_bit_identically(tmp_path):
    b = plummer64(48, seed=8)
    straight = nbody.Simulation(b, integrator="hermite", softening=0.01, backend="cpu")
    straight.integrate_to(0.5)
    first = nbody.Simulation(b, integrator="hermite", softening=0.01, backend="cpu")
    first.step(2)
    first.save_checkpoint(tmp_path / "h.ckpt")
    resumed = nbody.Simulation.load_checkpoint(tmp_path / "h.ckpt", backend="cpu")
    assert resumed.integrator == "hermite" and same_bits64(resumed.bodies, first.bodies)
    resumed.integrate_to(0.5)
    assert same_bits64(resumed.bodies, straight.bodies)
    assert resumed.stats() == straight.stats()


def test_fixed_step_runs_have_no_hermite_stats(small):
    sim = nbody.Simulation(small, backend="cpu")
    assert sim.stats() is None and sim.eta is None and sim.precision is None
    assert sim.bodies.dtype == np.float32


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(integrator="hermite", eta=0.0), "eta = 0 must be finite and > 0"),
        (dict(integrator="hermite", eta_s=float("nan")), "eta_s = NaN must be finite and > 0"),
        (dict(integrator="hermite", precision="f32"), 'precision = "f32": must be "f64" or "mixed"'),
        (dict(integrator="leapfrog", eta=0.02), 'eta is a setting of integrator="hermite"'),
        (dict(integrator="rk4"), 'integrator = "rk4"'),
    ],
)
def test_bad_settings_are_value_errors(kwargs, message):
    with pytest.raises(nbody.InvalidInputError, match=message) as caught:
        nbody.Simulation(plummer64(8, 1), backend="cpu", **kwargs)
    assert isinstance(caught.value, ValueError)


def test_integrate_to_the_past_is_refused():
    sim = nbody.Simulation(plummer64(16, 2), integrator="hermite", backend="cpu")
    sim.integrate_to(0.2)
    with pytest.raises(nbody.InvalidInputError, match="0.1"):
        sim.integrate_to(0.1)
    assert sim.time == 0.2
