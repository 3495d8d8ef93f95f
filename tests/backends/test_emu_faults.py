"""A kernel that faults under emu raises EmuError naming it, and Ctrl-C stops a long launch.

Each fault (a wild or null store, integer division by zero, a stack overflow, a bus error, a
trap) must name the kernel, the signal, the block and the thread, leave the process alive,
and leave the module (and others) launching correctly afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from tmlir.backends.emu import EmuError, EmuModule, compile_emu
from tmlir.backends.kernel_abi import KernelParam, KernelSignature

FAULTS = r"""
// Thread (bad_thread) of block (bad_block) stores through `base` (an address as an integer:
// 0 is a null pointer) after a barrier, so the rest of its block is left waiting or ready.
extern "C" __global__ void store(float* __restrict__ out, long long base, int bad_block,
                                 int bad_thread) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  __syncthreads();
  bool bad = blockIdx.x == (unsigned)bad_block && threadIdx.x == (unsigned)bad_thread;
  float* p = bad ? (float*)base : out;
  p[i] = 1.0f;
}

// Thread `d` divides by zero.
extern "C" __global__ void divide(int* __restrict__ out, int d) {
  out[threadIdx.x] = 1000 / (d - (int)threadIdx.x);
}

__device__ int deep(int n) {
  volatile int pad[64];
  pad[0] = n;
  return n <= 0 ? pad[0] : deep(n - 1) + pad[0];
}

// Frames of 16 KiB: without stack-clash probes they would jump past the 4 KiB guard page.
__device__ float deep_wide(int n) {
  volatile float big[4096];
  big[n & 4095] = n;
  return n <= 0 ? big[0] : deep_wide(n - 1) + big[n & 4095];
}

// Every thread recurses `n` levels (about 300 bytes each, or 16 KiB if `wide`) after a barrier.
extern "C" __global__ void recurse(int* __restrict__ out, int n, int wide) {
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = wide ? (int)deep_wide(n) : deep(n);
}

extern "C" __global__ void trap(int* __restrict__ out, int bad_thread) {
  if (threadIdx.x == (unsigned)bad_thread) {
    __builtin_trap();
  }
  out[threadIdx.x] = 1;
}

// `rounds` times: `iters` dependent multiply-adds, then a barrier (about 5 ns per iteration).
extern "C" __global__ void spin(float* __restrict__ out, int iters, int rounds) {
  float acc = threadIdx.x;
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < iters; ++i) {
      acc = acc * 0.999f + 1.0f;
    }
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
"""


def sig(name: str, *params: str) -> KernelSignature:
    """A KernelSignature from "ctype name" strings."""
    return KernelSignature(name, tuple(KernelParam(p.rsplit(" ", 1)[1], p.rsplit(" ", 1)[0])
                                       for p in params))


SIGNATURES = [sig("store", "float* out", "long long base", "int bad_block", "int bad_thread"),
              sig("divide", "int* out", "int d"),
              sig("recurse", "int* out", "int n", "int wide"),
              sig("trap", "int* out", "int bad_thread"),
              sig("spin", "float* out", "int iters", "int rounds")]
DEEP = 1 << 20  # levels of recursion: far past a 64 KiB fiber stack


@pytest.fixture(scope="module")
def faults() -> EmuModule:
    return compile_emu(FAULTS, SIGNATURES)


def stores_correctly(module: EmuModule, grid: int = 4, block: int = 64) -> None:
    """A correct launch of `store` (no bad thread) writes every element."""
    out = np.zeros(grid * block, np.float32)
    module.launch("store", grid, block, [out, 0, -1, -1])
    np.testing.assert_array_equal(out, 1.0)


@pytest.mark.parametrize(("base", "address"), [(0, "0x14"), (1 << 46, "0x400000000014")],
                         ids=["null", "wild"])
def test_bad_store_names_kernel_block_thread_and_address(faults: EmuModule, base: int,
                                                          address: str) -> None:
    out = np.zeros(8 * 64, np.float32)
    with pytest.raises(EmuError) as info:
        faults.launch("store", 8, 64, [out, base, 0, 5])
    assert str(info.value) == (f"kernel 'store': segmentation fault at address {address} "
                               "(not mapped) in block (0,0,0) thread (5,0,0)")
    stores_correctly(faults)


def test_integer_division_by_zero(faults: EmuModule) -> None:
    out = np.zeros(32, np.int32)
    with pytest.raises(EmuError, match=r"^kernel 'divide': arithmetic exception \(integer "
                       r"division by zero or overflow\) in block \(0,0,0\) thread \(7,0,0\)$"):
        faults.launch("divide", 1, 32, [out, 7])
    faults.launch("divide", 1, 32, [out, 100])
    np.testing.assert_array_equal(out, 1000 // (100 - np.arange(32)))


@pytest.mark.parametrize("wide", [0, 1], ids=["deep", "wide_frames"])
def test_stack_overflow_is_reported_and_stacks_are_reused(faults: EmuModule, wide: int) -> None:
    """Infinite recursion hits the fiber's guard page (first in thread 63: the last to reach
    the barrier goes on first). The block's stacks (63 threads ready to run) go back to the
    worker: twenty faults map no new memory."""
    out = np.zeros(64, np.int32)
    with pytest.raises(EmuError, match=r"^kernel 'recurse': stack overflow \(the thread used "
                       r"more than its 64 KiB stack.* in block \(0,0,0\) thread \(63,0,0\)$"):
        faults.launch("recurse", 1, 64, [out, DEEP, wide])
    maps = Path("/proc/self/maps")
    before = len(maps.read_text().splitlines()) if maps.exists() else 0
    for _ in range(20):
        with pytest.raises(EmuError, match="stack overflow"):
            faults.launch("recurse", 1, 64, [out, DEEP, wide])
    if maps.exists():
        assert len(maps.read_text().splitlines()) - before < 8
    faults.launch("recurse", 1, 64, [out, 2, wide])
    np.testing.assert_array_equal(out, 3)


def test_bus_error_on_a_truncated_mapped_file(faults: EmuModule, tmp_path: Path) -> None:
    path = tmp_path / "mapped.bin"
    path.write_bytes(bytes(4 * 8192))
    out = np.memmap(path, np.float32, "r+", shape=(8192,))
    os.truncate(path, 0)  # the pages behind `out` are gone: touching them is SIGBUS
    # The last thread to reach the barrier goes on first: thread 31 faults, at element 31.
    with pytest.raises(EmuError, match=rf"^kernel 'store': bus error at address "
                       rf"{out.ctypes.data + 4 * 31:#x} .* in block \(0,0,0\) thread \(31,0,0\)$"):
        faults.launch("store", 1, 32, [out, 0, -1, -1])
    del out
    stores_correctly(faults)


def test_trap_is_an_illegal_instruction(faults: EmuModule) -> None:
    out = np.zeros(32, np.int32)
    with pytest.raises(EmuError, match=r"^kernel 'trap': illegal instruction at 0x[0-9a-f]+ "
                       r".* in block \(0,0,0\) thread \(9,0,0\)$"):
        faults.launch("trap", 1, 32, [out, 9])
    faults.launch("trap", 1, 32, [out, -1])
    np.testing.assert_array_equal(out, 1)


def test_fault_in_one_block_of_many_stops_the_other_worker(faults: EmuModule,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """With two workers, a fault is reported once, with its own block and thread, and the
    other worker stops instead of running the rest of the grid."""
    monkeypatch.setenv("TMLIR_EMU_THREADS", "2")
    blocks = 20000
    out = np.zeros(blocks * 32, np.float32)
    with pytest.raises(EmuError) as info:
        faults.launch("store", blocks, 32, [out, 0, 3, 17])
    assert str(info.value) == ("kernel 'store': segmentation fault at address 0x1c4 (not mapped) "
                               "in block (3,0,0) thread (17,0,0)")
    assert out.sum() < blocks * 32 / 2  # both workers stopped early
    # Every block faulting, on both workers at once: still one report.
    for _ in range(5):
        with pytest.raises(EmuError) as info:
            faults.launch("recurse", 64, 32, [out.view(np.int32), DEEP, 0])
        assert str(info.value).count("stack overflow") == 1
    stores_correctly(faults, grid=64)


def test_faults_in_other_threads_and_modules(faults: EmuModule) -> None:
    """A launch from a Python thread faults there; a closed module leaves the guard working
    for the others."""
    out = np.zeros(64, np.float32)
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(faults.launch, "store", 1, 64, [out, 0, 0, t]) for t in (1, 2)]
    for t, future in zip((1, 2), futures):
        with pytest.raises(EmuError, match=rf"thread \({t},0,0\)$"):
            future.result()
    other = compile_emu(FAULTS, SIGNATURES[:1])  # another .so (fewer wrappers), unloaded below
    with pytest.raises(EmuError, match="segmentation fault"):
        other.launch("store", 1, 64, [out, 0, 0, 3])
    other.close()
    with pytest.raises(EmuError, match=r"thread \(4,0,0\)$"):
        faults.launch("store", 1, 64, [out, 0, 0, 4])
    stores_correctly(faults)


CHAINED = """
import ctypes, faulthandler, sys
import numpy as np
faulthandler.enable()
from tmlir.backends.emu import EmuError, compile_emu
sys.path.insert(0, sys.argv[1])
from test_emu_faults import FAULTS, SIGNATURES
module = compile_emu(FAULTS, SIGNATURES)
try:
    module.launch("divide", 1, 32, [np.zeros(32, np.int32), 3])
except EmuError as exc:
    print(exc, flush=True)
module.close()
ctypes.string_at(0)  # a fault outside any kernel
"""


def test_fault_outside_kernels_reaches_the_previous_handler() -> None:
    """Python's faulthandler, enabled before the guard, still reports (and the process dies
    of) a segmentation fault outside kernels."""
    result = subprocess.run([sys.executable, "-c", CHAINED, str(Path(__file__).parent)],
                            capture_output=True, text=True, timeout=120)
    assert result.stdout.startswith("kernel 'divide': arithmetic exception")
    assert "Fatal Python error: Segmentation fault" in result.stderr
    assert result.returncode == -signal.SIGSEGV


@pytest.fixture
def default_sigint():
    """Python's default SIGINT handler (KeyboardInterrupt), whatever the test runner set."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


# About 10 s each uninterrupted: 6400 blocks, or one block of 1024 threads and 2000 barriers.
@pytest.mark.parametrize(("grid", "block", "rounds"), [(6400, 256, 1), (1, 1024, 2000)],
                         ids=["many_blocks", "one_block"])
@pytest.mark.usefixtures("default_sigint")
def test_sigint_stops_a_long_launch(faults: EmuModule, grid: int, block: int, rounds: int) -> None:
    out = np.zeros(grid * block, np.float32)
    sent: list[float] = []

    def interrupt() -> None:
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.2, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            faults.launch("spin", grid, block, [out, 1000, rounds])
    finally:
        timer.cancel()
    assert sent and time.perf_counter() - sent[0] < 1.0
    if grid > 1:
        assert 0 < np.count_nonzero(out) < out.size  # stopped half-way
    faults.launch("spin", 2, 32, [out, 3, 2])
    acc = np.arange(32, dtype=np.float32)
    for _ in range(6):
        acc = acc * np.float32(0.999) + np.float32(1.0)
    np.testing.assert_allclose(out[:64], np.tile(acc, 2), rtol=1e-6)
