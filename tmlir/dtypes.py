"""The element types tmlir compiles, and their names at every level.

One table, read by the frontend (ONNX ``TensorProto`` codes), the dialects (xDSL types),
the CUDA printer (C types), the runtimes (numpy dtypes) and error messages (ONNX names):

=========  ==========  ======  ======================  =====================================
ONNX       numpy       IR      C                       computed in
=========  ==========  ======  ======================  =====================================
FLOAT      float32     f32     ``float``               float
FLOAT16    float16     f16     ``tm_half`` (16 bits)   float: loads widen, stores round (RNE)
DOUBLE     float64     f64     ``double``              double
INT8       int8        i8      ``signed char``         its own type, wrapping
INT16      int16       i16     ``short``               its own type, wrapping
INT32      int32       i32     ``int``                 int
INT64      int64       i64     ``long long``           long long
UINT8      uint8       ui8     ``unsigned char``       its own type, wrapping
UINT16     uint16      ui16    ``unsigned short``      its own type, wrapping
UINT32     uint32      ui32    ``unsigned int``        unsigned int
UINT64     uint64      ui64    ``unsigned long long``  unsigned long long
BOOL       bool        i1      ``bool`` (one byte)     bool
BFLOAT16   bfloat16    bf16    ``tm_bf16`` (16 bits)   float: loads widen, stores round (RNE)
FLOAT8*    float8_*    f8*     ``tm_f8e4m3fn``, ...    float: loads widen, stores round (RNE)
=========  ==========  ======  ======================  =====================================

Signed integers are signless in the IR (``i8``, as MLIR's arith wants them) and signed
everywhere else, as ONNX's; unsigned integers are xDSL's unsigned integer types (``ui8``),
so that a tensor, a buffer and a loaded value say which they are, and the schedules pick
unsigned division, comparison and widening for them (`is_unsigned`). float16 has no
arithmetic of its own: ``IRBuilder.load`` widens an ``f16`` element to ``f32`` and
``IRBuilder.store`` rounds an ``f32`` to ``f16``, so every f32 template computes on f16
tensors; ``tm_half`` is a 16-bit struct with exact conversions (``backends/cuda_types.py``).

bfloat16 and the float8 family (``FLOAT8E4M3FN``, ``FLOAT8E4M3FNUZ``, ``FLOAT8E5M2``,
``FLOAT8E5M2FNUZ``; numpy: ``ml_dtypes``' dtypes, as ``onnx.numpy_helper`` gives them) are
*narrow floats* like float16 (`NARROW_FLOATS`, `is_narrow_float`): stored in their own
bits, computed in ``f32``, converted with ``ml_dtypes``' rules (round to nearest even;
overflow to infinity, or to NaN for the types without one; FNUZ types have no negative
zero). float8 is a storage type: Cast, CastLike and the ops that take any type.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
from onnx import TensorProto
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute


@dataclass(frozen=True)
class DType:
    """One element type: its ONNX code and name, numpy dtype, IR type and C type."""

    onnx: int
    numpy: np.dtype
    c: str
    #: The IR type of a float that numpy does not see as one (``ml_dtypes``' types).
    float_ir: Attribute | None = None

    @property
    def name(self) -> str:
        """The numpy name: ``float32``, ``int64``, ``uint8``, ``bool``, ..."""
        return self.numpy.name

    @property
    def onnx_name(self) -> str:
        """``FLOAT``, ``INT64``, ``FLOAT16``, ``BOOL``, ..."""
        return TensorProto.DataType.Name(self.onnx)

    @property
    def ir(self) -> Attribute:
        if self.float_ir is not None:
            return self.float_ir
        if self.is_float:
            return {2: Float16Type(), 4: Float32Type(), 8: Float64Type()}[self.numpy.itemsize]
        if self.is_bool:
            return IntegerType(1)
        return IntegerType(8 * self.numpy.itemsize,
                           Signedness.UNSIGNED if self.is_unsigned else Signedness.SIGNLESS)

    @property
    def is_float(self) -> bool:
        return self.float_ir is not None or self.numpy.kind == "f"

    @property
    def is_narrow_float(self) -> bool:
        """A float stored narrower than it is computed (in ``f32``): float16, bfloat16, float8."""
        return self.is_float and self.numpy.itemsize < 4

    @property
    def max_finite(self) -> float:
        """The largest finite value of a float type (448 for ``FLOAT8E4M3FN``)."""
        return float(ml_dtypes.finfo(self.numpy).max)

    @property
    def is_bool(self) -> bool:
        return self.numpy.kind == "b"

    @property
    def is_int(self) -> bool:
        """A signed or unsigned integer (not bool)."""
        return self.numpy.kind in "iu"

    @property
    def is_unsigned(self) -> bool:
        return self.numpy.kind == "u"

    @property
    def onnx_type(self) -> str:
        """onnxruntime's type string: ``tensor(float)``, ``tensor(double)``, ``tensor(int64)``, ..."""
        special = {"float32": "float", "float64": "double", "float8_e4m3fn": "float8e4m3fn",
                   "float8_e4m3fnuz": "float8e4m3fnuz", "float8_e5m2": "float8e5m2",
                   "float8_e5m2fnuz": "float8e5m2fnuz"}
        return f"tensor({special.get(self.name, self.name)})"


FLOAT32 = DType(TensorProto.FLOAT, np.dtype(np.float32), "float")
FLOAT16 = DType(TensorProto.FLOAT16, np.dtype(np.float16), "tm_half")
FLOAT64 = DType(TensorProto.DOUBLE, np.dtype(np.float64), "double")
INT64 = DType(TensorProto.INT64, np.dtype(np.int64), "long long")
INT32 = DType(TensorProto.INT32, np.dtype(np.int32), "int")
INT16 = DType(TensorProto.INT16, np.dtype(np.int16), "short")
INT8 = DType(TensorProto.INT8, np.dtype(np.int8), "signed char")
UINT64 = DType(TensorProto.UINT64, np.dtype(np.uint64), "unsigned long long")
UINT32 = DType(TensorProto.UINT32, np.dtype(np.uint32), "unsigned int")
UINT16 = DType(TensorProto.UINT16, np.dtype(np.uint16), "unsigned short")
UINT8 = DType(TensorProto.UINT8, np.dtype(np.uint8), "unsigned char")
BOOL = DType(TensorProto.BOOL, np.dtype(np.bool_), "bool")
BFLOAT16 = DType(TensorProto.BFLOAT16, np.dtype(ml_dtypes.bfloat16), "tm_bf16", BFloat16Type())
FLOAT8E4M3FN = DType(TensorProto.FLOAT8E4M3FN, np.dtype(ml_dtypes.float8_e4m3fn), "tm_f8e4m3fn",
                     Float8E4M3FNType())
FLOAT8E4M3FNUZ = DType(TensorProto.FLOAT8E4M3FNUZ, np.dtype(ml_dtypes.float8_e4m3fnuz), "tm_f8e4m3fnuz",
                       Float8E4M3FNUZType())
FLOAT8E5M2 = DType(TensorProto.FLOAT8E5M2, np.dtype(ml_dtypes.float8_e5m2), "tm_f8e5m2", Float8E5M2Type())
FLOAT8E5M2FNUZ = DType(TensorProto.FLOAT8E5M2FNUZ, np.dtype(ml_dtypes.float8_e5m2fnuz), "tm_f8e5m2fnuz",
                       Float8E5M2FNUZType())
#: The float8 types: storage only (Cast, CastLike and the ops that take any type).
FLOAT8S: tuple[DType, ...] = (FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ)
DTYPES: tuple[DType, ...] = (FLOAT32, INT64, INT32, BOOL, FLOAT16, FLOAT64, INT8, INT16,
                             UINT8, UINT16, UINT32, UINT64, BFLOAT16, *FLOAT8S)
#: The float types that arithmetic takes (float8 is storage only).
FLOATS: tuple[DType, ...] = (FLOAT32, FLOAT16, BFLOAT16, FLOAT64)
#: The floats stored narrower than they are computed (in ``f32``).
NARROW_FLOATS: tuple[DType, ...] = (FLOAT16, BFLOAT16, *FLOAT8S)
#: Every integer type (not bool).
ALL_INTEGERS: tuple[DType, ...] = (INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8)
NUMERIC: tuple[DType, ...] = (*FLOATS, *ALL_INTEGERS)
#: The types of indices, shapes and token ids (``Gather`` indices, ``Reshape`` shapes, ...).
INTEGERS: tuple[DType, ...] = (INT64, INT32)
SUPPORTED_NAMES = ", ".join(d.name for d in DTYPES)


_NARROW_IR = tuple(d.ir for d in NARROW_FLOATS)


def from_onnx(code: int) -> DType | None:
    """The DType of an ONNX ``TensorProto.DataType`` code; None if tmlir has none."""
    return next((d for d in DTYPES if d.onnx == code), None)


def from_ir(type: Attribute) -> DType | None:
    """The DType of an IR element type (``f32``, ``f16``, ``i64``, ``ui8``, ``i1``, ...); None otherwise."""
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


def is_float(type: Attribute) -> bool:
    """Whether an IR element type is a float (``f16``, ``bf16``, ``f32``, ``f64``, ``f8E4M3FN``, ...)."""
    return isinstance(type, Float16Type | Float32Type | Float64Type) or type in _NARROW_IR


def is_narrow_float(type: Attribute) -> bool:
    """Whether an IR element type is stored narrower than it is computed (in ``f32``):
    ``f16``, ``bf16`` and the float8 types."""
    return type in _NARROW_IR


def is_unsigned(type: Attribute) -> bool:
    """Whether an IR element type is an unsigned integer (``ui8`` ... ``ui64``)."""
    return isinstance(type, IntegerType) and type.signedness.data == Signedness.UNSIGNED


def onnx_name(code: int) -> str:
    """The ONNX name of any data type code (``INT8``, ``FLOAT16``, ``#99`` if unknown)."""
    names = TensorProto.DataType
    return names.Name(code) if code in names.values() else f"#{code}"
