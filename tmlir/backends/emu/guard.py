"""The emu backend's signal guard: kernel faults become `EmuError`, Ctrl-C stops a launch.

`tmlir_emu_guard.cc` is built once into the cache (like the kernel modules) and loaded once
per process, never unloaded: it owns the SIGSEGV/SIGBUS/SIGFPE/SIGILL handler, which must
outlive every kernel module (those are unloaded by `EmuModule.close`). Each loaded kernel
module receives the guard's function table through its exported `tmlir_emu_set_guard`.

A fault raised by a kernel thread is caught and fails the launch with the signal, block and
thread; every other fault goes on to the handler that was installed before the guard's
(Python's faulthandler, the default action), as if the guard were not there.

A launch made by the main thread while SIGINT has Python's default handler is
interruptible (`before_launch` tells the guard which): the guard hooks SIGINT in front of
Python's handler, so that Ctrl-C sets a flag the launch's workers poll between threads and
blocks (so also at barriers) and the launch returns promptly; Python's handler still runs,
and `KeyboardInterrupt` is raised once the launch has returned. The hook stays installed
between launches, doing nothing but forward, until Python installs another SIGINT handler.
"""

from __future__ import annotations

import _signal  # signal.getsignal wraps it in Python: 50x slower, on every launch
import ctypes
import subprocess
import threading
from pathlib import Path

from tmlir.backends.cache import cache_key, cached_file

SOURCE = Path(__file__).with_name("tmlir_emu_guard.cc")
#: What a launch wrapper returns when SIGINT stopped it.
INTERRUPTED = 2
_FLAGS = ("-std=c++17", "-O2", "-fPIC", "-shared", "-U_FORTIFY_SOURCE")  # plain siglongjmp
_MAIN_THREAD = threading.main_thread().ident

# The process's one guard, loaded on first use and kept (never unloaded) for its lifetime.
_lock = threading.Lock()
_library: ctypes.CDLL | None = None
_armed: ctypes.c_int | None = None  # its tmlir_emu_guard_sigint_armed


def guard_library() -> ctypes.CDLL:
    """The process's guard library, built and loaded (its fault handler installed) on first use.

    Later calls return the same library, whatever the cache folder is by then.
    """
    global _library
    if _library is not None:
        return _library
    with _lock:
        if _library is None:
            _library = _load()
    return _library


def guard_table() -> int:
    """The address of the guard's function table, for a kernel module's `tmlir_emu_set_guard`."""
    return guard_library().tmlir_emu_guard_api()


def _load() -> ctypes.CDLL:
    """Build (cached) and load the guard, install its fault handler, declare its functions."""
    from tmlir.backends.emu.emu import CXX, EmuError, _compiler_version  # emu.py imports us

    source = SOURCE.read_text()
    key = cache_key("emu-guard", source, CXX, *_FLAGS, _compiler_version(CXX))

    def build(out: Path) -> None:
        cmd = [CXX, *_FLAGS, "-x", "c++", "-", "-o", str(out)]
        try:
            result = subprocess.run(cmd, input=source, capture_output=True, text=True)
        except OSError as exc:
            raise EmuError(f"cannot run the host compiler {CXX!r}: {exc}") from None
        if result.returncode != 0:
            raise EmuError(f"{CXX} failed to compile the emu fault guard {SOURCE.name}: "
                           + " | ".join(result.stderr.strip().splitlines()[:5]))

    path = cached_file(key, ".so", build)
    try:
        library = ctypes.CDLL(str(path))
    except OSError as exc:
        raise EmuError(f"cannot load the emu fault guard {path}: {exc}") from None
    library.tmlir_emu_guard_api.restype = ctypes.c_void_p
    library.tmlir_emu_guard_api.argtypes = []
    library.tmlir_emu_guard_install.restype = ctypes.c_int
    library.tmlir_emu_guard_install.argtypes = [ctypes.c_ulong]
    if library.tmlir_emu_guard_install(_MAIN_THREAD) != 0:
        raise EmuError("cannot install the emu fault guard's signal handlers")
    global _armed
    _armed = ctypes.c_int.in_dll(library, "tmlir_emu_guard_sigint_armed")
    return library


def before_launch() -> None:
    """Tell the guard, from the main thread, whether Ctrl-C should stop the coming launch:
    yes while SIGINT has Python's default handler (KeyboardInterrupt)."""
    if _armed is not None and threading.get_ident() == _MAIN_THREAD:
        armed = _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler
        if _armed.value != armed:
            _armed.value = armed


def raise_pending_interrupt() -> None:
    """Run Python's pending signal handlers now: raises the KeyboardInterrupt of a Ctrl-C that
    stopped a launch (the handler already ran in C; Python acts on it here)."""
    ctypes.pythonapi.PyErr_CheckSignals()
