"""Helpers for building the three inputs from dicts or case folders (imported by tests by name)."""

from __future__ import annotations

from pathlib import Path

from cyclesim.spec import (
    architecture_from_dict,
    load_architecture,
    load_mapping,
    load_workload,
    mapping_from_dict,
    workload_from_dict,
)

ROOT = Path(__file__).resolve().parents[1]
WORKED = ROOT / "tests" / "cases" / "worked"


def inputs_from_dicts(arch: dict, workload: dict, mapping: dict):
    a = architecture_from_dict(arch, "arch.yaml")
    w = workload_from_dict(workload, "workload.yaml")
    m = mapping_from_dict(mapping, a, w, "mapping.yaml")
    return a, w, m


def inputs_from_folder(folder: Path):
    a = load_architecture(str(folder / "arch.yaml"))
    w = load_workload(str(folder / "workload.yaml"))
    return a, w, load_mapping(str(folder / "mapping.yaml"), a, w)


def arch_with_dram(arch: dict, dram: dict, clock_mhz: float) -> dict:
    """A copy of the architecture dict with the DRAM model `dram` (an architecture's `dram:`
    block) behind its outermost memory, and the accelerator clock the DRAM timing needs."""
    arch = dict(arch, clock_mhz=clock_mhz)
    arch["memories"] = [dict(m) for m in arch["memories"]]
    arch["memories"][0]["dram"] = dram
    return arch


def case_files(folder: Path) -> list[str]:
    """A case folder's three inputs as the CLI takes them: arch, workload, mapping."""
    return [str(folder / f) for f in ("arch.yaml", "workload.yaml", "mapping.yaml")]


def port(name: str, kind: str, width: int, burst: int | None = None, latency: int = 0) -> dict:
    return {
        "name": name,
        "kind": kind,
        "width_bits": width,
        "latency_cycles": latency,
        "burst_bits": burst or width,
    }


def memory(name: str, size, tensors, ports, double_buffered=False, shared_across=None) -> dict:
    d = {
        "name": name,
        "size_bits": size,
        "tensors": tensors,
        "double_buffered": double_buffered,
        "ports": ports,
    }
    if shared_across is not None:
        d["shared_across"] = shared_across
    return d


def matvec_einsum(m, k) -> dict:
    """The workload entry of Z[m] += A[m,k] * B[k]."""
    return {
        "name": "matvec",
        "ranks": {"m": m, "k": k},
        "inputs": [
            {"tensor": "A", "projection": ["m", "k"]},
            {"tensor": "B", "projection": ["k"]},
        ],
        "outputs": [{"tensor": "Z", "projection": ["m"]}],
    }


def gemm_einsum(m, n, k) -> dict:
    """The workload entry of Z[m,n] += A[m,k] * B[k,n] (the tests' most common Einsum)."""
    return {
        "name": "gemm",
        "ranks": {"m": m, "n": n, "k": k},
        "inputs": [
            {"tensor": "A", "projection": ["m", "k"]},
            {"tensor": "B", "projection": ["k", "n"]},
        ],
        "outputs": [{"tensor": "Z", "projection": ["m", "n"]}],
    }
