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
