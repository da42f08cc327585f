"""Every class of bad input built from a shipped file, with what the user now sees.

`python tests/fuzz/bad_inputs.py` prints each case's exit code and message (the issue's closing
note); tests/fuzz/test_bad_inputs.py asserts them.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKED = ROOT / "tests" / "cases" / "worked" / "03_single_buffer"
L1_REPLAY = ROOT / "examples" / "l1_replay"
DMA_CASE = ROOT / "tests" / "views" / "cases" / "dma_two_tensors"
AF_SPEC = ROOT / "tests" / "checks" / "accelforge_specs" / "matmul_3level.yaml"
L1_OPS = ROOT / "examples" / "l1_placement" / "softmax.yaml"

BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 10)}]\n"
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
)


@dataclass(frozen=True)
class Case:
    """One bad input: the issue's class, what is wrong, how to build the command, what we expect."""

    kind: str
    what: str
    build: Callable[[Path], list[str]]
    code: int = 2
    says: tuple[str, ...] = ()  # substrings of the message


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _write(tmp: Path, name: str, text: str | bytes) -> str:
    path = tmp / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def _run_with(tmp: Path, *, arch: str | bytes | None = None, workload: str | None = None,
              mapping: str | None = None, folder: Path = WORKED) -> list[str]:  # fmt: skip
    files = []
    for part, text in (("arch", arch), ("workload", workload), ("mapping", mapping)):
        path = folder / f"{part}.yaml"
        files.append(_write(tmp, f"{part}.yaml", text) if text is not None else str(path))
    return ["run", *files, "--no-progress"]


def _arch(old: str, new: str) -> Callable[[Path], list[str]]:
    def build(tmp: Path) -> list[str]:
        text = _text(WORKED / "arch.yaml")
        assert old in text, old
        return _run_with(tmp, arch=text.replace(old, new, 1))

    return build


def _mapping(old: str, new: str, folder: Path = WORKED) -> Callable[[Path], list[str]]:
    def build(tmp: Path) -> list[str]:
        text = _text(folder / "mapping.yaml")
        assert old in text, old
        return _run_with(tmp, mapping=text.replace(old, new, 1), folder=folder)

    return build


def _accelforge(old: str, new: str) -> Callable[[Path], list[str]]:
    def build(tmp: Path) -> list[str]:
        text = _text(AF_SPEC)
        assert old in text, old
        return ["check", "accelforge", _write(tmp, "spec.yaml", text.replace(old, new, 1)),
                "--no-peer"]  # fmt: skip

    return build


def _saved(change: Callable[[dict], object]) -> Callable[[Path], list[str]]:
    def build(tmp: Path) -> list[str]:
        from cyclesim.views.saved import FORMAT, SCHEMA_VERSION

        doc = {
            "format": FORMAT,
            "schema_version": SCHEMA_VERSION,
            "inputs": {k: _text(WORKED / f"{k}.yaml") for k in ("arch", "workload", "mapping")},
            "reuse": "retain",
            "isolate_einsums": False,
            "cycles": 52,
            "result": {},
        }
        text = change(doc)
        if not isinstance(text, str):
            text = json.dumps(doc, indent=1, sort_keys=True)
        return ["explain", _write(tmp, "run.json", text), "-", "-", "--no-progress", "--no-verify"]

    return build


def _l1_arch(old: str, new: str) -> Callable[[Path], list[str]]:
    def build(tmp: Path) -> list[str]:
        text = _text(L1_REPLAY / "arch.yaml")
        assert old in text, old
        return ["l1", str(L1_OPS), "--arch", _write(tmp, "arch.yaml", text.replace(old, new, 1))]

    return build


def _consumer_first(tmp: Path) -> list[str]:
    text = _text(L1_REPLAY / "mapping.yaml")
    head, branches = text.split("  branches:\n")
    first, second = branches.split("\n  - - ")
    return _run_with(tmp, mapping=f"{head}  branches:\n  - - {second.rstrip()}\n{first}\n",
                     folder=L1_REPLAY)  # fmt: skip


def _einsum_cycle(tmp: Path) -> list[str]:
    text = _text(L1_REPLAY / "workload.yaml")
    old = "  - {tensor: W0, projection: [n0, n1]}"
    return _run_with(tmp, workload=text.replace(old, "  - {tensor: O, projection: [m, n1]}"),
                     folder=L1_REPLAY)  # fmt: skip


def _append(path: Path, text: str) -> list[str]:
    """Append text to a written file; return the command line of the case (for chaining)."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)
    return ["check", "accelforge", str(path), "--no-peer"]


ONNX_BYTES = b"\x08\x07\x12\x07pytorch\x1a\x032.1:\xff\xfe\x00\x01"  # an ONNX file's first bytes


def _zigzag(tmp: Path, **replace: str) -> list[str]:
    """`check zigzag` on a small shipped-style case (GEMM 4x4x4 on the 4x4 Eyeriss-like array)."""
    from cyclesim.checks.zigzag import cases as zc

    files = zc.write_case(tmp, "z", zc.eyeriss_accelerator(zc.SMALL_SRAM_BITS),
                          zc.gemm_workload(4, 4, 4), zc.spatial_mapping())  # fmt: skip
    paths = {"accelerator": files.accelerator, "workload": files.workload, "mapping": files.mapping}
    paths.update(replace)
    return ["check", "zigzag", *(f"--{k}={v}" for k, v in paths.items()), "--no-peer"]


def _deep(depth: int) -> str:
    return "name: x\npe_array: " + "[" * depth + "]" * depth + "\n"


def _unwritable(tmp: Path) -> list[str]:
    return [*_run_with(tmp), "--vcd", "/proc/cyclesim-cannot-write-here/run.vcd"]


CASES: tuple[Case, ...] = (
    # code execution
    Case("code execution", "Jinja reaching os.system in an AccelForge spec",
         _accelforge("name: GLB", "name: \"{{ cycler.__init__.__globals__.os.system('touch PWNED') }}\""),
         says=("Python internals", "spec files cannot run code")),
    # hangs
    Case("hang", "billion-laughs YAML given to run", lambda t: _run_with(t, arch=BILLION_LAUGHS),
         says=("alias bomb",)),
    Case("hang", "billion-laughs YAML given to l1",
         lambda t: ["l1", _write(t, "ops.yaml", BILLION_LAUGHS)], says=("alias bomb",)),
    Case("hang", "billion-laughs YAML given to check zigzag",
         lambda t: ["check", "zigzag", "--accelerator", _write(t, "a.yaml", BILLION_LAUGHS),
                    "--workload", "w.yaml", "--mapping", "m.yaml", "--no-peer"],
         says=("alias bomb",)),
    Case("hang", "AccelForge size: \"9**9**9\"", _accelforge("size: 16384", 'size: "9**9**9"'),
         says=("larger than 2**128", "field 'arch.nodes[1](GLB).size'")),
    # tracebacks
    Case("traceback", "a non-UTF-8 byte",
         lambda t: _run_with(t, arch=(WORKED / "arch.yaml").read_bytes().replace(b"name: wbuf", b"name: wb\xffuf", 1)),
         says=("not UTF-8", "byte 0xff")),
    Case("traceback", "a control byte", _arch("name: wbuf", "name: wb\x07uf"),
         says=("control character",)),
    Case("traceback", "500-deep nesting", lambda t: _run_with(t, arch=_deep(500)),
         says=("nested more than 64 levels",)),
    Case("traceback", "AccelForge expression of 1,000 unary minus signs",
         _accelforge("size: 16384", "size: \"" + "-" * 1000 + "1\""), says=("longer than 500",)),
    Case("traceback", "AccelForge expression of 50,000 unary minus signs",
         _accelforge("size: 16384", "size: \"" + "-" * 50000 + "1\""), says=("longer than 500",)),
    Case("traceback", "AccelForge expression of 300 unary minus signs",
         _accelforge("size: 16384", "size: \"" + "-" * 300 + "1\""), says=("nested more than 40",)),
    Case("traceback", "a self-referencing AccelForge variable",
         lambda t: _accelforge("size: 16384", "size: glb_bits")(t)
         and _append(t / "spec.yaml", "variables:\n  glb_bits: glb_bits * 2\n"),
         says=("refers to itself", "glb_bits -> glb_bits")),
    Case("traceback", "latency_cycles: 10**30",
         _arch("latency_cycles: 0", "latency_cycles: 1000000000000000000000000000000"),
         says=("latency_cycles", "less than or equal to 1048576")),
    Case("traceback", "l1 with size_bytes: 10**19",
         lambda t: ["l1", _write(t, "ops.yaml", _text(L1_OPS).replace(
             "size_bytes: 14155776", "size_bytes: 10000000000000000000", 1).replace(
             "include: [bert_ops.yaml]", f"include: [{L1_OPS.parent / 'bert_ops.yaml'}]"))],
         says=("size_bytes", "less than or equal to")),
    Case("traceback", "l1 with a request beyond even the unbounded L1 (2**40 B pages x 2**20)",
         lambda t: ["l1", _write(t, "ops.yaml", "ops:\n  big:\n    circular_buffers: [{name: cb, "
                    "page_size_bytes: 1099511627776, num_pages: 1048576}]\n    steps: [run]\n"
                    "model:\n  steps: [{call: big}]\n")],
         code=1, says=("FAILED (beyond_l1)",)),
    Case("traceback", "saved run without reuse", _saved(lambda d: d.pop("reuse") and None),
         says=("run.json", "field 'reuse'", "Field required")),
    Case("traceback", "saved run with reuse: sometimes", _saved(lambda d: d.update(reuse="sometimes")),
         says=("field 'reuse'", "sometimes")),
    Case("traceback", "saved run with inputs.arch: 12",
         _saved(lambda d: d["inputs"].update(arch=12)), says=("field 'inputs.arch'",)),
    Case("traceback", "saved run nested 100,000 deep",
         _saved(lambda d: '{"format": "cyclesim-run/1", "result": ' + "[" * 100000 + "]" * 100000 + "}"),
         says=("nested",)),
    Case("traceback", "check zigzag --workload resnet18.onnx",
         lambda t: _zigzag(t, workload=_write(t, "resnet18.onnx", ONNX_BYTES)),
         says=("resnet18.onnx", "ONNX model")),
    # accepted but wrong
    Case("accepted", "the same memory twice on one path (A copied DRAM -> DRAM)",
         _mapping("- type: storage\n  memory: abuf\n  tensors: [A]",
                  "- type: storage\n  memory: DRAM\n  tensors: [A]"),
         says=("memory 'DRAM' keeps tensor A twice on one path", "mapping.yaml:14")),
    Case("accepted", "a DMA link from DRAM to DRAM",
         lambda t: _run_with(t, arch=_text(DMA_CASE / "arch.yaml").replace("child: sram_a", "child: DRAM", 1),
                             folder=DMA_CASE), says=("not a level below it",)),
    Case("accepted", "an inverted DMA link",
         lambda t: _run_with(t, arch=_text(DMA_CASE / "arch.yaml").replace(
             "{parent: DRAM, child: sram_a}", "{parent: sram_a, child: DRAM}", 1), folder=DMA_CASE),
         says=("not a level below it",)),
    Case("accepted", "clock_mhz: .inf", _arch("name: 03_single_buffer", "name: 03_single_buffer\nclock_mhz: .inf"),
         says=("clock_mhz", "finite")),
    Case("accepted", "no_multicast naming a tensor that does not exist",
         _arch("  pipeline_depth_cycles: 0", "  pipeline_depth_cycles: 0\n  no_multicast: {X: [Q]}"),
         says=("no_multicast names a tensor", "'Q'")),
    Case("accepted", "duplicate YAML keys (width_bits: 4 then width_bits: 64)",
         _arch("width_bits: 4,", "width_bits: 4, width_bits: 64,"),
         says=("duplicate key 'width_bits'",)),
    Case("accepted", "AccelForge output: \"no\"",
         _accelforge("output: True", 'output: "no"'), says=("expected true or false",)),
    Case("accepted", "l1 --arch with a port of kind: teleport", _l1_arch("kind: read,", "kind: teleport,"),
         says=("kind", "teleport")),
    Case("accepted", "l1 --arch with width_bits: -256", _l1_arch("width_bits: 256", "width_bits: -256"),
         says=("width_bits", "greater than 0")),
    Case("accepted", "l1 --arch with dims: {rows: 0}", _l1_arch("rows: 8", "rows: 0"),
         says=("array dimension sizes must be positive",)),
    Case("accepted", "AccelForge leak_power: -1 (a field the replay ignores)",
         _accelforge("leak_power: 0", "leak_power: -1"), says=("leak_power must be a finite number",)),
    Case("accepted", "AccelForge leak_power: .inf", _accelforge("leak_power: 0", "leak_power: .inf"),
         says=("leak_power must be a finite number",)),
    # vague
    Case("vague", "a sequential split with the consumer branch first", _consumer_first,
         says=("reads tensor AO before Einsum 'producer'", "mapping.yaml")),
    Case("vague", "a cycle between Einsums", _einsum_cycle,
         says=("cycle", "workload.yaml")),
    Case("vague", "a saved run with NaN cycles", _saved(lambda d: json.dumps(d).replace('"cycles": 52', '"cycles": NaN')),
         says=("NaN is not a number JSON allows",)),
    # outputs
    Case("output", "an unwritable output path", _unwritable, says=("cannot", "run.vcd")),
)  # fmt: skip


def run_case(case: Case, tmp: Path) -> tuple[int, str, str]:
    """Run one case in-process from `tmp`; return (exit code, stdout, stderr)."""
    from cyclesim.cli import main

    argv = case.build(tmp)
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        os.chdir(cwd)
    return code, out.getvalue(), err.getvalue()


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    for case in CASES:
        with tempfile.TemporaryDirectory() as folder:
            code, out, err = run_case(case, Path(folder))
            message = (err.strip() or out.strip().splitlines()[-1]).replace(folder + "/", "")
            print(f"[{case.kind}] {case.what}\n  exit {code}: {message}\n")
