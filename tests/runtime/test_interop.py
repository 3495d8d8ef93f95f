"""Zero-copy array exchange: numpy round trips over DLPack both ways, a fake
``__cuda_array_interface__`` over host memory, deleter accounting by reference counts, and
every error message; with a GPU, torch and cupy round trips."""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tmlir.backends.cuda_runtime import cuda_available
from tmlir.runtime import dlpack_abi
from tmlir.runtime.interop import ArrayRef, ConsumedDLPack, ExportedArray, InteropError, as_array_ref

HAVE_GPU = cuda_available()
DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]
NAME = "input 'x'"


def gpu_test(fn: Callable[..., None]) -> Callable[..., None]:
    """Mark `fn` as needing a CUDA GPU and skip it where there is none."""
    return pytest.mark.gpu(pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU")(fn))


class DLPackOnly:
    """A producer exposing only the DLPack methods of `array`; `protocol` picks how new a
    ``__dlpack__`` signature it has: "versioned" (max_version), "stream" or "bare"."""

    def __init__(self, array: Any, protocol: str = "versioned") -> None:
        self.array, self.protocol, self.capsules = array, protocol, []

    def __dlpack__(self, **kwargs: Any) -> Any:
        allowed = {"versioned": {"stream", "max_version", "dl_device", "copy"},
                   "stream": {"stream"}, "bare": set()}[self.protocol]
        if set(kwargs) - allowed:
            raise TypeError(f"unexpected keyword {sorted(set(kwargs) - allowed)}")
        capsule = self.array.__dlpack__(**kwargs)
        self.capsules.append(capsule)
        return capsule

    def __dlpack_device__(self) -> Any:
        return self.array.__dlpack_device__()


class FakeCAI:
    """``__cuda_array_interface__`` over host memory (tmlir only reads the dict)."""

    def __init__(self, array: np.ndarray, **changes: Any) -> None:
        self.array = array
        self.__cuda_array_interface__ = {
            "version": 3, "shape": array.shape, "typestr": array.dtype.str,
            "data": (array.ctypes.data, False), "strides": None, **changes}


OTHER = b"other"  # a capsule's name must outlive it


def other_capsule() -> Any:
    new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
        ("PyCapsule_New", ctypes.pythonapi))
    return new(8, OTHER, None)


def capsule_pointer(capsule: Any, name: bytes) -> int:
    get = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", ctypes.pythonapi))
    return get(capsule, name)


class Forged:
    """An unversioned DLPack producer whose tensor is an ExportedArray's with some fields
    overwritten (strides, dtype, data/byte_offset), to reach the consumer's checks."""

    def __init__(self, array: ExportedArray, strides: tuple[int, ...] | None = None,
                 dtype: tuple[int, int, int] | None = None, byte_offset: int = 0,
                 device: tuple[int, int] = (1, 0)) -> None:
        self.array, self.strides, self.dtype, self.byte_offset = array, strides, dtype, byte_offset
        self.device = device
        self.keep: Any = None

    def __dlpack__(self, stream: int | None = None) -> Any:
        capsule = self.array.__dlpack__()
        tensor = dlpack_abi.DLManagedTensor.from_address(capsule_pointer(capsule, b"dltensor")).dl_tensor
        if self.strides is not None:
            self.keep = (ctypes.c_int64 * len(self.strides))(*self.strides)
            tensor.strides = ctypes.cast(self.keep, ctypes.POINTER(ctypes.c_int64))
        if self.dtype is not None:
            tensor.dtype = dlpack_abi.DLDataType(*self.dtype)
        if self.byte_offset:
            tensor.data -= self.byte_offset
            tensor.byte_offset = self.byte_offset
        return capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device


def export(a: np.ndarray, device: str = "cpu", **kwargs: Any) -> ExportedArray:
    return ExportedArray(a.ctypes.data, a.shape, a.dtype, device, owner=a, **kwargs)


def check_one_line(info: pytest.ExceptionInfo[InteropError], *fragments: str) -> None:
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{NAME}: "), message
    for fragment in fragments:
        assert fragment in message, message


# --- producing: ExportedArray -> numpy ------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_views_exported_array_without_copy(dtype: str) -> None:
    base = (np.arange(12) % 2).astype(dtype).reshape(3, 4)
    exported = export(base)
    for view in (np.from_dlpack(exported), np.asarray(exported)):
        assert view.dtype == base.dtype and view.shape == (3, 4)
        assert view.ctypes.data == base.ctypes.data
        view[2, 3] = 0 if dtype != "bool" else False
        view[0, 0] = 1 if dtype != "bool" else True
        assert base[0, 0] and not base[2, 3]  # writes go through: the same memory


def test_exported_array_basics() -> None:
    base = np.zeros((2, 3), np.float32)
    cpu, cuda = export(base), export(base, "cuda")
    assert (cpu.shape, cpu.dtype, cpu.device, cpu.nbytes) == ((2, 3), np.float32, "cpu", 24)
    assert repr(cuda) == "ExportedArray(shape=(2, 3), dtype=float32, device='cuda:0')"
    assert cpu.__dlpack_device__() == (1, 0) and cuda.__dlpack_device__() == (2, 0)
    assert not hasattr(cpu, "__cuda_array_interface__") and not hasattr(cuda, "__array_interface__")
    assert cuda.__cuda_array_interface__ == {
        "version": 3, "shape": (2, 3), "typestr": "<f4", "data": (base.ctypes.data, False),
        "strides": None, "stream": None}
    assert repr(cpu.__dlpack__()).startswith('<capsule object "dltensor" ')
    assert repr(cpu.__dlpack__(max_version=(1, 0))).startswith('<capsule object "dltensor_versioned" ')
    with pytest.raises(ValueError, match="device 'gpu'"):
        ExportedArray(0, (1,), np.float32, "gpu")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unsupported dtype <c8"):
        ExportedArray(0, (1,), np.complex64, "cpu")


def test_zero_size_and_scalar_exports() -> None:
    for base in (np.zeros((0, 3), np.float32), np.array(7, np.int64)):
        exported = ExportedArray(base.ctypes.data if base.size else 0, base.shape, base.dtype, "cpu",
                                 owner=base)
        np.testing.assert_array_equal(np.from_dlpack(exported), base)
        ref = as_array_ref(DLPackOnly(exported, "bare"))
        assert ref.shape == base.shape and ref.nbytes == base.nbytes
        ref.release()


def test_read_only_export() -> None:
    exported = export(np.arange(3.0), readonly=True)
    assert not np.from_dlpack(exported).flags.writeable  # numpy asks for a versioned capsule
    assert not np.asarray(exported).flags.writeable
    with pytest.raises(BufferError, match="read-only"):
        exported.__dlpack__()  # an unversioned capsule cannot say so


def test_export_refuses_other_devices_and_copies() -> None:
    exported = export(np.arange(3.0))
    with pytest.raises(BufferError, match=r"DLPack device \(2, 0\)"):
        exported.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="copy=True"):
        np.from_dlpack(exported, copy=True)
    exported.__dlpack__(dl_device=(1, 0), copy=False)


# --- consuming: as_array_ref ----------------------------------------------------------

def test_numpy_array_ref_borrows_or_copies() -> None:
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    ref = as_array_ref(a)
    assert (ref.ptr, ref.shape, ref.dtype, ref.device, ref.device_id, ref.stream) == (
        a.ctypes.data, (3, 4), np.int32, "cpu", 0, None)
    assert ref.owner is a and ref.nbytes == 48 and not ref.readonly
    assert ref.to_numpy().ctypes.data == a.ctypes.data
    transposed = as_array_ref(a.T)  # numpy only: a C-contiguous copy instead of an error
    assert transposed.ptr != a.ctypes.data and transposed.shape == (4, 3)
    np.testing.assert_array_equal(transposed.to_numpy(), a.T)
    a.flags.writeable = False
    assert as_array_ref(a).readonly


@pytest.mark.parametrize("protocol", ["versioned", "stream", "bare"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_dlpack_ref_from_numpy(dtype: str, protocol: str) -> None:
    a = (np.arange(6) % 3).astype(dtype).reshape(2, 3)
    producer = DLPackOnly(a, protocol)
    ref = as_array_ref(producer)
    assert (ref.ptr, ref.shape, ref.dtype, ref.device, ref.stream) == (
        a.ctypes.data, (2, 3), a.dtype, "cpu", None)
    assert isinstance(ref.owner, ConsumedDLPack)
    np.testing.assert_array_equal(ref.to_numpy(), a)
    used = "used_dltensor_versioned" if protocol == "versioned" else "used_dltensor"
    assert repr(producer.capsules[-1]).startswith(f'<capsule object "{used}" ')  # renamed
    ref.release()


def test_exported_array_round_trips_through_dlpack() -> None:
    a = np.arange(4.0)
    for protocol in ("versioned", "bare"):
        ref = as_array_ref(DLPackOnly(export(a), protocol))
        assert (ref.ptr, ref.shape, ref.dtype) == (a.ctypes.data, (4,), np.float64)
        ref.release()
    direct = as_array_ref(export(a, "cuda"))  # no capsule: the ExportedArray itself is the owner
    assert (direct.device, direct.ptr, type(direct.owner)) == ("cuda", a.ctypes.data, ExportedArray)


def test_byte_offset_and_size_one_strides_are_accepted() -> None:
    a = np.arange(8, dtype=np.float32).reshape(1, 8)
    ref = as_array_ref(Forged(export(a), strides=(99, 1), byte_offset=16))
    assert ref.ptr == a.ctypes.data and ref.shape == (1, 8)
    ref.release()


def test_cuda_array_interface_ref() -> None:
    a = np.arange(6, dtype=np.float16).reshape(2, 3)
    ref = as_array_ref(FakeCAI(a, stream=7))
    assert (ref.ptr, ref.shape, ref.dtype, ref.device, ref.device_id, ref.stream) == (
        a.ctypes.data, (2, 3), np.float16, "cuda", 0, 7)
    assert isinstance(ref.owner, FakeCAI)
    v2 = as_array_ref(FakeCAI(a, version=2, strides=(6, 2), data=(a.ctypes.data, True)))
    assert v2.stream is None and v2.readonly and v2.shape == (2, 3)
    assert as_array_ref(FakeCAI(a.astype(bool))).dtype == np.bool_
    with pytest.raises(InteropError, match="a CUDA array"):
        ref.to_numpy()


# --- lifetimes: every deleter runs exactly once ---------------------------------------

def test_consumed_numpy_capsule_is_deleted_once() -> None:
    a = np.arange(5.0)
    baseline = sys.getrefcount(a)
    for protocol in ("versioned", "bare"):
        ref = as_array_ref(DLPackOnly(a, protocol))
        assert sys.getrefcount(a) == baseline + 1  # numpy's manager_ctx holds `a`
        ref.release()
        ref.release()  # a second release is a no-op, not a second deleter call
        assert sys.getrefcount(a) == baseline
        ref = as_array_ref(DLPackOnly(a, protocol))
        del ref  # garbage collection releases too
        assert sys.getrefcount(a) == baseline


def test_exported_capsule_deleted_once_when_consumed() -> None:
    a = np.arange(5.0)
    exported = export(a)
    baseline = sys.getrefcount(a)
    for protocol in ("versioned", "bare"):
        view = np.from_dlpack(DLPackOnly(exported, protocol))
        assert sys.getrefcount(a) == baseline + 1  # the export holds the owner
        del view  # numpy calls the deleter
        assert sys.getrefcount(a) == baseline
        ref = as_array_ref(DLPackOnly(exported, protocol))
        ref.release()
        ref.release()
        assert sys.getrefcount(a) == baseline
    del exported
    assert sys.getrefcount(a) == baseline - 1


def test_unconsumed_capsule_deleted_by_its_destructor() -> None:
    a = np.arange(5.0)
    baseline = sys.getrefcount(a)
    exported = export(a)
    for versioned in (False, True):
        capsule = exported.__dlpack__(max_version=(1, 0) if versioned else None)
        assert sys.getrefcount(a) == baseline + 2  # the ExportedArray and the capsule's tensor
        del capsule
        exported.__dlpack__()  # a new export frees the previous capsule the array kept
        assert sys.getrefcount(a) == baseline + 2
    del exported
    assert sys.getrefcount(a) == baseline


def test_consumer_error_paths_release_everything() -> None:
    a = np.arange(4.0)
    baseline = sys.getrefcount(a)
    exported, on_gpu = export(a), export(a, "cuda")

    def two(x: Any, y: Any) -> None: ...

    for _ in range(3):
        with pytest.raises(ZeroDivisionError):  # numpy's array dies as the exception unwinds
            two(np.from_dlpack(exported), 1 / 0)
        with pytest.raises(RuntimeError, match="Unsupported device"):  # numpy drops the capsule
            np.from_dlpack(on_gpu)
        with pytest.raises(InteropError):  # tmlir consumed the capsule, then rejected it
            as_array_ref(Forged(exported, strides=(2,)), name=NAME)
    del exported, on_gpu
    assert sys.getrefcount(a) == baseline


# --- errors: one line naming the input ------------------------------------------------

def test_error_messages() -> None:
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    cases: list[tuple[Any, tuple[str, ...]]] = [
        ([1, 2], ("expected a numpy array or an object with __cuda_array_interface__ or "
                  "__dlpack__, got list",)),
        (a.astype(np.complex64), ("unsupported dtype <c8", "expected one of float16, float32")),
        (a.astype(">f4"), ("unsupported dtype >f4",)),
        (np.ma.masked_array(a), ("a masked numpy array",)),
        (Forged(export(a), strides=(1, 4)),
         ("a non-contiguous array (strides (1, 4) for shape (4, 4))", "(.contiguous())")),
        (Forged(export(a), dtype=(5, 64, 1)), ("unsupported DLPack dtype (code 5, 64 bits)",)),
        (Forged(export(a), dtype=(2, 32, 4)), ("a vector dtype with 4 lanes; expected lanes 1",)),
        (Forged(export(a), device=(4, 0)), ("DLPack device type 4", "expected a CPU (1) or CUDA (2)")),
        (FakeCAI(a, strides=(4, 16)), ("non-contiguous array (byte strides (4, 16) for shape (4, 4))",)),
        (FakeCAI(a, mask=a), ("a masked __cuda_array_interface__ array; expected mask None",)),
        (FakeCAI(a, version=1), ("__cuda_array_interface__ version 1; expected 2 or 3",)),
        (FakeCAI(a, stream=0), ("stream 0, which the protocol disallows",)),
        (FakeCAI(a, typestr="<c8"), ("unsupported dtype <c8",)),
        (FakeCAI(a, typestr="zz"), ("malformed __cuda_array_interface__",)),
        (FakeCAI(a, data=None), ("malformed __cuda_array_interface__",)),
    ]
    for obj, fragments in cases:
        with pytest.raises(InteropError) as info:
            as_array_ref(obj, name=NAME)
        check_one_line(info, *fragments)


def test_errors_from_producers_are_one_line() -> None:
    class Refuses:
        @property
        def __cuda_array_interface__(self) -> Any:
            raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad.\n"
                               "If gradients aren't required, use var.detach()")

    class BadDLPack:
        def __init__(self, result: Any) -> None:
            self.result = result

        def __dlpack__(self, stream: Any = None, max_version: Any = None) -> Any:
            if isinstance(self.result, Exception):
                raise self.result
            return self.result

        def __dlpack_device__(self) -> tuple[int, int]:
            return (1, 0)

    cases: list[tuple[Any, str]] = [
        (Refuses(), "__cuda_array_interface__ failed: RuntimeError: Can't get"),
        (BadDLPack(BufferError("read-only\nmore")), "__dlpack__() failed: BufferError: read-only"),
        (BadDLPack(42), "__dlpack__() returned int; expected a 'dltensor' capsule"),
        (BadDLPack(other_capsule()), "__dlpack__() returned a capsule named 'other'; expected"),
    ]
    for obj, fragment in cases:
        with pytest.raises(InteropError) as info:
            as_array_ref(obj, name=NAME)
        check_one_line(info, fragment)


def test_array_ref_is_frozen() -> None:
    ref = as_array_ref(np.zeros(2))
    assert isinstance(ref, ArrayRef)
    with pytest.raises(AttributeError):
        ref.ptr = 0  # type: ignore[misc]


# --- GPU: torch and cupy ----------------------------------------------------------------

class DLPackOf:
    """Only the DLPack methods of a device array (hides its __cuda_array_interface__)."""

    def __init__(self, array: Any) -> None:
        self.array = array

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self.array.__dlpack_device__()


@gpu_test
def test_torch_cuda_round_trip() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    stream = torch.cuda.current_stream().cuda_stream or 1  # DLPack: 1 is the legacy default stream
    for source in (t, DLPackOf(t)):  # __cuda_array_interface__, then DLPack
        ref = as_array_ref(source, name=NAME, stream=stream)
        assert (ref.ptr, ref.shape, ref.dtype, ref.device) == (t.data_ptr(), (3, 4), np.float32, "cuda")
        ref.release()
    with pytest.raises(InteropError, match=r"non-contiguous .*\.contiguous\(\)"):
        as_array_ref(DLPackOf(t.T), name=NAME)
    exported = ExportedArray(t.data_ptr(), (3, 4), np.float32, "cuda", owner=t)
    for view in (torch.from_dlpack(exported), torch.as_tensor(exported, device="cuda")):
        assert view.data_ptr() == t.data_ptr() and view.shape == (3, 4)
        view[0, 0] = 100.0
        assert t[0, 0].item() == 100.0
        t[0, 0] = 0.0


@gpu_test
def test_cupy_round_trip() -> None:
    cupy = pytest.importorskip("cupy")
    x = cupy.arange(12, dtype=cupy.int32).reshape(3, 4)
    for source in (x, DLPackOf(x)):
        ref = as_array_ref(source, name=NAME)
        assert (ref.ptr, ref.shape, ref.dtype, ref.device) == (x.data.ptr, (3, 4), np.int32, "cuda")
        ref.release()
    exported = ExportedArray(x.data.ptr, (3, 4), np.int32, "cuda", owner=x)
    for view in (cupy.from_dlpack(exported), cupy.asarray(exported)):
        assert view.data.ptr == x.data.ptr and view.shape == (3, 4)
        view[0, 0] = 100
        assert int(x[0, 0]) == 100
        x[0, 0] = 0
