"""Every class of bad input raises its exception, with the Rust library's
message; conversions warn where they change a value."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nbody
from conftest import fcc, run_example


def test_hierarchy():
    assert issubclass(nbody.InvalidInputError, nbody.Error) and issubclass(nbody.InvalidInputError, ValueError)
    assert issubclass(nbody.InvalidFileError, nbody.InvalidInputError)
    assert issubclass(nbody.OutOfRangeError, IndexError) and issubclass(nbody.OutOfRangeError, ValueError)
    assert issubclass(nbody.FileError, nbody.Error) and issubclass(nbody.FileError, OSError)
    assert issubclass(nbody.DivergedError, nbody.Error) and not issubclass(nbody.DivergedError, ValueError)
    assert issubclass(nbody.BackendError, RuntimeError)
    assert nbody.DivergedError.__module__ == "nbody"


@pytest.mark.parametrize(
    "row,column,value,message",
    [
        (3, 6, -1.0, "body 3: mass -1 must be finite and >= 0"),
        (5, 1, np.nan, "body 5: position [5.0, NaN, 0.0] is not finite"),
        (2, 4, np.inf, "body 2: velocity [0.0, inf, 0.0] is not finite"),
    ],
)
def test_bad_bodies_name_the_body(row, column, value, message):
    b = np.zeros((8, 7), np.float32)
    b[:, 0] = np.arange(8)
    b[:, 6] = 1
    b[row, column] = value
    with pytest.raises(nbody.InvalidInputError) as e:
        nbody.Simulation(b, backend="cpu")
    assert str(e.value) == message


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(dt=0.0), "time step dt = 0 must be finite and > 0 (in f32)"),
        (dict(dt=float("inf")), "time step dt = inf must be finite"),
        (dict(softening=-0.5), "softening length eps = -0.5 must be finite and >= 0"),
        (dict(G=0.0), "gravitational constant G = 0 must be finite and > 0"),
        (dict(kernel="tiled", block=100), "block size 100 for the tiled kernel must be a power of two"),
        (dict(kernel="fast"), 'kernel = "fast": must be "simt", "tiled" or "triangle"'),
        (dict(integrator="rk4"), 'integrator = "rk4": must be "euler", "leapfrog"'),
        (dict(backend="gpu"), 'backend = "gpu": must be "auto", "cpu"'),
        (dict(backend="cpu:sse9"), 'backend = "cpu:sse9"'),
        (dict(backend="cuda:x"), 'backend = "cuda:x"'),
    ],
)
def test_bad_parameters(small, kwargs, message):
    with pytest.raises(nbody.InvalidInputError) as e:
        nbody.Simulation(small, **kwargs)
    assert message in str(e.value)


def test_messages_are_the_rust_library_s(examples, tmp_path):
    b = np.zeros((4, 7), np.float32)
    b[:, 0] = np.arange(4)
    b[:, 6] = 1
    b[2, 6] = -3
    np.save(tmp_path / "b.npy", b)
    cli = run_example(examples, "nbody_tiled", "--backend", "cpu", "--init", tmp_path / "b.npy", "--steps", "1", expect=3)
    with pytest.raises(nbody.InvalidInputError) as e:
        nbody.Simulation(b, backend="cpu")
    assert str(e.value) == "body 2: mass -3 must be finite and >= 0"
    assert str(e.value) in cli.stderr
    cli = run_example(examples, "nbody_tiled", "--backend", "cpu", "--n", "8", "--dt", "-2", expect=3)
    with pytest.raises(nbody.InvalidInputError) as e:
        nbody.Simulation(np.ones((8, 7), np.float32) * np.arange(8)[:, None], dt=-2, backend="cpu")
    assert str(e.value) in cli.stderr


def test_dtypes_and_shapes():
    exact = np.zeros((4, 7))
    exact[:, 0] = np.arange(4)
    exact[:, 6] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nbody.Simulation(exact, backend="cpu")  # float64 that float32 holds exactly: no warning
        nbody.Simulation(exact.astype(np.int64), backend="cpu")  # integers too
        nbody.Simulation(exact.tolist(), backend="cpu")  # nested lists
    rounded = exact.copy()
    rounded[1, 1] = 0.1
    with pytest.warns(nbody.PrecisionWarning, match=r"float64 converted to float32.*index \(1, 1\)"):
        sim = nbody.Simulation(rounded, backend="cpu")
    assert sim.bodies[1, 1] == np.float32(0.1)
    fortran = np.asfortranarray(exact.astype(np.float32))
    assert np.array_equal(nbody.Simulation(fortran, backend="cpu").bodies, exact)
    for bad, message in [
        (exact.astype(np.complex64), "dtype complex64 is not a real number type"),
        (exact.astype(bool), "dtype bool is not a real number type"),
        (np.array([["a"] * 7]), "dtype <U1 is not a real number type"),
        (exact[:, :6], r"shape \(4, 6\), expected \(N, 7\)"),
        (exact[0], r"shape \(7,\), expected \(N, 7\)"),
        (np.zeros((2, 2, 7)), r"shape \(2, 2, 7\)"),
        ([[1, 2], [3]], "not an array of numbers"),
        (np.zeros((0, 7), np.float32), "no bodies: N = 0"),
    ]:
        with pytest.raises(nbody.InvalidInputError, match=message):
            nbody.Simulation(bad, backend="cpu")


def test_steps_must_be_counts(small):
    sim = nbody.Simulation(small, backend="cpu")
    with pytest.raises(nbody.InvalidInputError, match="steps = -1 must be >= 0"):
        sim.step(-1)
    with pytest.raises(TypeError):
        sim.step(1.5)
    sim.step(np.int64(2))
    sim.step(0)
    assert sim.steps_done == 2


def test_divergence_carries_step_and_body():
    b = np.zeros((3, 7), np.float32)
    b[:, 0] = [0, 1, 2]
    b[:, 6] = 1
    b[1, 3] = 3e38  # the first drift overflows float32
    sim = nbody.Simulation(b, dt=10.0, backend="cpu")
    with pytest.raises(nbody.DivergedError) as e:
        sim.step(5)
    assert (e.value.step, e.value.body) == (1, 1)
    assert str(e.value).startswith("the simulation became non-finite at step 1 (body 1)")
    assert sim.steps_done == 1
    assert not np.isfinite(sim.bodies[1]).all()  # the state can still be read
    with pytest.raises(nbody.DivergedError):
        sim.step(1)  # and it refuses to go on
    with pytest.raises(nbody.DivergedError, match="refusing to write") as e:
        sim.save_checkpoint("never-written.ckpt")
    assert e.value.body == 1


def test_files(tmp_path, small):
    with pytest.raises(nbody.FileError) as e:
        nbody.Simulation.load_checkpoint(tmp_path / "missing.ckpt")
    assert isinstance(e.value, OSError) and e.value.errno == 2
    assert e.value.filename == str(tmp_path / "missing.ckpt")
    assert "No such file or directory" in str(e.value)
    (tmp_path / "junk.ckpt").write_bytes(b"not a checkpoint at all, just some bytes")
    with pytest.raises(nbody.InvalidFileError, match="not a valid checkpoint file"):
        nbody.Simulation.load_checkpoint(tmp_path / "junk.ckpt")
    with pytest.raises(nbody.FileError):
        nbody.Simulation(small, backend="cpu").save_checkpoint(tmp_path / "no-such-dir" / "x.ckpt")
    with pytest.raises(nbody.FileError):
        nbody.Archive(tmp_path / "missing.nbar")


def test_lennard_jones_inputs():
    atoms, side = fcc(3)
    with pytest.raises(nbody.InvalidInputError, match="longer than half the box|half"):
        nbody.LennardJones(atoms, box=side, cutoff=2.5, skin=0.3 + side)
    with pytest.raises(nbody.InvalidInputError, match="box = 'big'"):
        nbody.LennardJones(atoms, box="big")
    with pytest.raises(nbody.InvalidInputError, match='lists = "quarter"'):
        nbody.LennardJones(atoms, box=side, lists="quarter")
    nbody.LennardJones(atoms, box=side, neighbours="all-pairs", backend="cpu")  # small boxes: all pairs
    with pytest.raises(nbody.InvalidInputError, match='neighbours = "verlet"'):
        nbody.LennardJones(atoms, box=side, neighbours="verlet")
    atoms, side = fcc(5)
    twin = atoms.copy()
    twin[1, :3] = twin[0, :3]
    with pytest.raises(nbody.InvalidInputError, match="bodies 0 and 1 overlap"):
        nbody.LennardJones(twin, box=side, backend="cpu")
    with pytest.raises(nbody.InvalidInputError, match="cutoff"):
        nbody.LennardJones(atoms, box=side, cutoff=-1.0)


def test_cuda_without_the_feature_is_a_backend_error(small):
    if nbody.CUDA:
        pytest.skip("this build has CUDA")
    with pytest.raises(nbody.BackendError, match="no CUDA support"):
        nbody.Simulation(small, backend="cuda")


def test_auto_says_it_runs_on_the_cpu(small):
    import subprocess
    import sys

    # Once per process: a fresh interpreter shows it.
    code = "import numpy as np, nbody; b = np.ones((4, 7), np.float32) * np.arange(4)[:, None]; s = nbody.Simulation(b); s2 = nbody.Simulation(b); print(s.backend)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ("cuda" if nbody.CUDA and "cuda" in done.stdout else "cpu")
    if done.stdout.strip() == "cpu":
        assert done.stderr.count("BackendWarning") == 1
        assert 'backend="auto" runs on the CPU' in done.stderr
