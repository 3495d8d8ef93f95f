"""The element types tmlir compiles, and their names at every level.

One table, read by the frontend (ONNX ``TensorProto`` codes), the dialects (xDSL types:
``f32``, ``i64``, ``i32``, ``i1``), the CUDA printer (C types), the runtimes (numpy dtypes)
and error messages (ONNX names). float32 carries the computation; int64 and int32 carry
token ids, indices and shapes, bool carries masks. Integers are signless in the IR and
signed everywhere else (as ONNX's INT32/INT64 are); a bool is one byte in memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import TensorProto
from xdsl.dialects.builtin import Float32Type, IntegerType
from xdsl.ir import Attribute


@dataclass(frozen=True)
class DType:
    """One element type: its ONNX code and name, numpy dtype, IR type and C type."""

    onnx: int
    numpy: np.dtype
    c: str

    @property
    def name(self) -> str:
        """The numpy name: ``float32``, ``int64``, ``int32``, ``bool``."""
        return self.numpy.name

    @property
    def onnx_name(self) -> str:
        """``FLOAT``, ``INT64``, ``INT32``, ``BOOL``."""
        return TensorProto.DataType.Name(self.onnx)

    @property
    def ir(self) -> Attribute:
        return Float32Type() if self.is_float else IntegerType(8 * self.numpy.itemsize
                                                                if self.numpy != np.bool_ else 1)

    @property
    def is_float(self) -> bool:
        return self.numpy.kind == "f"

    @property
    def is_bool(self) -> bool:
        return self.numpy.kind == "b"

    @property
    def is_int(self) -> bool:
        return self.numpy.kind == "i"

    @property
    def onnx_type(self) -> str:
        """onnxruntime's type string: ``tensor(float)``, ``tensor(int64)``, ..."""
        return f"tensor({'float' if self.is_float else self.name})"


FLOAT32 = DType(TensorProto.FLOAT, np.dtype(np.float32), "float")
INT64 = DType(TensorProto.INT64, np.dtype(np.int64), "long long")
INT32 = DType(TensorProto.INT32, np.dtype(np.int32), "int")
BOOL = DType(TensorProto.BOOL, np.dtype(np.bool_), "bool")
DTYPES: tuple[DType, ...] = (FLOAT32, INT64, INT32, BOOL)
NUMERIC: tuple[DType, ...] = (FLOAT32, INT64, INT32)
INTEGERS: tuple[DType, ...] = (INT64, INT32)
SUPPORTED_NAMES = ", ".join(d.name for d in DTYPES)


def from_onnx(code: int) -> DType | None:
    """The DType of an ONNX ``TensorProto.DataType`` code; None if tmlir has none."""
    return next((d for d in DTYPES if d.onnx == code), None)


def from_ir(type: Attribute) -> DType | None:
    """The DType of an IR element type (``f32``, ``i64``, ``i32``, ``i1``); None otherwise."""
    return next((d for d in DTYPES if d.ir == type), None)


def from_numpy(dtype: np.dtype | type) -> DType | None:
    """The DType of a numpy dtype; None if tmlir has none."""
    dtype = np.dtype(dtype)
    return next((d for d in DTYPES if d.numpy == dtype), None)


def of_ir(type: Attribute) -> DType:
    """The DType of an IR element type that must be one (an assertion otherwise)."""
    dtype = from_ir(type)
    assert dtype is not None, f"not an element type of tmlir: {type}"
    return dtype


def onnx_name(code: int) -> str:
    """The ONNX name of any data type code (``INT8``, ``FLOAT16``, ``#99`` if unknown)."""
    names = TensorProto.DataType
    return names.Name(code) if code in names.values() else f"#{code}"
