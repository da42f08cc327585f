"""The range every number in a spec may take: generous for real hardware, small enough that a
replay's cycle count stays far inside a 64-bit integer (cycles <= iterations x latency)."""

from __future__ import annotations

MAX_WIDTH_BITS = 2**20  # bits a port moves per cycle (HBM stacks move about 2**13)
MAX_LATENCY_CYCLES = 2**20  # per transfer, setup or pipeline (DRAM: hundreds)
MAX_SIZE_BITS = 2**50  # one memory instance (128 TiB)
MAX_ARRAY_DIM = 2**16  # PEs along one array dimension
MAX_MACS_PER_PE = 2**16
MAX_CHANNELS = 2**10  # DMA channels
MAX_VALUE_BITS = 2**12  # bits per value or partial sum
MAX_RANK_SIZE = 2**32  # one rank of an Einsum, one loop bound
MAX_ITERATIONS = 2**44  # product of an Einsum's rank sizes (the replay would take years beyond)
MAX_CLOCK_MHZ = 1e6
MAX_BYTES = 2**40  # an L1 size, a tensor or a circular buffer in bytes
MAX_COUNT = 2**20  # pages, banks, grid sizes
