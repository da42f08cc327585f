"""The hardware x mapping pairs zigzag-dse 3.9.1 ships under `zigzag/inputs/` (digital ones:
the IMC arrays are refused by name), named once for the tests and the matrix benchmark."""

from __future__ import annotations

# (hardware file, its mapping file), both without .yaml
HARDWARE = (
    ("tpu_like", "tpu_like"),
    ("edge_tpu_like", "edge_tpu_like"),
    ("ascend_like", "ascend_like"),
    ("tesla_npu_like", "tesla_npu_like"),
    ("meta_prototype", "meta_prototype_like"),
    ("eyeriss_like", "default"),
    ("generic_array_cacti", "default"),
)
# the same hardware with mappings that give the spatial unrolling only as hints
MIXED = (
    ("tpu_like", "tpu_like_mixed"),
    ("edge_tpu_like", "edge_tpu_like_mixed"),
    ("ascend_like", "ascend_like_mixed"),
    ("tesla_npu_like", "tesla_npu_like_mixed"),
    ("meta_prototype", "meta_prototype_like_mixed"),
)
# the GEMM cores, whose mappings name the loops D0, D1, D2
GEMM = (("gemm_l1", "gemm_l1"), ("gemm_l1_l3", "gemm_l1_l3"))
PAIRS = HARDWARE + MIXED + GEMM
