"""Run `cyclesim l1 --compare` on every shipped example and write the L1 maps as PNGs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cyclesim.l1.cli import main as l1_main

HERE = Path(__file__).resolve().parent
EXAMPLES = [
    "softmax",
    "layer_norm",
    "attention",
    "gelu_mlp",
    "deep_composite",
    "clash_fragmentation",
]


def main() -> int:
    """Compare the three policies on each example; plots go to --out."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="out/l1_placement", help="directory for the PNGs")
    args = parser.parse_args()
    status = 0
    for name in EXAMPLES:
        print(f"==== {name}")
        png = Path(args.out) / f"{name}_l1_map.png"
        status |= l1_main([str(HERE / f"{name}.yaml"), "--compare", "--plot", str(png)])
    return status


if __name__ == "__main__":
    sys.exit(main())
