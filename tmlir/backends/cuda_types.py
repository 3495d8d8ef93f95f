"""Element types in the generated CUDA C: C type names, literals, conversions, ``tm_half``.

Each IR element type has one C type (``tmlir/dtypes.py``'s table; ``index`` is ``int``).
float16 is ``tm_half``, a 16-bit struct defined by `HALF_PRELUDE` at the top of any source
that uses it, with exact conversions written as bit manipulation (round to nearest even,
NaN kept NaN, overflow to infinity, subnormals exact), so NVRTC, nvcc and the emu's g++
compile the same text. We do not include ``cuda_fp16.h``: measured with NVRTC 13.0 on a
5-line kernel, the include makes every compile about 40% slower (0.024 s to 0.033 s), the
emu would need its own ``__half`` anyway, and a struct has no implicit conversions that
could turn a float into its bit pattern by accident. Templates never compute in f16 (the
builder widens loads to f32), so the prelude needs only the two conversions.
"""

from __future__ import annotations

import math
import struct

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, IndexType
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import DiagnosticException

from tmlir import dtypes


class CudaEmitError(DiagnosticException):
    """The IR contains something the CUDA printer cannot express."""


HALF_PRELUDE = """\
// tm_half: an IEEE binary16 in memory; tmlir computes float16 elements in float.
struct tm_half { unsigned short bits; };
__device__ __forceinline__ float tm_half_to_float(tm_half h) {
  const unsigned int sign = (h.bits & 0x8000u) << 16;
  const unsigned int exponent = (h.bits >> 10) & 0x1fu;
  unsigned int mantissa = h.bits & 0x3ffu;
  if (exponent == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return __uint_as_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return __uint_as_float(sign);
  unsigned int e = 113;  // a subnormal: normalize it
  while (!(mantissa & 0x400u)) { mantissa <<= 1; --e; }
  return __uint_as_float(sign | (e << 23) | ((mantissa & 0x3ffu) << 13));
}
__device__ __forceinline__ tm_half tm_float_to_half(float f) {  // round to nearest even
  const unsigned int x = __float_as_uint(f);
  const unsigned int sign = (x >> 16) & 0x8000u;
  const unsigned int a = x & 0x7fffffffu;
  unsigned int bits;
  if (a > 0x7f800000u) {
    bits = sign | 0x7e00u | ((a >> 13) & 0x3ffu);  // NaN stays NaN
  } else if (a >= 0x477ff000u) {
    bits = sign | 0x7c00u;  // at least 65520: infinity
  } else if (a >= 0x38800000u) {  // a normal half
    const unsigned int m = a - 0x38000000u;
    bits = sign | ((m + 0xfffu + ((m >> 13) & 1u)) >> 13);
  } else if (a > 0x33000000u) {  // a subnormal half (above half the smallest one)
    const unsigned int shift = 126u - (a >> 23);
    const unsigned int mantissa = (a & 0x7fffffu) | 0x800000u;
    const unsigned int rest = mantissa & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    unsigned int q = mantissa >> shift;
    q += (rest > half || (rest == half && (q & 1u))) ? 1u : 0u;
    bits = sign | q;
  } else {
    bits = sign;  // rounds to zero
  }
  tm_half h;
  h.bits = (unsigned short)bits;
  return h;
}
"""


def c_type(type: Attribute) -> str:
    """The C type of an IR element type (or ``index``)."""
    if isinstance(type, IndexType):
        return "int"
    dtype = dtypes.from_ir(type)
    if dtype is None:
        raise CudaEmitError(f"the CUDA printer does not support the type {type}")
    return dtype.c


def float_literal(value: float, type: Attribute = Float32Type()) -> str:
    """A float constant of IR type `type` (``f32``, ``f64`` or ``f16``) as C text."""
    if isinstance(type, Float16Type):
        bits = int(np.array(value, np.float16).view(np.uint16))
        return f"tm_half{{0x{bits:04x}}}"
    if math.isnan(value) or math.isinf(value):
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        text = f"__int_as_float(0x{bits:08x})"
        return f"((double){text})" if isinstance(type, Float64Type) else text
    if isinstance(type, Float64Type):
        text = repr(float(value))
        return text if ("." in text or "e" in text) else f"{text}.0"
    text = str(np.float32(value))  # the shortest text that reads back as this float
    return f"{text}f" if ("." in text or "e" in text) else f"{text}.0f"


def int_literal(value: int, ctype: str) -> str:
    """An integer constant of C type `ctype`: ``true``/``false`` for a bool, an ``LL``
    suffix where the value needs 64 bits."""
    if ctype == "bool":
        return "true" if value else "false"
    return f"{value}LL" if not -(2**31) <= value < 2**31 else str(value)


def float_conversion(source: Attribute, target: Attribute, operand: str) -> str:
    """``arith.extf``/``arith.truncf`` of `operand` between ``f16``, ``f32`` and ``f64``."""
    if isinstance(source, Float16Type):
        widened = f"tm_half_to_float({operand})"
        return widened if isinstance(target, Float32Type) else f"((double){widened})"
    if isinstance(target, Float16Type):
        narrowed = operand if isinstance(source, Float32Type) else f"(float){operand}"
        return f"tm_float_to_half({narrowed})"
    return f"(({c_type(target)}){operand})"


#: C types narrower than ``int``: C computes them in ``int`` (unsigned: ``unsigned int``,
#: so that a product cannot overflow a signed int), and the result is converted back,
#: which wraps as ONNX's integer arithmetic does.
NARROW_INTEGERS = {"signed char": "int", "short": "int", "unsigned char": "unsigned int",
                   "unsigned short": "unsigned int"}


def math_function(name: str, type: Attribute) -> str:
    """The C math function `name` (float spelling, ``expf``) for elements of `type`:
    the double spelling (``exp``) for ``f64``."""
    if isinstance(type, Float64Type) and name.endswith("f"):
        return name[:-1]
    return name


def unsigned_constant(op: Operation) -> str | None:
    """The C literal of a constant of an unsigned type (``IRBuilder.constant``: an index
    constant converted by ``arith.index_cast``), e.g. ``255u``; None for any other op."""
    if not (isinstance(op, arith.IndexCastOp) and isinstance(op.input.owner, arith.ConstantOp)
            and dtypes.is_unsigned(op.result.type)):
        return None
    width = op.result.type.width.data  # type: ignore[attr-defined]
    value = op.input.owner.value.value.data % 2**width  # type: ignore[attr-defined]
    return f"{value}ull" if width == 64 else f"{value}u"
