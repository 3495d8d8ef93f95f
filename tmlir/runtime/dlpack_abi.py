"""The DLPack ABI over ctypes: dlpack.h's structs (v1.x, and the unversioned v0.x
tensor), the Python C-API calls that make and read capsules, and the deleters and capsule
destructor of the tensors tmlir exports (`tmlir.runtime.interop` uses them).

Everything here must stay valid for the life of the process: capsules can outlive this
module at interpreter shutdown, so names are static C strings and callbacks are immortal.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


def _capi(name: str, restype: Any, *argtypes: Any) -> Any:
    """A private prototype of a Python C-API function (called with the GIL held; a Python
    error it sets is raised), so no argtypes are changed on the shared ``ctypes.pythonapi``."""
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


capsule_new = _capi("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p,
                     ctypes.c_void_p)
capsule_pointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p)
capsule_set_name = _capi("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_void_p)
capsule_name = _capi("PyCapsule_GetName", ctypes.c_char_p, ctypes.py_object)
# Raw-pointer variants, for the capsule destructor (the capsule is mid-deallocation there).
_capsule_is_valid_raw = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_capsule_pointer_raw = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.c_void_p)
incref = _capi("Py_IncRef", None, ctypes.py_object)
_decref = _capi("Py_DecRef", None, ctypes.py_object)
_raise_pending_error = _capi("Py_IsInitialized", ctypes.c_int)
_raw_malloc = _capi("PyMem_RawMalloc", ctypes.c_void_p, ctypes.c_size_t)
call_deleter = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)  # a producer's deleter, GIL held


def _static_cstring(text: bytes) -> int:
    """A NUL-terminated copy of `text` that lives as long as the process (capsule names
    must outlive every capsule, including those freed during interpreter shutdown)."""
    address = _raw_malloc(len(text) + 1)
    ctypes.memmove(address, text + b"\0", len(text) + 1)
    return address


CAPSULE_NAME = {name: _static_cstring(name.encode()) for name in
         ("dltensor", "used_dltensor", "dltensor_versioned", "used_dltensor_versioned")}


def _c_callback(body: Callable[[int], None]) -> Any:
    """`body` as a ``void (*)(void*)`` C callback object, kept alive forever.

    ctypes cannot run a callback while a Python exception is pending (C code freeing our
    object on its error path) without losing that exception, and CPython may crash after.
    So exports avoid needing one then: versioned deleters are C code and capsules die at
    safe points (`_CapsuleKeeper`). Where one still runs then -- an unversioned deleter
    called by a legacy consumer freeing its tensor while an exception propagates -- it
    does its work and re-raises the exception, which Python reports as "ignored".
    """

    def callback(address: int) -> None:
        try:
            _raise_pending_error()
        except BaseException:
            body(address)
            raise
        body(address)

    thunk = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(callback)
    incref(thunk)  # immortal: a capsule may outlive this module at shutdown
    return thunk


def _drop_manager_ctx(managed: int) -> None:
    """The deleter of an unversioned export: drop the reference manager_ctx holds."""
    context = DLManagedTensor.from_address(managed).manager_ctx
    _decref(ctypes.cast(context, ctypes.py_object).value)


def _delete_unconsumed(capsule: int) -> None:
    """The destructor of an exported capsule: call the deleter unless a consumer took it."""
    for name, struct in (("dltensor", DLManagedTensor),
                         ("dltensor_versioned", DLManagedTensorVersioned)):
        if _capsule_is_valid_raw(capsule, CAPSULE_NAME[name]):
            managed = _capsule_pointer_raw(capsule, CAPSULE_NAME[name])
            call_deleter(struct.from_address(managed).deleter)(managed)


_DELETER_CALLBACK = _c_callback(_drop_manager_ctx)
_DESTRUCTOR_CALLBACK = _c_callback(_delete_unconsumed)
DELETER = ctypes.cast(_DELETER_CALLBACK, ctypes.c_void_p).value
CAPSULE_DESTRUCTOR = ctypes.cast(_DESTRUCTOR_CALLBACK, ctypes.c_void_p).value
# The deleter of a versioned export is C code, safe to call on any error path: a
# DLManagedTensorVersioned's manager_ctx sits where a Py_buffer's `obj` does, so
# PyBuffer_Release(managed) drops the reference that manager_ctx holds (its object has no
# buffer slots) and touches nothing else. Like any C-API call it needs the GIL.
assert DLManagedTensorVersioned.manager_ctx.offset == ctypes.sizeof(ctypes.c_void_p), "64-bit only"
DELETER_VERSIONED = ctypes.cast(ctypes.pythonapi.PyBuffer_Release, ctypes.c_void_p).value
