"""ZigZag input files for the reference cases and their variants, generated (not copied) so tests,
the example and the sweep can vary one parameter: SRAM sizes, port layout, register-file width.

`eyeriss_accelerator` reproduces cases/zigzag_memsize/eyeriss4x4_{issue,shipped}_{large,small}.yaml
(docs/reference/zigzag.md §6.1) exactly; the temporal mappings are the ones ZigZag chose (§6.1 table).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

LARGE_SRAM_BITS = (65536, 524288, 8388608)  # sram_8KB (O), sram_64KB (W), sram_1M (I, O)
SMALL_SRAM_BITS = (8192, 16384, 32768)

# tm_*_setting form: per layer operand, per memory level (innermost first), loops innermost first
MEMSIZE_TEMPORAL_MAPPINGS: dict[str, dict[str, list]] = {
    "large": {
        "O": [[], [["B", 5], ["K", 5], ["K", 5], ["C", 5], ["C", 5]], [["B", 20]], []],
        "W": [[["B", 5], ["K", 5]], [["K", 5], ["C", 5], ["C", 5], ["B", 20]], []],
        "I": [[["B", 5], ["K", 5], ["K", 5]], [["C", 5], ["C", 5], ["B", 20]], []],
    },
    "small": {
        "O": [[], [["B", 5], ["K", 5], ["C", 5]], [], [["B", 20], ["K", 5], ["C", 5]]],
        "W": [[["B", 5], ["K", 5]], [["C", 5], ["B", 20]], [["K", 5], ["C", 5]]],
        "I": [[["B", 5], ["K", 5]], [["C", 5]], [["B", 20], ["K", 5], ["C", 5]]],
    },
    "rf32_large": {
        "O": [[["C", 5]], [["B", 5], ["K", 5], ["K", 5], ["C", 5]], [["B", 20]], []],
        "W": [[["C", 5], ["B", 5]], [["K", 5], ["K", 5], ["C", 5], ["B", 20]], []],
        "I": [[["C", 5]], [["B", 5], ["K", 5], ["K", 5], ["C", 5], ["B", 20]], []],
    },
    "rf32_small": {
        "O": [[["C", 5]], [["B", 20]], [["K", 5], ["C", 5]], [["K", 5], ["B", 5]]],
        "W": [[["C", 5], ["B", 20]], [["K", 5]], [["C", 5], ["K", 5], ["B", 5]]],
        "I": [[["C", 5]], [["B", 20], ["K", 5]], [["C", 5], ["K", 5], ["B", 5]]],
    },
}


# ZigZag's choice (LOMA, lpf 6) for conv_workload() on the large-SRAM issue hierarchy
CONV_TEMPORAL_MAPPINGS: dict[str, dict[str, list]] = {
    "K4_C4": {
        "O": [[["C", 2], ["FY", 3], ["FX", 3], ["K", 4]], [["OY", 8], ["OX", 8]], [], []],
        "W": [[["C", 2], ["FY", 3], ["FX", 3]], [["K", 4], ["OY", 8], ["OX", 8]], []],
        "I": [[["C", 2], ["FY", 3], ["FX", 3], ["K", 4]], [["OY", 8], ["OX", 8]], []],
    },
    "K4_OX4": {
        "O": [[["FX", 3], ["FY", 3], ["C", 8], ["OX", 2]], [["OY", 8], ["K", 4]], [], []],
        "W": [[["FX", 3], ["FY", 3]], [["C", 8], ["OX", 2], ["OY", 8], ["K", 4]], []],
        "I": [[["FX", 3], ["FY", 3]], [["C", 8], ["OX", 2], ["OY", 8], ["K", 4]], []],
    },
}


def _port(name: str, kind: str, bits: int, allocation: list[str]) -> dict:
    return {
        "name": name,
        "type": kind,
        "bandwidth_min": bits,
        "bandwidth_max": bits,
        "allocation": allocation,
    }


def _memory(
    size: int, costs: tuple[float, float, float], operands: list[str], ports: list, served: list
) -> dict:
    r_cost, w_cost, area = costs
    return {
        "size": size, "r_cost": r_cost, "w_cost": w_cost, "area": area, "latency": 1,
        "operands": operands, "ports": ports, "served_dimensions": served,
    }  # fmt: skip


def eyeriss_accelerator(
    sram_bits: tuple[int, int, int] = LARGE_SRAM_BITS,
    *,
    layout: str = "issue",
    register_bandwidth_bits: tuple[int, int] = (8, 24),
    dram_bandwidth_bits: int = 64,
) -> dict:
    """The Eyeriss-like 4x4 hierarchy of ZigZag issue #52: 'issue' or 'shipped' port layout, given SRAM sizes."""
    if layout not in ("issue", "shipped"):
        raise ValueError(f"layout must be 'issue' or 'shipped', not {layout!r}")
    rf_in, rf_out = register_bandwidth_bits
    o_bits, w_bits, i_bits = sram_bits
    both = ["D1", "D2"]
    if layout == "issue":
        rf16_ports = [
            _port("r_port_1", "read", rf_out, ["O, tl"]),
            _port("w_port_1", "write", rf_out, ["O, fl"]),
            _port("rw_port_1", "read_write", rf_out, ["O, fh", "O, th"]),
        ]
        sram8_ports = [
            _port("rw_port_1", "read_write", 128, ["O, fh", "O, th"]),
            _port("rw_port_2", "read_write", 128, ["O, tl", "O, fl"]),
        ]
        sram1m_ports = [
            _port("rw_port_1", "read_write", 384, ["I1, fh", "O, fh", "O, th"]),
            _port("rw_port_2", "read_write", 384, ["I1, tl", "O, tl", "O, fl"]),
        ]
    else:
        rf16_ports = [
            _port("r_port_1", "read", rf_out, ["O, tl", "O, th"]),
            _port("w_port_1", "write", rf_out, ["O, fh", "O, fl"]),
        ]
        sram8_ports = [_port("rw_port_1", "read_write", 128, ["O, fh", "O, tl", "O, fl", "O, th"])]
        sram1m_ports = [
            _port(
                "rw_port_1",
                "read_write",
                384,
                ["I1, fh", "I1, tl", "O, fh", "O, tl", "O, fl", "O, th"],
            )
        ]
    dram_alloc = ["I1, fh", "I1, tl", "I2, fh", "I2, tl", "O, fh", "O, tl", "O, fl", "O, th"]
    memories = {
        "rf_64B_I": _memory(512, (1.0, 1.5, 0.3), ["I1"], [
            _port("r_port_1", "read", rf_in, ["I1, tl"]), _port("w_port_1", "write", rf_in, ["I1, fh"])], []),
        "rf_64B_W": _memory(512, (1.0, 1.5, 0.3), ["I2"], [
            _port("r_port_1", "read", rf_in, ["I2, tl"]), _port("w_port_1", "write", rf_in, ["I2, fh"])], []),
        "rf_16B": _memory(128, (1.5, 2.0, 0.95), ["O"], rf16_ports, []),
        "sram_8KB": _memory(o_bits, (10.0, 15.0, 3.0), ["O"], sram8_ports, both),
        "sram_64KB": _memory(w_bits, (20.0, 25.0, 6.0), ["I2"], [
            _port("r_port_1", "read", 128, ["I2, tl"]), _port("w_port_1", "write", 128, ["I2, fh"])], both),
        "sram_1M": _memory(i_bits, (100.0, 130.0, 25.0), ["I1", "O"], sram1m_ports, both),
        "dram": _memory(10_000_000_000, (1000.0, 1000.0, 0.0), ["I1", "I2", "O"], [
            _port("rw_port_1", "read_write", dram_bandwidth_bits, dram_alloc)], both),
    }  # fmt: skip
    return {
        "name": f"eyeriss_like_4x4_{layout}",
        "memories": memories,
        "operational_array": {
            "unit_energy": 1.0,
            "unit_area": 0.1,
            "dimensions": ["D1", "D2"],
            "sizes": [4, 4],
        },
    }


def gemm_workload(b: int = 100, k: int = 100, c: int = 100, bits: int = 32) -> list:
    """The GEMM O[b][k] += W[k][c] * I[c][b] of the memsize case."""
    return [
        {
            "id": 0,
            "name": "gemm100",
            "operator_type": "Gemm",
            "equation": "O[b][k]+=W[k][c]*I[c][b]",
            "dimension_relations": [],
            "loop_dims": ["B", "K", "C"],
            "loop_sizes": [b, k, c],
            "operand_precision": {"W": bits, "I": bits, "O": bits, "O_final": bits},
            "operand_source": {"I": 0, "W": 0},
        }  # fmt: skip
    ]


def conv_workload(
    *,
    k: int = 16,
    c: int = 8,
    oy: int = 8,
    ox: int = 8,
    f: int = 3,
    stride: int = 2,
    bits: int = 8,
    psum_bits: int = 16,
) -> list:
    """A strided convolution, ix = stride*ox + 1*fx, with partial sums wider than final outputs."""
    return [
        {
            "id": 0,
            "name": "conv",
            "operator_type": "Conv",
            "equation": "O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]",
            "dimension_relations": [f"ix={stride}*ox+1*fx", f"iy={stride}*oy+1*fy"],
            "loop_dims": ["B", "K", "C", "OY", "OX", "FY", "FX"],
            "loop_sizes": [1, k, c, oy, ox, f, f],
            "operand_precision": {"W": bits, "I": bits, "O": psum_bits, "O_final": bits},
            "operand_source": {"I": 0, "W": 0},
        }  # fmt: skip
    ]


def spatial_mapping(d1: tuple[str, int] = ("K", 4), d2: tuple[str, int] = ("C", 4)) -> list:
    """A mapping file with a complete spatial mapping and the memsize operand links."""
    return [
        {
            "name": "default",
            "spatial_mapping": {"D1": [f"{d1[0]}, {d1[1]}"], "D2": [f"{d2[0]}, {d2[1]}"]},
            "memory_operand_links": {"O": "O", "W": "I2", "I": "I1"},
        }
    ]


@dataclass(frozen=True, slots=True)
class CaseFiles:
    """Paths of one written ZigZag case; temporal_mapping None = let ZigZag choose."""

    accelerator: str
    workload: str
    mapping: str
    temporal_mapping: str | None


def write_case(
    directory: str | Path,
    name: str,
    accelerator: dict,
    workload: list,
    mapping: list,
    temporal_mapping: dict[str, Any] | None = None,
) -> CaseFiles:
    """Write the files of one case as <name>_{accelerator,workload,mapping}.yaml (+ _tm.json)."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for part, data in (("accelerator", accelerator), ("workload", workload), ("mapping", mapping)):
        path = folder / f"{name}_{part}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        paths[part] = str(path)
    tm_path = None
    if temporal_mapping is not None:
        tm_path = folder / f"{name}_tm.json"
        tm_path.write_text(json.dumps(temporal_mapping))
    return CaseFiles(
        paths["accelerator"], paths["workload"], paths["mapping"], str(tm_path) if tm_path else None
    )
