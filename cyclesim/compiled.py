"""CYCLESIM_PURE_PYTHON: the one switch that makes every compiled part (the DRAM timer and
controller compiled by mypyc, the FST writer's C loop, the VCD and Perfetto JSON text loops)
give way to its pure-Python code, which gives the same results. Foundation: it imports no
other cyclesim module.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

PURE_ENVIRONMENT_VARIABLE = "CYCLESIM_PURE_PYTHON"
# CYCLESIM_PURE_PYTHON's values, as the user may spell them (any case, spaces around)
PURE_WORDS = {"1": True, "true": True, "yes": True, "on": True}
PURE_WORDS |= {"": False, "0": False, "false": False, "no": False, "off": False}


def pure_python_requested(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether CYCLESIM_PURE_PYTHON asks for pure Python (unset: no); ValueError naming the
    variable, its value and the accepted ones when it is none of PURE_WORDS."""
    value = environ.get(PURE_ENVIRONMENT_VARIABLE, "")
    try:
        return PURE_WORDS[value.strip().lower()]
    except KeyError:
        raise ValueError(
            f"{PURE_ENVIRONMENT_VARIABLE}={value!r}: expected 1, true, yes or on (pure Python), "
            "or 0, false, no, off or empty (the compiled code where make native built it)"
        ) from None
