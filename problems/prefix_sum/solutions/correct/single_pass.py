"""Prefix sum, Triton, one pass with decoupled look-back, so each element is read once and written
once (8 bytes, the roofline's count) where the three-pass scan (tuned.py) moves 16. On the H200
(2026-12-04) it reached 48% of the roofline at 2^28 and took 57.7 us at 2^20: no better than
tuned.py, which stays the tuned version.

Each program claims the next tile of BLOCK elements from a ticket counter, loads it, and
publishes the tile's sum (AGGREGATE) before anything else, so successors can add it without
waiting for this tile's own look-back. It then reads the flags of its LOOKBACK_RUNS * 32
predecessors (all loads issued at once), adds their sums back to the nearest one that holds an
inclusive prefix (PREFIX), reading the same window again while a tile after that prefix has
published nothing and the window before it while none holds a prefix, publishes its own
inclusive prefix, and only then scans the tile and stores it. The wait for a predecessor is
short: its sum is published as soon as its tile has arrived, not when its prefix is known.

Why the parts are as they are:
- Tiles in ticket order, not program_id order: the GPU does not promise to start programs in
  id order, and a program spinning on a tile whose program has not started could hold the last
  free slot it needs. A ticket is claimed only by a running program, so every tile a program
  waits on belongs to one already running, which waits only on lower tickets: no deadlock.
- Flag and sum packed in one 64-bit word (status in the high half, the int32 sum's bits in the
  low half), written with one atomic exchange: a reader sees both or neither, so no other
  memory has to be ordered against the flag and relaxed atomics suffice (no fences).
- Flags read with volatile loads (ld.volatile, LDG.E.64.STRONG.SYS: relaxed, served by L2 where
  the atomics land) rather than atomic adds of 0: a flag is read by up to 64 successors, often
  while they spin, and plain loads of one address do not serialise in L2's atomic unit.
- The window in runs of 32: a 32-lane tensor is held whole by every warp, so its reductions
  stay inside a warp (REDUX); one of 64 or 128 lanes is split across warps and costs nine
  barriers a step. Two runs span 64 tiles: at the H200's ~4.3 TB/s a tile of 8192 is claimed
  every ~15 ns, so a window of 64 reaches back ~1 us, about one L2 round trip under load plus
  a tile's load, where its nearest prefix should already be published.
- int32 throughout: the sums wrap exactly as torch.cumsum(dtype=int32) does.
- The ticket counter and flags are one torch.zeros per call (8 bytes a tile, 256 KB at 2^28):
  two launches per call, and nothing carried between calls.

Under the CPU interpreter programs run one after another, so each finds its predecessor's
prefix in its first window; on the GPU the window, the spin and the walk back do the work.
"""

import torch
import triton
import triton.language as tl

BLOCK = 8192
NUM_WARPS = 8
LOOKBACK_RUNS = 2  # look-back window: this many runs of 32 tiles per read

NOT_READY = tl.constexpr(0)
AGGREGATE = tl.constexpr(1)  # the tile's own sum
PREFIX = tl.constexpr(2)  # the sum of the input up to and including the tile


@triton.jit
def pack(status, value):
    return (tl.cast(status, tl.int64) << 32) | (value.to(tl.int64) & 0xFFFFFFFF)


@triton.jit
def combine(sum_a, prefix_a, missing_a, sum_b, prefix_b, missing_b):
    """Two runs of flags, a just before b, as one: b alone if it holds a prefix (nothing before
    it counts), else both sums added. Associative, so any grouping of runs gives the same."""
    sum_ab = tl.where(prefix_b, sum_b, sum_a + sum_b)
    return sum_ab, prefix_a | prefix_b, tl.where(prefix_b, missing_b, missing_a | missing_b)


@triton.jit
def read_run(flags_ptr, first, lanes):
    """The flags of tiles [first, first + 32) as one run: the sum from its last prefix (or from
    its start, without one) to its end, whether it holds a prefix, and whether any tile after
    that prefix has published nothing yet. 32 lanes: each warp holds all of them, so the
    reductions stay inside a warp (no barrier in the loop)."""
    idx = first + lanes
    # Tiles before the first read as a prefix of 0, so the walk always ends.
    word = tl.load(flags_ptr + idx, mask=idx >= 0, other=PREFIX << 32, volatile=True)
    status = (word >> 32).to(tl.int32)
    value = word.to(tl.int32)  # the low 32 bits: the sum, wrapped as int32
    last_prefix = tl.max(tl.where(status == PREFIX, lanes, -1), axis=0)
    last_missing = tl.max(tl.where(status == NOT_READY, lanes, -1), axis=0)
    summed = tl.sum(tl.where(lanes >= last_prefix, value, 0), axis=0)
    return summed, last_prefix >= 0, last_missing > last_prefix


@triton.jit
def look_back(flags_ptr, tile, RUNS: tl.constexpr):
    """The sum of every element before `tile`, from its predecessors' published flags, read
    RUNS * 32 tiles at a time (all loads issued before any is used)."""
    lanes = tl.arange(0, 32)
    exclusive = tl.zeros((), tl.int32)
    end = tile  # the window is [end - RUNS * 32, end)
    done = tile < 0
    while not done:
        window = end - RUNS * 32
        total, prefix, missing = read_run(flags_ptr, window, lanes)
        for r in tl.static_range(1, RUNS):
            s, p, m = read_run(flags_ptr, window + r * 32, lanes)
            total, prefix, missing = combine(total, prefix, missing, s, p, m)
        # Usable when every tile after the nearest prefix (or every tile, without one) has
        # published; otherwise read the same window again.
        ready = not missing
        exclusive += tl.where(ready, total, 0)
        done = ready & prefix
        end = tl.where(ready, window, end)
    return exclusive


@triton.jit
def scan_single_pass(x_ptr, out_ptr, state_ptr, n, BLOCK: tl.constexpr, RUNS: tl.constexpr):
    # state_ptr[0] is the ticket counter, state_ptr[1 + t] tile t's flag; all zero at launch.
    tile = tl.atomic_add(state_ptr, 1, sem="relaxed", scope="gpu").to(tl.int32)
    flags_ptr = state_ptr + 1
    offs = tile * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    aggregate = tl.sum(x, axis=0)
    # Tile 0's sum is already its prefix.
    first = tl.where(tile == 0, PREFIX, AGGREGATE)
    tl.atomic_xchg(flags_ptr + tile, pack(first, aggregate), sem="relaxed", scope="gpu")
    exclusive = look_back(flags_ptr, tile, RUNS)
    if tile > 0:
        tl.atomic_xchg(flags_ptr + tile, pack(PREFIX, exclusive + aggregate), sem="relaxed", scope="gpu")
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0) + exclusive, mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    n = x.numel()
    assert n < 2**31, "int32 offsets"
    out = torch.empty_like(x)
    if n == 0:
        return out
    tiles = triton.cdiv(n, BLOCK)
    state = torch.zeros(tiles + 1, dtype=torch.int64, device=x.device)
    scan_single_pass[(tiles,)](x, out, state, n, BLOCK=BLOCK, RUNS=LOOKBACK_RUNS, num_warps=NUM_WARPS)
    return out
