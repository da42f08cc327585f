"""DRAM that behaves like DRAM: a standard's timing, banks, rows, refresh, an open-page controller.

`config` holds a device and controller description (presets or a DRAMsim3 `.ini`), `timing`
the command-to-command constraints derived from it, `controller` the per-channel controller
and `trace` the trace-driven front end behind `cyclesim dram CONFIG TRACE`.

The replay's closed-form timer lives here too: `timer` (its state and `issue`), made of
`row_visits`, `paces` and `column_timing`; `byte_runs` slices a transfer's bytes into strided
runs; `native` picks their mypyc-compiled copies when `native_build` (make native) built them
from the current sources. The engine keeps only a transfer's DRAM side (engine/dram_port.py,
engine/dram_loop.py), which imports these; nothing here imports the engine.
"""
