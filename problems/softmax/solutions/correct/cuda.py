"""Row softmax in CUDA C++: one block per row, the row held in registers (read once, written
once), loaded as 16-byte vectors where the row allows (cols a multiple of 4, 16-byte aligned),
max and sum reduced by warp shuffles and one shared-memory exchange, exp2 with log2(e) folded in.
The block is sized to the row, so each thread holds at most 16 values: 256 threads for 4096
columns, 1024 for 16384. Rows wider than 16384 take a two-pass kernel (online max and sum, then
the write), reading the row twice.

The kernels hold no torch type, so nvcc builds them without torch's headers
(`no_implicit_headers`); the torch side is the C++ source."""

import torch
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <cuda_runtime.h>
#include <cstdint>
#include <cfloat>

constexpr float LOG2E = 1.4426950408889634f;

template <int THREADS>
__device__ __forceinline__ float block_reduce(float v, bool is_max, float* scratch) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    if (THREADS > 32) {
        constexpr int WARPS = THREADS / 32;
        int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        if (lane == 0) scratch[warp] = v;
        __syncthreads();
        v = lane < WARPS ? scratch[lane] : (is_max ? -FLT_MAX : 0.0f);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            float other = __shfl_xor_sync(0xffffffffu, v, o);
            v = is_max ? fmaxf(v, other) : v + other;
        }
        __syncthreads();  // scratch is written again by the next reduction
    }
    return v;
}

// A row of up to THREADS * CHUNKS * WIDTH values; chunk c of thread t holds columns
// [(c * THREADS + t) * WIDTH, +WIDTH): a warp reads contiguous memory at every chunk.
template <int THREADS, int CHUNKS, int WIDTH>
__global__ void __launch_bounds__(THREADS) softmax_rows(const float* __restrict__ x, float* __restrict__ out,
                                                        int cols, long stride) {
    __shared__ float scratch[32];
    const float* row = x + blockIdx.x * stride;
    float* dst = out + blockIdx.x * stride;
    float v[CHUNKS][WIDTH];
    float m = -FLT_MAX;
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        int col = (c * THREADS + threadIdx.x) * WIDTH;
        if constexpr (WIDTH == 4) {
            float4 q = col < cols ? *reinterpret_cast<const float4*>(row + col)
                                  : make_float4(-FLT_MAX, -FLT_MAX, -FLT_MAX, -FLT_MAX);
            v[c][0] = q.x, v[c][1] = q.y, v[c][2] = q.z, v[c][3] = q.w;
        } else {
            v[c][0] = col < cols ? row[col] : -FLT_MAX;
        }
#pragma unroll
        for (int w = 0; w < WIDTH; ++w) m = fmaxf(m, v[c][w]);
    }
    m = block_reduce<THREADS>(m, true, scratch) * LOG2E;
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c)
#pragma unroll
        for (int w = 0; w < WIDTH; ++w) {
            v[c][w] = exp2f(fmaf(v[c][w], LOG2E, -m));
            s += v[c][w];
        }
    float inv = 1.0f / block_reduce<THREADS>(s, false, scratch);
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        int col = (c * THREADS + threadIdx.x) * WIDTH;
        if (col >= cols) continue;
        if constexpr (WIDTH == 4) {
            *reinterpret_cast<float4*>(dst + col) =
                make_float4(v[c][0] * inv, v[c][1] * inv, v[c][2] * inv, v[c][3] * inv);
        } else {
            dst[col] = v[c][0] * inv;
        }
    }
}

// Any width: an online max and sum over the row, then each value written.
__global__ void __launch_bounds__(1024) softmax_wide(const float* __restrict__ x, float* __restrict__ out,
                                                     int cols, long stride) {
    __shared__ float scratch[32];
    const float* row = x + blockIdx.x * stride;
    float* dst = out + blockIdx.x * stride;
    float m = -FLT_MAX, s = 0.0f;
    for (int col = threadIdx.x; col < cols; col += 1024) {
        float t = row[col] * LOG2E;
        if (t > m) {
            s = s * exp2f(m - t) + 1.0f;
            m = t;
        } else {
            s += exp2f(t - m);
        }
    }
    float row_max = block_reduce<1024>(m, true, scratch);
    float total = block_reduce<1024>(s * exp2f(m - row_max), false, scratch);
    float inv = 1.0f / total;
    for (int col = threadIdx.x; col < cols; col += 1024) dst[col] = exp2f(fmaf(row[col], LOG2E, -row_max)) * inv;
}

template <int THREADS, int CHUNKS, int WIDTH>
static bool launch_if_fits(const float* x, float* out, long rows, int cols, long stride, cudaStream_t stream) {
    if (cols > THREADS * CHUNKS * WIDTH) return false;
    softmax_rows<THREADS, CHUNKS, WIDTH><<<(unsigned)rows, THREADS, 0, stream>>>(x, out, cols, stride);
    return true;
}

void launch_softmax(const float* x, float* out, long rows, int cols, long stride, cudaStream_t stream) {
    bool vectors = cols % 4 == 0 && stride % 4 == 0 &&
                   ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(out)) & 15) == 0;
    if (vectors) {
        if (launch_if_fits<64, 1, 4>(x, out, rows, cols, stride, stream)) return;
        if (launch_if_fits<128, 2, 4>(x, out, rows, cols, stride, stream)) return;
        if (launch_if_fits<256, 2, 4>(x, out, rows, cols, stride, stream)) return;
        if (launch_if_fits<256, 4, 4>(x, out, rows, cols, stride, stream)) return;
        if (launch_if_fits<512, 4, 4>(x, out, rows, cols, stride, stream)) return;
        if (launch_if_fits<1024, 4, 4>(x, out, rows, cols, stride, stream)) return;
    } else {
        if (launch_if_fits<128, 4, 1>(x, out, rows, cols, stride, stream)) return;
        if (launch_if_fits<256, 8, 1>(x, out, rows, cols, stride, stream)) return;
        if (launch_if_fits<1024, 16, 1>(x, out, rows, cols, stride, stream)) return;
    }
    softmax_wide<<<(unsigned)rows, 1024, 0, stream>>>(x, out, cols, stride);
}
"""

CPP = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

void launch_softmax(const float* x, float* out, long rows, int cols, long stride, cudaStream_t stream);

void rows_softmax(torch::Tensor x, torch::Tensor out) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat && x.dim() == 2, "x: a 2-D float32 CUDA tensor");
    if (x.numel() == 0) return;
    launch_softmax(x.data_ptr<float>(), out.data_ptr<float>(), x.size(0), (int)x.size(1), x.stride(0),
            c10::cuda::getCurrentCUDAStream());
}
"""

ext = load_inline(
    "rung_softmax_cuda",
    cpp_sources=CPP,
    cuda_sources=CUDA,
    functions=["rows_softmax"],
    no_implicit_headers=True,
)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    ext.rows_softmax(x, out)
    return out
