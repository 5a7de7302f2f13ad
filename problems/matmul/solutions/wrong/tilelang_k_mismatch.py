"""Wrong: the TileLang matmul with the tile of `b` given a K step of 32 where `a`'s is 64: the
two operands of T.gemm disagree on K. TileLang refuses to build it; `compile` fails with
TileLang's own message at the line of T.gemm."""

import tilelang
import tilelang.language as T
import torch

BLOCK_M, BLOCK_N, BLOCK_K = 128, 256, 64
STAGES = 3
THREADS = 256  # the consumers; TileLang adds a producer warpgroup
PANEL = 8


@tilelang.jit
def matmul(m: int, n: int, k: int):
    @T.prim_func
    def gemm(A: T.Tensor((m, k), "float16"), B: T.Tensor((k, n), "float16"), C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, BLOCK_N), T.ceildiv(m, BLOCK_M), threads=THREADS) as (bx, by):
            a = T.alloc_shared((BLOCK_M, BLOCK_K), "float16")
            b = T.alloc_shared((BLOCK_K // 2, BLOCK_N), "float16")
            acc = T.alloc_fragment((BLOCK_M, BLOCK_N), "float32")
            T.use_swizzle(panel_size=PANEL)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(k, BLOCK_K), num_stages=STAGES):
                T.copy(A[by * BLOCK_M, ko * BLOCK_K], a)
                T.copy(B[ko * BLOCK_K, bx * BLOCK_N], b)
                T.gemm(a, b, acc, policy=T.GemmWarpPolicy.FullRow)
            T.copy(acc, C[by * BLOCK_M, bx * BLOCK_N])

    return gemm


def custom_kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), device=a.device, dtype=torch.float32)
    matmul(m, n, k)(a, b, c)
    return c
