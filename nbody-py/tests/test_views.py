"""The state arrays: one (N, 7) float32 array owned by the simulation,
positions/velocities/masses views of it, refreshed in place by steps, read-only
(docs/python.md, "Arrays and views")."""

from __future__ import annotations

import numpy as np
import pytest

import nbody


def test_views_alias_the_state_array(small):
    sim = nbody.Simulation(small, backend="cpu")
    bodies = sim.bodies
    assert bodies is sim.bodies  # the same array every time
    assert bodies.dtype == np.float32 and bodies.shape == (256, 7) and bodies.flags.c_contiguous
    x, v, m = sim.positions, sim.velocities, sim.masses
    for view, cols in ((x, slice(0, 3)), (v, slice(3, 6)), (m, 6)):
        assert view.base is bodies  # a view, no copy
        assert np.shares_memory(view, bodies)
        assert np.array_equal(view, bodies[:, cols])
    assert x.shape == (256, 3) and m.shape == (256,)
    assert np.array_equal(bodies, small)


def test_held_views_follow_every_step(small):
    sim = nbody.Simulation(small, backend="cpu")
    x = sim.positions  # only a view is held, not `bodies`
    before = x.copy()
    sim.step(3)
    assert not np.array_equal(x, before)  # refreshed in place
    reference = nbody.Simulation(small, backend="cpu")
    reference.step(3)
    assert np.array_equal(x, reference.positions)
    sim.step(2)
    reference.step(2)
    assert np.array_equal(x, reference.positions)


def test_unheld_state_is_refreshed_on_the_next_read(small):
    sim = nbody.Simulation(small, backend="cpu")
    first = sim.bodies.copy()
    sim.step(4)  # nobody holds the array: nothing copied now
    reference = nbody.Simulation(small, backend="cpu")
    reference.step(4)
    assert np.array_equal(sim.bodies, reference.bodies)
    assert not np.array_equal(sim.bodies, first)


def test_arrays_are_read_only(small):
    sim = nbody.Simulation(small, backend="cpu")
    for array in (sim.bodies, sim.positions, sim.velocities, sim.masses):
        assert not array.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1.0


def test_changing_n_gives_a_new_array_and_keeps_the_old_state(small):
    sim = nbody.Simulation(small, backend="cpu")
    old = sim.bodies
    sim.add([0, 0, 50, 0, 0, 0, 1])
    assert sim.bodies is not old and sim.bodies.shape == (257, 7)
    assert old.shape == (256, 7) and np.array_equal(old, small)  # the state before
    sim.step(1)
    assert np.array_equal(old, small)  # no longer updated
    held = sim.positions
    sim.remove(0)
    assert held.shape == (257, 3) and sim.positions.shape == (256, 3)


def test_the_library_input_is_not_aliased(small):
    b = small.copy()
    sim = nbody.Simulation(b, backend="cpu")
    b[:] = 0  # the caller's array is the caller's
    assert np.array_equal(sim.bodies, small)
    assert not np.shares_memory(sim.bodies, b)


def test_lennard_jones_views_are_wrapped_positions():
    from conftest import fcc

    atoms, side = fcc(4)
    lj = nbody.LennardJones(atoms, box=side, neighbours="all-pairs", backend="cpu")
    x = lj.positions
    lj.step(200)
    assert x.base is lj.bodies
    assert x.min() >= 0 and x.max() < side  # wrapped into the box after every drift
    unwrapped = x + lj.images * lj.box
    assert lj.images.dtype == np.int32 and lj.images.shape == (256, 3)
    # Unwrapped displacement is continuous: no jump of a box length.
    assert np.abs(unwrapped - atoms[:, :3]).max() < side / 2
