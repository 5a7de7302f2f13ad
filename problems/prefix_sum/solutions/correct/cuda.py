"""Prefix sum in CUDA C++: one pass, a chained scan with decoupled look-back, so each element is
read once and written once (the roofline's 8 bytes), in one launch per call.

Each block claims the next tile of 8192 elements from a global ticket counter, loads it as
16-byte vectors (256 threads x 8 vectors, all loads issued before the first add), scans it in
registers, publishes the tile's sum, looks back over its predecessors' status words with one
warp, publishes its inclusive prefix, and stores the tile with the prefix added.

Measured on the H200 (one session's run, CUDA events, L2 cleared before each call; not yet through
rung's bench): 715 us at 2^28 (70% of the roofline), 185 us at 2^26 (68%), 8.9 us at 2^20, beside
CUB's 684 / 178 / 11.5 us and a copy's 505 / 129 / 6.0 us in the same run. Exact against
torch.cumsum on the test sizes, 2^20 to 2^28, full-range int32 (wrapping), misaligned views,
200 calls back to back, a CUDA graph of 16 calls replayed, and two streams at once. The 90% target
is not met. Other tile shapes from the same source, same run, at 2^28: 128x8 with 8 blocks per SM
765 us, 256x8 with 3 per SM 782 us, 256x4 with 6 per SM 838 us, 512x8 825 us, 512x4 872 us: the
more of the input an SM holds between load and store (4 x 8192 elements here, the register
file's limit), the faster, so the time a tile's registers wait (its ticket, its loads, its
look-back) is what is left to hide.

Why the parts are as they are:
- What limits CUB here (cub::DeviceScan on sm_90, int32: 128 threads x 24 items, 3072-element
  tiles): a tile of 24 KB moved is done every ~5.7 ns at 4.3 TB/s, so a warp's 32-tile window
  reaches back ~180 ns, less than one L2 round trip under load: the look-back usually walks
  several windows, each a round trip. Its tile index is blockIdx.x (it trusts blocks to start in
  order), its status words are cleared by a second kernel per call, its loads and stores go
  through a shared-memory transpose, and on grids of 500 tiles or more every look-back starts
  with a fixed 1245 ns __nanosleep and sleeps 648 ns between reads of a window not yet complete:
  idle time that only more resident blocks can hide.
- Tiles of 8192 (64 KB moved, one every ~15 ns at copy speed): the 32-tile window reaches back
  ~490 ns, about one flag round trip, so the nearest inclusive prefix is usually inside the
  first window; and 2.7x fewer tiles than CUB's means as many fewer look-backs and status words.
- Loads in flight: to stream ~4.3 TB/s with ~1-2 us of DRAM latency under load plus the
  look-back a tile waits through, an SM must keep ~100 KB of tiles between load and store
  (32.5 GB/s per SM x ~3 us). A thread holds 32 elements in registers (8 x LDG.E.128, all
  issued at once), so with 64 registers four 256-thread blocks (128 KB of tiles) are resident
  per SM; while one block waits on its look-back the other three have loads outstanding. No
  shared-memory staging, no sleep: a waiting warp re-reads its window at once.
- Layout: thread t's vector v holds elements 4 * (v * 256 + t) + [0, 4): every load and store
  instruction of a warp covers 512 contiguous bytes (coalesced with no transpose). The tile is
  then 64 chunks in memory order (round v, warp w), each a warp's 32 vectors: one shuffle scan
  per round (the 8 rounds interleaved), chunk totals through 256 bytes of shared memory,
  scanned by warp 0 (two per lane), which also does the look-back: three barriers per tile.
- Tile order by ticket, not blockIdx: a ticket is claimed only by a running block, and a block
  waits only on lower tickets, so every tile waited on belongs to a block that is running and
  itself waits only on lower ones: no deadlock whatever order the GPU starts blocks in.
- A status word is 64 bits: the tile's value (int32 bits) in the low half, the flag in the high
  half (1: the tile's own sum, 2: its inclusive prefix, 0: nothing yet). One 64-bit store
  publishes both and one 64-bit load reads both, so there is no other memory to order against
  the flag: relaxed gpu-scope accesses (ld/st.relaxed.gpu, coherent in L2) suffice, and no fence
  or release/acquire pair is needed. The walk: read 32 predecessors (one per lane), find the
  nearest holding a prefix (ballot), and if every tile from there on has published, add their
  values (REDUX) and stop; without a prefix add all 32 and read the window before; if one has
  not published, read the same window again.
- Nothing is cleared per call. The counter and status words live in a workspace cached per
  (device, stream, size), zeroed once. Each call claims exactly `tiles` tickets, so call c's
  tickets are [c * tiles, (c + 1) * tiles): the tile is ticket % tiles and the call's epoch
  ticket / tiles, and the high half of a status word carries the epoch (30 bits) beside the
  flag. A word left by the previous call has the previous epoch and reads as "nothing yet"; a
  zero word has flag 0. So a call is one launch, with no host sync and no allocation after the
  first: a CUDA graph of many calls replays correctly (the counter is device state, not a
  launch argument). Calls on one stream are ordered; calls on different streams get their own
  workspace.
- Arithmetic on unsigned 32-bit values: it wraps exactly as torch.cumsum(dtype=int32) does
  (signed overflow would be undefined in C++).
- n not a multiple of 4, or x or out not 16-byte aligned: the last tile's vectors are loaded
  and stored element by element (zeros past the end) where they cross n, and a misaligned view
  takes the same kernel with every vector loaded element by element. Whole tiles take a path
  with no per-vector test (which also keeps the kernel within 64 registers without spills).

The kernel and launcher hold no torch type, so nvcc builds them without torch's headers
(`no_implicit_headers`); the torch side is the C++ source.
"""

import torch
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <cuda_runtime.h>
#include <cstdint>

constexpr int THREADS = 256;
constexpr int VECS = 8;                    // 16-byte vectors per thread
constexpr int TILE = THREADS * VECS * 4;   // elements per tile: 8192
constexpr int WARPS = THREADS / 32;
constexpr int CHUNKS = VECS * WARPS;       // a chunk: one warp's 32 vectors of one round
constexpr int CHUNKS_PER_LANE = CHUNKS / 32;
static_assert(CHUNKS % 32 == 0, "warp 0 scans the chunk totals, a whole number per lane");

// The workspace, in 64-bit words: the ticket counter, then the status words from STATUS on (a
// 128-byte line apart, so the counter's atomics do not share a line with tiles' flags).
constexpr int STATUS = 16;
constexpr unsigned AGGREGATE = 1, PREFIX = 2, FLAGS = 3;
constexpr unsigned FULL = 0xffffffffu;

__device__ __forceinline__ unsigned long long load_status(const unsigned long long* p) {
    unsigned long long word;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(word) : "l"(p) : "memory");
    return word;
}

__device__ __forceinline__ void store_status(unsigned long long* p, unsigned high, unsigned value) {
    unsigned long long word = (unsigned long long)high << 32 | value;
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(word) : "memory");
}

// Up to 4 elements from p, `left` of them before the end of x (zeros past it).
template <bool VECTOR>
__device__ __forceinline__ uint4 load4(const unsigned* p, int left) {
    if (VECTOR && left >= 4) return *reinterpret_cast<const uint4*>(p);
    uint4 q;
    q.x = left > 0 ? p[0] : 0u;
    q.y = left > 1 ? p[1] : 0u;
    q.z = left > 2 ? p[2] : 0u;
    q.w = left > 3 ? p[3] : 0u;
    return q;
}

template <bool VECTOR>
__device__ __forceinline__ void store4(unsigned* p, uint4 q, int left) {
    if (VECTOR && left >= 4) {
        *reinterpret_cast<uint4*>(p) = q;
        return;
    }
    if (left > 0) p[0] = q.x;
    if (left > 1) p[1] = q.y;
    if (left > 2) p[2] = q.z;
    if (left > 3) p[3] = q.w;
}

__device__ __forceinline__ unsigned warp_inclusive_scan(unsigned v, int lane) {
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        unsigned up = __shfl_up_sync(FULL, v, d);
        if (lane >= d) v += up;
    }
    return v;
}

// The sum of every element before `tile`, read from its predecessors' status words by one warp,
// 32 tiles a read: lane l reads tile end - 32 + l. Tiles before the first read as a prefix of 0.
__device__ unsigned look_back(const unsigned long long* status, int tile, unsigned epoch, int lane) {
    unsigned exclusive = 0;
    int end = tile;
    while (true) {
        int idx = end - 32 + lane;
        unsigned long long word = idx >= 0 ? load_status(status + idx) : (unsigned long long)(epoch | PREFIX) << 32;
        unsigned high = (unsigned)(word >> 32);
        unsigned flag = (high & ~FLAGS) == epoch ? high & FLAGS : 0u;  // a word of another call: nothing yet
        unsigned prefixes = __ballot_sync(FULL, flag == PREFIX);
        unsigned missing = __ballot_sync(FULL, flag == 0);
        // The lanes that count: from the nearest prefix on, or all of them without one.
        int from = prefixes ? 31 - __clz(prefixes) : 0;
        if (missing >> from) continue;  // a tile that counts has published nothing: read again
        exclusive += __reduce_add_sync(FULL, lane >= from ? (unsigned)word : 0u);
        if (prefixes) return exclusive;
        end -= 32;
    }
}

template <bool VECTOR>
__global__ void __launch_bounds__(THREADS, 4) scan_tiles(const unsigned* __restrict__ x, unsigned* __restrict__ out,
                                                       long long n, unsigned long long* __restrict__ workspace,
                                                       unsigned tiles) {
    __shared__ int tile_s;
    __shared__ unsigned epoch_s;
    __shared__ unsigned chunk[CHUNKS];  // chunk totals, then (from warp 0) chunk exclusive prefixes
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

    if (threadIdx.x == 0) {
        unsigned long long ticket = atomicAdd(workspace, 1ull);
        unsigned long long call = ticket / tiles;
        tile_s = (int)(ticket - call * tiles);
        epoch_s = (unsigned)call << 2;  // the call's epoch, 30 bits, above the flag's two
    }
    __syncthreads();
    const int tile = tile_s;
    const long long first = (long long)tile * TILE;
    const int in_tile = n - first < TILE ? (int)(n - first) : TILE;  // elements of this tile before n
    const unsigned* src = x + first;
    unsigned* dst = out + first;

    // A whole tile (all but the last) takes the branch-free path: eight LDG.E.128 back to back.
    const bool whole = VECTOR && in_tile == TILE;
    uint4 q[VECS];
#pragma unroll
    for (int v = 0; v < VECS; ++v) {
        int at = (v * THREADS + threadIdx.x) * 4;
        q[v] = whole ? *reinterpret_cast<const uint4*>(src + at) : load4<VECTOR>(src + at, in_tile - at);
    }
    // Each vector scanned in place; sum[v]: the warp's inclusive scan of the vectors' sums.
    unsigned sum[VECS];
#pragma unroll
    for (int v = 0; v < VECS; ++v) {
        q[v].y += q[v].x;
        q[v].z += q[v].y;
        q[v].w += q[v].z;
        sum[v] = q[v].w;
    }
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
#pragma unroll
        for (int v = 0; v < VECS; ++v) {
            unsigned up = __shfl_up_sync(FULL, sum[v], d);
            if (lane >= d) sum[v] += up;
        }
    }
    // Lane 31's sum is the chunk's total; every lane adds its vectors' prefix within the chunk now,
    // so sum[] is dead during the look-back (registers for more resident blocks).
#pragma unroll
    for (int v = 0; v < VECS; ++v) {
        if (lane == 31) chunk[v * WARPS + warp] = sum[v];
        unsigned before = sum[v] - q[v].w;
        q[v].x += before;
        q[v].y += before;
        q[v].z += before;
        q[v].w += before;
    }
    __syncthreads();

    if (warp == 0) {
        // Lane l holds chunks [l * CHUNKS_PER_LANE, +CHUNKS_PER_LANE), in memory order.
        unsigned before[CHUNKS_PER_LANE], run = 0;
#pragma unroll
        for (int k = 0; k < CHUNKS_PER_LANE; ++k) {
            before[k] = run;
            run += chunk[lane * CHUNKS_PER_LANE + k];
        }
        unsigned through = warp_inclusive_scan(run, lane);
        unsigned aggregate = __shfl_sync(FULL, through, 31);
        unsigned long long* status = workspace + STATUS;
        const unsigned epoch = epoch_s;
        // Published before the look-back, so successors can add it without waiting for ours.
        if (lane == 0) store_status(status + tile, epoch | (tile == 0 ? PREFIX : AGGREGATE), aggregate);
        unsigned exclusive = 0;
        if (tile > 0) {
            exclusive = look_back(status, tile, epoch, lane);
            if (lane == 0) store_status(status + tile, epoch | PREFIX, exclusive + aggregate);
        }
        unsigned lane_prefix = exclusive + through - run;
#pragma unroll
        for (int k = 0; k < CHUNKS_PER_LANE; ++k) chunk[lane * CHUNKS_PER_LANE + k] = lane_prefix + before[k];
    }
    __syncthreads();

#pragma unroll
    for (int v = 0; v < VECS; ++v) {
        unsigned add = chunk[v * WARPS + warp];  // the sum of everything before the chunk
        q[v].x += add;
        q[v].y += add;
        q[v].z += add;
        q[v].w += add;
        int at = (v * THREADS + threadIdx.x) * 4;
        if (whole)
            *reinterpret_cast<uint4*>(dst + at) = q[v];
        else
            store4<VECTOR>(dst + at, q[v], in_tile - at);
    }
}

int scan_tiles_for(long long n) { return (int)((n + TILE - 1) / TILE); }

int workspace_words(long long n) { return STATUS + scan_tiles_for(n); }

void launch_scan(const int* x, int* out, long long n, unsigned long long* workspace, cudaStream_t stream) {
    unsigned tiles = (unsigned)scan_tiles_for(n);
    const unsigned* src = reinterpret_cast<const unsigned*>(x);
    unsigned* dst = reinterpret_cast<unsigned*>(out);
    bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(out)) & 15) == 0;
    if (aligned)
        scan_tiles<true><<<tiles, THREADS, 0, stream>>>(src, dst, n, workspace, tiles);
    else
        scan_tiles<false><<<tiles, THREADS, 0, stream>>>(src, dst, n, workspace, tiles);
}
"""

CPP = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <climits>

int workspace_words(long long n);
void launch_scan(const int* x, int* out, long long n, unsigned long long* workspace, cudaStream_t stream);

int64_t words(int64_t n) {
    TORCH_CHECK(n > 0 && n <= INT_MAX, "n must be in [1, 2^31)");
    return workspace_words(n);
}

void inclusive_sum(torch::Tensor x, torch::Tensor out, torch::Tensor workspace) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kInt && x.is_contiguous(), "x: a contiguous int32 CUDA tensor");
    TORCH_CHECK(out.scalar_type() == torch::kInt && out.is_contiguous() && out.numel() == x.numel(), "out: like x");
    TORCH_CHECK(x.numel() > 0 && x.numel() <= INT_MAX, "n must be in [1, 2^31)");
    TORCH_CHECK(workspace.scalar_type() == torch::kLong && workspace.numel() == workspace_words(x.numel()),
                "workspace: workspace_words(n) int64 words");
    launch_scan(x.data_ptr<int>(), out.data_ptr<int>(), x.numel(),
                reinterpret_cast<unsigned long long*>(workspace.data_ptr<int64_t>()),
                c10::cuda::getCurrentCUDAStream());
}
"""

ext = load_inline(
    "rung_prefix_sum_cuda",
    cpp_sources=CPP,
    cuda_sources=CUDA,
    functions=["words", "inclusive_sum"],
    no_implicit_headers=True,
)

# The ticket counter and status words per (device, stream, words): zeroed once, never cleared
# (the kernel tells calls apart by epoch). Keyed by stream so that calls on two streams, which may
# run at once, never share a counter.
workspaces: dict[tuple[int, int, int], torch.Tensor] = {}


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return out
    words = ext.words(n)
    key = (x.device.index, torch.cuda.current_stream(x.device).cuda_stream, words)
    workspace = workspaces.get(key)
    if workspace is None:
        workspace = workspaces[key] = torch.zeros(words, dtype=torch.int64, device=x.device)
    ext.inclusive_sum(x, out, workspace)
    return out
