"""Matmul in CuTe DSL for Hopper: TMA loads into a 4-stage shared-memory ring, warpgroup MMA (HGMMA)
with fp32 accumulators, one producer warp and two consumer warpgroups per 128 x 256 tile.

Warp specialisation: warpgroup 0 gives most of its registers away and one of its warps issues
the TMA copies of A (128 x 64, K-major) and B (64 x 256, N-major) for each K step into the
stage the consumers last released, signalling a transaction barrier. Warpgroups 1 and 2 each
own 64 rows of the tile: they wait for a stage, issue four 64x256x16 HGMMAs on it straight from
shared memory, keep one batch in flight, and release the stage of the batch before. The fp32
accumulators (128 per thread) go straight to global memory, guarded only on edge tiles.

Shapes and strides reach the kernel dynamic (as NVIDIA's Hopper examples pass them): one build
serves every case, so the build the compile rung inspects at the benchmark sizes is the one that
runs the test sizes too. With static shapes, M = 1 (the first test case) made the DSL drop A's
extent-1 mode from the TMA coordinates and issue a 1-D bulk tensor copy against the 2-D tensor
map: "an illegal instruction was encountered" on an H200.

TMA needs 16-byte aligned rows: where K or N is not a multiple of 8 the operands are padded with
zeros first (the test shapes only; the benchmark shapes are not copied).
"""

import cutlass
import cutlass.cute as cute
import cutlass.memory
import cutlass.pipeline as pipeline
import cutlass.tensor_utils as tensor_utils
import cutlass.torch as cutlass_torch
import cutlass.utils.hopper_helpers as sm90
import torch
import torch.nn.functional as F
from cutlass.cute.runtime import from_dlpack

TILE = (128, 256, 64)  # M, N, K of one block's tile and one pipeline stage
STAGES = 4  # 48 KiB per stage: 192 KiB of the 227 KiB a block may have
THREADS = 384  # producer warpgroup, then two consumer warpgroups
PRODUCER_REGS, CONSUMER_REGS = 40, 232  # 128 * 40 + 256 * 232 = 384 * 168, the launch's registers


@cute.kernel
def matmul_kernel(
    tma_a: cute.CopyAtom,
    mA: cute.Tensor,
    tma_b: cute.CopyAtom,
    mB: cute.Tensor,
    mC: cute.Tensor,
    tiled_mma: cute.TiledMma,
    a_layout: cute.ComposedLayout,
    b_layout: cute.ComposedLayout,
    stage_bytes: cutlass.Constexpr,
    storage_type: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    bm, bn, _ = cute.arch.block_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    group = warp // 4
    if warp == 0:
        cute.nvgpu.cpasync.prefetch_descriptor(tma_a)
        cute.nvgpu.cpasync.prefetch_descriptor(tma_b)

    storage = cutlass.memory.SmemAllocator().allocate(storage_type)
    sA = storage.sA.get_tensor(a_layout.outer, swizzle=a_layout.inner)
    sB = storage.sB.get_tensor(b_layout.outer, swizzle=b_layout.inner)
    # Barriers initialised by warp 0, then fenced and the block synchronised inside create().
    ring = pipeline.PipelineTmaAsync.create(
        barrier_storage=storage.barriers.data_ptr(),
        num_stages=STAGES,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 8),  # lane 0 of each consumer warp
        tx_count=stage_bytes,
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
    )

    coord = (bm, bn, None)
    gA = cute.local_tile(mA, TILE, coord, proj=(1, None, 1))  # (128, 64, k tiles)
    gB = cute.local_tile(mB, TILE, coord, proj=(None, 1, 1))  # (256, 64, k tiles)
    gC = cute.local_tile(mC, TILE, coord, proj=(1, 1, None))  # (128, 256)
    k_tiles = cute.size(gA, mode=[2])

    if group == 0:
        cute.arch.setmaxregister_decrease(PRODUCER_REGS)
        if warp == 0:
            tAsA, tAgA = cute.nvgpu.cpasync.tma_partition(
                tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2)
            )
            tBsB, tBgB = cute.nvgpu.cpasync.tma_partition(
                tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2)
            )
            put = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, STAGES)
            for k in cutlass.range(k_tiles, unroll=1):
                ring.producer_acquire(put)
                barrier = ring.producer_get_barrier(put)
                cute.copy(tma_a, tAgA[(None, k)], tAsA[(None, put.index)], tma_bar_ptr=barrier)
                cute.copy(tma_b, tBgB[(None, k)], tBsB[(None, put.index)], tma_bar_ptr=barrier)
                ring.producer_commit(put)
                put.advance()
            ring.producer_tail(put)
    else:
        cute.arch.setmaxregister_increase(CONSUMER_REGS)
        thr_mma = tiled_mma.get_slice(tidx - 128)
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
        tCgC = thr_mma.partition_C(gC)
        acc = cute.make_rmem_tensor(tCgC.shape, cutlass.Float32)
        acc.fill(0.0)
        tiled_mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)
        k_blocks = cute.size(tCrA, mode=[2])

        got = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, STAGES)
        done = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, STAGES)
        for k in cutlass.range(k_tiles, unroll=1):
            ring.consumer_wait(got)
            cute.nvgpu.warpgroup.fence()
            for kb in cutlass.range_constexpr(k_blocks):
                cute.gemm(
                    tiled_mma, acc, tCrA[(None, None, kb, got.index)], tCrB[(None, None, kb, got.index)], acc
                )
            cute.nvgpu.warpgroup.commit_group()
            cute.nvgpu.warpgroup.wait_group(1)  # the batch before this one is done: its stage is free
            if k > 0:
                ring.consumer_release(done)
                done.advance()
            got.advance()
        cute.nvgpu.warpgroup.wait_group(0)
        ring.consumer_release(done)  # the last stage too: the producer's tail waits for every stage

        m, n = mC.shape
        if (bm + 1) * TILE[0] <= m and (bn + 1) * TILE[1] <= n:
            cute.autovec_copy(acc, tCgC)
        else:
            seen = thr_mma.partition_C(
                cute.local_tile(cute.make_identity_tensor(mC.shape), TILE, coord, proj=(1, 1, None))
            )
            for i in cutlass.range(cute.size(acc), unroll_full=True):
                row, col = seen[i]
                if row < m and col < n:
                    tCgC[i] = acc[i]


@cute.jit
def matmul(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
    """a: (M, K) K-major; b: (N, K) N-major (the K x N matrix, transposed view); c: (M, N) fp32."""
    dtype = a.element_type
    a_major, b_major = tensor_utils.LayoutEnum.from_tensor(a), tensor_utils.LayoutEnum.from_tensor(b)
    tiled_mma = sm90.make_trivial_tiled_mma(
        dtype,
        dtype,
        a_major.sm90_mma_major_mode(),
        b_major.sm90_mma_major_mode(),
        cutlass.Float32,
        (2, 1, 1),  # two consumer warpgroups stacked along M
        tiler_mn=(64, TILE[1]),
    )
    a_layout = sm90.make_smem_layout_a(a_major, TILE, dtype, STAGES)
    b_layout = sm90.make_smem_layout_b(b_major, TILE, dtype, STAGES)
    a_stage, b_stage = cute.slice_(a_layout, (None, None, 0)), cute.slice_(b_layout, (None, None, 0))
    op = cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp()
    tma_a, mA = cute.nvgpu.cpasync.make_tiled_tma_atom(op, a, a_stage, (TILE[0], TILE[2]))
    tma_b, mB = cute.nvgpu.cpasync.make_tiled_tma_atom(op, b, b_stage, (TILE[1], TILE[2]))
    stage_bytes = cute.size_in_bytes(dtype, a_stage) + cute.size_in_bytes(dtype, b_stage)

    @cute.struct
    class Storage:
        barriers: cute.struct.MemRange[cutlass.Int64, STAGES * 2]
        sA: cute.struct.Align[cute.struct.MemRange[dtype, cute.cosize(a_layout)], 1024]
        sB: cute.struct.Align[cute.struct.MemRange[dtype, cute.cosize(b_layout)], 1024]

    m, n = c.shape
    grid = (cute.ceil_div(m, TILE[0]), cute.ceil_div(n, TILE[1]), 1)
    matmul_kernel(tma_a, mA, tma_b, mB, c, tiled_mma, a_layout, b_layout, stage_bytes, Storage).launch(
        grid=grid, block=(THREADS, 1, 1), smem=Storage.size_in_bytes(), stream=stream
    )


_built = {}  # one build per dtype: shapes and strides are run-time values


def _aligned(t: torch.Tensor) -> torch.Tensor:
    """Row-major with the usual strides (a 1-row view may carry any row stride) at a 16-byte
    aligned address: what the TMA descriptor needs and what assumed_align promises."""
    if t.stride() != (t.shape[1], 1) or t.data_ptr() % 16:
        t = t.clone(memory_format=torch.contiguous_format)
    return t


def custom_kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[1]
    pad_k, pad_n = -k % 8, -n % 8
    if pad_k or pad_n:  # TMA rows must be 16-byte aligned
        a = F.pad(a, (0, pad_k))
        b = F.pad(b, (0, pad_n, 0, pad_k))
    a, b = _aligned(a), _aligned(b)
    out = torch.empty(m, n + pad_n, dtype=torch.float32, device=a.device)  # rows padded as b's are
    c = from_dlpack(out, assumed_align=16).mark_compact_shape_dynamic(mode=0, stride_order=(0, 1))
    args = (
        from_dlpack(a, assumed_align=16).mark_layout_dynamic(leading_dim=1),
        from_dlpack(b.t(), assumed_align=16).mark_layout_dynamic(leading_dim=0),
        c.mark_compact_shape_dynamic(mode=1, stride_order=(0, 1), divisibility=8),  # 8-byte stores
    )
    stream = cutlass_torch.current_stream()
    key = a.dtype
    if key not in _built:
        _built[key] = cute.compile(matmul, *args, stream)
    _built[key](*args, stream)
    return out[:, :n].contiguous() if pad_n else out
