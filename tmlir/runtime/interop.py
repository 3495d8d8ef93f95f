"""Zero-copy array exchange with numpy, torch, cupy and anything else that speaks DLPack
or ``__cuda_array_interface__`` (CAI), in pure Python over ctypes.

Consuming: `as_array_ref` turns what a user feeds the runtime into an `ArrayRef` -- the
address, shape, dtype and device of a C-contiguous array, plus an ``owner`` that keeps
the memory alive -- without copying (numpy arrays that are not C-contiguous are the one
exception: they are copied)::

    ref = as_array_ref(torch.ones(4, 4, device="cuda"), name="input 'x'")
    ref.device, ref.shape, ref.dtype   # ('cuda', (4, 4), dtype('float32'))
    ref.release()                       # done with the memory (also happens on GC)

Producing: `ExportedArray` wraps memory the runtime owns (a device buffer, a host arena)
so that ``np.from_dlpack``, ``np.asarray``, ``torch.from_dlpack``, ``torch.as_tensor``
and ``cupy.asarray`` view it without a copy. The runtime's device output subclasses it.

Streams: a DLPack producer is asked to order its pending work before the consumer's
stream (``__dlpack__(stream=...)``); a CAI producer names its stream in ``ref.stream``,
which the runtime must wait for before reading. Memory that tmlir exports is always
ready (the runtime synchronizes its stream before handing it out), so it reports no
stream and ignores the one it is given.
"""

from __future__ import annotations

import ctypes
import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import ml_dtypes  # noqa: F401  (registers the names bfloat16, float8_e4m3fn, ... with numpy)
import numpy as np

from tmlir.runtime.dlpack_abi import (
    CAPSULE_DESTRUCTOR,
    CAPSULE_NAME,
    DELETER,
    DELETER_VERSIONED,
    DLDataType,
    DLDevice,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLPackVersion,
    DLTensor,
    call_deleter,
    capsule_name,
    capsule_new,
    capsule_pointer,
    capsule_set_name,
    incref,
)

Device = Literal["cpu", "cuda"]


class InteropError(ValueError):
    """An array the runtime cannot use as it is: one line naming it and what was expected."""


class DLDeviceType(enum.IntEnum):
    """The DLPack device types tmlir reads (``DLDeviceType`` in dlpack.h)."""

    CPU = 1
    CUDA = 2
    CUDA_HOST = 3  # pinned host memory: a CPU array
    CUDA_MANAGED = 13  # unified memory: usable as a CUDA array


_DEVICE_OF_TYPE: dict[int, Device] = {1: "cpu", 2: "cuda", 3: "cpu", 13: "cuda"}
_TYPE_OF_DEVICE: dict[Device, DLDeviceType] = {"cpu": DLDeviceType.CPU, "cuda": DLDeviceType.CUDA}

# numpy dtype <-> DLPack (type code, bits); lanes is always 1. Codes: kDLInt=0, kDLUInt=1,
# kDLFloat=2, kDLBfloat=4, kDLBool=6, kDLFloat8_e4m3fn=10, kDLFloat8_e4m3fnuz=11,
# kDLFloat8_e5m2=12, kDLFloat8_e5m2fnuz=13 (bfloat16 and float8: ml_dtypes' numpy dtypes).
_DLPACK_CODES: dict[np.dtype, tuple[int, int]] = {
    np.dtype(name): code for name, code in (
        ("float16", (2, 16)), ("float32", (2, 32)), ("float64", (2, 64)),
        ("int8", (0, 8)), ("int16", (0, 16)), ("int32", (0, 32)), ("int64", (0, 64)),
        ("uint8", (1, 8)), ("uint16", (1, 16)), ("uint32", (1, 32)), ("uint64", (1, 64)),
        ("bool", (6, 8)), ("bfloat16", (4, 16)), ("float8_e4m3fn", (10, 8)),
        ("float8_e4m3fnuz", (11, 8)), ("float8_e5m2", (12, 8)), ("float8_e5m2fnuz", (13, 8)))
}
_DTYPE_OF_CODE = {code: dtype for dtype, code in _DLPACK_CODES.items()}
_DTYPE_NAMES = ", ".join(d.name for d in _DLPACK_CODES)

_READ_ONLY_FLAG = 1  # DLPACK_FLAG_BITMASK_READ_ONLY


# --- consuming -----------------------------------------------------------------------

class ConsumedDLPack:
    """Ownership of a DLManagedTensor taken from a DLPack capsule: `release` (or garbage
    collection) calls its producer's deleter, exactly once."""

    def __init__(self, address: int, deleter: int | None) -> None:
        self._address, self._deleter = address, deleter

    def release(self) -> None:
        """Hand the memory back to its producer; the `ArrayRef` must not be used after."""
        deleter, self._deleter = self._deleter, None
        if deleter:
            call_deleter(deleter)(self._address)

    def __del__(self) -> None:
        self.release()


@dataclass(frozen=True, eq=False)
class ArrayRef:
    """A C-contiguous array somewhere in memory, borrowed without a copy.

    `ptr` is the address of the first element (0 for an empty array); `device_id` is the
    CUDA ordinal (0 on the CPU). `stream`, when not None, is a CUDA stream handle
    (``__cuda_array_interface__``'s producer stream; 1 and 2 stand for the legacy and
    per-thread default streams) whose pending work the reader must wait for; DLPack
    producers synchronize during the exchange, so their refs have None.
    `owner` keeps the memory alive for as long as the ref is referenced; `release` ends a
    DLPack borrow early. `readonly` records the producer's read-only flag.
    """

    ptr: int
    shape: tuple[int, ...]
    dtype: np.dtype
    device: Device
    device_id: int = 0
    stream: int | None = None
    owner: Any = None
    readonly: bool = False

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    def release(self) -> None:
        """Return a DLPack-consumed tensor to its producer now rather than at GC (a no-op
        for other owners); the ref must not be read after."""
        if isinstance(self.owner, ConsumedDLPack):
            self.owner.release()

    def to_numpy(self) -> np.ndarray:
        """A numpy view (no copy) of a CPU ref; it keeps the owner alive."""
        if self.device != "cpu":
            raise InteropError("a CUDA array has no host view; copy it to the host first")
        return np.asarray(ExportedArray(self.ptr, self.shape, self.dtype, "cpu", owner=self.owner,
                                        readonly=self.readonly))


def as_array_ref(obj: Any, *, name: str = "array", stream: int | None = None) -> ArrayRef:
    """`obj` as an `ArrayRef`, without copying its data.

    Accepted, in this order: an `ExportedArray`; a numpy array (copied to C order first
    if it is not C-contiguous -- the only copy made); an object with
    ``__cuda_array_interface__`` (versions 2 and 3, unmasked, C-contiguous); an object
    with ``__dlpack__`` and ``__dlpack_device__`` on a CPU or CUDA device. `stream` is the
    CUDA stream handle the caller will read on, passed to a CUDA DLPack producer (None
    means the legacy default stream, as does 1; the protocol disallows 0). `name` starts every error message, e.g.
    ``"input 'x'"``. Raises `InteropError` for anything else.
    """
    if isinstance(obj, ExportedArray):
        return ArrayRef(obj.ptr, obj.shape, obj.dtype, obj.device, obj.device_id, None, obj,
                        obj.readonly)
    if isinstance(obj, np.ndarray):
        return _numpy_ref(obj, name)
    try:
        interface = obj.__cuda_array_interface__
    except AttributeError:
        interface = None
    except Exception as exc:  # e.g. torch refuses tensors that require grad
        raise InteropError(f"{name}: __cuda_array_interface__ failed: {_first_line(exc)}") from None
    if interface is not None:
        return _cai_ref(interface, obj, name)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _dlpack_ref(obj, name, stream)
    raise InteropError(f"{name}: expected a numpy array or an object with "
                       f"__cuda_array_interface__ or __dlpack__, got {type(obj).__name__}")


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def _check_dtype(dtype: np.dtype, name: str) -> np.dtype:
    if dtype not in _DLPACK_CODES:
        raise InteropError(f"{name}: unsupported dtype {dtype.str}; expected one of {_DTYPE_NAMES}")
    return dtype


def _is_c_contiguous(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> bool:
    """C order, in units of `itemsize`; size-1 dimensions may have any stride."""
    if 0 in shape:
        return True
    expected = itemsize
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def _numpy_ref(array: np.ndarray, name: str) -> ArrayRef:
    if isinstance(array, np.ma.MaskedArray):
        raise InteropError(f"{name}: a masked numpy array; pass a plain ndarray")
    dtype = _check_dtype(array.dtype, name)
    if not array.flags.c_contiguous:
        array = array.copy(order="C")
    return ArrayRef(array.ctypes.data, array.shape, dtype, "cpu", 0, None, array,
                    not array.flags.writeable)


def _cai_ref(interface: dict[str, Any], obj: Any, name: str) -> ArrayRef:
    version = interface.get("version")
    if version not in (2, 3):
        raise InteropError(f"{name}: __cuda_array_interface__ version {version}; expected 2 or 3")
    if interface.get("mask") is not None:
        raise InteropError(f"{name}: a masked __cuda_array_interface__ array; expected mask None")
    try:
        dtype = np.dtype(interface["typestr"])
        shape = tuple(int(d) for d in interface["shape"])
        ptr, readonly = interface["data"]
    except (KeyError, TypeError, ValueError) as exc:
        raise InteropError(f"{name}: malformed __cuda_array_interface__ "
                           f"({_first_line(exc)})") from None
    _check_dtype(dtype, name)
    strides = interface.get("strides")
    if strides is not None and not _is_c_contiguous(shape, strides, dtype.itemsize):
        raise InteropError(f"{name}: a non-contiguous array (byte strides {tuple(strides)} for "
                           f"shape {shape}); pass a contiguous array (.contiguous(), "
                           "cupy.ascontiguousarray)")
    stream = interface.get("stream")
    if stream == 0:
        raise InteropError(f"{name}: __cuda_array_interface__ stream 0, which the protocol "
                           "disallows; expected None or a stream handle")
    # CAI carries no device ordinal: the pointer is taken to be on the current device, 0.
    return ArrayRef(int(ptr or 0), shape, dtype, "cuda", 0, stream, obj, bool(readonly))


def _dlpack_capsule(obj: Any, stream: int | None) -> Any:
    """Call ``__dlpack__``, newest protocol first: versioned (max_version), then the
    stream keyword, then a bare call for producers older than both."""
    for kwargs in ({"stream": stream, "max_version": (1, 0)}, {"stream": stream}, {}):
        try:
            return obj.__dlpack__(**kwargs)
        except TypeError:
            if not kwargs:
                raise
    raise AssertionError("unreachable")


def _dlpack_ref(obj: Any, name: str, stream: int | None) -> ArrayRef:
    try:
        device_type, _ = obj.__dlpack_device__()
    except Exception as exc:
        raise InteropError(f"{name}: __dlpack_device__() failed: {_first_line(exc)}") from None
    device = _DEVICE_OF_TYPE.get(int(device_type))
    if device is None:
        raise InteropError(f"{name}: an array on DLPack device type {int(device_type)}; expected "
                           "a CPU (1) or CUDA (2) array")
    try:
        capsule = _dlpack_capsule(obj, stream if device == "cuda" else None)
    except Exception as exc:
        raise InteropError(f"{name}: __dlpack__() failed: {_first_line(exc)}") from None
    kind = capsule_name(capsule) if type(capsule).__name__ == "PyCapsule" else None
    if kind not in (b"dltensor", b"dltensor_versioned"):
        got = f"a capsule named {kind.decode()!r}" if kind else type(capsule).__name__
        raise InteropError(f"{name}: __dlpack__() returned {got}; expected a 'dltensor' capsule")
    versioned = kind == b"dltensor_versioned"
    address = capsule_pointer(capsule, CAPSULE_NAME[kind.decode()])
    struct = DLManagedTensorVersioned if versioned else DLManagedTensor
    managed = struct.from_address(address)
    owner = ConsumedDLPack(address, managed.deleter)
    capsule_set_name(capsule, CAPSULE_NAME["used_" + kind.decode()])  # we own it now
    try:
        if versioned and managed.version.major != 1:
            raise InteropError(f"{name}: DLPack version {managed.version.major}."
                               f"{managed.version.minor}; expected major version 1")
        readonly = versioned and bool(managed.flags & _READ_ONLY_FLAG)
        return _dltensor_ref(managed.dl_tensor, device, owner, readonly, name)
    except InteropError:
        owner.release()
        raise


def _dltensor_ref(tensor: DLTensor, device: Device, owner: ConsumedDLPack, readonly: bool,
                  name: str) -> ArrayRef:
    code, bits, lanes = tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes
    if lanes != 1:
        raise InteropError(f"{name}: a vector dtype with {lanes} lanes; expected lanes 1")
    dtype = _DTYPE_OF_CODE.get((code, bits))
    if dtype is None:
        raise InteropError(f"{name}: unsupported DLPack dtype (code {code}, {bits} bits); "
                           f"expected one of {_DTYPE_NAMES}")
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    if tensor.strides:  # NULL means C-contiguous
        strides = tuple(tensor.strides[i] for i in range(tensor.ndim))
        if not _is_c_contiguous(shape, strides, 1):
            raise InteropError(f"{name}: a non-contiguous array (strides {strides} for shape "
                               f"{shape}); pass a contiguous tensor (.contiguous())")
    ptr = (tensor.data or 0) + tensor.byte_offset
    return ArrayRef(ptr, shape, dtype, device, tensor.device.device_id, None, owner, readonly)


# --- producing -----------------------------------------------------------------------

class _Export:
    """What an exported tensor's manager_ctx keeps alive until its deleter runs."""

    __slots__ = ("managed", "owner", "shape", "strides")

    def __init__(self, managed: ctypes.Structure, shape: Any, strides: Any, owner: Any) -> None:
        self.managed, self.shape, self.strides, self.owner = managed, shape, strides, owner


class _CapsuleKeeper:
    """Holds an `ExportedArray`'s latest capsule, so that a consumer dropping it on an
    error path does not free it then (its destructor is a ctypes callback, which cannot
    run while an exception is pending); it is freed by the next export or by this
    object's ``__del__``, where Python has set any pending exception aside."""

    __slots__ = ("capsule",)

    def __init__(self) -> None:
        self.capsule: Any = None

    def __del__(self) -> None:
        self.capsule = None


class ExportedArray:
    """A C-contiguous array at `ptr` that numpy, torch and cupy can view without a copy.

    `device` is "cpu" or "cuda"; `owner` is what keeps the memory alive (a device buffer,
    a host array). This object and every DLPack tensor exported from it hold `owner` --
    the tensors hold only `owner`, so it alone must keep the memory valid. Implements
    ``__dlpack__``/``__dlpack_device__``, plus ``__array_interface__`` on the CPU
    (``np.asarray`` is zero-copy) and ``__cuda_array_interface__`` (version 3) on CUDA
    (``torch.as_tensor``, ``cupy.asarray``; these views hold this object). The memory must
    be ready to read: exports report no stream and ignore a consumer's, since the runtime
    synchronizes its own stream before handing an array out.

    Subclass it for arrays that own their memory: call ``super().__init__(ptr, shape,
    dtype, device, device_id, owner=buffer)`` and add methods (e.g. a ``numpy()`` copy).
    """

    def __init__(self, ptr: int, shape: Sequence[int], dtype: Any, device: Device,
                 device_id: int = 0, owner: Any = None, readonly: bool = False) -> None:
        if device not in _TYPE_OF_DEVICE:
            raise ValueError(f"ExportedArray: device {device!r}; expected 'cpu' or 'cuda'")
        self.dtype = np.dtype(dtype)
        if self.dtype not in _DLPACK_CODES:
            raise ValueError(f"ExportedArray: unsupported dtype {self.dtype.str}; "
                             f"expected one of {_DTYPE_NAMES}")
        self.ptr, self.shape = int(ptr), tuple(int(d) for d in shape)
        self.device, self.device_id = device, int(device_id)
        self.owner, self.readonly = owner, bool(readonly)
        self._capsules = _CapsuleKeeper()

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype.name}, "
                f"device='{self.device}:{self.device_id}')")

    def __dlpack_device__(self) -> tuple[DLDeviceType, int]:
        return _TYPE_OF_DEVICE[self.device], self.device_id

    def __dlpack__(self, *, stream: int | None = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """A "dltensor" capsule (or "dltensor_versioned" when ``max_version >= (1, 0)``)
        viewing this array. `stream` is ignored: the memory is ready (see the class)."""
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"{self!r} cannot be exported to DLPack device {tuple(dl_device)}")
        if copy:
            raise BufferError(f"{self!r} is exported without a copy; copy=True is unsupported")
        versioned = max_version is not None and max_version[0] >= 1
        if self.readonly and not versioned:
            raise BufferError(f"{self!r} is read-only, which only a versioned DLPack "
                              "consumer (max_version >= (1, 0)) can be told")
        self._capsules.capsule = None  # free the previous one here, at a safe point
        self._capsules.capsule = _export_capsule(self, versioned)
        return self._capsules.capsule

    @property
    def __array_interface__(self) -> dict[str, Any]:
        if self.device != "cpu":
            raise AttributeError("__array_interface__ (a CUDA array: use DLPack or CAI)")
        return {"version": 3, "shape": self.shape, "typestr": self.dtype.str,
                "data": (self.ptr, self.readonly), "strides": None}

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self.device != "cuda":
            raise AttributeError("__cuda_array_interface__ (a CPU array)")
        return {"version": 3, "shape": self.shape, "typestr": self.dtype.str,
                "data": (self.ptr, self.readonly), "strides": None, "stream": None}


def _export_capsule(array: ExportedArray, versioned: bool) -> Any:
    ndim = len(array.shape)
    shape = (ctypes.c_int64 * max(ndim, 1))(*array.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(
        *(math.prod(array.shape[i + 1:]) for i in range(ndim)))  # explicit: DLPack >= 1.2 wants them
    managed: Any = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    tensor = managed.dl_tensor
    tensor.data = array.ptr or None
    tensor.device = DLDevice(_TYPE_OF_DEVICE[array.device], array.device_id)
    tensor.ndim = ndim
    tensor.dtype = DLDataType(*_DLPACK_CODES[array.dtype], 1)
    tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    tensor.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    tensor.byte_offset = 0
    if versioned:
        managed.version = DLPackVersion(1, 0)
        managed.flags = _READ_ONLY_FLAG if array.readonly else 0
    context = _Export(managed, shape, strides, array.owner)
    managed.manager_ctx = id(context)
    managed.deleter = DELETER_VERSIONED if versioned else DELETER
    capsule = capsule_new(ctypes.addressof(managed),
                           CAPSULE_NAME["dltensor_versioned" if versioned else "dltensor"],
                           CAPSULE_DESTRUCTOR)
    incref(context)  # owned by the capsule, then by its consumer, until the deleter runs
    return capsule
