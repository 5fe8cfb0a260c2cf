"""What a Python ``sim.step(1)`` costs over the Rust ``Simulation::step(1)`` it
makes (docs/python.md, "Overhead").

    python nbody-py/bench/step_overhead.py [--n 1024 1] [--blocks 30] [--calls 200]

On one simulation, alternately: ``calls`` Python calls of ``sim.step(1)``, each
timed with perf_counter_ns, and ``calls`` Rust calls of ``Simulation::step(1)``
timed inside Rust (``sim._rust_step_seconds``: a Rust loop, no Python between
the calls). Per block, the median of each; the overhead is Python's median minus
Rust's, reported as the median (and the spread) over the blocks. Also with a
view of the state held (``x = sim.positions``), which makes every step call copy
the state back into the array.
"""

import argparse
import time

import numpy as np

import nbody

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--n", type=int, nargs="+", default=[1024, 1])
parser.add_argument("--blocks", type=int, default=30)
parser.add_argument("--calls", type=int, default=200)
args = parser.parse_args()


def python_calls(sim, calls):
    step, clock = sim.step, time.perf_counter_ns
    seconds = np.empty(calls)
    for k in range(calls):
        t = clock()
        step(1)
        seconds[k] = clock() - t
    return seconds * 1e-9


print(f"nbody {nbody.__version__}, CPU backend ({nbody.cpu_isa()}), {args.blocks} blocks of {args.calls} calls")
for n in args.n:
    for holding in (False, True):
        sim = nbody.Simulation(nbody.ic.uniform_cube(n, 42), backend="cpu")
        held = sim.positions if holding else None  # noqa: F841 (holding it is the point)
        sim.step(20)  # warm: threads, caches
        py, rs = [], []
        for _ in range(args.blocks):
            py.append(np.median(python_calls(sim, args.calls)))
            rs.append(np.median(sim._rust_step_seconds(args.calls)))
        py, rs = np.array(py) * 1e6, np.array(rs) * 1e6
        over = py - rs
        print(
            f"N = {n:>5}{', a view held' if holding else ''}: Rust step(1) {np.median(rs):8.2f} us, "
            f"Python step(1) {np.median(py):8.2f} us, overhead {np.median(over):6.2f} us "
            f"(blocks: {np.percentile(over, 10):.2f} .. {np.percentile(over, 90):.2f}, 10th..90th percentile)"
        )
