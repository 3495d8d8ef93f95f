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
MAX_OPTIN_SHARED_BYTES = {
    "sm_70": 96 * 1024, "sm_75": 64 * 1024, "sm_80": 163 * 1024, "sm_86": 99 * 1024, "sm_87": 163 * 1024,
    "sm_89": 99 * 1024, "sm_90": 227 * 1024, "sm_100": 227 * 1024, "sm_120": 99 * 1024,
}
"""Shared memory one block may use after opting in (``cudaFuncAttributeMaxDynamicSharedMemorySize``;
the device attribute ``MaxSharedMemoryPerBlockOptin``), by architecture: a kernel declares what
exceeds `MAX_STATIC_SHARED_BYTES` as dynamic shared memory."""
MAX_SHARED_BYTES = max(MAX_OPTIN_SHARED_BYTES.values())
"""Shared memory of one block on any architecture (sm_90's 227 KiB): the most a kernel may declare."""
CP_ASYNC_ARCH = 80
"""The oldest compute capability with ``cp.async`` (sm_80)."""
REFERENCE_ARCH = "sm_80"
"""The architecture whose limits apply where a caller names none (the oldest with ``cp.async``)."""


def arch_number(arch: str) -> int:
    """The compute capability of ``sm_XY`` as the number ``XY`` (``sm_90``: 90)."""
    return int(arch.removeprefix("sm_"))


def max_shared_bytes(arch: str | None = None) -> int:
    """Shared memory per block (opted in) on `arch` (`REFERENCE_ARCH`'s when None or unknown)."""
    return MAX_OPTIN_SHARED_BYTES.get(arch or REFERENCE_ARCH, MAX_OPTIN_SHARED_BYTES[REFERENCE_ARCH])
