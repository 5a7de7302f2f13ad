"""Vendor datasheet figures per GPU model, shown beside measured ceilings. Pure data."""

# The vendor's figures for an H200 SXM (dense), shown beside what was measured.
DATASHEET = {
    "NVIDIA H200": {
        "dram_gbps": 4800.0,
        "bf16_tensor_tflops": 989.0,
        "fp16_tensor_tflops": 989.0,
        "tf32_tensor_tflops": 494.0,
        "fp32_vector_tflops": 67.0,
    }
}
