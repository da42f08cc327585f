"""`cyclesim rank zigzag-hardware FILE`: does zigzag-dse order hardware variants as the replay does?

The file names a ZigZag accelerator, workload and mapping, and axes written as `cyclesim sweep`
writes them (the same `axes:` section, read by the same code; fields as the imported
architecture names them, translated by `checks.zigzag.variants`):

    name: tpu_sram
    accelerator: tpu_like.yaml        # ZigZag files, relative to this file
    workload: resnet18.onnx
    mapping: tpu_like.yaml
    layers: [/conv1/Conv]             # optional: default every layer
    top: 20                           # candidates replayed per layer
    combine: product                  # or zip
    axes:
      - field: architecture.memories.sram_2MB.size_bits
        values: [4194304, 16777216]

Each variant is ranked as `rank zigzag` ranks one accelerator (cached the same way); then the
variants are ordered by ZigZag's network latency (the sum of its picks) and by the replay of
those same picks, with Kendall's tau and Spearman's rho between the orders, and the regret of
choosing the variant ZigZag prefers: its replayed cycles / the best variant's - 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from pydantic import Field

from cyclesim.analysis.rank import RankRun, totals
from cyclesim.analysis.rank_stats import kendall_tau, regret, spearman_rho
from cyclesim.analysis.sweep_axes import Axis, AxisEntry, read_axis
from cyclesim.analysis.sweep_spec import SweepSpec
from cyclesim.errors import SpecError
from cyclesim.spec.yamlio import StrictModel, format_path, line_of, read_yaml, validate


class _HardwareRank(StrictModel):
    name: str | None = None
    accelerator: str
    workload: str
    mapping: str
    layers: list[str] | None = None
    top: int = Field(20, ge=1)
    combine: str = Field("product", pattern="^(product|zip)$")
    axes: list[AxisEntry] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class HardwareRankSpec:
    """A validated hardware-rank file, paths resolved against its folder."""

    name: str
    source: str
    accelerator: Path
    workload: Path
    mapping: Path
    layers: tuple[str, ...] | None
    top: int
    combine: str
    axes: tuple[Axis, ...]

    def points(self):
        """The variants: the sweep's own product (or zip) of the axes."""
        as_sweep = SweepSpec(self.name, self.source, Path(self.source).parent, self.accelerator,
                             self.workload, self.mapping, "retain", False, self.combine, self.axes,
                             (), None)  # fmt: skip
        return as_sweep.points()


def load_hardware_rank(path: str | Path) -> HardwareRankSpec:
    """Read and validate the file; raise SpecError naming file, field and line."""
    data, lines, name = read_yaml(path)
    raw: _HardwareRank = validate(_HardwareRank, data, lines, name, "rank")  # type: ignore[assignment]
    folder = Path(path).resolve().parent

    def err(message: str, loc: tuple, **kw: Any) -> SpecError:
        return SpecError(message, file=name, field=format_path(loc), line=line_of(lines, loc), **kw)

    axes = []
    for i, a in enumerate(raw.axes):
        axis = read_axis(a, i, err)
        for field in axis.fields:
            if not field.startswith("architecture."):
                raise err("only hardware is ranked here: an architecture.PATH field", ("axes", i),
                          found=field)  # fmt: skip
        axes.append(axis)
    files = {}
    for key in ("accelerator", "workload", "mapping"):
        file = (folder / getattr(raw, key)).resolve()
        if not file.is_file():
            raise err("no such file", (key,), found=str(file))
        files[key] = file
    spec = HardwareRankSpec(raw.name or Path(path).stem, name, files["accelerator"],
                            files["workload"], files["mapping"],
                            tuple(raw.layers) if raw.layers else None, raw.top, raw.combine,
                            tuple(axes))  # fmt: skip
    if raw.combine == "zip" and len({len(a.values) for a in axes}) > 1:
        raise err("zipped axes must have the same number of values", ("combine",))
    base = yaml.safe_load(spec.accelerator.read_text())
    from cyclesim.checks.zigzag.variants import apply_settings

    for i, axis in enumerate(axes):  # every field must exist in the accelerator
        try:
            apply_settings(base, tuple(zip(axis.fields, axis.values[0], strict=True)), name)
        except SpecError as exc:
            raise err(f"{exc.detail}: {exc.field}", ("axes", i), expected=exc.expected) from None
    return spec


def rank_hardware(
    spec: HardwareRankSpec, out: Path, **options: Any
) -> tuple[pd.DataFrame, dict, list[RankRun]]:
    """Rank every variant's mappings (`rank_zigzag`, options passed on), then the variants.

    Returns one row per variant, the ordering summary, and each variant's RankRun.
    """
    from cyclesim.analysis.rank_zigzag import rank_zigzag
    from cyclesim.checks.zigzag.variants import apply_settings

    base = yaml.safe_load(spec.accelerator.read_text())
    variants = out / "variants"
    variants.mkdir(parents=True, exist_ok=True)
    rows, runs = [], []
    for point in spec.points():
        acc = apply_settings(base, point.settings, spec.source)
        acc["name"] = f"{base.get('name', spec.accelerator.stem)}_{point.index}"
        file = variants / f"{spec.accelerator.stem}-{point.index}.yaml"
        file.write_text(yaml.safe_dump(acc, sort_keys=False))
        run = rank_zigzag(str(file), str(spec.workload), str(spec.mapping),
                          layers=list(spec.layers) if spec.layers else None, top=spec.top,
                          **options)  # fmt: skip
        runs.append(run)
        t = totals(run.layers)
        rows.append({"variant": point.index, **dict(point.values), "accelerator": str(file),
                     "layers_ranked": t["ranked"], "peer_picks": t["peer_picks"],
                     "pick_replay": t["pick_replay"], "best_replay": t["best_replay"],
                     "mapping_regret": t["regret"]})  # fmt: skip
    df = pd.DataFrame(rows)
    return df, order_summary(df), runs


def order_summary(df: pd.DataFrame) -> dict:
    """The peer's order of the variants (its picks' latency) against the replay's (those picks
    replayed): tau, rho, the variant each prefers, and the regret of the peer's choice."""
    x, y = df["peer_picks"].astype(float).tolist(), df["pick_replay"].astype(float).tolist()
    peer_choice = int(df.loc[df["peer_picks"].idxmin(), "variant"])
    replay_choice = int(df.loc[df["pick_replay"].idxmin(), "variant"])
    chosen = float(df.loc[df["variant"] == peer_choice, "pick_replay"].iloc[0])
    return {
        "variants": len(df),
        "tau": kendall_tau(x, y),
        "rho": spearman_rho(x, y),
        "peer_choice": peer_choice,
        "replay_choice": replay_choice,
        "regret": regret(chosen, min(y)),
    }


def format_hardware(df: pd.DataFrame, summary: dict, peer: str = "zigzag-dse") -> str:
    """The variants table and one line on the two orders."""
    shown = df.drop(columns=["accelerator"]).copy()
    for column in ("peer_picks", "pick_replay", "best_replay"):
        shown[column] = [f"{v:,.0f}" for v in shown[column]]
    shown["mapping_regret"] = [f"{v:.1%}" for v in shown["mapping_regret"]]
    return "\n".join([
        shown.to_string(index=False), "",
        f"{summary['variants']} variants: {peer} prefers variant {summary['peer_choice']}, the "
        f"replay of its picks prefers variant {summary['replay_choice']}; tau "
        f"{summary['tau']:.2f}, rho {summary['rho']:.2f}; regret of {peer}'s choice "
        f"{summary['regret']:.1%}",
    ])  # fmt: skip
