"""Read SCALE-Sim's own files: the .cfg (ConfigParser) and the topology CSV (conv or GEMM)."""

from __future__ import annotations

import configparser
import difflib
import math
import re
from dataclasses import dataclass
from pathlib import Path

from cyclesim.errors import SpecError
from cyclesim.spec.limits import (
    MAX_ARRAY_DIM,
    MAX_COUNT,
    MAX_RANK_SIZE,
    MAX_SIZE_BITS,
    MAX_WIDTH_BITS,
)
from cyclesim.spec.systolic import Dataflow

DATAFLOWS = {
    "ws": Dataflow.WEIGHT_STATIONARY,
    "os": Dataflow.OUTPUT_STATIONARY,
    "is": Dataflow.INPUT_STATIONARY,
}
WORD_BITS = 8  # SCALE-Sim's word is one byte for every operand
MAX_SRAM_KIB = MAX_SIZE_BITS // (1024 * WORD_BITS)  # what an imported SRAM may hold
MAX_WORDS_PER_CYCLE = MAX_WIDTH_BITS // WORD_BITS  # what an imported DRAM port may move


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


# Every key SCALE-Sim 3.0.0 reads (scale_config.py: read_conf_file) and how it reads it: int()
# of the raw value, getboolean(), or a word; (section, key, kind, low, high). The sparsity keys
# are read only when SparsitySupport is true, as SCALE-Sim reads them.
_WORDS = {"true", "false"}
_KEYS = (
    ("general", "run_name", "text", None, None),
    ("run_presets", "InterfaceBandwidth", "text", None, None),
    ("run_presets", "UseRamulatorTrace", "text", None, None),
    ("architecture_presets", "ArrayHeight", "int", 1, MAX_ARRAY_DIM),
    ("architecture_presets", "ArrayWidth", "int", 1, MAX_ARRAY_DIM),
    ("architecture_presets", "IfmapSramSzkB", "int", 1, MAX_SRAM_KIB),
    ("architecture_presets", "FilterSramSzkB", "int", 1, MAX_SRAM_KIB),
    ("architecture_presets", "OfmapSramSzkB", "int", 1, MAX_SRAM_KIB),
    ("architecture_presets", "IfmapOffset", "int", 0, 1 << 62),
    ("architecture_presets", "FilterOffset", "int", 0, 1 << 62),
    ("architecture_presets", "OfmapOffset", "int", 0, 1 << 62),
    ("architecture_presets", "Dataflow", "text", None, None),
    ("architecture_presets", "ReadRequestBuffer", "int", 1, MAX_COUNT),
    ("architecture_presets", "WriteRequestBuffer", "int", 1, MAX_COUNT),
    ("architecture_presets", "Bandwidth", "ints", 1, MAX_WORDS_PER_CYCLE),
    ("layout", "IfmapCustomLayout", "bool", None, None),
    ("layout", "FilterCustomLayout", "bool", None, None),
    ("layout", "IfmapSRAMBankBandwidth", "int", 1, MAX_WORDS_PER_CYCLE),
    ("layout", "IfmapSRAMBankNum", "int", 1, MAX_COUNT),
    ("layout", "IfmapSRAMBankPort", "int", 1, MAX_COUNT),
    ("layout", "FilterSRAMBankBandwidth", "int", 1, MAX_WORDS_PER_CYCLE),
    ("layout", "FilterSRAMBankNum", "int", 1, MAX_COUNT),
    ("layout", "FilterSRAMBankPort", "int", 1, MAX_COUNT),
    ("sparsity", "SparsitySupport", "word", None, None),
)
_SPARSE_KEYS = (
    ("sparsity", "SparseRep", "text", None, None),
    ("sparsity", "OptimizedMapping", "word", None, None),
    ("sparsity", "RandomNumberGeneratorSeed", "int", 0, 1 << 32),
)


def _read_text(path: str, what: str) -> str:
    """A file's text; a missing file or one that is not UTF-8 text is a SpecError naming it
    (without quoting its content: it may not be a SCALE-Sim file at all)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SpecError(f"cannot read the {what}: {exc.strerror}", file=path) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"not a text file (byte {exc.start} is not UTF-8)",
            file=path,
            expected=f"a SCALE-Sim {what}",
        ) from None


def read_config(path: str | Path) -> ScaleConfig:
    """Read a SCALE-Sim .cfg as SCALE-Sim 3.0.0 reads it (ConfigParser with its interpolation,
    int() of every number, getboolean of the layout switches), so a file SCALE-Sim refuses is
    refused here too, before any replay; raise SpecError naming the file, section, key, line.

    Over 80 lines: SCALE-Sim's sections and keys read in the order its own parser reads them,
    each with the same conversion and refusal.
    """
    path = str(path)
    text = _read_text(path, "config")
    lines = text.splitlines()
    parser = configparser.ConfigParser()  # SCALE-Sim's own: '%' starts an interpolation
    try:
        parser.read_string(text, source=path)
    except configparser.MissingSectionHeaderError:  # not a .cfg at all: quote nothing of it
        raise SpecError(
            "not a SCALE-Sim config: the first key comes before any [section]",
            file=path,
            expected="INI sections [general], [architecture_presets], [layout], [run_presets]",
        ) from None
    except configparser.Error as exc:
        line = getattr(exc, "lineno", None) or (
            exc.errors[0][0] if isinstance(exc, configparser.ParsingError) else None
        )
        kind = type(exc).__name__.removesuffix("Error")
        raise SpecError(
            f"not a valid .cfg ({kind})", file=path, line=line, expected="INI sections and keys"
        ) from None

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
            return parser.get(section, key)
        except configparser.NoSectionError:
            raise SpecError(
                "a section SCALE-Sim requires is missing", file=path, field=f"[{section}]"
            ) from None
        except configparser.NoOptionError:
            # a misspelt key (ArrayHieght) is the usual cause: name it and its line
            known = {k.lower() for _, k, *_ in _KEYS + _SPARSE_KEYS}
            others = [k for k in parser.options(section) if k not in known]
            near = difflib.get_close_matches(key.lower(), others, n=1)
            raise SpecError(
                "a key SCALE-Sim requires is missing",
                file=path,
                field=f"[{section}] {key}",
                line=line_of(section, near[0]) if near else line_of(section),
                found=near[0] if near else None,
            ) from None
        except configparser.InterpolationError:
            raise SpecError(
                "a '%' in a value: SCALE-Sim reads its .cfg with interpolation and refuses it",
                file=path,
                field=f"[{section}] {key}",
                line=line_of(section, key),
                expected="'%%' for a percent sign, or no '%'",
            ) from None

    values: dict[str, object] = {}

    def read(section: str, key: str, kind: str, low: int | None, high: int | None) -> None:
        raw = get(section, key)
        where = dict(file=path, field=f"[{section}] {key}", line=line_of(section, key))
        if kind in ("int", "ints"):
            parts = raw.strip().split(",") if kind == "ints" else [raw]
            numbers = []
            for part in parts:
                try:
                    numbers.append(int(part.strip()))
                except ValueError:
                    raise SpecError(
                        "not a whole number (SCALE-Sim reads it with int())",
                        found=part.strip()[:40],
                        expected=f"a whole number from {low} to {high:,}",
                        **where,
                    ) from None
            for n, part in zip(numbers, parts, strict=True):
                if not low <= n <= high:  # type: ignore[operator]
                    raise SpecError(
                        "out of range",
                        found=part.strip()[:40],
                        expected=f"a whole number from {low} to {high:,}",
                        **where,
                    )
            values[key] = numbers[0]
        elif kind == "bool":
            try:
                values[key] = parser.getboolean(section, key)
            except ValueError:
                raise SpecError(
                    "not a boolean", found=raw.strip()[:40], expected="True or False", **where
                ) from None
        elif kind == "word":
            if raw.strip().lower() not in _WORDS:
                raise SpecError(
                    "not true or false", found=raw.strip()[:40], expected="true or false", **where
                )
            values[key] = raw.strip().lower() == "true"
        else:
            values[key] = raw

    for entry in _KEYS:
        read(*entry)
    for entry in _SPARSE_KEYS:  # SCALE-Sim reads them for sparse layers only; check them if given
        if parser.has_option(entry[0], entry[1]):
            read(*entry)
    if values["SparsitySupport"]:
        raise SpecError(
            "sparse layers are not supported by this check",
            file=path,
            field="[sparsity] SparsitySupport",
            line=line_of("sparsity", "SparsitySupport"),
            found="true",
            expected="false",
        )
    flow = str(values["Dataflow"]).strip().lower()
    if flow not in DATAFLOWS:
        raise SpecError(
            "unknown dataflow",
            file=path,
            field="[architecture_presets] Dataflow",
            line=line_of("architecture_presets", "Dataflow"),
            found=flow[:40],
            expected="ws, os or is",
        )
    mode = str(values["InterfaceBandwidth"])
    if mode not in ("CALC", "USER"):  # SCALE-Sim compares the raw value, case and all
        raise SpecError(
            "unknown interface bandwidth mode",
            file=path,
            field="[run_presets] InterfaceBandwidth",
            line=line_of("run_presets", "InterfaceBandwidth"),
            found=mode[:40],
            expected="CALC or USER",
        )
    return ScaleConfig(
        path,
        str(values["run_name"]),
        int(values["ArrayHeight"]),  # type: ignore[call-overload]
        int(values["ArrayWidth"]),  # type: ignore[call-overload]
        int(values["IfmapSramSzkB"]),  # type: ignore[call-overload]
        int(values["FilterSramSzkB"]),  # type: ignore[call-overload]
        int(values["OfmapSramSzkB"]),  # type: ignore[call-overload]
        DATAFLOWS[flow],
        mode == "CALC",
        int(values["IfmapSRAMBankBandwidth"]),  # type: ignore[call-overload]
        int(values["FilterSRAMBankBandwidth"]),  # type: ignore[call-overload]
        int(values["Bandwidth"]),  # type: ignore[call-overload]
    )


def _layer(name: str, nums: list[int], gemm: bool, path: str, line: int, row: str | None) -> Layer:
    """One topology row's layer: GEMM (M, N, K) or conv (H, W, R, S, C, F, stride)."""
    if "DP" in name:
        raise SpecError(
            "depthwise layers ('DP' in the name) are not supported by this check",
            file=path,
            line=line,
            found=name,
        )
    if gemm:
        m, n, k = nums
        return Layer(name, line, m, k, 1, k, 1, n, 1, True)
    h, w, r, s, c, f, stride = nums
    if r > h or s > w:
        raise SpecError("the filter is larger than the input", file=path, line=line, found=row)
    return Layer(name, line, h, w, r, s, c, f, stride, False)


def read_topology(path: str | Path, gemm: bool | None = None) -> tuple[Layer, ...]:
    """Read a topology CSV: conv rows (name, H, W, R, S, C, F, stride) or GEMM rows (name, M, N, K).

    The format is told by `gemm` or, when None, by the number of fields of the first row. Like
    SCALE-Sim, the header line is skipped and a trailing comma ends each row; a depthwise layer
    (a name containing 'DP') is refused (SCALE-Sim splits it into one layer per channel).
    """
    path = str(path)
    text = _read_text(path, "topology")
    rows = text.splitlines()
    if not rows or "," not in rows[0]:  # quote nothing of a file that is not a topology
        raise SpecError(
            "not a SCALE-Sim topology: the first line is not a comma-separated header",
            file=path,
            line=1,
            expected="a header line, then rows 'name, M, N, K,' or 'name, H, W, R, S, C, filters, stride,'",
        )
    layers: list[Layer] = []

    def shown(row: str) -> str | None:
        """A row quoted in a message once the file has shown itself a topology (a layer read,
        or a header that starts 'Layer'), else nothing of it."""
        return row.strip()[:80] if layers or rows[0].strip().lower().startswith("layer") else None

    header = [f.strip() for f in rows[0].split(",")]
    header = [f for f in header[1:] if f and ":" not in f]
    if gemm is None and len(header) in (3, 7):  # the header tells: 'Layer, M, N, K,'
        gemm = len(header) == 3
    for line, row in enumerate(rows[1:], start=2):
        if not row.strip():
            continue
        fields = [f.strip() for f in row.split(",")]
        if fields and fields[-1] == "":
            fields = fields[:-1]
        values = [f for f in fields[1:] if ":" not in f]  # an N:M sparsity column is ignored
        kind = gemm if gemm is not None else len(values) == 3
        gemm = kind  # the first row tells when the header does not; the others follow it
        want = 3 if kind else 7
        if len(values) != want:
            raise SpecError(
                f"this row has {len(values)} numbers after the name; a "
                f"{'GEMM' if kind else 'conv'} topology row has {want}",
                file=path,
                line=line,
                found=shown(row),
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
                found=shown(row),
            )
        if max(nums) > MAX_RANK_SIZE:  # named here, not as the imported workload's rank
            raise SpecError(
                f"a topology number is larger than a rank may be ({MAX_RANK_SIZE:,})",
                file=path,
                line=line,
                found=shown(row),
            )
        layers.append(_layer(fields[0], nums, kind, path, line, shown(row)))
    if not layers:
        raise SpecError("the topology has no layer rows after its header", file=path)
    return tuple(layers)
