"""Element types in the generated CUDA C: C type names, literals, conversions, ``tm_half``.

Each IR element type has one C type (``tmlir/dtypes.py``'s table; ``index`` is ``int``, or
``long long`` in a kernel that needs 64-bit indices).
float16 is ``tm_half``, a 16-bit struct defined by `HALF_PRELUDE` at the top of any source
that uses it, with exact conversions written as bit manipulation (round to nearest even,
NaN kept NaN, overflow to infinity, subnormals exact), so NVRTC, nvcc and the emu's g++
compile the same text; on the GPU (``__CUDA_ARCH__``) every value but a NaN takes the PTX
``cvt`` instead, one instruction with the same result (a NaN keeps the software path, which
keeps its payload; bfloat16 likewise, from sm_80). We do not include ``cuda_fp16.h``: measured with NVRTC 13.0 on a
5-line kernel, the include makes every compile about 40% slower (0.024 s to 0.033 s), the
emu would need its own ``__half`` anyway, and a struct has no implicit conversions that
could turn a float into its bit pattern by accident. Templates never compute in f16 (the
builder widens loads to f32), so the prelude needs only the two conversions.

bfloat16 and the float8 types are the same kind of struct (``tm_bf16``, ``tm_f8e4m3fn``,
``tm_f8e4m3fnuz``, ``tm_f8e5m2``, ``tm_f8e5m2fnuz``), whose two conversions call one
generic pair, ``tm_narrow_to_float`` and ``tm_float_to_narrow``, parametrized by the
format's exponent and mantissa widths, bias and kind (`NarrowFormat`: IEEE-like with
infinities, ``FN`` with only NaN at the top, ``FNUZ`` with NaN in place of negative zero),
with ``ml_dtypes``' semantics: round to nearest even, overflow to infinity or NaN (a NaN
keeps the top bits of its payload where the type has one, so that data movement, which
widens and narrows, keeps every bit pattern). A ``double`` is narrowed through ``float``,
as ``ml_dtypes`` (so onnx's reference) narrows it. `prelude` gives the definitions a
source uses, once, at its top.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, Float64Type, IndexType
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import DiagnosticException

from tmlir import dtypes
from tmlir.backends.tensor_core import prelude_for as tensor_core_prelude


class CudaEmitError(DiagnosticException):
    """The IR contains something the CUDA printer cannot express."""


HALF_PRELUDE = """\
// tm_half: an IEEE binary16 in memory; tmlir computes float16 elements in float.
struct tm_half { unsigned short bits; };
__device__ __forceinline__ float tm_half_to_float(tm_half h) {
#ifdef __CUDA_ARCH__  // on the GPU, one instruction where the result is the same (not a NaN)
  if ((h.bits & 0x7c00u) != 0x7c00u) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
    return f;
  }
#endif
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
  tm_half h;
#ifdef __CUDA_ARCH__  // on the GPU, one instruction (cvt.rn) for all but a NaN, whose payload is kept below
  if (f == f) {
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
    return h;
  }
#endif
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
  h.bits = (unsigned short)bits;
  return h;
}
"""


@dataclass(frozen=True)
class NarrowFormat:
    """The bit layout of a narrow float other than float16: 1 sign bit, `exponent` and
    `mantissa` bits, the exponent `bias`, and its `kind` (0: IEEE-like, the top exponent
    is infinity and NaN; 1: ``FN``, only all ones is NaN; 2: ``FNUZ``, NaN is the
    negative-zero pattern)."""

    exponent: int
    mantissa: int
    bias: int
    kind: int


#: C type -> format.
NARROW_FORMATS: dict[str, NarrowFormat] = {
    "tm_bf16": NarrowFormat(8, 7, 127, 0),
    "tm_f8e4m3fn": NarrowFormat(4, 3, 7, 1),
    "tm_f8e4m3fnuz": NarrowFormat(4, 3, 8, 2),
    "tm_f8e5m2": NarrowFormat(5, 2, 15, 0),
    "tm_f8e5m2fnuz": NarrowFormat(5, 2, 16, 2),
}

NARROW_PRELUDE = """\
// Narrow floats (bfloat16, float8): 1 sign bit, E exponent bits, M mantissa bits, a bias,
// a kind (0: IEEE-like; 1: FN, NaN is all ones; 2: FNUZ, NaN is the negative-zero pattern).
__device__ __forceinline__ float tm_narrow_to_float(unsigned int bits, int E, int M, int bias, int kind) {
  const unsigned int sign = ((bits >> (E + M)) & 1u) << 31;
  const unsigned int exponent = (bits >> M) & ((1u << E) - 1u), mantissa = bits & ((1u << M) - 1u);
  const unsigned int top = (1u << E) - 1u;
  if (kind == 2 && bits == (1u << (E + M))) return __uint_as_float(0xffc00000u);
  if (kind == 1 && exponent == top && mantissa == (1u << M) - 1u) return __uint_as_float(sign | 0x7fc00000u);
  if (kind == 0 && exponent == top) return __uint_as_float(sign | 0x7f800000u | (mantissa << (23 - M)));
  if (exponent != 0) return __uint_as_float(sign | ((exponent + 127u - bias) << 23) | (mantissa << (23 - M)));
  if (E == 8) return __uint_as_float(sign | (mantissa << (23 - M)));  // a float subnormal
  return __uint_as_float(sign | __float_as_uint((float)mantissa * __uint_as_float((128u - bias - M) << 23)));
}
__device__ __forceinline__ unsigned int tm_float_to_narrow(float f, int E, int M, int bias, int kind) {
  const unsigned int x = __float_as_uint(f), a = x & 0x7fffffffu;
  const unsigned int sign = (x >> 31) << (E + M), top = (1u << E) - 1u;
  const unsigned int payload = (a >> (23 - M)) & ((1u << M) - 1u);  // kept: a widened NaN narrows back
  const unsigned int nan = kind == 2 ? 1u << (E + M) : kind == 1 ? sign | (1u << (E + M)) - 1u
                                     : sign | (top << M) | (payload ? payload : 1u << (M - 1));
  if (a >= 0x7f800000u) return a == 0x7f800000u && kind == 0 ? sign | (top << M) : nan;
  const int e = a >= 0x800000u ? (int)(a >> 23) - 127 : -126, emin = 1 - bias;
  const unsigned int m = a >= 0x800000u ? (a & 0x7fffffu) | 0x800000u : a;
  int shift = 23 - M + (e < emin ? emin - e : 0);
  if (shift > 31) shift = 31;
  const unsigned int rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
  unsigned int q = (m >> shift) + ((rest > half || (rest == half && ((m >> shift) & 1u))) ? 1u : 0u);
  if (e >= emin) q += (unsigned int)(e + bias - 1) << M;  // q holds the implicit bit
  const unsigned int largest = kind == 0 ? (top << M) - 1u : kind == 1 ? (top << M) | ((1u << M) - 2u)
                                                                      : (top << M) | ((1u << M) - 1u);
  if (q > largest) return kind == 0 ? sign | (top << M) : nan;
  return kind == 2 && q == 0 ? 0u : sign | q;
}
"""


#: Narrow types the GPU converts in hardware (sm_80+): the PTX ``cvt`` from f32 (all but a
#: NaN, whose payload the software keeps), and the exact widening (a bfloat16 is the high
#: half of its float).
_HARDWARE_CONVERSIONS = {"tm_bf16": ("cvt.rn.bf16.f32", "__uint_as_float((unsigned int)h.bits << 16)")}


def _narrow_struct(ctype: str, fmt: NarrowFormat) -> str:
    name, storage = ctype[3:], "unsigned short" if fmt.exponent + fmt.mantissa == 15 else "unsigned char"
    args = f"{fmt.exponent}, {fmt.mantissa}, {fmt.bias}, {fmt.kind}"
    widen = f"  return tm_narrow_to_float(h.bits, {args});\n"
    narrow = f"  h.bits = ({storage})tm_float_to_narrow(f, {args});\n"
    if ctype in _HARDWARE_CONVERSIONS:  # one instruction on the GPU; the emu keeps the software
        cvt, widened = _HARDWARE_CONVERSIONS[ctype]
        guard = "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n"
        widen = f"{guard}  return {widened};\n#else\n{widen}#endif\n"
        narrow = (f'{guard}  if (f == f) {{\n    asm("{cvt} %0, %1;" : "=h"(h.bits) : "f"(f));\n'
                  f"    return h;\n  }}\n#endif\n{narrow}")
    return (f"struct {ctype} {{ {storage} bits; }};\n"
            f"__device__ __forceinline__ float tm_{name}_to_float({ctype} h) {{\n{widen}}}\n"
            f"__device__ __forceinline__ {ctype} tm_float_to_{name}(float f) {{\n"
            f"  {ctype} h;\n{narrow}  return h;\n}}\n")


def prelude(source: str) -> str:
    """The type definitions and conversions that `source` uses (``tm_half``, ``tm_bf16``,
    ``tm_f8e4m3fn``, ...), in one block, then the tensor-core primitives it calls
    (`tensor_core.prelude_for`); empty if none."""
    def uses(ctype: str) -> bool:  # the type, or only its conversion (a fused kernel rounds through it)
        return re.search(rf"\btm_(?:float_to_)?{ctype[3:]}(?![a-z0-9])", source) is not None

    parts = [HALF_PRELUDE] if uses("tm_half") else []
    used = [c for c in NARROW_FORMATS if uses(c)]
    if used:
        parts.append(NARROW_PRELUDE + "".join(_narrow_struct(c, NARROW_FORMATS[c]) for c in used))
    return "".join(parts) + tensor_core_prelude(source)


#: The CUDA type of a vector load (``tmgpu.load_vector``), by (element bytes, width); 16-bit
#: floats travel as the bits of ``unsigned int``s, two per component.
VECTOR_TYPES = {(4, 2): "float2", (4, 4): "float4", (2, 4): "uint2", (2, 8): "uint4"}
_COMPONENTS = "xyzw"


def vector_type(element: Attribute, width: int) -> str:
    """The C type that holds a vector of `width` `element`s (``float4``, ``uint4``, ...)."""
    dtype = dtypes.from_ir(element)
    ctype = VECTOR_TYPES.get((dtype.numpy.itemsize, width)) if dtype is not None else None
    if ctype is None:
        raise CudaEmitError(f"the CUDA printer has no vector of {width} {element}")
    return ctype


def vector_element(vector: str, element: Attribute, index: int) -> str:
    """Element `index` of the vector variable `vector` of `element`s as C text: ``v.y``, or
    for a 16-bit float ``tm_half{(unsigned short)(v.x >> 16)}`` (little-endian halves)."""
    dtype = dtypes.from_ir(element)
    assert dtype is not None
    if dtype.numpy.itemsize == 4:
        return f"{vector}.{_COMPONENTS[index]}"
    word = f"{vector}.{_COMPONENTS[index // 2]}"
    bits = f"{word} >> 16" if index % 2 else f"{word} & 0xffffu"
    return f"{dtype.c}{{(unsigned short)({bits})}}"


def c_type(type: Attribute, index: str = "int") -> str:
    """The C type of an IR element type, or of ``index``: `index` (``int``, or ``long long``
    in a kernel of ``index_bits(64)``)."""
    if isinstance(type, IndexType):
        return index
    dtype = dtypes.from_ir(type)
    if dtype is None:
        raise CudaEmitError(f"the CUDA printer does not support the type {type}")
    return dtype.c


def float_literal(value: float, type: Attribute = Float32Type()) -> str:
    """A float constant of IR type `type` (``f32``, ``f64``, or a narrow float: ``f16``,
    ``bf16``, ``f8E4M3FN``, ..., as its bits) as C text."""
    if dtypes.is_narrow_float(type):
        dtype = dtypes.of_ir(type)
        with np.errstate(over="ignore", invalid="ignore"):
            bits = int(np.array(value, dtype.numpy).view(f"u{dtype.numpy.itemsize}"))
        return f"{dtype.c}{{0x{bits:0{2 * dtype.numpy.itemsize}x}}}"
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
    """``arith.extf``/``arith.truncf`` of `operand` between ``f32``, ``f64`` and the narrow
    floats (``f16``, ``bf16``, float8: through ``float``)."""
    if dtypes.is_narrow_float(source):
        operand = f"tm_{c_type(source)[3:]}_to_float({operand})"
        source = Float32Type()
    if dtypes.is_narrow_float(target):
        narrowed = operand if isinstance(source, Float32Type) else f"(float){operand}"
        return f"tm_float_to_{c_type(target)[3:]}({narrowed})"
    if source == target:
        return operand
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
