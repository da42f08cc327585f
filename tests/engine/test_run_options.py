"""RunOptions: the one value the CLI and the Python API hand the engine, and what it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from cyclesim.analysis.simulate import replay
from cyclesim.cli import build_parser
from cyclesim.cli.run import run_options
from cyclesim.engine import RunOptions, TraceFilter, replay_plan
from cyclesim.errors import OptionError
from cyclesim.schedule import ReusePolicy, build_plan
from cyclesim.spec import load_architecture, load_mapping, load_workload

CASE = Path(__file__).resolve().parents[1] / "cases" / "worked" / "01_compute_bound"


def _inputs():
    arch = load_architecture(str(CASE / "arch.yaml"))
    work = load_workload(str(CASE / "workload.yaml"))
    return arch, work, load_mapping(str(CASE / "mapping.yaml"), arch, work)


def test_the_cli_flags_become_one_options_value():
    args = build_parser().parse_args(
        ["run", "a.yaml", "w.yaml", "m.yaml", "--reuse", "strict", "--no-progress",
         "--no-fast-forward", "--isolate-einsums"]
    )  # fmt: skip
    window = TraceFilter(0, 10)
    assert run_options(args, trace_filter=window) == RunOptions(
        reuse="strict",
        isolate_einsums=True,
        trace_filter=window,
        progress=False,
        fast_forward=False,
    )
    defaults = build_parser().parse_args(["run", "a.yaml", "w.yaml", "m.yaml"])
    assert run_options(defaults) == RunOptions()  # the flags' defaults are RunOptions'


def test_a_bad_reuse_is_an_option_error():
    with pytest.raises(OptionError, match="reuse: expected one of retain, strict, got 'sometimes'"):
        RunOptions(reuse="sometimes")


def test_the_run_keeps_its_options_and_choices_override_single_fields():
    options = RunOptions(reuse="strict", progress=False, fast_forward=False)
    res = replay(*_inputs(), options, trace=True)
    assert res.raw.options == RunOptions(
        reuse="strict", progress=False, fast_forward=False, trace=True
    )
    assert res.reuse == "strict" and not res.raw.fast_forward_on
    assert res.raw.rec.transfers is not None  # traced


def test_replay_plan_takes_the_plans_schedule_choices_and_refuses_others():
    arch, work, mapping = _inputs()
    plan = build_plan(arch, work, mapping, ReusePolicy.STRICT, False)
    raw = replay_plan(plan, progress=False)
    assert (raw.options.reuse, raw.options.isolate_einsums) == ("strict", False)
    with pytest.raises(OptionError, match="built with reuse=strict.*ask for reuse=retain"):
        replay_plan(plan, RunOptions(progress=False))


def test_check_counts_off_in_the_options_is_what_build_result_does():
    # a run whose counts were tampered with fails the check, unless its options turn it off
    from cyclesim.engine.run import RawRun
    from cyclesim.errors import CountMismatchError
    from cyclesim.results import build_result

    arch, work, mapping = _inputs()
    plan = build_plan(arch, work, mapping, ReusePolicy.RETAIN, False)
    raw = replay_plan(plan, progress=False)
    key = next(iter(raw.counts))
    raw.counts[key][0] += 1
    with pytest.raises(CountMismatchError):
        build_result(raw)
    unchecked = RawRun(**{**{f: getattr(raw, f) for f in RawRun.__dataclass_fields__},
                          "options": RunOptions(check_counts=False, progress=False)})  # fmt: skip
    assert build_result(unchecked).cycles == raw.cycles
