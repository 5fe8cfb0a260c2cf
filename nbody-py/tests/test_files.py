"""Checkpoints (round trip, bit-identical continuation) and the snapshot
archive (records as arrays, by step and time, files of the command line)."""

from __future__ import annotations

import numpy as np
import pytest

import nbody
from conftest import fcc, run_example
from test_gravity import same_bits


def test_checkpoint_round_trip(tmp_path, small):
    straight = nbody.Simulation(small, softening=0.05, dt=0.01, kernel="triangle", integrator="leapfrog", backend="cpu")
    straight.step(20)
    first = nbody.Simulation(small, softening=0.05, dt=0.01, kernel="triangle", integrator="leapfrog", backend="cpu")
    first.step(7)
    first.save_checkpoint(tmp_path / "run.ckpt")
    resumed = nbody.Simulation.load_checkpoint(str(tmp_path / "run.ckpt"), backend="cpu")
    assert same_bits(resumed.bodies, first.bodies)
    assert (resumed.steps_done, resumed.time) == (7, first.time)
    assert (resumed.kernel, resumed.integrator, resumed.softening, resumed.dt, resumed.G) == (
        "triangle", "leapfrog", np.float32(0.05), 0.01, 1.0)
    resumed.step(13)
    assert same_bits(resumed.bodies, straight.bodies)
    assert (resumed.steps_done, resumed.time) == (20, straight.time)


def test_lennard_jones_checkpoint_round_trip(tmp_path):
    atoms, side = fcc(5)
    make = lambda: nbody.LennardJones(atoms, box=side, shift=True, rebuild_every=20, backend="cpu")  # noqa: E731
    straight = make()
    straight.step(60)
    first = make()
    first.step(25)  # mid-way between two list builds
    first.save_checkpoint(tmp_path / "lj.ckpt")
    resumed = nbody.LennardJones.load_checkpoint(tmp_path / "lj.ckpt", backend="cpu")
    resumed.step(35)
    assert same_bits(resumed.bodies, straight.bodies)
    assert np.array_equal(resumed.images, straight.images)
    assert resumed.thermo(exact=True) == straight.thermo(exact=True)
    with pytest.raises(nbody.InvalidInputError, match="load it with nbody.LennardJones.load_checkpoint"):
        nbody.Simulation.load_checkpoint(tmp_path / "lj.ckpt")


def test_archive_written_here_read_as_arrays(tmp_path, small):
    sim = nbody.Simulation(small, dt=0.01, backend="cpu")
    writer = nbody.ArchiveWriter(tmp_path / "run.nbar")
    states = []
    for k in range(6):
        writer.append(sim)
        states.append(sim.bodies.copy())
        sim.step(10)
    assert len(writer) == 6 and writer.last_step == 50
    with pytest.raises(nbody.FileError, match="the file exists"):
        nbody.ArchiveWriter(tmp_path / "run.nbar")

    archive = nbody.Archive(tmp_path / "run.nbar")
    assert len(archive) == 6
    assert archive.steps.tolist() == [0, 10, 20, 30, 40, 50] and archive.steps.dtype == np.uint64
    assert np.allclose(archive.times, [0, 0.1, 0.2, 0.3, 0.4, 0.5])
    for record, state in zip(archive, states):  # iteration
        assert record.bodies.dtype == np.float32 and same_bits(record.bodies, state)
    r = archive.at_step(30)
    assert (r.step, r.kernel, r.integrator, r.dt, r.box, r.images) == (30, "tiled", "euler", 0.01, None, None)
    assert same_bits(r.bodies, states[3])
    assert archive.at_time(0.25).step == 20  # the last record at or before t
    assert archive[-1].step == 50 and archive.index_at_time(-1.0) is None
    with pytest.raises(nbody.InvalidInputError, match="no record at step 35: the archive's steps run from 0 to 50"):
        archive.at_step(35)
    with pytest.raises(nbody.InvalidFileError, match="no record at or before t = -1"):
        archive.at_time(-1.0)
    with pytest.raises(nbody.OutOfRangeError):
        archive[6]
    # Continue the run from a record: the very same trajectory.
    again = archive[2].simulation(backend="cpu")
    assert isinstance(again, nbody.Simulation) and again.steps_done == 20
    again.step(30)
    assert same_bits(again.bodies, archive[5].bodies) and again.time == archive[5].time


def test_archive_of_the_command_line(examples, tmp_path, small):
    np.save(tmp_path / "b.npy", small)
    run_example(examples, "nbody_tiled", "--backend", "cpu", "--init", tmp_path / "b.npy", "--steps", "12",
                "--archive", tmp_path / "cli.nbar", "--every", "4", "--no-energy")
    archive = nbody.Archive(tmp_path / "cli.nbar")
    assert archive.steps.tolist() == [0, 4, 8, 12]
    sim = nbody.Simulation(small, backend="cpu")
    sim.step(8)
    assert same_bits(archive.at_step(8).bodies, sim.bodies)
    # A record cut short (a killed run) is left out.
    data = (tmp_path / "cli.nbar").read_bytes()
    (tmp_path / "cut.nbar").write_bytes(data[:-100])
    cut = nbody.Archive(tmp_path / "cut.nbar")
    assert len(cut) == 3 and cut.incomplete_tail_bytes > 0


def test_lennard_jones_archive_records(examples, tmp_path):
    atoms, side = fcc(5)
    np.save(tmp_path / "b.npy", atoms)
    run_example(examples, "lj_melt", "--init", tmp_path / "b.npy", "--box", repr(side), "--steps", "40",
                "--archive", tmp_path / "lj.nbar", "--every", "20", "--thermo", "0")
    archive = nbody.Archive(tmp_path / "lj.nbar")
    r = archive.at_step(40)
    assert r.box == (side, side, side) and r.images.shape == (500, 3) and r.force.startswith("lj/cut")
    lj = r.simulation(backend="cpu")
    assert isinstance(lj, nbody.LennardJones) and lj.steps_done == 40
    assert np.array_equal(lj.images, r.images)


def test_record_gif(tmp_path, small):
    sim = nbody.Simulation(small, backend="cpu")
    if not nbody.RENDER:
        with pytest.raises(nbody.BackendError, match="no pictures"):
            sim.record_gif(tmp_path / "run.gif", 10)
        assert sim.steps_done == 0
        return
    frames = sim.record_gif(tmp_path / "run.gif", 10, every=5, size=(64, 48))
    assert frames == 3 and sim.steps_done == 10
    assert (tmp_path / "run.gif").read_bytes()[:6] == b"GIF89a"
