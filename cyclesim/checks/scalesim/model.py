"""SCALE-Sim 3.0.0's compute cycles in closed form (systolic_compute_{ws,os,is}.py).

A layer is the GEMM of P output pixels, F filters and a window of W = R*S*C. The dataflow
maps two of them onto the array's rows and columns (S_r, S_c) and streams the third (T):
  output stationary (P, F, W), weight stationary (W, F, P), input stationary (W, P, F).
Folds = ceil(S_r / rows) * ceil(S_c / cols), each lasting the fold timing of
schedule/systolic.py around T; SCALE-Sim reports the 0-based cycle of the last ofmap write,
one less than the number of cycles.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from cyclesim.checks.scalesim.read import Layer
from cyclesim.schedule.systolic import fold_timing
from cyclesim.spec.systolic import Dataflow, Systolic


@dataclass(frozen=True, slots=True)
class SpatioTemporal:
    """What the array's rows and columns hold and what streams through them."""

    rows_dim: int  # S_r
    cols_dim: int  # S_c
    stream: int  # T


def spatio_temporal(layer: Layer, dataflow: Dataflow) -> SpatioTemporal:
    """SCALE-Sim's (S_r, S_c, T) of a layer in a dataflow."""
    p, f, w = layer.ofmap_pixels, layer.filters, layer.window
    if dataflow is Dataflow.OUTPUT_STATIONARY:
        return SpatioTemporal(p, f, w)
    if dataflow is Dataflow.WEIGHT_STATIONARY:
        return SpatioTemporal(w, f, p)
    return SpatioTemporal(w, p, f)


def folds(layer: Layer, systolic: Systolic) -> int:
    st = spatio_temporal(layer, systolic.dataflow)
    return ceil(st.rows_dim / systolic.rows) * ceil(st.cols_dim / systolic.cols)


def compute_cycles(layer: Layer, systolic: Systolic) -> int:
    """Cycles of the layer's folds run back to back (SCALE-Sim's count plus its one)."""
    timing = fold_timing(systolic)
    per_fold = timing.fill + spatio_temporal(layer, systolic.dataflow).stream + timing.drain
    return folds(layer, systolic) * per_fold
