"""Load PTX/CUBIN into the CUDA driver and launch kernels (through `cuda.bindings.driver`).

The runtime uses device 0's primary context, made current on the calling thread before
each driver call. Kernels run on the default stream unless given a `Stream`; the synchronous
copies of `DeviceBuffer` are ordered with default-stream work, and the `stream=` copies with
that stream's. `synchronize()` waits for the context and surfaces asynchronous launch errors.
`capture_graph` records the launches made on a stream into a `CudaGraph` that replays them
with one driver call. An `Event` recorded on a stream times the work queued before it.

Every failing driver call becomes a `CudaRuntimeError` naming the call and the CUresult
(e.g. "cuModuleLoadData failed: CUDA_ERROR_INVALID_PTX (...)"). Without a driver or a
device, the first call that needs one raises `CudaRuntimeError("no CUDA device: ...")`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from tmlir.backends.kernel_abi import KernelParam, KernelSignature
from tmlir.gpu_limits import MAX_STATIC_SHARED_BYTES

#: numpy dtypes of the element types a kernel pointer parameter may point to.
POINTER_DTYPES: dict[str, np.dtype] = {
    "float": np.dtype(np.float32), "int": np.dtype(np.int32),
    "long long": np.dtype(np.int64), "bool": np.dtype(np.bool_),
}
#: numpy dtypes of the scalar kernel parameter types.
SCALAR_DTYPES: dict[str, np.dtype] = {
    "int": np.dtype(np.int32), "long long": np.dtype(np.int64), "float": np.dtype(np.float32),
}

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


def device_name() -> str:
    """The name of device 0, e.g. "NVIDIA H100 80GB HBM3"."""
    from cuda.bindings import driver

    _context()
    raw = _call(driver.cuDeviceGetName, 256, _CONTEXT[0] if _CONTEXT else 0)
    return raw.split(b"\0", 1)[0].decode(errors="replace")


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
    """A contiguous array in device memory, owned by this object (freed on `free`/GC), or
    a view into another buffer's memory (`view`)."""

    base: DeviceBuffer | None = None  # the buffer a view is cut from

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

    def view(self, offset: int, shape: int | Sequence[int], dtype: Any) -> DeviceBuffer:
        """A buffer of `shape` and `dtype` at byte `offset` inside this one, sharing its
        memory (it keeps this buffer alive; freeing it frees nothing)."""
        view = object.__new__(DeviceBuffer)
        view.shape = (shape,) if isinstance(shape, int) else tuple(shape)
        view.dtype = np.dtype(dtype)
        view.nbytes = int(np.prod(view.shape, dtype=np.int64)) * view.dtype.itemsize
        if offset < 0 or offset + view.nbytes > self.nbytes:
            raise ValueError(f"view of {view.nbytes} bytes at offset {offset} does not fit in "
                             f"a buffer of {self.nbytes} bytes")
        self._check_live()
        view.base, view.ptr = self, self.ptr + offset
        return view

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
        if self.nbytes and not self.ptr or self.base is not None and not self.base.ptr:
            raise CudaRuntimeError("DeviceBuffer used after free()")

    def copy_from(self, a: np.ndarray, stream: Stream | None = None) -> None:
        """Copy host array `a` (same shape; dtype cast if safe) into this buffer.

        With a `stream`, the copy is ordered on it; `a` must then stay unchanged until the
        stream has reached the copy (pageable host memory makes the driver stage it first).
        """
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
            if stream is None:
                _call(driver.cuMemcpyHtoD, self.ptr, host.ctypes.data, self.nbytes)
            else:
                _call(driver.cuMemcpyHtoDAsync, self.ptr, host.ctypes.data, self.nbytes,
                      stream.handle)

    def copy_from_device(self, ptr: int, nbytes: int, stream: Stream | None = None) -> None:
        """Copy `nbytes` (this buffer's size) of device memory at `ptr` into this buffer."""
        from cuda.bindings import driver

        if nbytes != self.nbytes:
            raise ValueError(f"size mismatch: buffer of {self.nbytes} bytes, source of {nbytes}")
        self._check_live()
        if self.nbytes:
            _context()
            _call(driver.cuMemcpyDtoDAsync, self.ptr, ptr, self.nbytes,
                  stream.handle if stream is not None else 0)

    def to_host(self, stream: Stream | None = None) -> np.ndarray:
        """A new host array with the buffer's contents (waits for prior launches; with a
        `stream`, for that stream's work)."""
        from cuda.bindings import driver

        self._check_live()
        out = np.empty(self.shape, self.dtype)
        if self.nbytes:
            _context()
            if stream is None:
                _call(driver.cuMemcpyDtoH, out.ctypes.data, self.ptr, self.nbytes)
            else:
                _call(driver.cuMemcpyDtoHAsync, out.ctypes.data, self.ptr, self.nbytes,
                      stream.handle)
                stream.synchronize()
        return out

    def fill_zero(self, stream: Stream | None = None) -> None:
        """Set every byte to 0."""
        from cuda.bindings import driver

        self._check_live()
        if self.nbytes:
            _context()
            _call(driver.cuMemsetD8Async, self.ptr, 0, self.nbytes,
                  stream.handle if stream is not None else 0)

    def free(self) -> None:
        """Release the device memory (idempotent; a view releases only its reference)."""
        ptr, self.ptr = getattr(self, "ptr", 0), 0
        if getattr(self, "base", None) is not None:
            self.base = None
            return
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


Image = str | bytes  # PTX text, or CUBIN/fatbin bytes


def _image_bytes(image: Image) -> bytes:
    return image.encode() + b"\0" if isinstance(image, str) else bytes(image)


def _kernel_images(ptx: Image | Mapping[str, Image], kernels: Sequence[KernelSignature]
                  ) -> tuple[list[bytes], dict[str, int]]:
    """The distinct images to load and, per kernel name, the index of the one holding it.

    One image (`str` or `bytes`) holds every kernel (and is loaded even for no kernels); a
    mapping gives each kernel's own image, and only the kernels' images are loaded.
    """
    if not isinstance(ptx, Mapping):
        return [_image_bytes(ptx)], {sig.name: 0 for sig in kernels}
    missing = [sig.name for sig in kernels if sig.name not in ptx]
    if missing:
        raise ValueError(f"no PTX for kernel {missing[0]!r}; the mapping has {sorted(ptx)}")
    images: dict[bytes, int] = {}
    index = {sig.name: images.setdefault(_image_bytes(ptx[sig.name]), len(images))
             for sig in kernels}
    return list(images), index


class CudaModule:
    """PTX (or CUBIN) images loaded into the current context, with their kernels resolved.

    The images are one holding every kernel, or one per kernel (as `compile_kernels_ptx`
    returns them): each distinct image is one CUmodule, and each kernel is looked up in its own.
    """

    def __init__(self, ptx: Image | Mapping[str, Image],
                 kernels: Sequence[KernelSignature]) -> None:
        """Load `ptx` (text, CUBIN/fatbin bytes, or a mapping kernel name -> either) and look
        up each kernel in `kernels`. ValueError if the mapping lacks one of `kernels`."""
        from cuda.bindings import driver

        images, index = _kernel_images(ptx, kernels)
        self.modules: list[Any] = []
        self.kernels: dict[str, tuple[KernelSignature, Any]] = {}
        _context()
        for image in images:
            buf = np.frombuffer(image, dtype=np.uint8)
            self.modules.append(_call(driver.cuModuleLoadData, buf.ctypes.data))
        for sig in kernels:
            module = self.modules[index[sig.name]]
            self.kernels[sig.name] = (
                sig, _call(driver.cuModuleGetFunction, module, sig.name.encode()))

    def launch(self, name: str, grid: int | tuple[int, ...], block: int | tuple[int, ...],
               args: Sequence[DeviceBuffer | int | float], shared_bytes: int = 0,
               stream: Stream | None = None) -> None:
        """Launch kernel `name` asynchronously on `stream` (default: the default stream).

        `shared_bytes` is dynamic shared memory; above 48 KiB the kernel's limit is raised.
        """
        from cuda.bindings import driver

        if name not in self.kernels:
            raise ValueError(f"unknown kernel {name!r}; module has {sorted(self.kernels)}")
        sig, func = self.kernels[name]
        params, _values = pack_args(sig, args)
        _context()
        if shared_bytes > MAX_STATIC_SHARED_BYTES:
            attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            _call(driver.cuFuncSetAttribute, func, attr, shared_bytes)
        _call(driver.cuLaunchKernel, func, *_dims(grid, "grid"), *_dims(block, "block"),
              shared_bytes, stream.handle if stream is not None else 0,
              params.ctypes.data if len(params) else 0, 0)

    def synchronize(self) -> None:
        """Wait for all launched work; raise CudaRuntimeError on an asynchronous error."""
        from cuda.bindings import driver

        _context()
        _call(driver.cuCtxSynchronize)

    def unload(self) -> None:
        """Unload the modules (idempotent); their kernels can no longer be launched."""
        modules, self.modules = getattr(self, "modules", []), []
        self.kernels = {}
        if modules:
            from cuda.bindings import driver

            _context()
            for module in modules:
                _call(driver.cuModuleUnload, module)

    def __del__(self) -> None:
        try:
            self.unload()
        except Exception:
            pass


class Stream:
    """A CUDA stream of its own (non-blocking: it does not wait for the default stream)."""

    def __init__(self) -> None:
        from cuda.bindings import driver

        self.handle = None
        _context()
        self.handle = _call(driver.cuStreamCreate,
                            driver.CUstream_flags.CU_STREAM_NON_BLOCKING.value)

    def synchronize(self) -> None:
        """Wait for the stream's work; raise CudaRuntimeError on an asynchronous error."""
        from cuda.bindings import driver

        _context()
        _call(driver.cuStreamSynchronize, self.handle)

    def wait_for(self, producer: int | None) -> None:
        """Order this stream's later work after the work already queued on the stream
        `producer` (a raw CUstream handle; None or 1 is the legacy default stream, 2 the
        per-thread default stream), through an event; no host wait."""
        from cuda.bindings import driver

        _context()
        event = _call(driver.cuEventCreate,
                      driver.CUevent_flags.CU_EVENT_DISABLE_TIMING.value)
        try:
            source = driver.CUstream(1 if producer is None else producer)
            _call(driver.cuEventRecord, event, source)
            _call(driver.cuStreamWaitEvent, self.handle, event, 0)
        finally:
            _call(driver.cuEventDestroy, event)

    def destroy(self) -> None:
        """Release the stream (idempotent)."""
        handle, self.handle = getattr(self, "handle", None), None
        if handle is not None:
            from cuda.bindings import driver

            _context()
            _call(driver.cuStreamDestroy, handle)

    def __del__(self) -> None:
        try:
            self.destroy()
        except Exception:
            pass


class Event:
    """A CUDA event that records a timestamp on a stream: `elapsed_ms` between two events
    recorded on one stream is the GPU time of the work queued between them."""

    def __init__(self) -> None:
        from cuda.bindings import driver

        self.handle = None
        _context()
        self.handle = _call(driver.cuEventCreate, driver.CUevent_flags.CU_EVENT_DEFAULT.value)

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on `stream` (default: the default stream), after its queued work."""
        from cuda.bindings import driver

        _context()
        _call(driver.cuEventRecord, self.handle, stream.handle if stream is not None else 0)

    def synchronize(self) -> None:
        """Wait until the GPU has reached the event."""
        from cuda.bindings import driver

        _context()
        _call(driver.cuEventSynchronize, self.handle)

    def elapsed_ms(self, end: Event) -> float:
        """Milliseconds from this event to `end` (both recorded and reached)."""
        from cuda.bindings import driver

        _context()
        return float(_call(driver.cuEventElapsedTime, self.handle, end.handle))

    def destroy(self) -> None:
        """Release the event (idempotent)."""
        handle, self.handle = getattr(self, "handle", None), None
        if handle is not None:
            from cuda.bindings import driver

            _context()
            _call(driver.cuEventDestroy, handle)

    def __del__(self) -> None:
        try:
            self.destroy()
        except Exception:
            pass


class CudaGraph:
    """An executable CUDA graph: a recorded sequence of launches, replayed by `launch`."""

    def __init__(self, graph: Any, exec_: Any) -> None:
        self.graph, self.exec = graph, exec_

    def launch(self, stream: Stream) -> None:
        """Replay the recorded work on `stream` (asynchronously)."""
        from cuda.bindings import driver

        if self.exec is None:
            raise CudaRuntimeError("CudaGraph used after destroy()")
        _context()
        _call(driver.cuGraphLaunch, self.exec, stream.handle)

    def destroy(self) -> None:
        """Release the graph (idempotent)."""
        exec_, graph = getattr(self, "exec", None), getattr(self, "graph", None)
        self.exec = self.graph = None
        if exec_ is not None or graph is not None:
            from cuda.bindings import driver

            _context()
            if exec_ is not None:
                _call(driver.cuGraphExecDestroy, exec_)
            if graph is not None:
                _call(driver.cuGraphDestroy, graph)

    def __del__(self) -> None:
        try:
            self.destroy()
        except Exception:
            pass


def capture_graph(stream: Stream, record: Callable[[], None]) -> CudaGraph:
    """Run `record()`, which launches work on `stream`, under stream capture: the work is
    recorded, not run, and returned as an instantiated `CudaGraph`.

    Capture is thread-local: other threads may use the device meanwhile. If `record` fails,
    the capture is ended and discarded before the error propagates.
    """
    from cuda.bindings import driver

    _context()
    mode = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
    _call(driver.cuStreamBeginCapture, stream.handle, mode)
    try:
        record()
    except BaseException:
        err, graph = driver.cuStreamEndCapture(stream.handle)
        if err == driver.CUresult.CUDA_SUCCESS and graph is not None:
            driver.cuGraphDestroy(graph)
        raise
    graph = _call(driver.cuStreamEndCapture, stream.handle)
    try:
        exec_ = _call(driver.cuGraphInstantiate, graph, 0)
    except CudaRuntimeError:
        driver.cuGraphDestroy(graph)
        raise
    return CudaGraph(graph, exec_)
