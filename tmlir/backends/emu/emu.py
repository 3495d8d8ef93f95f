"""Run the CUDA C that tmlir emits on the CPU, with real CUDA semantics.

`compile_emu` compiles a generated .cu source unchanged with g++, force-including
`tmlir_emu.h` (which makes every CUDA thread a fiber, `__syncthreads()` a real barrier and
`__shared__` memory per block), and appends one `extern "C"` launch wrapper per kernel:

    int tmlir_emu_launch_<name>(const unsigned* grid3, const unsigned* block3, void** args,
                                char* err, unsigned long errlen);

`args` is an array of pointers to each argument value, as for `cuLaunchKernel`. The wrapper
returns nonzero with a message in `err` when emulation fails (e.g. a barrier deadlock).
Compiled shared objects live in the on-disk cache of `tmlir.backends.cache`, beside a
precompiled `tmlir_emu.h` (a g++ ``.gch``, built once per header, flags and compiler): it
cuts a small model's compile from about 0.4 s to about 0.15 s. Where it cannot be built
(or g++ finds it stale) the header is parsed as text, with the same result.

A loaded module keeps its fiber stacks (two memory mappings each) for reuse by later
launches. `EmuModule.close()` -- also run when the module is garbage collected or leaves a
`with` block -- unmaps them and unloads the shared object, so a process may load thousands
of modules (a tuner does) without running out of `vm.max_map_count`.

``$TMLIR_EMU_OPT`` sets g++'s optimization level (``0``, ``1``, ``2``, ``3``, ``s``;
default ``2``): the test suite uses ``0``, which compiles a small module in about half
the time of ``2`` with the same results (x86-64 SSE arithmetic rounds alike at every
level), while a large model's kernels run several times slower.
"""

from __future__ import annotations

import _ctypes
import ctypes
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from numbers import Integral, Real
from pathlib import Path

import numpy as np

from tmlir import progress
from tmlir.backends import kernel_abi
from tmlir.backends.cache import cache_dir, cache_key, cached_file, cached_path, publish
from tmlir.backends.emu import guard
from tmlir.backends.kernel_abi import KernelParam, KernelSignature
from tmlir.gpu_limits import MAX_SHARED_BYTES, MAX_THREADS_PER_BLOCK

HEADER = Path(__file__).with_name("tmlir_emu.h")
CHECK_HEADER = Path(__file__).with_name("tmlir_emu_check.h")
TENSOR_CORE_HEADER = Path(__file__).with_name("tmlir_emu_tc.h")
TENSOR_CORE_INCLUDE = '#include "tmlir_emu_tc.h"'
HOPPER_HEADER = Path(__file__).with_name("tmlir_emu_hopper.h")
HOPPER_INCLUDE = '#include "tmlir_emu_hopper.h"'
#: Environment variable: "1" makes `compile_emu` build with the sanitizer by default.
CHECK_ENV = "TMLIR_EMU_CHECK"
CXX = "g++"
# Stack-clash protection probes every page of a large stack frame, so a fiber overflowing its
# stack with big local arrays hits its guard page instead of jumping past it.
CXXFLAGS = ("-std=c++17", "-O2", "-fPIC", "-shared", "-fstack-clash-protection")
#: Environment variable: g++'s optimization level for emu builds, in place of CXXFLAGS' -O2.
OPT_ENV = "TMLIR_EMU_OPT"
OPT_LEVELS = ("0", "1", "2", "3", "s")

#: numpy dtype of the element a pointer parameter points to, by C element type.
POINTER_DTYPES = kernel_abi.POINTER_DTYPES
#: ctypes type that carries a scalar parameter, by C type.
SCALAR_CTYPES: dict[str, type[ctypes._SimpleCData]] = {
    "int": ctypes.c_int32,
    "long long": ctypes.c_int64,
    "float": ctypes.c_float,
}
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
DIAGNOSTIC_LINES = 20
_ERROR_BYTES = 1024
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Dims = int | tuple[int, ...]
KernelArg = np.ndarray | int | float


class EmuError(RuntimeError):
    """A kernel failed to compile, was launched wrongly, or failed while being emulated."""


def compile_emu(source: str, kernels: Sequence[KernelSignature],
                check: bool | None = None) -> EmuModule:
    """Compile the CUDA C `source` for the CPU and load it; `kernels` are the launchable ones.

    With `check` (None: ``$TMLIR_EMU_CHECK`` is ``1``) the emu sanitizer checks every global
    and shared-memory access for bounds and shared-memory races (`tmlir.backends.emu.check`);
    a launch with a violation raises `EmuError` naming the kernel, block, thread, buffer and
    index. The shared object is cached on disk, keyed by the source, the generated wrappers,
    the compiler flags, the emulation header (with the sanitizer's, in a check build) and
    the compiler version.
    """
    kernels = tuple(kernels)
    for kernel in kernels:
        _check_signature(kernel)
    if len({k.name for k in kernels}) != len(kernels):
        raise EmuError("compile_emu: kernel names must be unique")
    if check is None:
        check = os.environ.get(CHECK_ENV) == "1"
    wrappers = "".join(_launch_wrapper(k, check) for k in kernels)
    header = emu_header()
    if check:
        from tmlir.backends.emu import check as sanitizer

        source = sanitizer.instrument(source, kernels)
        header = sanitizer.checked_header(header, CHECK_HEADER.read_text())
    flags = cxxflags()
    key = cache_key(source, wrappers, CXX, *flags, header, _compiler_version(CXX))
    path = cached_file(key, ".so", lambda out: _build(f"{source}\n{wrappers}", header, out, flags))
    return sanitizer.CheckedEmuModule(path, kernels) if check else EmuModule(path, kernels)


class EmuModule:
    """A compiled, loaded emu shared object whose kernels can be launched."""

    path: Path

    def __init__(self, path: Path, kernels: Sequence[KernelSignature]) -> None:
        """Load the shared object at `path`, which defines a launch wrapper per kernel."""
        self.path = path
        self._library: ctypes.CDLL | None = None
        try:
            self._library = ctypes.CDLL(str(path))
        except OSError as exc:
            raise EmuError(f"cannot load emu module {path}: {exc}") from None
        self._release = getattr(self._library, "tmlir_emu_release", None)
        self._progress = getattr(self._library, "tmlir_emu_progress", None)
        if self._progress is not None:
            self._progress.restype = ctypes.c_longlong
            self._progress.argtypes = []
        self._kernels = {k.name: k for k in kernels}
        self._entries = {k.name: self._entry(k.name) for k in kernels}
        # Handed the fault guard at the first launch (building it, once, needs the compiler).
        self._set_guard = getattr(self._library, "tmlir_emu_set_guard", None)

    def close(self) -> None:
        """Unmap the fiber stacks this module keeps between launches and unload it.

        Idempotent; a later `launch` raises EmuError. Must not overlap a launch of this
        module from another thread.
        """
        library, self._library = self._library, None
        if library is None:
            return
        self._entries = {}
        if self._release is not None:
            self._release.restype = None
            self._release()
        self._release = None
        _ctypes.dlclose(library._handle)

    def __enter__(self) -> EmuModule:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_library", None) is not None:
            self.close()

    def launch(self, name: str, grid: Dims, block: Dims, args: Sequence[KernelArg],
               shared_bytes: int = 0) -> None:
        """Run kernel `name` on a `grid` of `block`s (ints or up to 3-tuples, x first), with
        `shared_bytes` of dynamic shared memory (at most `MAX_SHARED_BYTES`: every worker
        has a buffer of that size, see tmlir_emu.h).

        Pointer parameters take C-contiguous numpy arrays of the matching dtype, which the
        kernel reads and writes in place; scalar parameters take Python/numpy numbers.
        Returns when every thread has finished. A fault in a kernel thread (bad address,
        integer division by zero, stack overflow) raises EmuError naming it; Ctrl-C in the
        main thread stops the launch within a fraction of a second (KeyboardInterrupt).
        """
        if self._library is None:
            raise EmuError(f"kernel {name!r}: emu module {self.path.name} is closed")
        kernel = self._kernels.get(name)
        if kernel is None:
            known = ", ".join(sorted(self._kernels)) or "none"
            raise EmuError(f"unknown kernel {name!r} (this module has: {known})")
        if not 0 <= shared_bytes <= MAX_SHARED_BYTES:
            raise EmuError(f"kernel {name!r}: {shared_bytes} bytes of dynamic shared memory, "
                           f"expected 0 to {MAX_SHARED_BYTES}")
        grid3 = _dims(name, "grid", grid, MAX_GRID)
        block3 = _dims(name, "block", block, MAX_BLOCK)
        if block3[0] * block3[1] * block3[2] > MAX_THREADS_PER_BLOCK:
            raise EmuError(f"kernel {name!r}: block {block3} has more than "
                           f"{MAX_THREADS_PER_BLOCK} threads")
        if len(args) != len(kernel.params):
            raise EmuError(f"kernel {name!r} takes {len(kernel.params)} arguments "
                           f"({', '.join(p.name for p in kernel.params)}), got {len(args)}")
        values = [_marshal(name, param, arg) for param, arg in zip(kernel.params, args)]
        if self._set_guard is not None:
            self._attach_guard()
        argv = (ctypes.c_void_p * max(len(values), 1))(*map(ctypes.addressof, values))
        err = ctypes.create_string_buffer(_ERROR_BYTES)
        guard.before_launch()
        blocks = grid3[0] * grid3[1] * grid3[2]
        with _LaunchProgress(self._progress, name, blocks):
            status = self._entries[name]((ctypes.c_uint * 3)(*grid3), (ctypes.c_uint * 3)(*block3),
                                         argv, err, ctypes.c_ulong(_ERROR_BYTES))
        if status == guard.INTERRUPTED:
            guard.raise_pending_interrupt()  # KeyboardInterrupt, unless the handler changed
        if status != 0:
            raise EmuError(f"kernel {name!r}: {err.value.decode(errors='replace')}")

    def _attach_guard(self) -> None:
        """Hand the module the process's fault guard: faults in its kernels become EmuError."""
        set_guard, self._set_guard = self._set_guard, None
        set_guard.argtypes = [ctypes.c_void_p]
        if set_guard(guard.guard_table()) != 0:
            raise EmuError(f"emu module {self.path.name} and the fault guard disagree on its layout")

    def _entry(self, name: str) -> ctypes._CFuncPtr:
        """The ctypes function of kernel `name`'s launch wrapper."""
        try:
            entry = getattr(self._library, f"tmlir_emu_launch_{name}")
        except AttributeError:
            raise EmuError(f"{self.path} has no launch wrapper for kernel {name!r}") from None
        entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                          ctypes.c_ulong]
        entry.restype = ctypes.c_int
        return entry


def emu_header() -> str:
    """The text force-included into every emu build: tmlir_emu.h with tmlir_emu_tc.h and
    tmlir_emu_hopper.h in place of their includes (the header is precompiled from a copy in
    the cache, where a relative include would not be found, and the cache key must cover
    every file)."""
    header = HEADER.read_text()
    for include, path in ((TENSOR_CORE_INCLUDE, TENSOR_CORE_HEADER), (HOPPER_INCLUDE, HOPPER_HEADER)):
        if header.count(include) != 1:
            raise EmuError(f"tmlir_emu.h must include {include} once")
        header = header.replace(include, path.read_text().replace("#pragma once\n", "", 1))
    return header


def _element_type(param: KernelParam) -> str:
    """The C type a pointer parameter points to ("const float*" -> "float")."""
    return param.ctype.removesuffix("*").removeprefix("const ").strip()


def _check_signature(kernel: KernelSignature) -> None:
    """Reject kernel names and parameter types that the launcher cannot handle."""
    if not _IDENTIFIER.fullmatch(kernel.name):
        raise EmuError(f"kernel name {kernel.name!r} is not a C identifier")
    for param in kernel.params:
        known = (_element_type(param) in POINTER_DTYPES if param.is_pointer
                 else param.ctype in SCALAR_CTYPES)
        if not known or not _IDENTIFIER.fullmatch(param.name):
            raise EmuError(f"kernel {kernel.name!r}: parameter {param.name!r} has "
                           f"unsupported C type {param.ctype!r}")


def _launch_wrapper(kernel: KernelSignature, check: bool = False) -> str:
    """C++ for `tmlir_emu_launch_<name>`: unpack cuLaunchKernel-style args, run the grid.

    With `check` (a sanitizer build) the arguments are followed by an array of the element
    count of each pointer argument; pointers are passed to the kernel as checked GlobalRefs
    and a violation fails the launch (`tmlir.backends.emu.check`)."""
    params = kernel.params
    loads = "".join(f"  {p.ctype} a{i} = *({p.ctype}*)args[{i}];\n" for i, p in enumerate(params))
    head = (f'extern "C" int tmlir_emu_launch_{kernel.name}(const unsigned* grid3, '
            f"const unsigned* block3, void** args, char* err, unsigned long errlen) {{\n"
            f"  (void)args;\n{loads}")
    if not check:
        call = ", ".join(f"a{i}" for i in range(len(params)))
        return (f"{head}  return ::tmlir_emu::launch(grid3, block3, [=] {{ {kernel.name}({call}); }}, "
                f"err, errlen);\n}}\n")
    refs = "".join(f"  const ::tmlir_emu::check::GlobalRef<{p.ctype.removesuffix('*')}> g{i}{{a{i}, "
                   f'sizes[{i}], "{p.name}"}};\n' for i, p in enumerate(params) if p.is_pointer)
    call = ", ".join(f"g{i}" if p.is_pointer else f"a{i}" for i, p in enumerate(params))
    return (f"{head}  const long long* sizes = *(const long long**)args[{len(params)}];\n{refs}"
            f'  ::tmlir_emu::check::Launch checked("{kernel.name}");\n'
            f"  const int status = ::tmlir_emu::launch(grid3, block3, [=, &checked] {{ "
            f"::tmlir_emu::check::enter(&checked); {kernel.name}({call}); }}, err, errlen);\n"
            f"  return ::tmlir_emu::check::finish(checked, status, err, errlen);\n}}\n")


@functools.cache
def _compiler_version(cxx: str) -> str:
    """`cxx --version`, part of the cache key (memoized: one subprocess per process)."""
    try:
        result = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise EmuError(f"cannot run the host compiler {cxx!r}: {exc}") from None
    return result.stdout


def cxxflags() -> tuple[str, ...]:
    """CXXFLAGS with the optimization level of ``$TMLIR_EMU_OPT`` (unset: CXXFLAGS as is);
    an EmuError naming the variable and the levels it takes when it holds anything else."""
    level = os.environ.get(OPT_ENV, "").strip()
    if not level:
        return CXXFLAGS
    if level not in OPT_LEVELS:
        raise EmuError(f"${OPT_ENV}={level!r} is not an optimization level; expected one of "
                       f"{', '.join(OPT_LEVELS)}")
    return tuple(f"-O{level}" if flag.startswith("-O") else flag for flag in CXXFLAGS)


def _precompiled_header(header: str, build_flags: tuple[str, ...]) -> Path:
    """The header to force-include: a copy of `tmlir_emu.h` beside its precompiled form in
    the cache (g++ takes ``<name>.gch`` for ``-include <name>``), built on first use in a
    temporary folder renamed into place; the plain header where that fails."""
    flags = tuple(f for f in build_flags if f != "-shared")
    key = cache_key("emu-pch", header, CXX, *flags, _compiler_version(CXX))
    folder = cache_dir() / f"{key}.pch"
    if cached_path(key, ".pch") is not None:  # checked against its record
        return folder / "tmlir_emu.h"
    tmp = Path(tempfile.mkdtemp(prefix=f".{key[:16]}-", dir=folder.parent))
    try:
        (tmp / "tmlir_emu.h").write_text(header)
        cmd = [CXX, *flags, "-x", "c++-header", str(tmp / "tmlir_emu.h"), "-o",
               str(tmp / "tmlir_emu.h.gch")]
        if subprocess.run(cmd, capture_output=True, check=False).returncode != 0:
            return HEADER
        publish(tmp, folder)  # recorded and renamed, unless another process put it there first
    except OSError:
        return HEADER
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder / "tmlir_emu.h" if (folder / "tmlir_emu.h.gch").is_file() else HEADER


def _build(code: str, header: str, out: Path, flags: tuple[str, ...] = CXXFLAGS) -> None:
    """Compile `code` (CUDA C plus wrappers) with `flags` into the shared object `out`,
    force-including `header` (the text of tmlir_emu.h, precompiled where possible)."""
    include = ["-include", str(_precompiled_header(header, flags))]
    if include[1] == str(HEADER) and header != HEADER.read_text():  # a sanitizer build, no PCH
        code, include = f"{header}\n{code}", []
    cmd = [CXX, *flags, *include, "-x", "c++", "-", "-o", str(out)]
    try:
        result = subprocess.run(cmd, input=code, capture_output=True, text=True)
    except OSError as exc:
        raise EmuError(f"cannot run the host compiler {CXX!r}: {exc}") from None
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        shown = lines[:DIAGNOSTIC_LINES]
        if len(lines) > DIAGNOSTIC_LINES:
            shown.append(f"... ({len(lines) - DIAGNOSTIC_LINES} more lines)")
        raise EmuError(f"{CXX} failed to compile the kernel source for the emu backend "
                       f"(exit status {result.returncode}):\n" + "\n".join(shown))


def _dims(kernel: str, what: str, dims: Dims, limits: tuple[int, int, int]) -> tuple[int, ...]:
    """Normalize a grid/block size to 3 positive ints within CUDA's limits."""
    dims = (dims,) if isinstance(dims, Integral) else tuple(dims)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, Integral) for d in dims):
        raise EmuError(f"kernel {kernel!r}: {what} must be an int or a tuple of 1 to 3 ints, "
                       f"got {dims!r}")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    for axis, (size, limit) in enumerate(zip(dims, limits)):
        if not 1 <= size <= limit:
            raise EmuError(f"kernel {kernel!r}: {what} dimension {'xyz'[axis]} is {size}, "
                           f"must be in [1, {limit}]")
    return dims


def _marshal(kernel: str, param: KernelParam, arg: object) -> ctypes._SimpleCData:
    """The C value passed for `param`, after checking `arg` fits it."""
    where = f"kernel {kernel!r}: parameter {param.name!r} ({param.ctype})"
    if param.is_pointer:
        dtype = POINTER_DTYPES[_element_type(param)]
        if not isinstance(arg, np.ndarray):
            raise EmuError(f"{where} expects a numpy array, got {type(arg).__name__}")
        if arg.dtype != dtype:
            raise EmuError(f"{where} expects dtype {dtype}, got {arg.dtype}")
        if not arg.flags.c_contiguous:
            raise EmuError(f"{where} expects a C-contiguous array")
        if not param.ctype.startswith("const") and not arg.flags.writeable:
            raise EmuError(f"{where} is written by the kernel but the array is read-only")
        return ctypes.c_void_p(arg.ctypes.data)
    carrier = SCALAR_CTYPES[param.ctype]
    wanted = Real if param.ctype == "float" else Integral
    if isinstance(arg, bool | np.bool_) or not isinstance(arg, wanted):
        raise EmuError(f"{where} expects {'a float' if wanted is Real else 'an int'}, "
                       f"got {type(arg).__name__}")
    if carrier is ctypes.c_float:
        return carrier(float(arg))
    bits = 8 * ctypes.sizeof(carrier)
    if not -(2 ** (bits - 1)) <= int(arg) < 2 ** (bits - 1):
        raise EmuError(f"{where}: {arg} does not fit in {bits} bits")
    return carrier(int(arg))


class _LaunchProgress:
    """A progress bar of a launch's blocks, on a terminal only (`tmlir.progress`): a thread
    that waits `progress.DELAY` seconds and, if the launch is still running, shows how many
    blocks it has started until it ends. Nothing at all when bars are off."""

    POLL = 0.25

    def __init__(self, counter: ctypes._CFuncPtr | None, kernel: str, blocks: int) -> None:
        self.counter, self.kernel, self.blocks = counter, kernel, blocks
        self.thread: threading.Thread | None = None
        self.done = threading.Event()

    def __enter__(self) -> _LaunchProgress:
        if self.counter is not None and self.blocks > 1 and progress.enabled():
            self.thread = threading.Thread(target=self._show, daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.thread is not None:
            self.done.set()
            self.thread.join()

    def _show(self) -> None:
        if self.done.wait(progress.DELAY):
            return
        from tqdm import tqdm

        with tqdm(total=self.blocks, desc=f"kernel {self.kernel}", unit="block", leave=False,
                  file=sys.stderr, dynamic_ncols=True) as bar:
            while not self.done.wait(self.POLL):
                bar.update(max(0, min(self.counter(), self.blocks) - bar.n))
