"""Every threshold the heuristic scheduler uses, each with the reason for its value."""

# Below this many element-operations a kernel runs on one thread: handing chunks to a pool
# costs ~20-50 us, the time one core needs for ~100k simple element-operations.
PARALLEL_MIN_WORK = 1 << 17

# Chunks per core for a parallel loop: a few more than the cores so that a slow or late thread
# (this machine is shared) does not hold the whole kernel back.
CHUNKS_PER_CORE = 4

# Independent accumulators in a vectorized reduction: an FMA/add has ~4 cycles of latency and
# two units, so 4 vector accumulators keep the pipes busy.
REDUCE_ACCUMULATORS = 4

# A float32 sum adds its terms in float32 vectors, 8 of them (128 lanes), over blocks of up to
# 4096 terms (32 a lane), then adds the blocks in float64: as accurate as numpy's pairwise sum
# at these lengths, and float32 vectors read twice the terms per instruction of float64 ones.
# Measured on rows of 4096 here: 1.19 ms for 4096 rows against 1.40 in float64 vectors (torch
# 1.29); smaller blocks were slower (1024: 1.34, 512: 1.46; each block ends in a horizontal sum).
PARTIAL_SUM_BLOCK = 4096
PARTIAL_SUM_ACCUMULATORS = 8

# Vector registers unrolled in an elementwise loop: 2 hides the loop overhead; more only grows
# code, since elementwise kernels are bound by memory bandwidth.
ELEMENTWISE_UNROLL = 2
CACHE_LINE_BYTES = 64
TRANSPOSE_BLOCK_BYTES = 128   # a transposing copy's block along its source's contiguous axis

# Outputs a cpu kernel keeps in a local array while a strided reduction runs outside them
# (CacheWrite): 2048 float32 are 8 KB, well inside L1 beside the rows being read.
CACHE_WRITE_TILE = 2048

TILE_MIN_ACCUMULATORS = 4   # (fewer: not worth a tile)

# Vector accumulators of a register tile (CacheWrite, or dot products): all but 4 of the
# target's vector registers (those hold a step's loads and broadcasts), at most 16. 4 rows x 4
# vectors measured 130-250 GFLOP/s on a 784x512 weight gradient on an AVX-512 CPU (32
# registers), against ~50 for a one-row tile; on an AVX2 CPU (16 registers) the same tile
# spilled: matmul 1024 at 64 GFLOP/s, against 175 with 4 x 2 (Zen 3, 2 cores).
TILE_ACCUMULATORS = 16
TILE_SPARE_REGISTERS = 4


# A register tile need not divide the output (its last, shorter tile along an axis runs apart:
# tails.py) where the axis has at least this many tiles, so that the short one is rare. On AVX2
# (12 accumulators; Zen 3, 2 cores), against the largest dividing tiles: matmul 2048 in 6 x 16
# 1.04-1.09x faster than 4 x 16, 1024 1.00-1.03x, 512 1.20x; 300 and 500 in 6 x 16 1.2x faster
# than 12 x 4 (half vectors), 700 1.36x; 100 (6 tiles of 16 columns) 0.79x: not there.
TILE_TAIL_MIN_TILES = 16


def tile_accumulators(target) -> int:
    """The most vector accumulators a register tile may keep on `target`."""
    return max(TILE_MIN_ACCUMULATORS, min(TILE_ACCUMULATORS, target.vector_registers - TILE_SPARE_REGISTERS))


# Packing a panel (a block of columns of B in A @ B, all of K) into contiguous memory, once per
# block of columns: worth it where the panel, read in place, would not stay in cache: its rows
# lie at least 1 KB apart (rows 8 KB apart share a few cache sets: a 2048x64 float32 panel of a
# 2048x2048 B thrashed L2 and came from L3), or its K rows span a quarter of a core's L2 (rows
# s bytes apart use one set in s/64, so a cache of C bytes holds C/s of them: B 2048x128,
# rows 512 B apart, ran at 90 GFLOP/s read in place and at 196 packed on a Zen 3 with 512 KB
# of L2; 512 rows of it 1.15x faster packed, 128 rows 1.1x: not worth a rule); at least 16
# blocks of rows reuse it, and it fits in half of a core's L2, so that the rows of A streaming
# past do not evict it. The panel lives on the stack.
PACK_MIN_STRIDE_BYTES = 1024
PACK_MIN_REUSE = 16

# x @ w.T (a Linear layer's forward): w runs along K, so the tile's columns are far apart and a
# dot-product tile vectorizes along K instead. Where this many rows of x reuse w and the product
# does this many multiply-adds, w is copied transposed first (fusion: a kernel of its own) and
# the product runs in the register tile of x @ w. Copy and product against the dot tile (Zen 3,
# 2 cores, four runs): 2048x128 @ 128x512, 2048x512 @ 512x128, 2048x128 @ 128x(96, 128, 384)
# 1.1-1.4x faster; 128x784 @ 784x512 and 256^3 0.9-1.3x, noise; 128^3: the copy's launch costs.
TRANSPOSED_COPY_MIN_ROWS = 256
TRANSPOSED_COPY_MIN_WORK = 1 << 24


def pack_span_bytes(target) -> int:
    """The span of a panel's rows in memory from which it is packed: a quarter of a core's L2."""
    return target.l2_bytes // 4


def pack_panel_bytes(target) -> int:
    """The largest panel worth packing: half of a core's L2."""
    return target.l2_bytes // 2


# Rows of a register tile whose row is a whole short last axis (at most two vectors: a 10-class
# output layer's weight gradient): 8 rows measured 60-100 us on 512x10 over a batch of 128,
# against ~190 for a one-row tile.
SHORT_ROW_TILES = (8, 4, 2)

# Register tiles (rows, columns) of dot products vectorized along the reduction, best first:
# 4 x 4 keeps 16 vector accumulators; measured 148 GFLOP/s on x @ w.T (128x784 by 784x512)
# on an AVX-512 CPU, against 48 for one dot product at a time. (A target takes the first that
# fits in its tile_accumulators.)
DOT_TILES = ((4, 4), (4, 2), (2, 4), (2, 2))

# Reductions shorter than this keep one dot product at a time: a tile's lanes, added up at the
# end, would cost more than they save.
DOT_TILE_MIN_REDUCTION = 64

# The shortest last output axis worth a CacheWrite tile: 4 lanes (a 128-bit vector) already
# beat a reduction that gathers one element per lane across memory.
CACHE_WRITE_MIN_LANES = 4

# The fewest terms per output worth a CacheWrite tile of less than one vector: such a tile is
# zeroed and stored once per few outputs, which a short sum does not pay back. Winograd's weight
# transform (3 terms an output, 6 outputs a tile) took 0.2 ms tiled and 0.015 as plain loops.
CACHE_WRITE_MIN_TERMS = 8

# An elementwise value that a reduction reads broadcast over at least this many elements per
# element (the gradient `g * (h > 0)` in a weight gradient, once per input feature) is
# computed once into memory instead of inside the reduction's loop: a write and a read beat
# recomputing a few operations and loads 16 times or more.
RECOMPUTE_BROADCAST_MAX = 16

# An elementwise value read by several consumers is recomputed by each while its expression has
# at most this many nodes that compute (loads and ops; views are index math and count nothing),
# cheaper than a round trip through memory, else computed into memory once: recomputing
# compounds along a chain of such values. (Counting views, a layer norm over a residual stream
# of 3 broadcast biases took 2 kernels at T >= 2 in generation and 1 at T = 1.)
SHARED_RECOMPUTE_MAX = 24

# The most nodes a kernel's expression may have (counted as a tree): beyond it, fusion computes
# part of it into memory first. LLVM's compile time grows with the square of a dependent chain's
# length: 256 chained adds compiled in ~0.05 s here, 512 in ~0.25 s, 1000 in ~0.9 s, 3000 in ~5 s.
MAX_KERNEL_NODES = 256

# ---- gpu --------------------------------------------------------------------------------------

# Threads per block: a power of two (the reduction tree halves it), 256 keeps several blocks
# resident per multiprocessor and is within every device's limit we know of.
GPU_THREADS = 256


def gpu_threads(target) -> int:
    limit = target.max_threads_per_block or GPU_THREADS
    threads = GPU_THREADS
    while threads > limit:
        threads //= 2
    return threads


# A reduction computes one output per thread (serially) when there are at least this many
# outputs per compute unit: then threads alone fill the device and no tree is needed.
GPU_OUTPUTS_PER_THREAD_MIN = 16 * GPU_THREADS

# Reductions this short, or over a non-contiguous axis, also run one output per thread when
# there are enough outputs to fill a block: a tree would cost more than it shares.
GPU_SHORT_REDUCTION = 64

# Side of the output tile a block computes in a local-memory matmul (one output per thread, so
# TILE*TILE threads): each loaded element is then used TILE times from local memory.
GPU_MATMUL_TILE = 16

# A device whose work-items have vectors at least this wide (4 floats) is offered the cpu's
# schedules too (scheduler/schedule.py work_item_schedule): a cpu behind OpenCL, as PoCL is
GPU_WORK_ITEM_SIMD_BYTES = 16


def cpu_like(target) -> bool:
    """A block-launched device that is a cpu underneath (local memory emulated, work-items with
    SIMD lanes: PoCL): it gets the cpu's schedules, its parallel loop's iterations as blocks of
    one work-item (schedule.work_item_schedule). On PoCL (Zen 3, 2 cores), against the gpu
    schedules in turns in one process: row sums of 4096^2 9.1 -> 2.3 ms, a row softmax 78 -> 30
    ms, an elementwise chain over 16M floats 9.1 -> 8.2 ms."""
    return target.launches_blocks and target.local_memory_emulated and target.simd_bytes >= GPU_WORK_ITEM_SIMD_BYTES
