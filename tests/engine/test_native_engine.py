"""The mypyc-compiled engine replays exactly as the pure-Python one, and is never stale.

`make native` compiles copies of the engine's hot path (engine/components.py with the storage
nodes, the PE array, the transfers, the fabric, the links, the tiles and the visits: engine/
native.py NATIVE_UNITS) stamped with their sources' sha256; engine/native.py uses them only
while the stamp equals the sources' hash. These tests replay examples and random schedules
with both, fast-forward on and off, and compare every record, the SimPy event count and the
report byte for byte; and check the loader's choice. The comparisons skip, saying why, where
the compiled engine is not built (`make test` runs `make native` first).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from replay_helpers import inputs_from_dicts  # noqa: E402
from test_replay_properties import schedules  # noqa: E402

from cyclesim.engine import components as pure  # noqa: E402
from cyclesim.engine import native as loader  # noqa: E402
from cyclesim.engine.run import replay_plan  # noqa: E402
from cyclesim.engine.verify import run_differences  # noqa: E402
from cyclesim.results import build_result  # noqa: E402
from cyclesim.results.schema import versioned  # noqa: E402
from cyclesim.schedule import build_plan  # noqa: E402
from cyclesim.spec import load_architecture, load_mapping, load_workload  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NATIVE, KIND = loader.UNITS.choose("components", environ={})  # whatever the environment
needs_native = pytest.mark.skipif(NATIVE is pure, reason=f"engine: {KIND}")


def example(arch: str, workload: str, mapping: str) -> tuple:
    a = load_architecture(str(ROOT / arch))
    w = load_workload(str(ROOT / workload))
    return a, w, load_mapping(str(ROOT / mapping), a, w)


def replay_with(module, monkeypatch, inputs, **options) -> tuple:
    """The raw run and the JSON report of a traced replay with these engine components."""
    monkeypatch.setattr(loader, "components", module)
    raw = replay_plan(build_plan(*inputs), trace=True, progress=False, **options)
    document = versioned(build_result(raw).to_json_dict())
    document.pop("wall_seconds")  # the replay's own run time: the one field that may differ
    return raw, json.dumps(document, sort_keys=True)


def assert_same(inputs, monkeypatch, **options) -> None:
    native_raw, native_report = replay_with(NATIVE, monkeypatch, inputs, **options)
    pure_raw, pure_report = replay_with(pure, monkeypatch, inputs, **options)
    assert type(native_raw.rec) is type(pure_raw.rec)  # (the records stay pure Python)
    assert run_differences(native_raw, pure_raw) == []
    assert (native_raw.env_events, native_raw.fast_forward) == (
        pure_raw.env_events,
        pure_raw.fast_forward,
    )
    assert native_report == pure_report


EXAMPLES = {
    "tpu_gemm (systolic)": lambda: example(
        "hw_models/tpu_like.yaml",
        "examples/tpu_gemm/workload.yaml",
        "examples/tpu_gemm/mapping.yaml",
    ),
    "simple_3level": lambda: example(
        "hw_models/simple_3level.yaml",
        "examples/simple_3level/workload.yaml",
        "examples/simple_3level/mapping.yaml",
    ),
    "l1_replay (an allocator)": lambda: example(
        "examples/l1_replay/arch.yaml",
        "examples/l1_replay/workload.yaml",
        "examples/l1_replay/mapping.yaml",
    ),
    "resnet50_dram on tpu_like DDR4 (the DRAM sides)": lambda: example(
        "hw_models/tpu_like_ddr4.yaml",
        "examples/resnet50_dram/workload.yaml",
        "examples/resnet50_dram/mapping.yaml",
    ),
    "resnet50_dram, the controller in the loop": lambda: example(
        "hw_models/tpu_like_ddr4_controller.yaml",
        "examples/resnet50_dram/workload.yaml",
        "examples/resnet50_dram/mapping.yaml",
    ),
    "memsize small (fast-forward's case)": lambda: example(
        "hw_models/eyeriss_like_small.yaml",
        "examples/eyeriss_memsize/workload.yaml",
        "examples/eyeriss_memsize/mapping_small.yaml",
    ),
}


@needs_native
@pytest.mark.parametrize("fast_forward", [True, False])
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.slow) if "memsize" in name else name
        for name in EXAMPLES
    ],
)
def test_an_example_replays_the_same_compiled_and_pure(name, fast_forward, monkeypatch):
    assert_same(EXAMPLES[name](), monkeypatch, fast_forward=fast_forward)


@needs_native
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules(steady=(5, 14), shared_ports=True))
def test_random_schedules_replay_the_same_compiled_and_pure(case):
    # contested ports (revokes, interrupted runs), DMA, double buffering, fast-forward's jumps
    arch, workload, loop_tree, _, _ = case
    inputs = inputs_from_dicts(arch, workload, loop_tree)
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_same(inputs, monkeypatch, fast_forward=True)


@needs_native
def test_a_stale_build_falls_back_to_pure_python(tmp_path):
    # the compiled engine carries the hash of all its unit's sources: any one edited (here:
    # copies, one with one more comment line) no longer matches it
    for edited_module in loader.NATIVE_UNITS["components"]:
        sources = []
        for source in loader.UNITS.sources("components"):
            copy = tmp_path / source.name
            edit = "# edited\n" if source.stem == edited_module else ""
            copy.write_text(source.read_text() + edit)
            sources.append(copy)
        module, kind = loader.UNITS.choose("components", sources=sources, environ={})
        assert module is pure and "stale" in kind, edited_module
    assert loader.UNITS.choose("components", environ={}) == (NATIVE, KIND)  # as it is


def test_the_environment_variable_forces_the_pure_engine():
    module, kind = loader.UNITS.choose("components", environ={"CYCLESIM_PURE_PYTHON": "1"})
    assert module is pure and kind == "pure Python (CYCLESIM_PURE_PYTHON=1)"
    assert loader.UNITS.choose("components", environ={"CYCLESIM_PURE_PYTHON": "0"})[1] == KIND


def test_a_missing_build_falls_back_to_pure_python():
    missing = "cyclesim.engine._no_such_module"
    module, kind = loader.UNITS.choose("components", compiled_name=missing, environ={})
    assert module is pure and kind == (
        "pure Python (the compiled components.py is not built: make native)"
    )
