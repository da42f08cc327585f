"""Read SCALE-Sim's own files: the .cfg (ConfigParser) and the topology CSV (conv or GEMM)."""

from __future__ import annotations

import configparser
import difflib
import math
import re
from dataclasses import dataclass
from pathlib import Path

from cyclesim.errors import SpecError
from cyclesim.spec.limits import MAX_RANK_SIZE
from cyclesim.spec.systolic import Dataflow

DATAFLOWS = {
    "ws": Dataflow.WEIGHT_STATIONARY,
    "os": Dataflow.OUTPUT_STATIONARY,
    "is": Dataflow.INPUT_STATIONARY,
}


@dataclass(frozen=True, slots=True)
class ScaleConfig:
    """The parts of a SCALE-Sim config that time a layer (word = 1 byte, as in SCALE-Sim)."""

    source: str
    run_name: str
    rows: int
    cols: int
    ifmap_sram_kib: int
    filter_sram_kib: int
    ofmap_sram_kib: int
    dataflow: Dataflow
    calc: bool  # InterfaceBandwidth: CALC (every access hits) or USER (limited DRAM bandwidth)
    ifmap_bandwidth: int  # words per cycle; USER mode: [layout] IfmapSRAMBankBandwidth
    filter_bandwidth: int  # [layout] FilterSRAMBankBandwidth
    ofmap_bandwidth: int  # [architecture_presets] Bandwidth


@dataclass(frozen=True, slots=True)
class Layer:
    """One topology row, and its GEMM view: P output pixels x F filters, window W = R*S*C."""

    name: str
    line: int
    ifmap_h: int
    ifmap_w: int
    filter_h: int
    filter_w: int
    channels: int
    filters: int
    stride: int
    gemm: bool

    @property
    def ofmap_pixels(self) -> int:
        """SCALE-Sim's output size: ceil((H - R + s) / s) per dimension, from the given input."""
        s = self.stride
        oh = math.ceil((self.ifmap_h - self.filter_h + s) / s)
        ow = math.ceil((self.ifmap_w - self.filter_w + s) / s)
        return oh * ow

    @property
    def window(self) -> int:
        return self.filter_h * self.filter_w * self.channels

    @property
    def macs(self) -> int:
        return self.ofmap_pixels * self.window * self.filters


def read_config(path: str | Path) -> ScaleConfig:
    """Read a SCALE-Sim .cfg; raise SpecError naming the file, section and key on a fault."""
    path = str(path)
    parser = configparser.ConfigParser()
    try:
        with open(path) as f:
            parser.read_file(f)
    except (OSError, configparser.Error) as exc:
        raise SpecError(f"cannot read the SCALE-Sim config: {exc}", file=path) from None

    with open(path) as f:
        lines = f.read().splitlines()

    def line_of(section: str, key: str | None = None) -> int | None:
        """The line of `[section]`, or of `key = ...` inside it (keys compare like configparser's)."""
        inside = False
        for number_, text in enumerate(lines, 1):
            stripped = text.strip()
            if stripped.startswith("["):
                if inside:
                    return None
                inside = stripped.strip("[]").strip() == section
                if inside and key is None:
                    return number_
            elif inside and re.split(r"[=:]", stripped)[0].strip().lower() == key.lower():
                return number_
        return None

    def get(section: str, key: str) -> str:
        try:
            return parser.get(section, key).split(";")[0].strip()
        except configparser.NoSectionError:
            raise SpecError(
                "a section SCALE-Sim requires is missing", file=path, field=f"[{section}]"
            ) from None
        except configparser.NoOptionError:
            # a misspelt key (ArrayHieght) is the usual cause: name it and its line
            near = difflib.get_close_matches(key.lower(), parser.options(section), n=1)
            raise SpecError(
                "a key SCALE-Sim requires is missing",
                file=path,
                field=f"[{section}] {key}",
                line=line_of(section, near[0]) if near else line_of(section),
                found=near[0] if near else None,
            ) from None

    def number(section: str, key: str) -> int:
        value = get(section, key).split(",")[0].strip()
        try:
            n = int(value)
        except ValueError:
            n = -1
        if n <= 0:
            raise SpecError(
                "expected a positive whole number",
                file=path,
                field=f"[{section}] {key}",
                line=line_of(section, key),
                found=value,
            )
        return n

    flow = get("architecture_presets", "Dataflow").lower()
    if flow not in DATAFLOWS:
        raise SpecError(
            "unknown dataflow",
            file=path,
            field="[architecture_presets] Dataflow",
            line=line_of("architecture_presets", "Dataflow"),
            found=flow,
            expected="ws, os or is",
        )
    mode = get("run_presets", "InterfaceBandwidth").upper()
    if mode not in ("CALC", "USER"):
        raise SpecError(
            "unknown interface bandwidth mode",
            file=path,
            field="[run_presets] InterfaceBandwidth",
            line=line_of("run_presets", "InterfaceBandwidth"),
            found=mode,
            expected="CALC or USER",
        )
    return ScaleConfig(
        path,
        get("general", "run_name"),
        number("architecture_presets", "ArrayHeight"),
        number("architecture_presets", "ArrayWidth"),
        number("architecture_presets", "IfmapSramSzkB"),
        number("architecture_presets", "FilterSramSzkB"),
        number("architecture_presets", "OfmapSramSzkB"),
        DATAFLOWS[flow],
        mode == "CALC",
        number("layout", "IfmapSRAMBankBandwidth"),
        number("layout", "FilterSRAMBankBandwidth"),
        number("architecture_presets", "Bandwidth"),
    )


def read_topology(path: str | Path, gemm: bool | None = None) -> tuple[Layer, ...]:
    """Read a topology CSV: conv rows (name, H, W, R, S, C, F, stride) or GEMM rows (name, M, N, K).

    The format is told by `gemm` or, when None, by the number of fields of the first row. Like
    SCALE-Sim, the header line is skipped and a trailing comma ends each row; a depthwise layer
    (a name containing 'DP') is refused (SCALE-Sim splits it into one layer per channel).
    """
    path = str(path)
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise SpecError(f"cannot read the topology: {exc.strerror}", file=path) from None
    layers = []
    for line, row in enumerate(text.splitlines()[1:], start=2):
        if not row.strip():
            continue
        fields = [f.strip() for f in row.split(",")]
        if fields and fields[-1] == "":
            fields = fields[:-1]
        values = [f for f in fields[1:] if ":" not in f]  # an N:M sparsity column is ignored
        kind = gemm if gemm is not None else len(values) == 3
        want = 3 if kind else 7
        if len(values) != want:
            raise SpecError(
                f"a {'GEMM' if kind else 'conv'} topology row has {want} numbers after the name",
                file=path,
                line=line,
                found=row.strip(),
                expected="name, M, N, K," if kind else "name, H, W, R, S, C, filters, stride,",
            )
        try:
            nums = [int(v) for v in values]
        except ValueError:
            nums = []
        if len(nums) != want or min(nums) <= 0:
            raise SpecError(
                "topology numbers must be positive whole numbers",
                file=path,
                line=line,
                found=row.strip(),
            )
        if max(nums) > MAX_RANK_SIZE:  # named here, not as the imported workload's rank
            raise SpecError(
                f"a topology number is larger than a rank may be ({MAX_RANK_SIZE:,})",
                file=path,
                line=line,
                found=row.strip(),
            )
        name = fields[0]
        if "DP" in name:
            raise SpecError(
                "depthwise layers ('DP' in the name) are not supported by this check",
                file=path,
                line=line,
                found=name,
            )
        if kind:
            m, n, k = nums
            layers.append(Layer(name, line, m, k, 1, k, 1, n, 1, True))
        else:
            h, w, r, s, c, f, stride = nums
            if r > h or s > w:
                raise SpecError(
                    "the filter is larger than the input", file=path, line=line, found=row.strip()
                )
            layers.append(Layer(name, line, h, w, r, s, c, f, stride, False))
    if not layers:
        raise SpecError("the topology has no layer rows after its header", file=path)
    return tuple(layers)
