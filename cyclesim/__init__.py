"""cyclesim: a discrete-event cycle simulator for DNN accelerators.

    import cyclesim
    result = cyclesim.simulate("arch.yaml", "workload.yaml", "mapping.yaml")
    result.cycles, result.phases, result.stalls, result.accesses, result.energy
    print(cyclesim.report_text(result)); cyclesim.write_vcd(result, "run.vcd")

The names below are imported on first use, so `import cyclesim` stays cheap (no pandas,
SimPy or pydantic until a replay needs them).
"""

__version__ = "0.1.0"

_LAZY = {
    "simulate": "cyclesim.analysis.simulate",
    "load": "cyclesim.analysis.simulate",
    "Result": "cyclesim.results",
    "traced": "cyclesim.analysis.simulate",
    "report_text": "cyclesim.analysis.simulate",
    "write_vcd": "cyclesim.analysis.simulate",
    "write_perfetto": "cyclesim.analysis.simulate",
    "write_csv": "cyclesim.analysis.simulate",
    "sweep": "cyclesim.analysis.sweep",
    "load_architecture": "cyclesim.spec",
    "load_workload": "cyclesim.spec",
    "load_mapping": "cyclesim.spec",
    "Architecture": "cyclesim.spec",
    "Workload": "cyclesim.spec",
    "Mapping": "cyclesim.spec",
    "CyclesimError": "cyclesim.errors",
    "SpecError": "cyclesim.errors",
    "EngineError": "cyclesim.errors",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    """Import a public name from its module the first time it is asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cyclesim' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
