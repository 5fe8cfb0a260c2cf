"""Ctrl-C during a long step(n): KeyboardInterrupt between batches, the state
intact at a whole step (continuing gives the uninterrupted run's bits)."""

from __future__ import annotations

import _thread
import os
import signal
import threading
import time

import pytest

import nbody
from conftest import cube
from test_gravity import same_bits

N, STEPS = 2048, 100_000  # a step takes ~0.2 ms or more here: the run would take many seconds


def interrupted(sim, how: str, after: float = 0.3):
    """Runs sim.step(STEPS), interrupted `after` seconds in; returns the seconds it ran."""

    def interrupt():
        time.sleep(after)
        if how == "interrupt_main":
            _thread.interrupt_main()
        else:
            os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        sim.step(STEPS)
    return time.perf_counter() - start


@pytest.mark.parametrize("how", ["interrupt_main", "sigint"])
def test_ctrl_c_stops_a_long_step_cleanly(how):
    b = cube(N, seed=4)
    sim = nbody.Simulation(b, integrator="leapfrog", backend="cpu")
    held = sim.positions
    seconds = interrupted(sim, how)
    done = sim.steps_done
    assert 0 < done < STEPS
    assert seconds < 3.0, f"stopped only after {seconds:.1f} s"
    assert sim.time == pytest.approx(done * 0.01, rel=1e-9)
    assert held.base is sim.bodies  # the held view shows the state it stopped at
    reference = nbody.Simulation(b, integrator="leapfrog", backend="cpu")
    reference.step(done)
    assert same_bits(sim.bodies, reference.bodies)
    # Intact: it goes on as if never interrupted.
    sim.step(5)
    reference.step(5)
    assert same_bits(sim.bodies, reference.bodies)


def test_ctrl_c_stops_integrate_to_and_lennard_jones():
    from conftest import fcc

    atoms, side = fcc(8)  # 2048 atoms
    lj = nbody.LennardJones(atoms, box=side, backend="cpu")
    threading.Timer(0.3, _thread.interrupt_main).start()
    with pytest.raises(KeyboardInterrupt):
        lj.integrate_to(1e6)
    assert 0 < lj.steps_done < 2e8
    lj.step(1)
    assert lj.thermo()["step"] == lj.steps_done


def test_ctrl_c_stops_hermite_between_intervals():
    import numpy as np

    from test_hermite import plummer64, same_bits64

    b = plummer64(256, seed=6)
    make = lambda: nbody.Simulation(b, integrator="hermite", softening=0.01, dt=1 / 64, backend="cpu")  # noqa: E731
    sim = make()
    threading.Timer(0.3, _thread.interrupt_main).start()
    with pytest.raises(KeyboardInterrupt):
        sim.integrate_to(1e4)
    done = sim.steps_done
    assert 0 < done < 1e4 * 64 and sim.time == done / 64  # whole intervals: exact in binary
    reference = make()
    reference.step(done)
    assert same_bits64(sim.bodies, reference.bodies) and sim.bodies.dtype == np.float64
    assert sim.stats() == reference.stats()
