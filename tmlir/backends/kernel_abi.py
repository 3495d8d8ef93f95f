"""The calling convention shared by the CUDA C printer and the backends that run it.

A kernel is an `extern "C" __global__ void` function whose parameters are device
pointers to buffers of the element types of ``tmlir/dtypes.py``, or scalars. Backends launch it the way `cuLaunchKernel`
does: a grid, a block and an array of pointers to each argument value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tmlir import dtypes

#: numpy dtype of the element a pointer parameter points to, by C element type (the
#: element types of ``tmlir/dtypes.py``: ``float``, ``tm_half``, ``unsigned char``, ...).
POINTER_DTYPES: dict[str, np.dtype] = {d.c: d.numpy for d in dtypes.DTYPES}
#: C types a kernel parameter may have, as spelled in the generated source.
POINTER_CTYPES = tuple(f"{const}{c}*" for c in POINTER_DTYPES for const in ("", "const "))
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
