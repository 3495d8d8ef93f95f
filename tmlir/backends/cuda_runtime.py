"""Load PTX/CUBIN into the CUDA driver and launch kernels (through `cuda.bindings.driver`).

The runtime uses device 0's primary context, made current on the calling thread before
each driver call. Kernels run on the default stream, so launches and the synchronous
copies of `DeviceBuffer` are ordered without extra synchronization; `synchronize()` waits
for the context and surfaces asynchronous launch errors.

Every failing driver call becomes a `CudaRuntimeError` naming the call and the CUresult
(e.g. "cuModuleLoadData failed: CUDA_ERROR_INVALID_PTX (...)"). Without a driver or a
device, the first call that needs one raises `CudaRuntimeError("no CUDA device: ...")`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tmlir.backends.kernel_abi import KernelParam, KernelSignature

#: numpy dtypes of the element types a kernel pointer parameter may point to.
POINTER_DTYPES: dict[str, np.dtype] = {
    "float": np.dtype(np.float32), "int": np.dtype(np.int32),
    "long long": np.dtype(np.int64), "bool": np.dtype(np.bool_),
}
#: numpy dtypes of the scalar kernel parameter types.
SCALAR_DTYPES: dict[str, np.dtype] = {
    "int": np.dtype(np.int32), "long long": np.dtype(np.int64), "float": np.dtype(np.float32),
}
_MAX_STATIC_SHARED = 48 * 1024

#: Device 0 and its retained primary context, once the driver is initialized.
_CONTEXT: tuple[Any, Any] | None = None


class CudaRuntimeError(RuntimeError):
    """A CUDA driver call failed, or there is no usable CUDA device."""


def _error_name(err: Any) -> str:
    from cuda.bindings import driver

    try:
        _, name = driver.cuGetErrorName(err)
        _, text = driver.cuGetErrorString(err)
        return f"{name.decode()} ({text.decode()})"
    except Exception:  # the driver may be unusable; fall back to the enum name
        return getattr(err, "name", str(err))


def _call(fn: Callable[..., tuple], *args: Any) -> Any:
    """Call a driver function; raise CudaRuntimeError unless it returns CUDA_SUCCESS.

    Returns None, the single result, or a tuple of results (after the CUresult).
    """
    from cuda.bindings import driver

    err, *rest = fn(*args)
    if err != driver.CUresult.CUDA_SUCCESS:
        name = getattr(fn, "__name__", repr(fn))
        hint = ""
        if err == driver.CUresult.CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
            _, version = driver.cuDriverGetVersion()
            hint = (f"; the driver (CUDA {version // 1000}.{version % 1000 // 10}) is older "
                    "than the compiler that produced the PTX")
        raise CudaRuntimeError(f"{name} failed: {_error_name(err)}{hint}")
    return None if not rest else rest[0] if len(rest) == 1 else tuple(rest)


def _context() -> Any:
    """Initialize the driver once, make device 0's primary context current, return it."""
    global _CONTEXT
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        raise CudaRuntimeError(f"no CUDA device: cuda-python is not installed ({exc})") from None
    if _CONTEXT is None:
        try:
            (err,) = driver.cuInit(0)
        except Exception as exc:  # DynamicLibNotFoundError when libcuda.so is absent
            raise CudaRuntimeError(
                f"no CUDA device: the CUDA driver library cannot be loaded ({exc})") from None
        if err != driver.CUresult.CUDA_SUCCESS:
            raise CudaRuntimeError(f"no CUDA device: cuInit failed with {_error_name(err)}")
        if _call(driver.cuDeviceGetCount) == 0:
            raise CudaRuntimeError("no CUDA device: the driver reports 0 devices")
        device = _call(driver.cuDeviceGet, 0)
        _CONTEXT = (device, _call(driver.cuDevicePrimaryCtxRetain, device))
    _call(driver.cuCtxSetCurrent, _CONTEXT[1])
    return _CONTEXT[1]


def cuda_available() -> bool:
    """True if the CUDA driver loads and reports at least one device; never raises."""
    try:
        _context()
    except Exception:
        return False
    return True


def device_arch() -> str:
    """The target architecture of device 0, e.g. "sm_90" for an H100."""
    from cuda.bindings import driver

    _context()
    attr = driver.CUdevice_attribute
    device = _CONTEXT[0] if _CONTEXT else 0
    major = _call(driver.cuDeviceGetAttribute,
                  attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)
    minor = _call(driver.cuDeviceGetAttribute,
                  attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)
    return f"sm_{major}{minor}"


class DeviceBuffer:
    """A contiguous array in device memory, owned by this object (freed on `free`/GC)."""

    def __init__(self, shape: int | Sequence[int], dtype: Any) -> None:
        """Allocate uninitialized device memory for an array of `shape` and `dtype`."""
        from cuda.bindings import driver

        self.ptr = 0  # set first, so __del__ is safe if allocation fails
        self.shape: tuple[int, ...] = (shape,) if isinstance(shape, int) else tuple(shape)
        self.dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        _context()
        if self.nbytes:
            self.ptr = int(_call(driver.cuMemAlloc, self.nbytes))

    @classmethod
    def from_array(cls, a: np.ndarray) -> DeviceBuffer:
        """A new buffer holding a copy of `a`."""
        a = np.asarray(a)
        buf = cls(a.shape, a.dtype)
        buf.copy_from(a)
        return buf

    @classmethod
    def empty(cls, shape: int | Sequence[int], dtype: Any) -> DeviceBuffer:
        """A new uninitialized buffer."""
        return cls(shape, dtype)

    def _check_live(self) -> None:
        if self.nbytes and not self.ptr:
            raise CudaRuntimeError("DeviceBuffer used after free()")

    def copy_from(self, a: np.ndarray) -> None:
        """Copy host array `a` (same shape; dtype cast if safe) into this buffer."""
        from cuda.bindings import driver

        a = np.asarray(a)
        if a.shape != self.shape:
            raise ValueError(f"shape mismatch: buffer {self.shape}, array {a.shape}")
        if not np.can_cast(a.dtype, self.dtype, "same_kind"):
            raise TypeError(f"cannot copy {a.dtype} data into a {self.dtype} buffer")
        self._check_live()
        host = np.ascontiguousarray(a, dtype=self.dtype)
        if self.nbytes:
            _context()
            _call(driver.cuMemcpyHtoD, self.ptr, host.ctypes.data, self.nbytes)

    def to_host(self) -> np.ndarray:
        """A new host array with the buffer's contents (waits for prior launches)."""
        from cuda.bindings import driver

        self._check_live()
        out = np.empty(self.shape, self.dtype)
        if self.nbytes:
            _context()
            _call(driver.cuMemcpyDtoH, out.ctypes.data, self.ptr, self.nbytes)
        return out

    def free(self) -> None:
        """Release the device memory (idempotent)."""
        ptr, self.ptr = getattr(self, "ptr", 0), 0
        if ptr:
            from cuda.bindings import driver

            _context()
            _call(driver.cuMemFree, ptr)

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # interpreter shutdown or a dead context: nothing sensible to do
            pass

    def __repr__(self) -> str:
        return f"DeviceBuffer(shape={self.shape}, dtype={self.dtype}, ptr={self.ptr:#x})"


def _dims(value: int | tuple[int, ...], what: str) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or any(not isinstance(d, int) or d < 1 for d in dims):
        raise ValueError(f"{what} must be 1-3 positive ints, got {value!r}")
    return (*dims, *(1,) * (3 - len(dims)))  # type: ignore[return-value]


def _pack_arg(param: KernelParam, arg: DeviceBuffer | int | float) -> np.ndarray:
    """The argument's value as a one-element array whose address goes into kernelParams."""
    if param.is_pointer:
        base = param.ctype.removeprefix("const ").removesuffix("*").strip()
        if not isinstance(arg, DeviceBuffer):
            raise TypeError(f"parameter {param.name} ({param.ctype}) needs a DeviceBuffer, "
                            f"got {type(arg).__name__}")
        if base in POINTER_DTYPES and arg.dtype != POINTER_DTYPES[base]:
            raise TypeError(f"parameter {param.name} ({param.ctype}) got a {arg.dtype} buffer")
        arg._check_live()
        return np.array([arg.ptr], dtype=np.uint64)
    dtype = SCALAR_DTYPES.get(param.ctype)
    if dtype is None:
        raise TypeError(f"parameter {param.name}: unsupported C type {param.ctype!r}")
    is_int = isinstance(arg, int | np.integer)
    if isinstance(arg, DeviceBuffer) or (dtype.kind == "i" and not is_int):
        raise TypeError(f"parameter {param.name} ({param.ctype}) got {type(arg).__name__}")
    return np.array([arg], dtype=dtype)


def pack_args(sig: KernelSignature, args: Sequence[DeviceBuffer | int | float]
              ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Build cuLaunchKernel's kernelParams: (array of pointers, the values they point to).

    Keep both alive until the launch call returns.
    """
    if len(args) != len(sig.params):
        raise TypeError(f"kernel {sig.name} takes {len(sig.params)} arguments, got {len(args)}")
    values = [_pack_arg(p, a) for p, a in zip(sig.params, args, strict=True)]
    return np.array([v.ctypes.data for v in values], dtype=np.uint64), values


class CudaModule:
    """A PTX (or CUBIN) image loaded into the current context, with its kernels resolved."""

    def __init__(self, ptx: str | bytes, kernels: Sequence[KernelSignature]) -> None:
        """Load `ptx` (text, or CUBIN/fatbin bytes) and look up each kernel in `kernels`."""
        from cuda.bindings import driver

        self.module = None
        _context()
        image = ptx.encode() + b"\0" if isinstance(ptx, str) else bytes(ptx)
        buf = np.frombuffer(image, dtype=np.uint8)
        self.module = _call(driver.cuModuleLoadData, buf.ctypes.data)
        self.kernels: dict[str, tuple[KernelSignature, Any]] = {
            sig.name: (sig, _call(driver.cuModuleGetFunction, self.module, sig.name.encode()))
            for sig in kernels
        }

    def launch(self, name: str, grid: int | tuple[int, ...], block: int | tuple[int, ...],
               args: Sequence[DeviceBuffer | int | float], shared_bytes: int = 0) -> None:
        """Launch kernel `name` asynchronously on the default stream.

        `shared_bytes` is dynamic shared memory; above 48 KiB the kernel's limit is raised.
        """
        from cuda.bindings import driver

        if name not in self.kernels:
            raise ValueError(f"unknown kernel {name!r}; module has {sorted(self.kernels)}")
        sig, func = self.kernels[name]
        params, _values = pack_args(sig, args)
        _context()
        if shared_bytes > _MAX_STATIC_SHARED:
            attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            _call(driver.cuFuncSetAttribute, func, attr, shared_bytes)
        _call(driver.cuLaunchKernel, func, *_dims(grid, "grid"), *_dims(block, "block"),
              shared_bytes, 0, params.ctypes.data if len(params) else 0, 0)

    def synchronize(self) -> None:
        """Wait for all launched work; raise CudaRuntimeError on an asynchronous error."""
        from cuda.bindings import driver

        _context()
        _call(driver.cuCtxSynchronize)

    def unload(self) -> None:
        """Unload the module (idempotent); its kernels can no longer be launched."""
        module, self.module = getattr(self, "module", None), None
        self.kernels = {}
        if module is not None:
            from cuda.bindings import driver

            _context()
            _call(driver.cuModuleUnload, module)

    def __del__(self) -> None:
        try:
            self.unload()
        except Exception:
            pass
