"""Every bad input of issue 29 for `sweep`, `check scalesim` and `dram`, with what the user sees.

The reproducers of the issue, each built from a shipped file; `python tests/fuzz/newer_inputs.py`
prints each case's exit code and message, tests/fuzz/test_newer_inputs.py asserts them.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from bad_inputs import Case, _text, _write, run_case

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
)  # fmt: skip


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    for case in CASES:
        with tempfile.TemporaryDirectory() as folder:
            code, out, err = run_case(case, Path(folder))
            message = (err.strip() or out.strip().splitlines()[-1]).replace(folder + "/", "")
            print(f"[{case.kind}] {case.what}\n  exit {code}: {message}\n")
