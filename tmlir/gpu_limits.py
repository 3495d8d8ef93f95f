"""Limits of the CUDA execution model that the compiler relies on, in one place.

They hold for every GPU we target (sm_70 and newer): templates size their tiles within them,
the dialects verify launches against them and the tuner prunes candidates with them.
"""

WARP_SIZE = 32
"""Threads per warp: the unit of ``shuffle`` and of lock-step execution."""
MAX_THREADS_PER_BLOCK = 1024
"""Threads in one block, at most."""
MAX_STATIC_SHARED_BYTES = 48 * 1024
"""Statically declared ``__shared__`` memory per block, at most (more needs an opt-in)."""
MAX_REGISTERS_PER_THREAD = 255
"""Registers one thread may use; ptxas spills beyond them."""
MAX_GRID_X = 2**31 - 1
"""Blocks along ``x`` in one launch, at most (``gridDim.x``)."""
MAX_GRID_YZ = 65535
"""Blocks along ``y`` and along ``z`` in one launch, at most."""
GRID_STRIDE_BLOCKS = 65536
"""Blocks launched for a kernel whose grid exceeds `MAX_GRID_X`: it loops over its blocks
(grid-stride), about 15 waves of resident blocks on a 132-SM GPU, so the load stays even."""
