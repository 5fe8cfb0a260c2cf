"""The README's quick start (its Rust snippet, "Using the library"), from Python.

    python python/examples/quickstart.py

Same set-up, parameters and steps as the Rust program; on the same backend it
prints the same numbers (float32 values print as Rust prints them).
"""

import nbody

bodies = nbody.ic.uniform_cube(1024, 42)  # NVIDIA Warp's N-body example's set-up
sim = nbody.Simulation(
    bodies,
    softening=0.1, dt=0.01, G=1.0,
    kernel="tiled", block=256,  # "simt" | "tiled" | "triangle"
    integrator="leapfrog",      # or "euler" (Warp's example's)
    backend="auto",             # "auto" | "cpu" | "cuda" | "emulator"
)
e0 = sim.energy()
sim.integrate_to(0.1)  # 10 steps
x0 = ", ".join(str(x) for x in sim.positions[0])  # float32 printed shortest, as Rust prints f32
print(f"{sim.device} at t = {sim.time}: x0 = [{x0}]")
print(f"dE/E = {sim.energy().relative_change_from(e0):.1e}")
