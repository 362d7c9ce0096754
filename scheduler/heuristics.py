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

# Vector registers unrolled in an elementwise loop: 2 hides the loop overhead; more only grows
# code, since elementwise kernels are bound by memory bandwidth.
ELEMENTWISE_UNROLL = 2
