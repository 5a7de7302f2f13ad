"""Wrong, in CUDA C++: 16-byte vectors only, so the n % 4 elements past the last whole vector are
never written (all of them where n < 4: the first test case, n = 1, gets no block at all)."""

import torch
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <cuda_runtime.h>

__global__ void add_vec4(const float4* __restrict__ x, const float4* __restrict__ y, float4* __restrict__ out, long n4) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) out[i] = make_float4(x[i].x + y[i].x, x[i].y + y[i].y, x[i].z + y[i].z, x[i].w + y[i].w);
}

void vector_add(const float* x, const float* y, float* out, long n, cudaStream_t stream) {
    long n4 = n / 4;
    if (n4 == 0) return;
    add_vec4<<<(unsigned)((n4 + 255) / 256), 256, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(y), reinterpret_cast<float4*>(out), n4);
}
"""

CPP = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

void vector_add(const float* x, const float* y, float* out, long n, cudaStream_t stream);

void add(torch::Tensor x, torch::Tensor y, torch::Tensor out) {
    vector_add(x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), x.numel(),
               c10::cuda::getCurrentCUDAStream());
}
"""

ext = load_inline("rung_vector_add_no_tail", cpp_sources=CPP, cuda_sources=CUDA, functions=["add"], no_implicit_headers=True)


def custom_kernel(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    ext.add(x.contiguous(), y.contiguous(), out)
    return out
