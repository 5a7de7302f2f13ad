"""Prefix sum in CUDA C++, pipelined: cuda.py's chained scan with decoupled look-back, run by
persistent blocks that stream their tiles through a ring of shared-memory stages filled by
Hopper's bulk async copies (cp.async.bulk + mbarrier), so the loads of the next tiles are in
flight while a block scans one tile and waits on its look-back. One launch per call.

Measured on an H100 (2026-12-05, bench/scan_variants.py, docs/results/2026-12-05-c): exact in
every variant on every size, misaligned views, back-to-back calls and a CUDA graph, but slower than
cuda.py: this default (8192-element tiles, 3 stages, 2 blocks per SM) 1039.7 us at 2^28, 68% of a
copy's speed; the best variant (16384, 3, 1) 76.8%, beside cuda.py's 79.0% and CUB's 81.7%. Kept
as the bulk-copy design measured, not as the fastest. Built for sm_90a: 88 registers for the
bulk-copy kernel, 77 for the element-wise one, no spills, 96 KB ring of shared memory.

Why the parts are as they are:
- What it answers: cuda.py stops at ~70% because the input an SM holds between load and store is
  what its registers can hold (4 blocks x 8192 elements), and each tile's registers wait through
  its ticket, its loads and its look-back. Here the loads are issued into shared memory (one
  block: STAGES x TILE x 4 bytes, 96 KB by default, two blocks an SM), several tiles ahead of the
  tile being scanned, and a stage is refilled as soon as its tile is in registers, so the loads
  in flight no longer depend on how long a tile waits. The default, Config<8192, 3, 2>: cuda.py's
  tile; two blocks an SM, so one scans while the other waits on its look-back; 3 stages each, so
  six 32 KB tiles an SM are loading or loaded (an SM must keep ~100 KB moving at copy speed).
- Warps: WARPS consumer warps (8) scan; one producer warp (its lane 0) claims tickets and issues
  the copies. Per stage two mbarriers: `full` (1 arrival: the producer's arrive.expect_tx of the
  tile's bytes, then the copy's complete_tx) and `empty` (1 arrival: consumer thread 0, after the
  consumer barrier that follows every consumer's reads of the stage). Iteration i of either side
  uses stage i % STAGES in phase i / STAGES; the consumers wait on `full` with parity
  (i / STAGES) & 1, the producer (from i = STAGES on) on `empty` with the parity of the phase
  before. The tile's index goes through shared memory beside the stage: written before the
  arrive (release), read after the wait (acquire), rewritten only after `empty`.
- Claims: the producer claims a ticket (one atomicAdd) only when a stage is free, then issues that
  tile's copy at once; at the start it claims STAGES tickets back to back (same thread, same
  address: they come back in increasing order). A ticket past the last tile ends the block (an
  end mark in the stage, arrived on without bytes). Claiming at refill, not further ahead, keeps
  the order in which tiles are loaded close to ticket order, which is the order look-backs need.
- Deadlock freedom with prefetching: a block claims tickets in increasing order and processes them
  in that order; a tile's look-back waits only on lower tickets; a ticket is claimed only by a
  running block, whose copy is issued when claimed (the wait for a free stage comes before the
  claim, never after). Take the lowest ticket T whose aggregate is never published: its block is
  running, its own earlier tickets are lower than T, so their look-backs see every predecessor's
  aggregate (tile 0 publishes its prefix at once) and end, T's bytes arrive by themselves, and
  the block publishes T's aggregate. So there is no such T, whatever order blocks start in and
  whether or not all of them are resident. Within a block, iteration j's stage is given back by
  iteration j + 1 at the latest, and iteration j + STAGES's copy needs only that, so the producer
  never waits on a tile of its own block that is not yet loaded (STAGES >= 2).
- Scan of a tile (as in cuda.py): thread t's vector v holds elements 4 * (v * 256 + t) + [0, 4),
  read from the stage as 16-byte shared loads (a warp reads 512 contiguous bytes: no bank
  conflict); shuffle scans per round, chunk totals in shared memory (two buffers, by iteration
  parity, so one tile's totals never meet the previous tile's prefixes), warp 0 scans them,
  publishes, looks back, and writes the chunk prefixes; the tile is stored from registers with
  st.global.v4 (512 contiguous bytes a warp instruction). BULK_STORE instead writes the scanned
  tile back into its stage (fence.proxy.async, a consumer barrier) and one thread stores it with
  cp.async.bulk; the stage is then released only when that store has read it (wait_group.read 1
  after the next tile's store, or at once before a tile stored from registers): fewer
  instructions, but the stage is held through the look-back. Which is faster is to measure.
- Look-back: as cuda.py's (64-bit status words, value and flag in one relaxed load), but warp 0
  reads LOOKBACK x 32 predecessors at once (LOOKBACK independent loads a lane, one round trip):
  with hundreds of blocks at work the nearest published prefix is often more than 32 tiles back,
  and a 32-tile window would spend a round trip per 32 tiles.
- Early aggregate (EARLY): while warp 0 looks back, the last consumer warp checks (test_wait, never
  blocking) whether the next stage's tile has arrived and, if so, sums it from shared memory and
  publishes its aggregate then, one look-back earlier than its turn: successors that reach it
  add it instead of waiting. Its own turn publishes the same value again, before its prefix.
  One warp reads the 32 KB (a few hundred cycles): a look-back shorter than that waits for it.
- Nothing is cleared by a second launch. The workspace (per device, stream and size, zeroed once)
  holds a ticket counter, a finished-blocks counter, a call counter (the epoch) and the status
  words. Each block reads the epoch at its start; the last block to finish (its atomicAdd on the
  finished count returns gridDim.x - 1, fences on both sides) resets both counters and advances
  the epoch, so the next call, which the stream orders after this one, starts from ticket 0 with
  a new epoch. Status words carry the epoch (30 bits) above their flag: a word of an earlier call
  reads as "nothing yet", so no status word is cleared per call. A CUDA graph of many calls
  replays correctly (the counters are device state, not launch arguments); streams that may run
  at once get their own workspace.
- Grid: number of SMs x resident blocks an SM (the occupancy API for the dynamic shared memory and
  registers), or the tile count if fewer. The dynamic shared memory limit is raised once per
  kernel and device (cudaFuncSetAttribute), before any graph capture in practice.
- Wrapping arithmetic on unsigned 32-bit values, as torch.cumsum(dtype=int32).
- A partial last tile, or x or out not 16-byte aligned (a misaligned view), is not copied in
  bulk (1-D bulk copies need 16-byte addresses and sizes): the producer arrives on its stage
  without bytes and the consumers load and store that tile from global memory element by
  element where it crosses n; a misaligned input takes a kernel built that way for every tile.

The configuration is a type (`Config<TILE, STAGES, BLOCKS_PER_SM, ...>`), so bench/scan_variants.py
instantiates others from this same source. The kernel and launcher hold no torch type, so nvcc
builds them without torch's headers (`no_implicit_headers`); the torch side is the C++ source.
"""

import torch
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <cuda_runtime.h>
#include <cstdint>

namespace pipelined {

// TILE elements a tile, STAGES tiles in flight a block, BLOCKS_PER_SM for __launch_bounds__,
// WARPS consumer warps, LOOKBACK x 32 status words a look-back read, EARLY aggregates, BULK_STORE.
template <int TILE_, int STAGES_, int BLOCKS_PER_SM_, int WARPS_ = 8, int LOOKBACK_ = 4, bool EARLY_ = true,
          bool BULK_STORE_ = false>
struct Config {
    static constexpr int TILE = TILE_, STAGES = STAGES_, BLOCKS_PER_SM = BLOCKS_PER_SM_;
    static constexpr int WARPS = WARPS_, LOOKBACK = LOOKBACK_;
    static constexpr bool EARLY = EARLY_ && WARPS_ > 1, BULK_STORE = BULK_STORE_;
    static constexpr int CONSUMERS = WARPS * 32;
    static constexpr int THREADS = CONSUMERS + 32;  // and one producer warp
    static constexpr int VECS = TILE / (4 * CONSUMERS);  // 16-byte vectors a consumer thread
    static constexpr int CHUNKS = VECS * WARPS;           // a chunk: one warp's 32 vectors of one round
    static constexpr int STAGE_BYTES = TILE * 4;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;  // the ring, dynamic shared memory
    static_assert(VECS * 4 * CONSUMERS == TILE, "a tile is a whole number of vectors a consumer");
    static_assert(CHUNKS % 32 == 0, "warp 0 scans the chunk totals, a whole number per lane");
    static_assert(STAGES >= 2, "a stage is refilled while another is scanned");
    static_assert(LOOKBACK >= 1 && LOOKBACK <= 8, "status words a lane reads per look-back step");
};

// The workspace, in 64-bit words, each counter on its own 128-byte line.
constexpr int COUNTER = 0;  // tickets claimed in this call
constexpr int DONE = 16;    // blocks finished in this call
constexpr int EPOCH = 32;   // calls finished
constexpr int STATUS = 48;  // a status word per tile
constexpr unsigned AGGREGATE = 1, PREFIX = 2, FLAGS = 3;
constexpr unsigned FULL = 0xffffffffu;

__device__ __forceinline__ unsigned long long load_status(const unsigned long long* p) {
    unsigned long long word;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(word) : "l"(p) : "memory");
    return word;
}

__device__ __forceinline__ void store_word(unsigned long long* p, unsigned long long word) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(word) : "memory");
}

__device__ __forceinline__ void store_status(unsigned long long* p, unsigned high, unsigned value) {
    store_word(p, (unsigned long long)high << 32 | value);
}

__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(bar)) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(bar)), "r"(bytes) : "memory");
}

// Whether the phase of parity `parity` has completed (acquire at CTA scope); test_wait never blocks.
__device__ __forceinline__ bool mbar_test(unsigned long long* bar, unsigned parity) {
    unsigned done;
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(smem(bar)), "r"(parity)
        : "memory");
    return done != 0;
}

__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile(
            "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
            : "=r"(done)
            : "r"(smem(bar)), "r"(parity)
            : "memory");
    } while (!done);
}

// bytes from global src to shared dst, counted on bar (a CTA's own shared address is a valid
// shared::cluster address when there is no cluster). Both addresses and bytes: multiples of 16.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smem(dst)),
                 "l"(src), "r"(bytes), "r"(smem(bar))
                 : "memory");
}

__device__ __forceinline__ void bulk_store(void* dst, const void* src, unsigned bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smem(src)), "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// This thread's bulk stores but the newest N have finished reading shared memory.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

// The consumer warps only (barrier 1; __syncthreads is barrier 0).
template <int COUNT>
__device__ __forceinline__ void consumers_sync() {
    asm volatile("bar.sync 1, %0;" ::"n"(COUNT) : "memory");
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

// The sum of every element before `tile`, from its predecessors' status words, read by one warp
// LOOKBACK x 32 at a time: word k of lane l is tile end - 32 * (LOOKBACK - k) + l, so the highest
// (k, lane) is the nearest. Tiles before the first read as a prefix of 0.
template <int LOOKBACK>
__device__ unsigned look_back(const unsigned long long* status, int tile, unsigned epoch, int lane) {
    unsigned exclusive = 0;
    int end = tile;
    while (true) {
        unsigned long long word[LOOKBACK];
#pragma unroll
        for (int k = 0; k < LOOKBACK; ++k) {  // all loads issued before any is used: one round trip
            int idx = end - 32 * (LOOKBACK - k) + lane;
            word[k] = idx >= 0 ? load_status(status + idx) : (unsigned long long)(epoch | PREFIX) << 32;
        }
        unsigned prefixes[LOOKBACK], missing[LOOKBACK];
        int nearest = -1;  // the window holding the nearest prefix
        unsigned from = 0;  // its lane
#pragma unroll
        for (int k = 0; k < LOOKBACK; ++k) {
            unsigned high = (unsigned)(word[k] >> 32);
            unsigned flag = (high & ~FLAGS) == epoch ? high & FLAGS : 0u;  // a word of another call: nothing yet
            prefixes[k] = __ballot_sync(FULL, flag == PREFIX);
            missing[k] = __ballot_sync(FULL, flag == 0);
            if (prefixes[k]) {
                nearest = k;
                from = 31 - __clz(prefixes[k]);
            }
        }
        // The words that count: from the nearest prefix on, or all of them without one.
        bool wait = false;
#pragma unroll
        for (int k = 0; k < LOOKBACK; ++k) {
            if (k == nearest) wait |= (missing[k] >> from) != 0;
            if (k > nearest) wait |= missing[k] != 0;
        }
        if (wait) continue;  // a tile that counts has published nothing: read again
        unsigned part = 0;
#pragma unroll
        for (int k = 0; k < LOOKBACK; ++k)
            if (k > nearest || (k == nearest && lane >= (int)from)) part += (unsigned)word[k];
        exclusive += __reduce_add_sync(FULL, part);
        if (nearest >= 0) return exclusive;
        end -= 32 * LOOKBACK;
    }
}

template <class C>
struct Shared {
    unsigned long long full[C::STAGES];   // the stage's tile has arrived (or holds an end mark)
    unsigned long long empty[C::STAGES];  // the consumers are done with the stage
    int tile[C::STAGES];                  // the stage's tile, -1: no more tiles for this block
    unsigned chunk[2][C::CHUNKS];         // chunk totals, then chunk prefixes; by iteration parity
    unsigned epoch;                       // this call's epoch, above the flag's two bits
};

// The producer (one thread): tile `ticket` into stage s, or the block's end mark. False at the end.
template <class C, bool ALIGNED>
__device__ __forceinline__ bool fill(Shared<C>& sh, unsigned* ring, int s, unsigned long long ticket,
                                     const unsigned* x, long long n, int tiles) {
    if (ticket >= (unsigned long long)tiles) {
        sh.tile[s] = -1;
        mbar_arrive(&sh.full[s]);
        return false;
    }
    const int tile = (int)ticket;
    sh.tile[s] = tile;
    const long long first = (long long)tile * C::TILE;
    if (ALIGNED && first + C::TILE <= n) {
        mbar_arrive_expect_tx(&sh.full[s], C::STAGE_BYTES);
        bulk_load(ring + s * C::TILE, x + first, C::STAGE_BYTES, &sh.full[s]);
    } else {
        mbar_arrive(&sh.full[s]);  // the consumers read this tile from global memory
    }
    return true;
}

template <class C, bool ALIGNED>
__device__ void produce(Shared<C>& sh, unsigned* ring, const unsigned* x, long long n,
                        unsigned long long* workspace, int tiles) {
    unsigned long long first[C::STAGES];
#pragma unroll
    for (int s = 0; s < C::STAGES; ++s) first[s] = atomicAdd(workspace + COUNTER, 1ull);  // in flight at once
    bool more = true;
#pragma unroll
    for (int s = 0; s < C::STAGES; ++s)
        if (more) more = fill<C, ALIGNED>(sh, ring, s, first[s], x, n, tiles);
    int s = 0;
    unsigned phase = 0;  // of the stage's `empty` barrier this wait is for
    while (more) {
        mbar_wait(&sh.empty[s], phase);
        more = fill<C, ALIGNED>(sh, ring, s, atomicAdd(workspace + COUNTER, 1ull), x, n, tiles);
        if (++s == C::STAGES) {
            s = 0;
            phase ^= 1;
        }
    }
    __threadfence();  // its claims before the block's count of finished blocks
}

// Warp EARLY's work while warp 0 looks back: if the next stage's tile is in, its aggregate.
template <class C, bool ALIGNED>
__device__ __forceinline__ void early_aggregate(Shared<C>& sh, const unsigned* ring, int s, unsigned phase,
                                                long long n, unsigned long long* status, int lane) {
    const int next_s = s + 1 == C::STAGES ? 0 : s + 1;
    const unsigned next_phase = next_s == 0 ? phase ^ 1 : phase;
    int next = -1;
    if (lane == 0 && mbar_test(&sh.full[next_s], next_phase)) next = sh.tile[next_s];
    next = __shfl_sync(FULL, next, 0);
    if (next <= 0 || !ALIGNED || (long long)next * C::TILE + C::TILE > n) return;  // none, or not in bulk
    mbar_wait(&sh.full[next_s], next_phase);  // complete already: each lane's own acquire
    const uint4* src = reinterpret_cast<const uint4*>(ring + next_s * C::TILE);
    unsigned sum = 0;
#pragma unroll 8
    for (int k = lane; k < C::TILE / 4; k += 32) {
        uint4 v = src[k];
        sum += v.x + v.y + v.z + v.w;
    }
    sum = __reduce_add_sync(FULL, sum);
    if (lane == 0) store_status(status + next, sh.epoch | AGGREGATE, sum);
}

template <class C, bool ALIGNED>
__device__ void consume(Shared<C>& sh, unsigned* ring, const unsigned* x, unsigned* out, long long n,
                        unsigned long long* workspace) {
    constexpr int TILE = C::TILE, VECS = C::VECS, WARPS = C::WARPS, CONSUMERS = C::CONSUMERS;
    constexpr int CHUNKS_PER_LANE = C::CHUNKS / 32;
    const int ct = threadIdx.x, lane = ct % 32, warp = ct / 32;
    unsigned long long* status = workspace + STATUS;
    int s = 0;
    unsigned phase = 0;
    int held = -1;  // BULK_STORE: the stage whose store may still be reading it (thread 0)
    for (int i = 0;; ++i) {
        mbar_wait(&sh.full[s], phase);
        const int tile = sh.tile[s];
        if (tile < 0) break;
        unsigned* chunk = sh.chunk[i & 1];
        unsigned* stage = ring + s * TILE;
        const long long first = (long long)tile * TILE;
        const int in_tile = n - first < TILE ? (int)(n - first) : TILE;  // elements of this tile before n
        const bool bulk = ALIGNED && in_tile == TILE;                     // as the producer decided

        uint4 q[VECS];
        if (bulk) {  // LDS.128, back to back
#pragma unroll
            for (int v = 0; v < VECS; ++v) q[v] = reinterpret_cast<const uint4*>(stage)[v * CONSUMERS + ct];
        } else {
#pragma unroll
            for (int v = 0; v < VECS; ++v) {
                int at = (v * CONSUMERS + ct) * 4;
                q[v] = load4<ALIGNED>(x + first + at, in_tile - at);
            }
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
#pragma unroll
        for (int v = 0; v < VECS; ++v) {
            if (lane == 31) chunk[v * WARPS + warp] = sum[v];
            unsigned before = sum[v] - q[v].w;
            q[v].x += before;
            q[v].y += before;
            q[v].z += before;
            q[v].w += before;
        }
        consumers_sync<CONSUMERS>();  // every consumer has read the stage; chunk totals written
        const bool store_from_stage = C::BULK_STORE && bulk;
        if (ct == 0 && !store_from_stage) {
            if (C::BULK_STORE && held >= 0) {  // the stage kept for a store, given back before this one
                bulk_wait_read<0>();
                mbar_arrive(&sh.empty[held]);
                held = -1;
            }
            mbar_arrive(&sh.empty[s]);  // the producer may refill it now
        }

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
            const unsigned epoch = sh.epoch;
            // Published before the look-back, so successors can add it without waiting for ours.
            if (lane == 0) store_status(status + tile, epoch | (tile == 0 ? PREFIX : AGGREGATE), aggregate);
            unsigned exclusive = 0;
            if (tile > 0) {
                exclusive = look_back<C::LOOKBACK>(status, tile, epoch, lane);
                if (lane == 0) store_status(status + tile, epoch | PREFIX, exclusive + aggregate);
            }
            unsigned lane_prefix = exclusive + through - run;
#pragma unroll
            for (int k = 0; k < CHUNKS_PER_LANE; ++k) chunk[lane * CHUNKS_PER_LANE + k] = lane_prefix + before[k];
        } else if (C::EARLY && warp == WARPS - 1) {
            early_aggregate<C, ALIGNED>(sh, ring, s, phase, n, status, lane);
        }
        consumers_sync<CONSUMERS>();  // chunk prefixes written

#pragma unroll
        for (int v = 0; v < VECS; ++v) {
            unsigned add = chunk[v * WARPS + warp];  // the sum of everything before the chunk
            q[v].x += add;
            q[v].y += add;
            q[v].z += add;
            q[v].w += add;
        }
        if (store_from_stage) {
#pragma unroll
            for (int v = 0; v < VECS; ++v) reinterpret_cast<uint4*>(stage)[v * CONSUMERS + ct] = q[v];
        } else if (bulk) {  // STG.128: a warp's 512 contiguous bytes
#pragma unroll
            for (int v = 0; v < VECS; ++v) reinterpret_cast<uint4*>(out + first)[v * CONSUMERS + ct] = q[v];
        } else {
#pragma unroll
            for (int v = 0; v < VECS; ++v) {
                int at = (v * CONSUMERS + ct) * 4;
                store4<ALIGNED>(out + first + at, q[v], in_tile - at);
            }
        }
        if (store_from_stage) {
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // our writes, seen by the bulk copy
            consumers_sync<CONSUMERS>();
            if (ct == 0) {
                bulk_store(out + first, stage, C::STAGE_BYTES);
                if (held >= 0) {  // the previous store has read its stage: give that stage back
                    bulk_wait_read<1>();
                    mbar_arrive(&sh.empty[held]);
                }
                held = s;
            }
        }
        if (++s == C::STAGES) {
            s = 0;
            phase ^= 1;
        }
    }
    if (C::BULK_STORE && ct == 0) bulk_wait_all();  // before the block's shared memory goes away
}

template <class C, bool ALIGNED>
__global__ void __launch_bounds__(C::THREADS, C::BLOCKS_PER_SM)
    scan_pipelined(const unsigned* __restrict__ x, unsigned* __restrict__ out, long long n,
                   unsigned long long* __restrict__ workspace, int tiles) {
    extern __shared__ __align__(128) unsigned ring[];  // STAGES x TILE elements
    __shared__ Shared<C> sh;
    if (threadIdx.x == 0) {
        for (int s = 0; s < C::STAGES; ++s) {
            mbar_init(&sh.full[s], 1);
            mbar_init(&sh.empty[s], 1);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");  // seen by the bulk copies
        sh.epoch = (unsigned)load_status(workspace + EPOCH) << 2;  // 30 bits of the call count
    }
    __syncthreads();

    if (threadIdx.x >= C::CONSUMERS) {
        if (threadIdx.x == C::CONSUMERS) produce<C, ALIGNED>(sh, ring, x, n, workspace, tiles);
        __syncwarp();
    } else {
        consume<C, ALIGNED>(sh, ring, x, out, n, workspace);
    }
    __syncthreads();

    if (threadIdx.x == 0) {
        // The last block of the call to finish readies the workspace for the next call.
        __threadfence();
        unsigned long long done = atomicAdd(workspace + DONE, 1ull);
        if (done == gridDim.x - 1) {
            __threadfence();
            store_word(workspace + COUNTER, 0);
            store_word(workspace + DONE, 0);
            store_word(workspace + EPOCH, load_status(workspace + EPOCH) + 1);
        }
    }
}

template <class C>
struct Scan {
    static int tiles(long long n) { return (int)((n + C::TILE - 1) / C::TILE); }
    static int workspace_words(long long n) { return STATUS + tiles(n); }

    // Blocks for the current device: SMs x resident blocks an SM (0 if it cannot run at all).
    template <bool ALIGNED>
    static int grid_limit(cudaError_t* err) {
        static int cached[64] = {};  // by device
        int device = 0;
        if ((*err = cudaGetDevice(&device)) != cudaSuccess) return 0;
        if (device < 64 && cached[device] > 0) return cached[device];
        auto kernel = scan_pipelined<C, ALIGNED>;
        if ((*err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM_BYTES)) !=
            cudaSuccess)
            return 0;
        int per_sm = 0, sms = 0;
        if ((*err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, C::THREADS, C::SMEM_BYTES)) !=
            cudaSuccess)
            return 0;
        if ((*err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess) return 0;
        if (per_sm < 1) {
            *err = cudaErrorInvalidConfiguration;
            return 0;
        }
        if (device < 64) cached[device] = per_sm * sms;
        return per_sm * sms;
    }

    static int blocks_per_sm() {
        cudaError_t err;
        int device = 0, sms = 1;
        int grid = grid_limit<true>(&err);
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        return grid / sms;
    }

    static cudaError_t launch(const int* x, int* out, long long n, unsigned long long* workspace, cudaStream_t stream) {
        const int count = tiles(n);
        const unsigned* src = reinterpret_cast<const unsigned*>(x);
        unsigned* dst = reinterpret_cast<unsigned*>(out);
        bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(out)) & 15) == 0;
        cudaError_t err = cudaSuccess;
        int grid = aligned ? grid_limit<true>(&err) : grid_limit<false>(&err);
        if (grid == 0) return err;
        grid = grid < count ? grid : count;
        if (aligned)
            scan_pipelined<C, true><<<grid, C::THREADS, C::SMEM_BYTES, stream>>>(src, dst, n, workspace, count);
        else
            scan_pipelined<C, false><<<grid, C::THREADS, C::SMEM_BYTES, stream>>>(src, dst, n, workspace, count);
        return cudaGetLastError();
    }
};

}  // namespace pipelined

using Chosen = pipelined::Scan<pipelined::Config<8192, 3, 2>>;

int workspace_words(long long n) { return Chosen::workspace_words(n); }

cudaError_t launch_scan(const int* x, int* out, long long n, unsigned long long* workspace, cudaStream_t stream) {
    return Chosen::launch(x, out, n, workspace, stream);
}
"""

CPP = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <climits>

int workspace_words(long long n);
cudaError_t launch_scan(const int* x, int* out, long long n, unsigned long long* workspace, cudaStream_t stream);

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
    cudaError_t err = launch_scan(x.data_ptr<int>(), out.data_ptr<int>(), x.numel(),
                                  reinterpret_cast<unsigned long long*>(workspace.data_ptr<int64_t>()),
                                  c10::cuda::getCurrentCUDAStream());
    TORCH_CHECK(err == cudaSuccess, "scan_pipelined: ", cudaGetErrorString(err));
}
"""

ext = load_inline(
    "rung_prefix_sum_cuda_pipelined",
    cpp_sources=CPP,
    cuda_sources=CUDA,
    functions=["words", "inclusive_sum"],
    no_implicit_headers=True,
)

# The counters and status words per (device, stream, words): zeroed once, never cleared by the
# host (the kernel's last block readies them for the next call). Keyed by stream so that calls on
# two streams, which may run at once, never share a counter.
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
