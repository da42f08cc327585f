"""Every bad input of issue 29 for `sweep`, `check scalesim` and `dram`, with what the user sees.

The reproducers of the issue, each built from a shipped file; `python tests/fuzz/newer_inputs.py`
prints each case's exit code and message, tests/fuzz/test_newer_inputs.py asserts them.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from bad_inputs import Case, _accelforge, _arch, _run_with, _text, _write, _zigzag, run_case

ROOT = Path(__file__).resolve().parents[2]
SCALESIM = ROOT / "examples" / "scalesim"
CFG = SCALESIM / "ws_8x16_calc.cfg"
TOPOLOGY = SCALESIM / "gemm_small.csv"
SWEEP = ROOT / "examples" / "api" / "dram_width_sweep.yaml"
TRACE = "0x40 READ 0\n0x1000 WRITE 5\n"


def _scalesim(old: str = "", new: str = "", *, topology: str | bytes | None = None,
              cfg: str | bytes | None = None) -> Callable[[Path], list[str]]:  # fmt: skip
    """`check scalesim --no-peer` with the config's `old` replaced by `new` (or whole files)."""

    def build(tmp: Path) -> list[str]:
        text = cfg if cfg is not None else _text(CFG)
        if old:
            assert old in text, old
            text = text.replace(old, new, 1)
        topo = _write(tmp, "topo.csv", topology) if topology is not None else str(TOPOLOGY)
        return ["check", "scalesim", _write(tmp, "bad.cfg", text), topo, "--no-peer"]

    return build


def _dram(
    config: str | bytes | None = None, trace: str | bytes = TRACE
) -> Callable[[Path], list[str]]:
    """`dram CONFIG TRACE`, the config a preset unless given as a file's text."""

    def build(tmp: Path) -> list[str]:
        ini = _write(tmp, "bad.ini", config) if config is not None else "DDR4_8Gb_x8_2400"
        path = trace if trace == "/dev/zero" else _write(tmp, "bad.trc", trace)
        return ["dram", ini, path]

    return build


WORKED_FILES = [ROOT / "tests/cases/worked/03_single_buffer" / f"{p}.yaml"
                for p in ("arch", "workload", "mapping")]  # fmt: skip


def _sweep(axes: str, *, base: dict | None = None, extra: str = "") -> Callable[[Path], list[str]]:
    """`sweep` of worked example 03 with these axes (YAML text) and base files."""

    def build(tmp: Path) -> list[str]:
        files = dict(zip(("architecture", "workload", "mapping"), WORKED_FILES, strict=True))
        files.update(base or {})
        head = "".join(f"{k}: {v}\n" for k, v in files.items())
        path = _write(tmp, "sweep.yaml", head + extra + "axes:\n" + axes)
        return ["sweep", path, "--out", str(tmp / "out"), "--no-progress", "--no-plots",
                "--workers", "1"]  # fmt: skip

    return build


def _symlink_loop(tmp: Path) -> list[str]:
    (tmp / "loop.yaml").symlink_to(tmp / "loop.yaml")
    return _sweep(WIDTH_AXIS, base={"architecture": "loop.yaml"})(tmp)


def _dram_passwd_in_architecture(tmp: Path) -> list[str]:
    text = _text(ROOT / "hw_models" / "eyeriss_like_small_ddr4.yaml")
    arch = _write(tmp, "arch.yaml", text.replace("dram: {config: DDR4_8Gb_x8_2400}",
                                                 "dram: {config: /etc/passwd}"))  # fmt: skip
    return [
        "run",
        arch,
        *(
            str(ROOT / "examples/eyeriss_memsize" / f)
            for f in ("workload.yaml", "mapping_small.yaml")
        ),
    ]


def _workload(old: str, new: str) -> Callable[[Path], list[str]]:
    def build(tmp: Path) -> list[str]:
        text = _text(WORKED_FILES[1])
        assert old in text, old
        return _run_with(tmp, workload=text.replace(old, new, 1))

    return build


def _zigzag_operand_source(tmp: Path) -> list[str]:
    argv = _zigzag(tmp)
    workload = Path(next(a for a in argv if a.startswith("--workload=")).split("=", 1)[1])
    text = workload.read_text()
    assert "operand_source:" in text, text
    workload.write_text(text.replace("operand_source:", "operand_source:\n    X: 0", 1))
    return argv


WIDTH_AXIS = "  - field: architecture.memories.DRAM.ports.dram_rd.width_bits\n    values: [4, 8]\n"
LIVELOCK = "[dram_structure]\nprotocol = DDR4\n[timing]\ntREFI = 100\ntRFC = 90\n"


CASES: tuple[Case, ...] = (
    # check scalesim: tracebacks
    Case("traceback", "scalesim: a '%' in a .cfg value", _scalesim("run_name = ws_8x16_calc", "run_name = 50%_load"),
         says=("bad.cfg:2", "[general] run_name", "'%%'")),
    Case("traceback", "scalesim: a non-UTF-8 byte in the .cfg",
         _scalesim(cfg=_text(CFG).encode().replace(b"ws_8x16", b"ws_\xff16", 1)),
         says=("bad.cfg", "not UTF-8")),
    Case("traceback", "scalesim: a non-UTF-8 byte in the topology",
         _scalesim(topology=_text(TOPOLOGY).encode().replace(b"tall", b"t\xffll", 1)),
         says=("topo.csv", "not UTF-8")),
    Case("traceback", "scalesim: the .cfg lacks IfmapOffset (a key only SCALE-Sim reads)",
         _scalesim("IfmapOffset:    0\n", ""), says=("bad.cfg:4", "IfmapOffset", "missing")),
    # check scalesim: accepted but wrong
    Case("accepted", "scalesim --no-peer: FilterSRAMBankNum 0.666",
         _scalesim("FilterSRAMBankNum: 10", "FilterSRAMBankNum: 0.666"),
         says=("bad.cfg:26", "FilterSRAMBankNum", "int()")),
    Case("accepted", "scalesim --no-peer: OptimizedMapping -inf",
         _scalesim("OptimizedMapping : false", "OptimizedMapping : -inf"),
         says=("bad.cfg:32", "OptimizedMapping", "true or false")),
    Case("accepted", "scalesim --no-peer: IfmapCustomLayout maybe",
         _scalesim("IfmapCustomLayout: False", "IfmapCustomLayout: maybe"),
         says=("IfmapCustomLayout", "not a boolean")),
    # check scalesim: vague
    Case("vague", "scalesim: ArrayHeight out of range is the .cfg's fault",
         _scalesim("ArrayHeight:    8", "ArrayHeight:    1000000"),
         says=("bad.cfg:5", "ArrayHeight", "out of range")),
    Case("vague", "scalesim: a topology that is /etc/passwd-like is not quoted",
         _scalesim(topology="root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"),
         says=("topo.csv:1", "not a SCALE-Sim topology")),
    # dram
    Case("hang", "dram: tREFI 100, tRFC 90 (a refresh livelock)",
         _dram(LIVELOCK, "0x0 READ 0\n0x40 READ 2000\n"),
         says=("bad.ini:4", "tREFI", "refresh leaves no time to serve a request")),
    Case("unbounded", "dram: the trace is /dev/zero", _dram(trace="/dev/zero"),
         says=("/dev/zero:1", "longer than 256 bytes")),
    Case("accepted", "dram: a trace address in Python's 0x4_0", _dram(trace="0x4_0 READ 0\n"),
         says=("bad.trc:1", "hexadecimal")),
    Case("accepted", "dram: .ini key CWL-x (beyond did-you-mean)",
         _dram("[timing]\nCL = 17\nCWL-x = 30\n"), says=("bad.ini:3", "unknown key 'CWL-x'")),
    Case("echo", "dram: /etc/passwd-like text as the .ini",
         _dram("root:x:0:0:root:/root:/bin/bash\n"), says=("bad.ini:1", "not a DRAMsim3 .ini")),
    Case("echo", "dram: /etc/passwd-like text as the trace",
         _dram(trace="root:x:0:0:root:/root:/bin/bash\n"), says=("bad.trc:1", "not a trace line")),
    Case("echo", "run: an architecture's dram config is /etc/passwd", _dram_passwd_in_architecture,
         says=("/etc/passwd:1", "not a DRAMsim3 .ini")),
    Case("traceback", "dram: a non-ASCII byte in the trace", _dram(trace=b"0x40 RE\xffAD 0\n"),
         says=("bad.trc:1", "not ASCII")),
    # sweep
    Case("traceback", "sweep: range with .nan", _sweep(
        "  - field: architecture.memories.DRAM.ports.dram_rd.width_bits\n"
        "    range: {start: 1, stop: .nan, step: 1}\n"), says=("sweep.yaml:6", "finite")),
    Case("traceback", "sweep: geometric with .inf", _sweep(
        "  - field: architecture.memories.DRAM.ports.dram_rd.width_bits\n"
        "    geometric: {start: 1, stop: .inf, points: 3}\n"), says=("sweep.yaml:6", "finite")),
    Case("traceback", "sweep: an axis value above 2**63", _sweep(
        "  - field: architecture.memories.DRAM.ports.dram_rd.width_bits\n"
        "    values: [4, 18446744073709551616]\n"), says=("sweep.yaml:6", "out of range")),
    Case("traceback", "sweep: a base file that is a symlink loop", _symlink_loop,
         says=("sweep.yaml:1", "field 'architecture'", "symlink loop")),
    Case("hang", "sweep: three ranges of 10**5 values (10**15 points)", _sweep("".join(
        f"  - field: architecture.memories.DRAM.ports.dram_rd.{f}\n"
        "    range: {start: 1, stop: 100000, step: 1}\n"
        for f in ("width_bits", "latency_cycles", "burst_bits"))),
        says=("sweep.yaml", "field 'axes'", "too many points", "1000000000000000")),
    Case("hang", "sweep: geometric with 10**9 points", _sweep(
        "  - field: architecture.memories.DRAM.ports.dram_rd.width_bits\n"
        "    geometric: {start: 1, stop: 64, points: 1000000000}\n"),
        says=("sweep.yaml:6", "points", "less than or equal to 100000")),
    Case("accepted", "sweep: every point failed", _sweep(
        "  - field: architecture.memories.DRAM.ports.dram_rd.width_bits\n    values: [-1, 0]\n"),
        says=("every point of the sweep failed",)),
    Case("vague", "sweep: architecture: /etc/passwd-like", lambda t: _sweep(
        WIDTH_AXIS, base={"architecture": _write(t, "passwd", "root:x:0:0:root:/root:/bin/bash\n")})(t),
        says=("passwd",)),
    # the older commands' formats, reproducers of issue 29
    Case("traceback", "run: a projection coefficient 0 ([m, 0*k])",
         _workload("projection: [m, k]", "projection: [m, 0*k]"),
         says=("workload.yaml:13", "a coefficient must be from 1")),
    Case("accepted", "run: double_buffered: [NOPE] on a memory without tensors:",
         _arch("  tensors: [B]\n  double_buffered: false", "  double_buffered: [NOPE]"),
         says=("arch.yaml:20", "double_buffered of memory 'wbuf'", "'NOPE'")),
    Case("unbounded", "accelforge: 'x'|center(3000000000) in a spec",
         _accelforge("name: GLB", "name: \"{{ 'x'|center(3000000000) }}\""),
         says=("spec.yaml", "center() with a width of 3,000,000,000")),
    Case("accepted", "zigzag: operand_source with an unknown operand", _zigzag_operand_source,
         says=("operand_source.X", "unknown field 'X'")),
)  # fmt: skip


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    for case in CASES:
        with tempfile.TemporaryDirectory() as folder:
            code, out, err = run_case(case, Path(folder))
            message = (err.strip() or out.strip().splitlines()[-1]).replace(folder + "/", "")
            print(f"[{case.kind}] {case.what}\n  exit {code}: {message}\n")
