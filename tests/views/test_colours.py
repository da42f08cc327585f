"""Plot colours: every cause and phase has its own, distinguishable under colour blindness.
(The layer rules, views reading results only among them, are in tests/test_layers.py.)"""

from __future__ import annotations

import pytest


def test_every_cause_has_its_own_plot_colour():
    """A new root cause must get a colour of its own, distinct from the phases' and the others'."""
    from cyclesim.results.stall_span import CAUSES
    from cyclesim.views.plots import CAUSE_COLORS, PHASE_COLORS

    assert set(CAUSES) <= set(CAUSE_COLORS)
    colours = [CAUSE_COLORS[c] for c in CAUSES]
    assert len(set(colours)) == len(colours)
    assert not set(colours) & set(PHASE_COLORS.values())


def test_the_timeline_never_draws_a_tensor_in_a_causes_colour():
    """The timeline's legend lists the PE array's causes next to the Einsums and tensors (one
    palette colour each, in order of appearance): no palette colour may be a cause's, nor the
    grey of the PE array's port use, nor repeat within the palette."""
    from cyclesim.views.plots import _PALETTE, CAUSE_COLORS, PE_USE_COLOR

    assert len(set(_PALETTE)) == len(_PALETTE) >= 12
    assert not set(_PALETTE) & {*CAUSE_COLORS.values(), PE_USE_COLOR}


@pytest.mark.parametrize(
    "vision", [None, "deuteranomaly", "protanomaly", "tritanomaly"], ids=lambda v: v or "normal"
)
def test_every_cause_and_phase_colour_stays_distinguishable_under_colour_blindness(vision):
    """buffer_full, systolic_fill and systolic_drain were three purples 14-19 apart in CAM02-UCS,
    and contention's orange and compute's green 1.6 apart under simulated protanomaly (they read
    the same). Every two of the 14 causes and 3 phases are now at least 17.8 apart under normal
    vision (onload's and offload's greys, at the two ends of the breakdown, 11.3) and 11.0 with
    a full-severity deficiency simulated (Machado 2009, as colorspacious implements it)."""
    import itertools

    import numpy as np
    from colorspacious import cspace_convert, deltaE

    from cyclesim.views.plots import CAUSE_COLORS, PHASE_COLORS

    colours = {**CAUSE_COLORS, **PHASE_COLORS}
    seen = {
        name: np.array([int(code[i : i + 2], 16) / 255 for i in (1, 3, 5)])
        for name, code in colours.items()
    }
    if vision is not None:
        space = {"name": "sRGB1+CVD", "cvd_type": vision, "severity": 100}
        seen = {k: np.clip(cspace_convert(v, space, "sRGB1"), 0, 1) for k, v in seen.items()}
    apart = {
        (a, b): float(deltaE(seen[a], seen[b], input_space="sRGB1"))
        for a, b in itertools.combinations(seen, 2)
    }
    floor = 17.8 if vision is None else 10.95
    closest = min((d, pair) for pair, d in apart.items() if pair != ("onload", "offload"))
    assert closest[0] >= floor, closest
    assert apart["onload", "offload"] >= 11.2


def test_the_html_timelines_busy_ports_are_in_no_causes_colour():
    """The HTML timeline drew busy ports in latency's blue, under a legend naming that blue
    latency; their grey is now as far from every cause and phase as the causes are apart."""
    import numpy as np
    from colorspacious import deltaE

    from cyclesim.views.html import PORT_BUSY_COLOR
    from cyclesim.views.plots import CAUSE_COLORS, PHASE_COLORS

    def rgb(code: str):
        return np.array([int(code[i : i + 2], 16) / 255 for i in (1, 3, 5)])

    for name, code in {**CAUSE_COLORS, **PHASE_COLORS}.items():
        apart = float(deltaE(rgb(PORT_BUSY_COLOR), rgb(code), input_space="sRGB1"))
        assert apart >= 17.8, (name, apart)
