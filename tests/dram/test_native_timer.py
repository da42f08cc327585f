"""The mypyc-compiled DRAM timer gives the pure-Python timer's numbers, and is never stale.

`make native` compiles copies of dram/timer.py (with the modules it is made of),
dram/byte_runs.py and dram/frontend.py (with dram/controller.py) stamped with their sources'
sha256 (cli/native_build.py); dram/native.py uses a copy only while its stamp equals the
sources' hash. These tests replay the DRAM examples with both (the timer, and the controller in
the loop) and compare every record and the report byte for byte, compare random request
sequences call by call, random request streams through the controllers and random byte-run
slices, and check the loader's choice. The comparisons skip, saying
why, where the compiled modules are not built (CI builds them: `make test` runs `make native`
first).
"""

from __future__ import annotations

import dataclasses
import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from replay_helpers import arch_with_dram, inputs_from_dicts  # noqa: E402
from test_replay_dram import HBM, gemv  # noqa: E402
from test_replay_properties import schedules  # noqa: E402
from test_timer_fast_path import TIMER_SETUPS, streams, timer_config  # noqa: E402

from cyclesim.dram import byte_runs as pure_slices  # noqa: E402
from cyclesim.dram import frontend as pure_frontend  # noqa: E402
from cyclesim.dram import native as loader  # noqa: E402
from cyclesim.dram import timer as pure  # noqa: E402
from cyclesim.dram.load import load_dram_config  # noqa: E402
from cyclesim.engine.run import replay_plan  # noqa: E402
from cyclesim.engine.verify import run_differences  # noqa: E402
from cyclesim.errors import DeadlockError  # noqa: E402
from cyclesim.results import build_result  # noqa: E402
from cyclesim.results.schema import versioned  # noqa: E402
from cyclesim.schedule import build_plan  # noqa: E402
from cyclesim.spec import load_architecture, load_mapping, load_workload  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# the compiled modules whatever the environment
NATIVE, KIND = loader.choose("timer", environ={})
NATIVE_SLICES, SLICES_KIND = loader.choose("byte_runs", environ={})
NATIVE_FRONTEND, FRONTEND_KIND = loader.choose("frontend", environ={})
needs_native = pytest.mark.skipif(
    NATIVE is pure or NATIVE_SLICES is pure_slices or NATIVE_FRONTEND is pure_frontend,
    reason=f"DRAM timer: {KIND}; {SLICES_KIND}; controller {FRONTEND_KIND}",
)
COMPILED_MODULES = (NATIVE, NATIVE_SLICES, NATIVE_FRONTEND)
PURE_MODULES = (pure, pure_slices, pure_frontend)


def example(arch: str, workload: str, mapping: str):
    a = load_architecture(str(ROOT / arch))
    w = load_workload(str(ROOT / workload))
    return a, w, load_mapping(str(ROOT / mapping), a, w)


def replay_with(modules, monkeypatch, inputs, controller=False, **options):
    """The raw run and the JSON report of a traced replay with these DRAM modules (timer,
    byte-run slicing, front end and controllers); `controller`: every DRAM timed by the
    controller in the loop (`timing: controller`)."""
    timer_module, slices_module, frontend_module = modules
    monkeypatch.setattr(loader, "DramTimer", timer_module.DramTimer)
    monkeypatch.setattr(loader, "byte_runs", slices_module.byte_runs)
    for name in ("FrontEnd", "Request", "Channel"):
        monkeypatch.setattr(loader, name, getattr(frontend_module, name))
    plan = build_plan(*inputs)
    if controller:
        dram = tuple(
            (name, config.with_changes(replay_controller=True), placed, mhz)
            for name, config, placed, mhz in plan.dram
        )
        plan = dataclasses.replace(plan, dram=dram)
    raw = replay_plan(plan, trace=True, progress=False, **options)
    document = versioned(build_result(raw).to_json_dict())
    document.pop("wall_seconds")  # the replay's own run time: the one field that may differ
    report = json.dumps(document, sort_keys=True)
    return raw, report


EXAMPLES = {
    "resnet50_dram on tpu_like DDR4": lambda: example(
        "hw_models/tpu_like_ddr4.yaml",
        "examples/resnet50_dram/workload.yaml",
        "examples/resnet50_dram/mapping.yaml",
    ),
    "memsize on eyeriss_like_small DDR4": lambda: example(
        "hw_models/eyeriss_like_small_ddr4.yaml",
        "examples/eyeriss_memsize/workload.yaml",
        "examples/eyeriss_memsize/mapping_small.yaml",
    ),
    "gemv HBM2, closed rows": lambda: gemv(HBM),
    "gemv HBM2, a bank conflict": lambda: gemv(HBM, {"B": {"base": 32 << 10}, "Z": {"base": 4096}}),
}


@needs_native
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.slow) if "memsize" in name else name
        for name in EXAMPLES
    ],
)
def test_a_replay_is_the_same_with_the_compiled_and_the_pure_timer(name, monkeypatch):
    inputs = EXAMPLES[name]()
    native_raw, native_report = replay_with(COMPILED_MODULES, monkeypatch, inputs)
    pure_raw, pure_report = replay_with(PURE_MODULES, monkeypatch, inputs)
    assert run_differences(native_raw, pure_raw) == []  # every record, bank commands included
    assert native_report == pure_report
    assert native_raw.rec.dram_banks  # the comparison covered the traced bank commands


@needs_native
@pytest.mark.parametrize("name", [name for name in EXAMPLES if "memsize" not in name])
def test_a_replay_with_the_controller_in_the_loop_is_the_same_compiled_and_pure(name, monkeypatch):
    # the ResNet-50 layer: 118,277 cycles, write-backs drained while reads queue
    inputs = EXAMPLES[name]()
    native_raw, native_report = replay_with(COMPILED_MODULES, monkeypatch, inputs, True)
    pure_raw, pure_report = replay_with(PURE_MODULES, monkeypatch, inputs, True)
    assert run_differences(native_raw, pure_raw) == []
    assert native_report == pure_report
    assert native_raw.rec.dram_requests  # the controller timed them


def through_the_controllers(module, config, requests) -> tuple[list, list] | str:
    """`cyclesim dram`'s loop with this front end module: each request's (entered, completed,
    causes) and every channel's command log; or, where DRAMsim3's scheduling would loop for
    ever (tests/dram/test_controller_shortcuts.py), the DeadlockError's message."""
    pushed = [module.Request(a, w, c, owner=k % 3) for k, (a, w, c) in enumerate(requests)]
    front = module.FrontEnd(config, keep_commands=True)
    for r in pushed:
        front.push(r)
    try:
        front.run_until(None, flush_at_end=True)
    except DeadlockError as e:
        return str(e)
    done = [(r.entered, r.complete, r.trans.served, r.waited_behind) for r in pushed]
    return done, [(c.stats.log, c.stats.commands, c.clk) for c in front.channels]


@needs_native
@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, (1 << 26) // 64 - 1), st.integers(1, 120), st.booleans()),
        min_size=1,
        max_size=4,
    ),
    st.lists(st.integers(0, 40), min_size=1, max_size=16),
    st.sampled_from(["DDR4_8Gb_x8_2400", "HBM2_8Gb_x128", "DDR4_8Gb_x16_3200"]),
    st.booleans(),
    st.booleans(),
)
def test_random_streams_through_the_controllers_are_the_same_compiled_and_pure(
    streams, gaps, config, often, close_page
):
    # row runs read or written, arriving faster than served or with idle gaps; `often`: a
    # refresh every tRFC + 200 cycles
    conf = load_dram_config(config)
    if often:
        conf = conf.with_changes(tREFI=conf.tRFC + 200)
    if close_page:
        conf = conf.with_changes(close_page=True)
    requests, arrival = [], 0
    for k, (line, count, is_write) in enumerate(streams):
        for n in range(count):
            arrival += gaps[(k + n) % len(gaps)] // (1 if n % 7 == 0 else 8)
            requests.append((64 * (line + n), is_write, arrival))
    native = through_the_controllers(NATIVE_FRONTEND, conf, requests)
    assert native == through_the_controllers(pure_frontend, conf, requests)


@needs_native
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    schedules(shared_ports=True),
    st.sampled_from(["DDR4_8Gb_x8_2400", "HBM2_8Gb_x128"]),
    st.sampled_from([100, 700, 2000]),
    st.sampled_from(["rochrababgco", "rorabgbachco"]),
)
def test_random_schedules_replay_the_same_with_both_timers(case, config, clock_mhz, mapping):
    # the replay's own paths: runs issued ahead and cut, two links of one DRAM, rollbacks
    arch, workload, loop_tree, reuse, _ = case
    arch = arch_with_dram(arch, {"config": config, "address_mapping": mapping}, clock_mhz)
    inputs = inputs_from_dicts(arch, workload, loop_tree)
    with pytest.MonkeyPatch.context() as monkeypatch:
        native_raw, native_report = replay_with(COMPILED_MODULES, monkeypatch, inputs)
        pure_raw, pure_report = replay_with(PURE_MODULES, monkeypatch, inputs)
    assert run_differences(native_raw, pure_raw) == []
    assert native_report == pure_report


def calls_and_answers(module, config, clock_mhz: int, calls, rollback_at: int) -> list:
    """Everything a timer answers to a sequence of issue() calls: each call's end and delays,
    data end, requests issued, counts and column commands (as prefix_end reads them); the
    call at rollback_at is undone once (restore) and issued again, as a cut run is; calls of
    the same requester continue its stream."""
    timer = module.DramTimer(config, clock_mhz)
    log: list[tuple] = []
    timer.trace_into(log, "DRAM")
    out = []
    streams_of: dict[str, tuple[int, int, int]] = {}
    for k, (runs, is_write, who, start, ahead) in enumerate(calls):
        for attempt in (0, 1) if k == rollback_at else (1,):
            saved = timer.snapshot() if attempt == 0 else None
            last = streams_of.get(who)
            stream = (last[1], last[2]) if last is not None and last[0] == start else None
            end, delays = timer.issue(runs, is_write, who, start, stream, ahead)
            chunks, first, upto, s0 = timer.pieces
            out.append((end, delays, timer.data_end, timer.issued, dict(timer.counts)))
            out.append((chunks, first, upto, s0, timer.prefix_end(timer.pieces, 3)))
            if saved is not None:
                timer.restore(saved)
        begun = stream[0] if stream is not None else timer.to_dram(start)
        done = (stream[1] if stream is not None else 0) + timer.issued
        streams_of[who] = (end, begun, done)
    out.append(log)
    return out


@needs_native
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(*TIMER_SETUPS, st.booleans(), streams(), st.integers(0, 8))
def test_random_requests_are_timed_the_same_by_both_timers(
    config, mapping, channels, refresh_every, clock_mhz, close_page, calls, rollback_at
):
    c = timer_config(config, mapping, channels, refresh_every, close_page=close_page)
    native = calls_and_answers(NATIVE, c, clock_mhz, calls, rollback_at)
    assert native == calls_and_answers(pure, c, clock_mhz, calls, rollback_at)


@st.composite
def tile_runs(draw):
    """A tile's strided byte runs (address, bytes, stride, count) and their transfer offsets."""
    runs = []
    for _ in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, 300))
        count = draw(st.integers(1, 6))
        stride = draw(st.integers(size, 4 * size)) if count > 1 else 0
        runs.append((draw(st.integers(0, 1 << 20)), size, stride, count))
    offsets = [0]
    for _, size, _, count in runs:
        offsets.append(offsets[-1] + size * count)
    return runs, offsets


def addresses(runs) -> list[int]:
    """Every byte's address, in transfer order."""
    return [
        a + x * stride + y
        for a, size, stride, count in runs
        for x in range(count)
        for y in range(size)
    ]


@settings(max_examples=300, deadline=None)
@given(tile_runs(), st.data())
def test_byte_runs_cover_exactly_the_bytes_asked_for_compiled_or_not(tile, data):
    runs, offsets = tile
    lo = data.draw(st.integers(0, offsets[-1]))
    hi = data.draw(st.integers(lo, offsets[-1] + 10))
    sliced = pure_slices.byte_runs(runs, offsets, lo, hi)
    assert addresses(sliced) == addresses(runs)[lo:hi]
    assert NATIVE_SLICES.byte_runs(runs, offsets, lo, hi) == sliced


@needs_native
def test_a_stale_build_falls_back_to_pure_python(tmp_path):
    # the compiled timer carries the hash of the sources it was built from: timer.py and the
    # modules compiled with it; one of them edited (here: copies, one with one more comment
    # line in a module other than timer.py itself) no longer matches it
    for edited_module in loader.NATIVE_UNITS["timer"][1:]:
        sources = []
        for source in loader.unit_sources("timer"):
            copy = tmp_path / source.name
            edit = "# edited\n" if source.stem == edited_module else ""
            copy.write_text(source.read_text() + edit)
            sources.append(copy)
        module, kind = loader.choose("timer", sources=sources, environ={})
        assert module is pure and "stale" in kind, edited_module
    assert loader.choose("timer", environ={}) == (NATIVE, loader.COMPILED)  # as it is
    edited = tmp_path / "byte_runs.py"
    edited.write_text((loader.HERE / "byte_runs.py").read_text() + "# edited\n")
    assert loader.choose("byte_runs", sources=[edited], environ={})[0] is pure_slices
    # the front end's unit: frontend.py itself, or the controller compiled with it, edited
    for edited_module in loader.NATIVE_UNITS["frontend"]:
        sources = []
        for source in loader.unit_sources("frontend"):
            copy = tmp_path / source.name
            edit = "# edited\n" if source.stem == edited_module else ""
            copy.write_text(source.read_text() + edit)
            sources.append(copy)
        module, kind = loader.choose("frontend", sources=sources, environ={})
        assert module is pure_frontend and "stale" in kind, edited_module
    assert loader.choose("frontend", environ={}) == (NATIVE_FRONTEND, loader.COMPILED)


def test_the_environment_variable_forces_pure_python():
    module, kind = loader.choose("timer", environ={"CYCLESIM_PURE_PYTHON": "1"})
    assert module is pure and kind == "pure Python (CYCLESIM_PURE_PYTHON=1)"
    assert loader.choose("byte_runs", environ={"CYCLESIM_PURE_PYTHON": "1"})[0] is pure_slices
    assert loader.choose("frontend", environ={"CYCLESIM_PURE_PYTHON": "1"})[0] is pure_frontend
    assert loader.choose("timer", environ={"CYCLESIM_PURE_PYTHON": "0"})[1] == KIND


@pytest.mark.parametrize("value", ["1", "true", "Yes", " on ", "TRUE"])
def test_the_variable_forces_pure_python_however_yes_is_spelt(value):
    module, kind = loader.choose("timer", environ={"CYCLESIM_PURE_PYTHON": value})
    assert module is pure and kind == f"pure Python (CYCLESIM_PURE_PYTHON={value})"


@pytest.mark.parametrize("value", ["", "0", "false", "No", "off"])
def test_the_variable_set_to_no_leaves_the_choice_to_the_build(value):
    # CYCLESIM_PURE_PYTHON=false forced pure Python before: any value but "" and "0" did
    assert loader.choose("timer", environ={"CYCLESIM_PURE_PYTHON": value})[1] == KIND


@pytest.mark.parametrize("value", ["2", "abc", "pure"])
def test_an_odd_value_of_the_variable_is_refused_by_the_cli_in_one_line(value):
    # the library runs on in pure Python and says why; the CLI exits 2 before any command,
    # --version included, naming the variable, the value and what it accepts
    module, kind = loader.choose("timer", environ={"CYCLESIM_PURE_PYTHON": value})
    assert module is pure and f"CYCLESIM_PURE_PYTHON={value!r}: expected 1, true" in kind
    env = dict(os.environ, PYTHONPATH=str(ROOT), CYCLESIM_PURE_PYTHON=value)
    for args in (["--version"], ["dram", "DDR4_8Gb_x8_2400", "/no/such.trace"]):
        done = subprocess.run(
            [sys.executable, "-m", "cyclesim", *args], env=env, capture_output=True, text=True
        )
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr == (
            f"cyclesim: CYCLESIM_PURE_PYTHON={value!r}: expected 1, true, yes or on (pure "
            "Python), or 0, false, no, off or empty (the compiled code where make native "
            "built it)\n"
        )


def test_a_damaged_build_falls_back_to_pure_python_saying_so(tmp_path, monkeypatch):
    # what --version said for a damaged extension was "not built"; a stray source file of the
    # compiled copy's name that does not import was a traceback; a directory of that name
    # (imported as a namespace package) was "None is not an extension module"
    package = tmp_path / "damaged"
    package.mkdir()
    (package / "__init__.py").write_text("")
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (package / f"garbage{suffix}").write_text("not an ELF file\n")
    (package / "syntax.py").write_text("x = (\n")
    (package / "directory").mkdir()
    (package / "imports_missing.py").write_text("import cyclesim._no_such_module\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for module_name, why in [
        ("garbage", "cannot be loaded: ImportError: "),
        ("syntax", "cannot be loaded: SyntaxError: "),
        ("imports_missing", "cannot be loaded: No module named 'cyclesim._no_such_module'"),
        ("directory", f"{package / 'directory'} is not an extension module: make native"),
    ]:
        module, kind = loader.choose("timer", compiled_name=f"damaged.{module_name}", environ={})
        assert module is pure and kind.startswith("pure Python (") and why in kind, kind
        assert "\n" not in kind


def test_a_missing_or_uncompiled_module_falls_back_to_pure_python():
    missing = "cyclesim.dram._no_such_module"
    module, kind = loader.choose("timer", compiled_name=missing, environ={})
    assert module is pure and "not built" in kind
    # a module of that name that is plain Python source (a build interrupted midway leaves one)
    source = "cyclesim.dram.timer"
    module, kind = loader.choose("timer", compiled_name=source, environ={})
    assert module is pure and "is not an extension module" in kind


@needs_native
def test_the_build_leaves_a_current_build_alone(capsys):
    from cyclesim.cli import native_build

    assert native_build.main([]) == 0
    assert capsys.readouterr().out == (
        "DRAM timer: compiled (mypyc), up to date\nengine: compiled (mypyc), up to date\n"
    )


def test_the_build_says_what_it_compiles_before_the_compilers_silent_minute(monkeypatch, capsys):
    # `make native` printed nothing for the ~55 s mypyc and the C compiler take; the build
    # (stubbed here: one module built, the next failing as without a C compiler) now says
    # which module it compiles before it starts, and the one-line outcome after
    from cyclesim.cli import native_build

    monkeypatch.setattr(native_build, "built_stamp", lambda compiled: None)
    monkeypatch.setattr(native_build, "build", lambda name, *_: "stamp")
    assert native_build.main([]) == 0
    assert capsys.readouterr().out == (
        "DRAM timer: compiling timer.py with mypyc (about a minute) ...\n"
        "DRAM timer: compiling byte_runs.py with mypyc (about a minute) ...\n"
        "DRAM timer: compiling frontend.py with mypyc (about a minute) ...\n"
        "DRAM timer: compiled (mypyc)\n"
        "engine: compiling components.py with mypyc (about a minute) ...\n"
        "engine: compiled (mypyc)\n"
    )

    def no_compiler(name, *_):
        raise RuntimeError(f"mypyc could not compile {name}.py: error: command 'false' failed")

    monkeypatch.setattr(native_build, "build", no_compiler)
    assert native_build.main([]) == 1
    assert capsys.readouterr().out == (
        "DRAM timer: compiling timer.py with mypyc (about a minute) ...\n"
        "DRAM timer: not compiled, pure Python is used (mypyc could not compile timer.py: "
        "error: command 'false' failed)\n"
    )

    def read_only_tree(name, *_):  # the extension cannot be put next to its source
        raise PermissionError(13, "Permission denied", f"cyclesim/dram/_{name}_native.so.new")

    monkeypatch.setattr(native_build, "build", read_only_tree)
    assert native_build.main([]) == 1  # it was a traceback
    assert capsys.readouterr().out.splitlines()[1] == (
        "DRAM timer: not compiled, pure Python is used ([Errno 13] Permission denied: "
        "'cyclesim/dram/_timer_native.so.new')"
    )


@needs_native
def test_the_cli_gives_the_same_report_and_vcd_with_either_timer(tmp_path):
    # as a user runs it (progress bar on, its default), once as built and once with
    # CYCLESIM_PURE_PYTHON=1: the same JSON report and the same VCD, bank signals included
    args = ["hw_models/tpu_like_ddr4.yaml", "examples/resnet50_dram/workload.yaml"]
    args += ["examples/resnet50_dram/mapping.yaml", "--json"]
    out = {}
    for label, pure_python in (("compiled", "0"), ("pure", "1")):
        env = dict(os.environ, PYTHONPATH=str(ROOT), CYCLESIM_PURE_PYTHON=pure_python)
        vcd = tmp_path / f"{label}.vcd"
        done = subprocess.run(
            [sys.executable, "-m", "cyclesim", "run", *args, "--vcd", str(vcd)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        document = json.loads(done.stdout)
        document.pop("wall_seconds")
        out[label] = (document, vcd.read_text())
    assert out["compiled"] == out["pure"]
    assert "bank" in out["pure"][1] and out["pure"][0]["cycles"] == 132_662


def test_a_compiler_that_fails_is_named_not_its_command_line():
    # `CC=false make native` said "...(mypyc could not compile timer.py: error: Command
    # '['false', '-Wsign-compare', '-DNDEBUG', '-g', '-fwrapv', '-O3', '-Wall', '-fPIC',
    # '-I/tmp/...)": cut at 160 characters before it said what failed
    from cyclesim.cli.native_build import compiler_failure

    line = (
        "error: Command '['false', '-Wsign-compare', '-DNDEBUG', '-g', '-fwrapv', '-O3', "
        "'-I/tmp/clone/.venv/include', '-c', 'build/__native.c', '-o', 'x.o', '-Wno-cpp']' "
        "returned non-zero exit status 1."
    )
    assert (
        compiler_failure(line) == "error: the C compiler or linker 'false' failed (exit status 1)"
    )
    # setuptools' own wording of the same (its CompileError)
    line = "error: Command '['gcc', '-shared', 'x.o', '-o', 'x.so']' failed with exit code 4"
    assert compiler_failure(line) == "error: the C compiler or linker 'gcc' failed (exit status 4)"
    mypy_error = "timer.py:12: error: Incompatible types in assignment"
    assert compiler_failure(mypy_error) == mypy_error
