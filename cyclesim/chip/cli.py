"""`cyclesim chip ARCH WORKLOAD MAPPING`: replay a multi-core mapping on a chip of cores,
links, buses and a shared DRAM (docs/multicore.md).

A command of its own rather than `run` recognising a chip file: its inputs (a chip, a
multi-core mapping) and its outputs (per core, per link) differ from `run`'s, and `run`'s
options (--reuse, --csv, --only, ...) would have to be refused one by one."""

from __future__ import annotations

import argparse
import json
import sys


def register(sub) -> None:
    p = sub.add_parser(
        "chip",
        help="replay a multi-core mapping on a chip (cores, links, buses, shared DRAM)",
        description="Replay every core's steps with today's single-core replay, the transfers "
        "between cores over links and buses, and the shared DRAM port, cycle by cycle; report "
        "per core its compute and causes, per link, bus and DRAM port its use.",
    )
    p.add_argument("arch", help="chip architecture YAML (cores:, offchip:, interconnect:)")
    p.add_argument("workload", help="workload YAML: the network of Einsums")
    p.add_argument("mapping", help="multi-core mapping YAML (layers:, groups:, tensors:)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.add_argument("--no-fast-forward", action="store_true",
                   help="replay every iteration inside each core's steps (same result)")  # fmt: skip
    p.add_argument("--explain", action="store_true",
                   help="propose remedies from the largest causes (a wider link, bus or DRAM "
                   "port, another route, multicast or not, a larger tile) and replay each")  # fmt: skip
    p.add_argument("--vcd", metavar="FILE", help="VCD waveform: a scope per core and per link")
    p.add_argument("--fst", metavar="FILE", help="the same waveform as FST (GTKWave, Surfer)")
    p.add_argument("--perfetto", metavar="FILE",
                   help="Perfetto trace (Trace Event JSON; gzipped when FILE ends in .gz): a "
                   "process per core, a track per link, bus and DRAM port")  # fmt: skip
    p.add_argument("--plot", metavar="DIR",
                   help="write chip_gantt.png and chip_links.png into DIR")  # fmt: skip
    p.set_defaults(func=run, error_prefix="cyclesim chip")


def run(args: argparse.Namespace) -> int:
    from cyclesim.chip.api import replay_chip
    from cyclesim.chip.report import chip_report

    res = replay_chip(args.arch, args.workload, args.mapping,
                      fast_forward=not args.no_fast_forward)  # fmt: skip
    written = []
    if args.vcd or args.fst or args.perfetto or args.plot:
        from cyclesim.chip import views
        from cyclesim.outputs import make_parent_folders

        make_parent_folders({"--vcd": args.vcd, "--fst": args.fst, "--perfetto": args.perfetto})

        from cyclesim.views import save_file_of

        for option, write in (("vcd", views.write_chip_vcd), ("fst", views.write_chip_fst)):
            if getattr(args, option):  # the waveform and its GTKWave save file, as `run` writes
                wave = write(res, getattr(args, option))
                written += [wave, views.write_chip_gtkw(res, wave, save_file_of(args, option))]
        if args.perfetto:
            written.append(views.write_chip_perfetto(res, args.perfetto))
        if args.plot:
            written += views.write_chip_plots(res, args.plot)
    remedies = None
    if args.explain:
        from cyclesim.chip.explain import explain

        remedies = explain(res)
    if args.json:
        out = res.to_json_dict()
        if remedies is not None:
            out["explain"] = [dict(remedy=r.what, why=r.why, cycles=r.cycles,
                                   saved=None if r.cycles is None else res.cycles - r.cycles,
                                   refused=r.note or None) for r in remedies]  # fmt: skip
        print(json.dumps(out, indent=1))
    else:
        print(chip_report(res))
        if remedies is not None:
            from cyclesim.chip.explain import explain_section

            print(explain_section(res, remedies))
    for path in written:  # on stderr, as `cyclesim run` names them: stdout keeps the report
        if not args.quiet:
            print(f"cyclesim: wrote {path}", file=sys.stderr)
    return 0
