"""DRAM that behaves like DRAM: a standard's timing, banks, rows, refresh, an open-page controller.

`config` holds a device and controller description (presets or a DRAMsim3 `.ini`), `timing`
the command-to-command constraints derived from it, `controller` the per-channel controller
and `trace` the trace-driven front end behind `cyclesim dram CONFIG TRACE`.
"""
