"""Memory size vs load cycles (ZigZag issue #52): replay both SRAM settings and compare with ZigZag.

    python examples/eyeriss_memsize/run.py --out out/eyeriss_memsize

1. Loads hw_models/eyeriss_like.yaml (8 KB / 64 KB / 1 MB) with mapping_large.yaml and
   hw_models/eyeriss_like_small.yaml (1 KB / 2 KB / 4 KB) with mapping_small.yaml, replays
   both (in parallel when there are two cores) and prints both reports and a comparison.
2. The ZigZag side for both settings and both port layouts (issue, shipped): our
   reimplementation of ZigZag 3.9.1's latency model always, zigzag-dse when importable.
   The issue layout's check reuses the replay of the committed YAML; the shipped layout is
   imported from ZigZag's files and replayed too (skip it with --issue-only).
3. Which setting is really faster, and by how much, in the replay and for ZigZag.

Everything printed is also written to --out (reports, checks, summary.json), and the small
setting's one-page HTML report (report_small.html), whose path is the last line printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from memsize import LAYOUTS, SETTINGS, imported_spec, load_example, zigzag_case  # noqa: E402
from verdict import ZigZagSide, comparison_table, four_way_table, verdict  # noqa: E402

from cyclesim.checks.zigzag.check import format_report, run_check  # noqa: E402
from cyclesim.checks.zigzag.model import evaluate  # noqa: E402
from cyclesim.checks.zigzag.read import load_zigzag_inputs  # noqa: E402
from cyclesim.checks.zigzag.terms import Terms  # noqa: E402
from cyclesim.errors import PeerUnavailable  # noqa: E402
from cyclesim.report import text_report  # noqa: E402
from cyclesim.results import Result  # noqa: E402
from cyclesim.results.schema import SCHEMA_VERSION  # noqa: E402


@dataclass(frozen=True, slots=True)
class Replayed:
    """One replay: its Result (engine records dropped), its text report and JSON object."""

    result: Result
    report: str
    summary: dict


def title_of(setting: str) -> str:
    """The report title of one setting."""
    sizes = "8 KB / 64 KB / 1 MB" if setting == "large" else "1 KB / 2 KB / 4 KB"
    return f"replay, {setting} SRAMs ({sizes})"


def replay_setting(key: tuple[str, str]) -> Replayed:
    """Replay one (setting, layout): the committed YAML for the issue layout, the import otherwise.

    The report and the JSON are made here, then the engine's raw records are dropped so the
    result travels cheaply between processes (the tables the check reads need no raw records).
    """
    from cyclesim.analysis.simulate import replay

    setting, layout = key
    if layout == "issue":
        arch, workload, mapping = load_example(setting)
    else:
        spec = imported_spec(setting, layout)
        arch, workload, mapping = spec.architecture, spec.workload, spec.mapping
    result = replay(arch, workload, mapping, progress=False)
    summary = result.to_json_dict()
    summary["stalls"] = summary["stalls"][:20]
    return Replayed(
        dataclasses.replace(result, raw=None), text_report(result, title_of(setting)), summary
    )


def replay_all(keys: list[tuple[str, str]], jobs: int) -> dict[tuple[str, str], Replayed]:
    """Replay every (setting, layout), `jobs` at a time."""
    if jobs <= 1:
        return {key: replay_setting(key) for key in keys}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return dict(zip(keys, pool.map(replay_setting, keys), strict=True))


def zigzag_available() -> str | None:
    """None when zigzag-dse can be used, otherwise the reason it cannot."""
    from cyclesim.checks.zigzag import peer

    try:
        peer.zigzag_version()
    except PeerUnavailable as exc:
        return str(exc)
    return None


def model_only(setting: str, layout: str, folder: Path, use_peer: bool) -> ZigZagSide:
    """Our model and (when asked) zigzag-dse on one setting and layout, without a replay."""
    from cyclesim.checks.zigzag import peer

    files = zigzag_case(setting, layout, folder)
    inputs = load_zigzag_inputs(
        files.accelerator, files.workload, files.mapping, files.temporal_mapping
    )
    ours = Terms.of_model(evaluate(inputs))
    theirs = None
    if use_peer:
        result = peer.run_zigzag(
            files.accelerator, files.workload, files.mapping, files.temporal_mapping
        )
        theirs = Terms.of_model(result.latency)
    return ZigZagSide(setting, layout, ours, theirs, None, "")


def main(argv: list[str] | None = None) -> int:
    """Run the example; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="directory for reports and summary.json")
    parser.add_argument(
        "--jobs", type=int, default=min(2, os.cpu_count() or 1), help="parallel replays"
    )
    parser.add_argument(
        "--issue-only",
        action="store_true",
        help="replay only the issue port layout (2 replays, not 4)",
    )
    parser.add_argument(
        "--no-zigzag", action="store_true", help="do not run zigzag-dse even if installed"
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    printed: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        printed.append(text)

    start = time.perf_counter()
    layouts = ("issue",) if args.issue_only else LAYOUTS
    keys = [(setting, layout) for layout in layouts for setting in SETTINGS]
    print(f"replaying {len(keys)} cases, {args.jobs} at a time ...", file=sys.stderr, flush=True)
    replays = replay_all(keys, args.jobs)
    results = {setting: replays[(setting, "issue")].result for setting in SETTINGS}
    for setting in SETTINGS:
        report = replays[(setting, "issue")].report
        (out / f"report_{setting}.txt").write_text(report + "\n")
        say(report)
        say()
    say(comparison_table(results))
    say()

    missing = "not asked for (--no-zigzag)" if args.no_zigzag else zigzag_available()
    use_peer = missing is None
    say(
        "ZigZag side"
        + ("" if use_peer else f" (zigzag-dse missing: {missing}; our model of ZigZag 3.9.1 only)")
    )
    say("=" * 11)
    sides: list[ZigZagSide] = []
    cases = out / "zigzag_inputs"
    for layout in LAYOUTS:
        for setting in SETTINGS:
            if (setting, layout) in replays:
                files = zigzag_case(setting, layout, cases)
                check = run_check(
                    files.accelerator,
                    files.workload,
                    files.mapping,
                    files.temporal_mapping,
                    use_peer=not args.no_zigzag,
                    result=replays[(setting, layout)].result,
                )
                text = format_report(check)
                (out / f"check_{setting}_{layout}.txt").write_text(text + "\n")
                say(
                    f"--- {setting} SRAMs, {layout} port layout: replay | our model | zigzag-dse ---"
                )
                say(text)
                say()
                sides.append(
                    ZigZagSide(setting, layout, check.analytical, check.zigzag, check.replay, text)
                )
            else:
                side = model_only(setting, layout, cases, use_peer)
                sides.append(side)
    shipped = [s for s in sides if s.layout == "shipped" and s.replay is None]
    if shipped:
        say("(shipped port layout not replayed: --issue-only)")
    say(four_way_table(sides))
    say()
    say(verdict(results, sides))
    summary = {
        "schema_version": SCHEMA_VERSION,  # names as in `cyclesim run --json` (README)
        "replay": {f"{s}_{layout}": r.summary for (s, layout), r in replays.items()},
        "zigzag": [s.to_json() for s in sides],
        "zigzag_missing": missing,
        "wall_seconds": round(time.perf_counter() - start, 1),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "printed.txt").write_text("\n".join(printed) + "\n")
    page = html_report("small", out / "report_small.html")
    print(f"\nwritten to {out}/ in {summary['wall_seconds']} s", file=sys.stderr)
    print(f"one-page report of the small-SRAM replay (open it in a browser): {page}")
    return 0


def html_report(setting: str, path: Path) -> Path:
    """The one-page HTML report of one setting's replay (traced: it draws the timeline)."""
    from cyclesim.analysis.simulate import replay
    from cyclesim.views.html import write_html_report

    arch, workload, mapping = load_example(setting)
    result = replay(arch, workload, mapping, trace=True, progress=False)
    return write_html_report(result, path, title=title_of(setting))


if __name__ == "__main__":
    sys.exit(main())
