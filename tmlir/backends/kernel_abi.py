"""The calling convention shared by the CUDA C printer and the backends that run it.

A kernel is an `extern "C" __global__ void` function whose parameters are device
pointers to float/int buffers or scalars. Backends launch it the way `cuLaunchKernel`
does: a grid, a block and an array of pointers to each argument value.
"""

from __future__ import annotations

from dataclasses import dataclass

#: C types a kernel parameter may have, as spelled in the generated source.
POINTER_CTYPES = ("float*", "const float*", "int*", "const int*", "long long*",
                  "const long long*", "bool*", "const bool*")
SCALAR_CTYPES = ("int", "long long", "float")


@dataclass(frozen=True)
class KernelParam:
    """One kernel parameter: its C name and C type (one of POINTER/SCALAR_CTYPES)."""

    name: str
    ctype: str

    @property
    def is_pointer(self) -> bool:
        return self.ctype.endswith("*")


@dataclass(frozen=True)
class KernelSignature:
    """Name and parameters of one `extern "C" __global__` kernel in a source file."""

    name: str
    params: tuple[KernelParam, ...]
