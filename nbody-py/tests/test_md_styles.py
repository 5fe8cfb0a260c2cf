"""nbody.MD (pair styles, atom types, ensembles) against the Rust API on the
same input: ``md_reference`` (nbody-py/examples/md_reference.rs) builds the
run from LAMMPS's commands with ``PairSpec``, the types, ``EnsembleFlags``,
and prints every thermo value in its shortest round-trip form, so the
comparison is bit for bit; and the errors, with the library's messages."""

from __future__ import annotations

import numpy as np
import pytest

import nbody
from conftest import fcc, run_example

KOB_ANDERSEN = dict(
    pair=("lj/cut", 2.5),
    pair_coeff=[(1, 1, 1.0, 1.0), (1, 2, 1.5, 0.8, 2.0), (2, 2, 0.5, 0.88, 2.2)],
    pair_modify="shift yes",
)
MORSE = dict(
    pair="morse 2.5",
    pair_coeff=["1 1 1.0 3.0 1.1", (1, 2, 1.5, 2.5, 1.0, 2.2), (2, 2, 0.5, 4.0, 1.2, 2.4)],
    pair_modify=("shift", "yes"),
)
KEYS = ("temp", "pe", "ke", "etotal", "press", "coupling", "conserved", "volume", "density")


def reference(examples, tmp_path, atoms, side, types, pair, pair_coeff, pair_modify, steps, every, **ensemble):
    """The Rust API's thermo rows for the same run: [{step, temp, ...}]."""
    np.save(tmp_path / "b.npy", atoms)
    words = lambda x: x if isinstance(x, str) else " ".join(map(str, x))  # noqa: E731
    args = ["--init", tmp_path / "b.npy", "--box", repr(side), "--pair", words(pair),
            "--types", ",".join(map(str, types)), "--pair-modify", words(pair_modify),
            "--steps", steps, "--thermo", every]
    for line in pair_coeff:
        args += ["--pair-coeff", words(line)]
    for key, value in ensemble.items():
        args += ["--" + key.replace("_", "-"), value]
    out = run_example(examples, "md_reference", *args).stdout
    rows = []
    for line in out.splitlines():
        fields = dict(f.split("=", 1) for f in line.split()[1:])
        rows.append({k: (int(v) if k == "step" else float(v)) for k, v in fields.items()})
    return rows


def run_rows(md, steps, every):
    rows = []
    while True:
        t = md.thermo(exact=True)
        rows.append({"step": t["step"], **{k: t[k] for k in KEYS}})
        if t["step"] >= steps:
            return rows
        md.step(every)


def same(a: dict, b: dict) -> bool:
    """Equal bits, key by key (floats compared as float64 bit patterns)."""
    return a["step"] == b["step"] and all(
        np.array([a[k]]).view(np.uint64)[0] == np.array([b[k]]).view(np.uint64)[0] for k in KEYS
    )


@pytest.mark.parametrize("potential", [KOB_ANDERSEN, MORSE], ids=["lj-mixture", "morse-mixture"])
def test_two_type_mixture_equals_the_rust_api(examples, tmp_path, potential):
    atoms, side = fcc(4, temperature=1.0, seed=7)  # 256 atoms
    types = np.where(np.arange(len(atoms)) % 5 == 4, 2, 1)  # one in five of type 2 (LAMMPS's numbering)
    want = reference(examples, tmp_path, atoms, side, types, steps=60, every=20, dt=0.002, **potential)
    md = nbody.MD(atoms, box=side, types=types, dt=0.002, backend="cpu", **potential)
    assert np.array_equal(md.types, types) and md.ensemble == "nve"
    got = run_rows(md, 60, 20)
    assert len(got) == len(want) == 4
    assert all(same(g, w) for g, w in zip(got, want)), (got, want)
    # A type 2 atom changes the energy: the types reached the run.
    plain = nbody.MD(atoms, box=side, dt=0.002, backend="cpu", **potential)
    assert plain.thermo(exact=True)["pe"] != got[0]["pe"]


def test_nvt_equals_the_rust_api(examples, tmp_path):
    atoms, side = fcc(4, temperature=1.44, seed=3)
    types = np.ones(len(atoms), dtype=int)
    nvt = dict(ensemble="nvt", temp_target=1.0, tdamp=0.5)
    want = reference(examples, tmp_path, atoms, side, types, "lj/cut 2.5", ["1 1 1.0 1.0"], "shift yes",
                     steps=100, every=25, dt=0.005, **nvt)
    md = nbody.MD(atoms, box=side, pair="lj/cut 2.5", pair_coeff=["1 1 1.0 1.0"], pair_modify="shift yes",
                  dt=0.005, backend="cpu", **nvt)
    got = run_rows(md, 100, 25)
    assert all(same(g, w) for g, w in zip(got, want)) and len(got) == len(want) == 5, (got, want)
    assert got[-1]["coupling"] != 0.0  # the thermostat worked
    assert abs(got[-1]["conserved"] - got[0]["conserved"]) < 2e-3


def test_npt_box_follows_the_barostat(examples, tmp_path):
    atoms, side = fcc(4, temperature=1.5, seed=4)
    npt = dict(ensemble="npt", temp_target=1.5, tdamp=0.5, press_target=1.0, pdamp=5.0)
    want = reference(examples, tmp_path, atoms, side, np.ones(len(atoms), dtype=int), "lj 2.5", ["1 1 1 1"],
                     "shift yes", steps=50, every=50, dt=0.005, **npt)
    md = nbody.MD(atoms, box=side, pair="lj 2.5", pair_coeff="1 1 1 1", pair_modify="shift yes", dt=0.005,
                  backend="cpu", **npt)
    md.step(50)
    t = md.thermo(exact=True)
    assert same({"step": 50, **{k: t[k] for k in KEYS}}, want[-1])
    assert md.box[0] != side and abs(float(np.prod(md.box)) - t["volume"]) < 1e-6 * t["volume"]


def test_lennard_jones_is_the_one_type_case_of_md():
    atoms, side = fcc(4, seed=9)
    lj = nbody.LennardJones(atoms, box=side, cutoff=2.5, shift=True, backend="cpu")
    md = nbody.MD(atoms, box=side, pair=("lj/cut", 2.5), pair_coeff=[(1, 1, 1.0, 1.0)], pair_modify="shift yes",
                  backend="cpu")
    assert isinstance(lj, nbody.MD)
    lj.step(30)
    md.step(30)
    assert np.array_equal(lj.bodies.view(np.uint32), md.bodies.view(np.uint32))
    assert lj.thermo(exact=True) == md.thermo(exact=True)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(pair="lj/foo 2.5"), 'unknown pair style "lj/foo"'),
        (dict(pair="lj/cut 2.5", pair_coeff=[(1, 1, 1.0, 1.0)], types=[1] * 255 + [0]),
         r"types\[255\] = 0: atom types are integers from 1"),
        (dict(pair="lj/cut 2.5", pair_coeff=[(1, 1, 1.0, 1.0)], types=[1.5] * 256), r"types\[0\] = 1.5"),
        (dict(pair="morse 2.5", pair_coeff=[(1, 1, 1.0, 3.0, 1.1)], types=[1] * 255 + [2]),
         "no pair coefficients for types"),
        (dict(pair="lj/cut 2.5", pair_coeff=[(1, 1, 1.0)]), "pair_coeff"),
        (dict(pair="lj/cut 2.5", pair_coeff=[(1, 1, 1.0, 1.0)], pair_modify="shift maybe"), "maybe"),
        (dict(pair="lj/cut 2.5", pair_coeff=[(1, 1, 1.0, 1.0)], ensemble="nvt", temp_target=1.0),
         "ensemble = nvt needs tdamp"),
        (dict(pair="lj/cut 2.5", pair_coeff=[(1, 1, 1.0, 1.0)], ensemble="nvt", temp_target=1.0, tdamp=-1.0),
         "-1"),
        (dict(pair="lj/cut 2.5", pair_coeff=[(1, 1, 1.0, 1.0)], ensemble="nph"), '"nph" is not known'),
    ],
    ids=["style", "type-0", "type-float", "missing-coeff", "coeff-count", "modify", "missing-tdamp",
         "negative-tdamp", "ensemble"],
)
def test_bad_input_is_a_value_error_with_the_library_message(kwargs, message):
    atoms, side = fcc(4)
    with pytest.raises(ValueError, match=message) as caught:
        nbody.MD(atoms, box=side, backend="cpu", **kwargs)
    assert isinstance(caught.value, nbody.InvalidInputError)


def test_md_checkpoint_keeps_types_and_thermostat(tmp_path):
    atoms, side = fcc(4, temperature=1.44, seed=5)
    types = np.where(np.arange(len(atoms)) % 4 == 0, 2, 1)
    make = lambda: nbody.MD(atoms, box=side, types=types, ensemble="nvt", temp_target=1.0, tdamp=0.5,  # noqa: E731
                            backend="cpu", **KOB_ANDERSEN)
    straight, first = make(), make()
    straight.step(40)
    first.step(15)
    first.save_checkpoint(tmp_path / "md.ckpt")
    resumed = nbody.MD.load_checkpoint(tmp_path / "md.ckpt", backend="cpu")
    assert type(resumed) is nbody.MD and np.array_equal(resumed.types, types) and resumed.ensemble == "nvt"
    resumed.step(25)
    assert np.array_equal(resumed.bodies.view(np.uint32), straight.bodies.view(np.uint32))
    assert resumed.thermo(exact=True) == straight.thermo(exact=True)


def test_ensemble_objects_are_the_rust_variants():
    atoms, side = fcc(4, temperature=1.44, seed=3)
    common = dict(pair="lj 2.5", pair_coeff="1 1 1 1", pair_modify="shift yes", backend="cpu")
    by_name = nbody.MD(atoms, box=side, ensemble="nvt", temp_target=1.0, tdamp=0.5, **common)
    by_object = nbody.MD(atoms, box=side, ensemble=nbody.NVT(1.0, 0.5), **common)  # chain 3, as by name
    one_chain = nbody.MD(atoms, box=side, ensemble=nbody.NVT(1.0, 0.5, chain=1), **common)
    npt = nbody.MD(atoms, box=side, ensemble=nbody.NPT(1.5, 0.5, 1.0, 5.0), **common)
    npt_by_name = nbody.MD(atoms, box=side, ensemble="npt", temp_target=1.5, tdamp=0.5, press_target=1.0,
                           pdamp=5.0, **common)
    for md in (by_name, by_object, one_chain, npt, npt_by_name):
        md.step(40)
    assert by_object.ensemble == "nvt" and by_object.thermo(exact=True) == by_name.thermo(exact=True)
    assert one_chain.thermo(exact=True)["conserved"] != by_name.thermo(exact=True)["conserved"]
    assert npt.thermo(exact=True) == npt_by_name.thermo(exact=True) and np.array_equal(npt.box, npt_by_name.box)
    rescaled = nbody.MD(atoms, box=side, ensemble=nbody.Rescale(2.0), **common)  # every step, all the way
    rescaled.step(1)
    assert abs(rescaled.thermo(exact=True)["temp"] - 2.0) < 1e-6
    assert nbody.MD(atoms, box=side, ensemble=nbody.NVE(), **common).ensemble == "nve"


@pytest.mark.parametrize(
    "ensemble,keywords,message",
    [
        (nbody.NVT(1.0, -0.5), {}, "Tdamp = -0.5 must be finite and > 0"),
        (nbody.NVT(1.0, 0.5, chain=9), {}, "chain length = 9"),
        (nbody.Langevin(-1.0, 1.0), {}, "-1"),
        (nbody.NVT(1.0, 0.5), dict(temp_target=1.0), "go with ensemble given by name"),
        (3, {}, "ensemble = 3: must be"),
    ],
    ids=["tdamp", "chain", "langevin-temp", "object-and-keywords", "not-an-ensemble"],
)
def test_bad_ensemble_objects_are_value_errors(ensemble, keywords, message):
    atoms, side = fcc(4)
    with pytest.raises(nbody.InvalidInputError, match=message):
        nbody.MD(atoms, box=side, pair="lj 2.5", pair_coeff="1 1 1 1", ensemble=ensemble, backend="cpu", **keywords)
