"""The cuda-python driver runtime: errors without a GPU, end-to-end launches with one."""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import numpy as np
import pytest

from tmlir.backends import cuda_runtime
from tmlir.backends.cuda_runtime import (
    CudaModule,
    CudaRuntimeError,
    DeviceBuffer,
    cuda_available,
    device_arch,
    pack_args,
)
from tmlir.backends.kernel_abi import KernelParam, KernelSignature
from tmlir.backends.ptx import compile_cubin, compile_kernels_ptx, compile_ptx

SOURCE = r"""
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void block_sum(const float* x, float* y, float scale) {
  __shared__ float s[256];
  s[threadIdx.x] = x[blockIdx.x * 256 + threadIdx.x];
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = s[0] * scale;
}

extern "C" __global__ void dyn_shared_reverse(const int* x, int* y) {
  extern __shared__ int buf[];
  buf[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  y[threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}
"""

VECTOR_ADD = KernelSignature("vector_add", (
    KernelParam("a", "const float*"), KernelParam("b", "const float*"),
    KernelParam("c", "float*"), KernelParam("n", "int")))
BLOCK_SUM = KernelSignature("block_sum", (
    KernelParam("x", "const float*"), KernelParam("y", "float*"), KernelParam("scale", "float")))
REVERSE = KernelSignature("dyn_shared_reverse", (
    KernelParam("x", "const int*"), KernelParam("y", "int*")))
KERNELS = (VECTOR_ADD, BLOCK_SUM, REVERSE)

HAVE_GPU = cuda_available()


def gpu_test(fn: Callable[..., None]) -> Callable[..., None]:
    """Mark `fn` as needing a CUDA GPU and skip it where there is none."""
    return pytest.mark.gpu(pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU")(fn))


def test_cuda_available_is_bool() -> None:
    assert isinstance(cuda_available(), bool)
    assert cuda_available() == HAVE_GPU  # stable, and never raises


@pytest.mark.skipif(HAVE_GPU, reason="a CUDA GPU is present")
def test_no_gpu_errors_are_clear() -> None:
    with pytest.raises(CudaRuntimeError, match=r"^no CUDA device: ") as info:
        CudaModule(".version 9.0\n.target sm_90\n.address_size 64\n", KERNELS)
    assert info.value.__cause__ is None  # no chained traceback from the bindings
    with pytest.raises(CudaRuntimeError, match=r"^no CUDA device: "):
        DeviceBuffer.from_array(np.zeros(4, np.float32))


def test_failed_call_names_call_and_error() -> None:
    from cuda.bindings import driver

    def cuFakeCall(x: int) -> tuple:  # noqa: N802 - named like a driver entry point
        return (driver.CUresult.CUDA_ERROR_INVALID_VALUE,)

    with pytest.raises(CudaRuntimeError, match="cuFakeCall failed: CUDA_ERROR_INVALID_VALUE"):
        cuda_runtime._call(cuFakeCall, 1)
    assert cuda_runtime._call(lambda: (driver.CUresult.CUDA_SUCCESS, 7)) == 7


def _fake_buffer(ptr: int, dtype: type, n: int = 4) -> DeviceBuffer:
    """A DeviceBuffer that owns nothing (for argument packing without a GPU)."""
    buf = DeviceBuffer.__new__(DeviceBuffer)
    buf.ptr, buf.shape, buf.dtype, buf.nbytes = ptr, (n,), np.dtype(dtype), 0
    return buf  # callers reset .ptr to 0 so that __del__ frees nothing


def test_pack_args_layout() -> None:
    a, b, c = (_fake_buffer(0x1000 * k, np.float32) for k in (1, 2, 3))
    d = _fake_buffer(0x4000, np.int32)
    try:
        params, values = pack_args(VECTOR_ADD, [a, b, c, 1000])
        assert params.dtype == np.uint64 and len(params) == 4 == len(values)
        pointed = [ctypes.c_uint64.from_address(int(p)).value for p in params[:3]]
        assert pointed == [0x1000, 0x2000, 0x3000]
        assert ctypes.c_int32.from_address(int(params[3])).value == 1000
        params, _ = pack_args(BLOCK_SUM, [a, b, 0.5])
        assert ctypes.c_float.from_address(int(params[2])).value == 0.5
        with pytest.raises(TypeError, match="takes 4 arguments"):
            pack_args(VECTOR_ADD, [a, b, c])
        with pytest.raises(TypeError, match="parameter n"):
            pack_args(VECTOR_ADD, [a, b, c, 2.5])
        with pytest.raises(TypeError, match="needs a DeviceBuffer"):
            pack_args(VECTOR_ADD, [a, b, 7, 4])
        with pytest.raises(TypeError, match="int32 buffer"):
            pack_args(VECTOR_ADD, [a, b, d, 4])
    finally:
        for buf in (a, b, c, d):
            buf.ptr = 0


def test_kernel_images() -> None:
    images, index = cuda_runtime._kernel_images("ptx text", KERNELS)
    assert images == [b"ptx text\0"] and index == {k.name: 0 for k in KERNELS}
    assert cuda_runtime._kernel_images(b"\x7fELF", []) == ([b"\x7fELF"], {})
    per_kernel = {"vector_add": "a", "block_sum": "b", "dyn_shared_reverse": "a", "unused": "c"}
    images, index = cuda_runtime._kernel_images(per_kernel, KERNELS)
    assert images == [b"a\0", b"b\0"]  # one per distinct text; unlaunched ones are not loaded
    assert index == {"vector_add": 0, "block_sum": 1, "dyn_shared_reverse": 0}
    with pytest.raises(ValueError, match="no PTX for kernel 'dyn_shared_reverse'"):
        CudaModule({"vector_add": "a", "block_sum": "b"}, KERNELS)  # before any driver call


def test_module_per_kernel_images(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a GPU: a stub driver records which image each kernel is looked up in."""
    calls: list[str] = []

    def fake_call(fn: Callable[..., tuple], *args: object) -> object:
        calls.append(fn.__name__)
        if fn.__name__ == "cuModuleLoadData":
            return "module " + ctypes.string_at(args[0]).decode()  # type: ignore[arg-type]
        if fn.__name__ == "cuModuleGetFunction":
            return f"{args[1].decode()} in {args[0]}"  # type: ignore[attr-defined]
        return None

    monkeypatch.setattr(cuda_runtime, "_context", lambda: None)
    monkeypatch.setattr(cuda_runtime, "_call", fake_call)
    mod = CudaModule({"vector_add": "A", "block_sum": "B", "dyn_shared_reverse": "A"}, KERNELS)
    assert mod.modules == ["module A", "module B"]
    assert {name: func for name, (_, func) in mod.kernels.items()} == {
        "vector_add": "vector_add in module A", "block_sum": "block_sum in module B",
        "dyn_shared_reverse": "dyn_shared_reverse in module A"}
    mod.unload()
    mod.unload()  # idempotent
    assert calls.count("cuModuleUnload") == 2 and mod.kernels == {}


def test_launch_dims() -> None:
    assert cuda_runtime._dims(7, "grid") == (7, 1, 1)
    assert cuda_runtime._dims((2, 3), "grid") == (2, 3, 1)
    for bad in (0, (1, 2, 3, 4), (), (2, -1)):
        with pytest.raises(ValueError, match="grid must be"):
            cuda_runtime._dims(bad, "grid")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def arch() -> str:
    return device_arch()


@pytest.fixture(scope="module")
def module(arch: str) -> CudaModule:
    return CudaModule(compile_ptx(SOURCE, arch), KERNELS)


@gpu_test
@pytest.mark.parametrize("n", [1, 1000, 1 << 20])
def test_vector_add(module: CudaModule, n: int) -> None:
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    da, db, dc = DeviceBuffer.from_array(a), DeviceBuffer.from_array(b), DeviceBuffer.empty(
        n, np.float32)
    module.launch("vector_add", (n + 255) // 256, 256, [da, db, dc, n])
    module.synchronize()
    np.testing.assert_array_equal(dc.to_host(), a + b)
    for buf in (da, db, dc):
        buf.free()
        buf.free()  # idempotent


@gpu_test
def test_block_sum_shared_memory(module: CudaModule) -> None:
    blocks = 64
    x = np.random.default_rng(0).standard_normal((blocks, 256), dtype=np.float32)
    dx, dy = DeviceBuffer.from_array(x), DeviceBuffer.empty(blocks, np.float32)
    module.launch("block_sum", (blocks,), (256,), [dx, dy, 2.0])
    np.testing.assert_allclose(dy.to_host(), 2.0 * x.sum(axis=1), rtol=1e-4, atol=1e-4)


@gpu_test
def test_dynamic_shared_memory_and_copy_from(module: CudaModule) -> None:
    x = np.arange(128, dtype=np.int32)
    dx, dy = DeviceBuffer.from_array(np.zeros_like(x)), DeviceBuffer.empty(x.shape, np.int32)
    dx.copy_from(x)
    module.launch("dyn_shared_reverse", 1, 128, [dx, dy], shared_bytes=128 * 4)
    module.synchronize()
    np.testing.assert_array_equal(dy.to_host(), x[::-1])
    assert np.array_equal(dx.to_host(), x)


@gpu_test
def test_gpu_errors(module: CudaModule, arch: str) -> None:
    with pytest.raises(ValueError, match="unknown kernel"):
        module.launch("nope", 1, 1, [])
    with pytest.raises(CudaRuntimeError, match="cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE"):
        x = DeviceBuffer.empty(4, np.int32)
        module.launch("dyn_shared_reverse", 1, 4096, [x, x])  # > 1024 threads per block
    with pytest.raises(CudaRuntimeError, match="cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND"):
        CudaModule(compile_ptx(SOURCE, arch), [KernelSignature("missing", ())])
    with pytest.raises(CudaRuntimeError, match="cuModuleLoadData failed"):
        CudaModule("this is not ptx", [])


@gpu_test
def test_per_kernel_ptx(arch: str) -> None:
    kernels = ['extern "C"' + text for text in SOURCE.split('extern "C"')[1:]]
    mod = CudaModule(compile_kernels_ptx(list(zip([k.name for k in KERNELS], kernels)), arch),
                     KERNELS)
    assert len(mod.modules) == 3
    x = np.arange(128, dtype=np.int32)
    dx, dy = DeviceBuffer.from_array(x), DeviceBuffer.empty(x.shape, np.int32)
    mod.launch("dyn_shared_reverse", 1, 128, [dx, dy], shared_bytes=128 * 4)
    a = np.ones(10, np.float32)
    da, dc = DeviceBuffer.from_array(a), DeviceBuffer.empty(10, np.float32)
    mod.launch("vector_add", 1, 32, [da, da, dc, 10])
    mod.synchronize()
    np.testing.assert_array_equal(dy.to_host(), x[::-1])
    np.testing.assert_array_equal(dc.to_host(), 2 * a)
    mod.unload()
    assert mod.modules == [] and mod.kernels == {}


@gpu_test
def test_cubin_image(arch: str) -> None:
    mod = CudaModule(compile_cubin(SOURCE, arch), [VECTOR_ADD])
    a = np.ones(10, np.float32)
    da, dc = DeviceBuffer.from_array(a), DeviceBuffer.empty(10, np.float32)
    mod.launch("vector_add", 1, 32, [da, da, dc, 10])
    mod.synchronize()
    np.testing.assert_array_equal(dc.to_host(), 2 * a)



def test_views_point_into_their_buffer_and_free_nothing() -> None:
    arena = _fake_buffer(0x10000, np.uint8, 1024)
    arena.nbytes = 1024
    try:
        view = arena.view(256, (4, 8), np.float32)
        assert (view.ptr, view.shape, view.nbytes, view.base) == (0x10100, (4, 8), 128, arena)
        params, _ = pack_args(BLOCK_SUM, [view, view, 1.0])
        assert ctypes.c_uint64.from_address(int(params[0])).value == 0x10100
        with pytest.raises(ValueError, match="does not fit"):
            arena.view(1000, (8,), np.float32)
        view.free()  # releases the reference only
        assert arena.ptr == 0x10000 and view.ptr == 0
        other = arena.view(0, (1,), np.float32)
        arena.ptr = 0  # the arena freed: its views are dead too
        with pytest.raises(CudaRuntimeError, match="after free"):
            pack_args(BLOCK_SUM, [other, other, 1.0])
    finally:
        arena.ptr = 0
