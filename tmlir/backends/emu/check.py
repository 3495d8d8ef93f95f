"""The emu sanitizer: compile a kernel file so that every memory access is checked.

``compile_emu(source, kernels, check=True)`` (or ``TMLIR_EMU_CHECK=1``) builds the source
rewritten by `instrument` against `tmlir_emu_check.h`, which checks every global and
``__shared__`` access against its buffer's bounds and every ``__shared__`` access for a race
with another thread's since the last barrier. A launch with a violation raises `EmuError`:

    kernel 'conv_0': emu check: block (3,0,0) thread (17,0,0): out-of-bounds store to 'relu'
    at index 4096 (buffer has 4096 elements)

The rewriting works on the form `tmlir.backends.cuda_c` emits (and hand-written code of the
same form), not on C++ in general:

- each pointer parameter of a launchable kernel, ``const float* __restrict__ x``, becomes
  ``::tmlir_emu::check::GlobalRef<const float> x`` (its ``x[i]`` is checked);
- each ``__shared__ T name[d0][d1]...;`` with literal dimensions becomes a checked
  ``SharedArray<T, d0, d1, ...>`` seen through a view called ``name``;
- each typed view into dynamic shared memory, ``T (&name)[d0]... =
  *reinterpret_cast<T (*)[d0]...>(tmlir_dynamic_smem + offset);``, becomes such an array
  too (the printer's views never overlap, so the checks see the same accesses);
- each vector load ``*reinterpret_cast<const float4*>(&x[i])`` becomes
  ``::tmlir_emu::check::load_vector<float4>(x, i)`` (bounds of every element, alignment).

The element counts travel with the launch: `CheckedEmuModule` gives every kernel one more
parameter, `SIZES_PARAM`, an int64 array of the element count of each pointer argument
(0 for scalars), which its launch wrapper (``_launch_wrapper(kernel, check=True)``) reads
after the kernel's own arguments.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from tmlir.backends.emu.emu import EmuError, EmuModule, KernelArg, _element_type
from tmlir.backends.kernel_abi import KernelParam, KernelSignature

#: The extra kernel parameter carrying the element counts of the pointer arguments.
SIZES_PARAM = KernelParam("tmlir_emu_sizes", "const long long*")
CHECK_INCLUDE = '#include "tmlir_emu_check.h"'

_SHARED = re.compile(r"__shared__\s+(?P<type>[A-Za-z_][\w ]*?)\s+(?P<name>[A-Za-z_]\w*)"
                     r"(?P<dims>(?:\s*\[\s*\d+\s*\])+)(?P<align>\s*__align__\(\d+\))?\s*;")
_DYNAMIC_VIEW = re.compile(r"(?P<type>[A-Za-z_][\w ]*?)\s*\(&(?P<name>[A-Za-z_]\w*)\)(?P<dims>(?:\[\d+\])+)\s*="
                           r"\s*\*reinterpret_cast<[^;]*>\(tmlir_dynamic_smem(?:\s*\+\s*(?P<offset>\d+))?\);")
_POINTER = re.compile(r"\s*(?P<const>const\s+)?(?P<type>[A-Za-z_][\w ]*?)\s*\*\s*"
                      r"(?:__restrict__\s+)?(?P<name>[A-Za-z_]\w*)\s*")


def checked_header(header: str, check_header: str) -> str:
    """The text force-included by a check build: `header` (tmlir_emu.h) compiled with
    ``TMLIR_EMU_CHECK`` defined and `check_header` in place of its include."""
    if header.count(CHECK_INCLUDE) != 1:
        raise EmuError(f"tmlir_emu.h must include {CHECK_INCLUDE} once for the emu sanitizer")
    body = check_header.replace("#pragma once\n", "", 1)
    return "#define TMLIR_EMU_CHECK 1\n" + header.replace(CHECK_INCLUDE, body)


def _view_alignment(offset: str | None) -> int:
    """The alignment a view at `offset` of dynamic shared memory (aligned to 1024 bytes) has:
    the largest power of two dividing it, 16 to 1024 (a swizzled wgmma tile needs 1024)."""
    value = int(offset or 0)
    return 1024 if value % 1024 == 0 else max(16, value & -value)


def instrument(source: str, kernels: Sequence[KernelSignature]) -> str:
    """`source` with the pointer parameters of `kernels` and every fixed-size ``__shared__``
    array replaced by their checked forms (see the module docstring)."""
    for kernel in kernels:
        source = _check_parameters(source, kernel)
    source = _DYNAMIC_VIEW.sub(lambda m: f"__shared__ {m['type']} {m['name']}{m['dims']} "
                                         f"__align__({_view_alignment(m['offset'])});", source)
    return _checked_vector_loads(_SHARED.sub(_checked_shared, source))


_VECTOR_LOAD = re.compile(r"\*reinterpret_cast<const (?P<type>\w+)\*>\(&(?P<name>[A-Za-z_]\w*)\[")


def _checked_vector_loads(source: str) -> str:
    """`source` with every ``*reinterpret_cast<const V*>(&x[i])`` as ``load_vector<V>(x, i)``
    (the index runs to the ``]`` that closes its ``[``)."""
    out, pos = [], 0
    while (match := _VECTOR_LOAD.search(source, pos)) is not None:
        depth, end = 1, match.end()
        while depth and end < len(source):
            depth += {"[": 1, "]": -1}.get(source[end], 0)
            end += 1
        if depth or source[end:end + 1] != ")":
            raise EmuError(f"emu check: cannot read the vector load at '{source[match.start():end + 1]}'")
        index = source[match.end():end - 1]
        out += [source[pos:match.start()],
                f"::tmlir_emu::check::load_vector<{match['type']}>({match['name']}, {index})"]
        pos = end + 1
    return "".join(out) + source[pos:]


def _check_parameters(source: str, kernel: KernelSignature) -> str:
    """`source` with `kernel`'s pointer parameters declared as GlobalRefs."""
    where = f"emu check: kernel {kernel.name!r}"
    match = re.search(rf"__global__[^;{{}}]*?\b{re.escape(kernel.name)}\s*\(", source)
    if match is None:
        raise EmuError(f"{where}: no `__global__ ... {kernel.name}(` definition in the source")
    start = match.end()
    end = source.find(")", start)
    pieces = source[start:end].split(",") if source[start:end].strip() else []
    if end < 0 or len(pieces) != len(kernel.params):
        raise EmuError(f"{where}: its parameter list in the source does not match its "
                       f"{len(kernel.params)} parameters")
    checked = []
    for piece, param in zip(pieces, kernel.params):
        if not param.is_pointer:
            checked.append(piece)
            continue
        m = _POINTER.fullmatch(piece)
        if m is None or m["name"] != param.name or " ".join(m["type"].split()) != _element_type(param):
            raise EmuError(f"{where}: parameter {param.name!r} ({param.ctype}) is declared as "
                           f"{' '.join(piece.split())!r} in the source")
        const = "const " if param.ctype.startswith("const") else ""
        lead = piece[:len(piece) - len(piece.lstrip())]
        checked.append(f"{lead}::tmlir_emu::check::GlobalRef<{const}{_element_type(param)}> {param.name}")
    return source[:start] + ",".join(checked) + source[end:]


def _checked_shared(match: re.Match[str]) -> str:
    """One line declaring the checked storage of a shared array and its view."""
    ctype, name = " ".join(match["type"].split()), match["name"]
    dims = ", ".join(re.findall(r"\d+", match["dims"]))
    storage = f"{name}_tmlir_check"
    align = match["align"] or ""  # the data comes first in a SharedArray: it keeps the alignment
    return (f"__shared__ ::tmlir_emu::check::SharedArray<{ctype}, {dims}> {storage}{align}; "
            f"const auto {name} = ::tmlir_emu::check::shared_view({storage}, \"{name}\");")


def with_sizes(kernel: KernelSignature) -> KernelSignature:
    """`kernel` with `SIZES_PARAM` after its own parameters (what a check build launches)."""
    return KernelSignature(kernel.name, (*kernel.params, SIZES_PARAM))


class CheckedEmuModule(EmuModule):
    """An `EmuModule` built with the sanitizer: each launch passes the element count of
    every pointer argument to the kernel's checks."""

    def __init__(self, path, kernels: Sequence[KernelSignature]) -> None:
        """Load the check build at `path` of `kernels` (their own signatures)."""
        self._checked = {k.name: k for k in kernels}
        super().__init__(path, [with_sizes(k) for k in kernels])

    def launch(self, name: str, grid, block, args: Sequence[KernelArg], shared_bytes: int = 0) -> None:
        """`EmuModule.launch`, with every access of the kernel checked."""
        kernel = self._checked.get(name)
        if kernel is None:
            return super().launch(name, grid, block, args, shared_bytes)  # unknown: EmuModule says so
        if len(args) != len(kernel.params):
            raise EmuError(f"kernel {name!r} takes {len(kernel.params)} arguments "
                           f"({', '.join(p.name for p in kernel.params)}), got {len(args)}")
        sizes = np.array([arg.size if param.is_pointer and isinstance(arg, np.ndarray) else 0
                          for param, arg in zip(kernel.params, args)] or [0], np.int64)
        super().launch(name, grid, block, [*args, sizes], shared_bytes)
