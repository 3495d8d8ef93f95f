"""What every elementwise graph op computes per element, for the elementwise template.

``element_function(op)`` gives the ``expr`` text that the kernel's header comment shows
(``leaky_relu(x0, alpha=0.1)``, ``x0 + x1``) and the ``ElementFunction`` that builds the
``arith`` / ``math`` IR of one output element from the loaded operand elements, or None
for an op that is not elementwise. Constants and math ops take the operand's float type:
f32 (f16 is loaded widened to it), or f64, computed in double (``exp``, not ``expf``).
Formulas are chosen for float32 accuracy (``expm1``
for ELU/SELU, ``log1p`` for softplus, tanh-GELU as ``x * sigmoid(2u)`` so that no
``1 + tanh`` cancels) and for numpy's NaN semantics: ``max``, ``min``, ``clip`` and
``relu`` give NaN for a NaN operand, where CUDA's ``fmaxf`` would give the other one.
``neg``, ``abs``, ``add``, ``sub``, ``mul``, ``div``, ``max``, ``min``, ``sum``, ``sign``,
``mod`` and ``prelu`` also take integers (``i64``, ``i32``), the bitwise ops and shifts
only integers (`BITWISE`); ``mod`` is numpy's ``mod`` (or with ``{fmod}`` C's ``fmod``)
from ``fmodf``, as ``arith.remf`` (`tmlir.ir.arith_ext`: xDSL lacks it), and never traps on
integers (a divisor of 0 gives 0). Comparisons, logic, ``where`` and ``cast`` are in
``elementwise_logic.py``. `elementwise_op_kernel` builds the kernel of every such op on the
elementwise template; it is the registered builder (``registry.py``) of the elementwise and
logic op families, so a new elementwise op needs only its entry in these tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import reduce

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from tmlir import dtypes
from tmlir.dialects import graph, tm
from tmlir.ir.arith_ext import RemFOp
from tmlir.ir.builder import IRBuilder
from tmlir.schedules.elementwise import ElementFunction, elementwise_kernel
from tmlir.schedules.elementwise_logic import logic_function
from tmlir.schedules.registry import NoTemplate, schedules

Params = dict[str, float | str]
UnaryFunction = Callable[[IRBuilder, SSAValue, Params], SSAValue]


# -- building blocks ----------------------------------------------------------------------

def _select(b: IRBuilder, predicate: str, lhs: SSAValue, rhs: SSAValue | float,
            then: SSAValue | float, otherwise: SSAValue | float) -> SSAValue:
    """``lhs <predicate> rhs ? then : otherwise`` (floats become constants of `lhs`'s type,
    one each)."""
    constants: dict[float, SSAValue] = {}

    def value(v: SSAValue | float) -> SSAValue:
        if not isinstance(v, float):
            return v
        if v not in constants:
            constants[v] = b.constant(v, lhs.type)
        return constants[v]

    lhs, rhs, then, otherwise = (value(v) for v in (lhs, rhs, then, otherwise))
    condition = b.insert(arith.CmpfOp(lhs, rhs, predicate)).results[0]
    return b.fop(arith.SelectOp, condition, then, otherwise)


def _extremum(b: IRBuilder, x: SSAValue, y: SSAValue | float, predicate: str) -> SSAValue:
    """``y`` if ``x <predicate> y`` or ``y`` is NaN, else ``x``: NaN when either is NaN.

    A constant ``y`` needs no NaN test at run time.
    """
    if isinstance(y, float):
        return b.constant(y, x.type) if math.isnan(y) else _select(b, predicate, x, y, y, x)
    better = b.insert(arith.CmpfOp(x, y, predicate)).results[0]
    y_nan = b.insert(arith.CmpfOp(y, y, "une")).results[0]
    take_y = b.fop(arith.OrIOp, better, y_nan)
    return b.fop(arith.SelectOp, take_y, y, x)


def _max(b: IRBuilder, x: SSAValue, y: SSAValue | float) -> SSAValue:
    """numpy.maximum."""
    return _extremum(b, x, y, "olt")


def _min(b: IRBuilder, x: SSAValue, y: SSAValue | float) -> SSAValue:
    """numpy.minimum."""
    return _extremum(b, x, y, "ogt")


def _mul(b: IRBuilder, k: float, x: SSAValue) -> SSAValue:
    return b.fop(arith.MulfOp, b.constant(k, x.type), x)


def _add(b: IRBuilder, k: float, x: SSAValue) -> SSAValue:
    return b.fop(arith.AddfOp, b.constant(k, x.type), x)


def _call(op_type: type[Operation]) -> UnaryFunction:
    return lambda b, x, _: b.fop(op_type, x)


# -- the functions ------------------------------------------------------------------------

def _sigmoid(b: IRBuilder, x: SSAValue, _: Params) -> SSAValue:
    e = b.fop(xmath.ExpOp, b.fop(arith.NegfOp, x))
    return b.fop(arith.DivfOp, b.constant(1.0, x.type), _add(b, 1.0, e))


def _softplus(b: IRBuilder, x: SSAValue, _: Params) -> SSAValue:
    """``max(x, 0) + log1p(exp(-|x|))``: no overflow, and accurate for x << 0."""
    tail = b.fop(xmath.Log1pOp, b.fop(xmath.ExpOp, b.fop(arith.NegfOp, b.fop(xmath.AbsFOp, x))))
    return b.fop(arith.AddfOp, b.fop(arith.MaxnumfOp, x, b.constant(0.0, x.type)), tail)


def _hard_sigmoid(b: IRBuilder, x: SSAValue, alpha: float, beta: float) -> SSAValue:
    t = b.fop(arith.AddfOp, _mul(b, alpha, x), b.constant(beta, x.type), name="t")
    return _min(b, _max(b, t, 0.0), 1.0)


def _expm1_below_zero(b: IRBuilder, x: SSAValue, alpha: float, predicate: str) -> SSAValue:
    """``x <predicate> 0 ? alpha * expm1(x) : x`` (ELU and SELU)."""
    negative = _mul(b, alpha, b.fop(xmath.ExpM1Op, x))
    return _select(b, predicate, x, 0.0, negative, x)


def _gelu(b: IRBuilder, x: SSAValue, p: Params) -> SSAValue:
    if p.get("approximate", "none") == "tanh":
        # x/2 * (1 + tanh(u)) == x / (1 + exp(-2u)), u = sqrt(2/pi) * (x + 0.044715 x^3)
        cube = b.fop(arith.MulfOp, b.fop(arith.MulfOp, x, x), x)
        inner = b.fop(arith.AddfOp, x, _mul(b, 0.044715, cube))
        e = b.fop(xmath.ExpOp, _mul(b, -2.0 * math.sqrt(2.0 / math.pi), inner))
        return b.fop(arith.DivfOp, x, _add(b, 1.0, e))
    erf = b.fop(xmath.ErfOp, _mul(b, math.sqrt(0.5), x))
    return b.fop(arith.MulfOp, _mul(b, 0.5, x), _add(b, 1.0, erf))


def _clip(b: IRBuilder, x: SSAValue, p: Params) -> SSAValue:
    if "min" in p:
        x = _max(b, x, float(p["min"]))
    if "max" in p:
        x = _min(b, x, float(p["max"]))
    return x


def _sign(b: IRBuilder, x: SSAValue, _: Params) -> SSAValue:
    """1, -1, +0 for either zero, NaN for NaN (numpy.sign)."""
    zero_or_nan = _select(b, "oeq", x, 0.0, 0.0, x)
    return _select(b, "ogt", x, 0.0, 1.0, _select(b, "olt", x, 0.0, -1.0, zero_or_nan))


def _mish(b: IRBuilder, x: SSAValue, p: Params) -> SSAValue:
    """``x * tanh(softplus(x))``, with the softplus that neither overflows nor cancels."""
    return b.fop(arith.MulfOp, x, b.fop(xmath.TanhOp, _softplus(b, x, p)))


def _shrink(b: IRBuilder, x: SSAValue, p: Params) -> SSAValue:
    bias = b.constant(p["bias"], x.type)
    above = _select(b, "ogt", x, float(p["lambd"]), b.fop(arith.SubfOp, x, bias), 0.0)
    return _select(b, "olt", x, -float(p["lambd"]), b.fop(arith.AddfOp, x, bias), above)


def _celu(b: IRBuilder, x: SSAValue, p: Params) -> SSAValue:
    """``x > 0 ? x : alpha * expm1(x / alpha)`` (the ONNX max + min form, without its sum)."""
    scaled = b.fop(arith.DivfOp, x, b.constant(p["alpha"], x.type))
    return _select(b, "ogt", x, 0.0, x, _mul(b, p["alpha"], b.fop(xmath.ExpM1Op, scaled)))


UNARY: dict[type[Operation], UnaryFunction] = {
    graph.ReluOp: lambda b, x, _: _max(b, x, 0.0),
    graph.SigmoidOp: _sigmoid,
    graph.TanhOp: _call(xmath.TanhOp),
    graph.ExpOp: _call(xmath.ExpOp),
    graph.LogOp: _call(xmath.LogOp),
    graph.SqrtOp: _call(xmath.SqrtOp),
    graph.ReciprocalOp: lambda b, x, _: b.fop(arith.DivfOp, b.constant(1.0, x.type), x),
    graph.NegOp: _call(arith.NegfOp),
    graph.AbsOp: _call(xmath.AbsFOp),
    graph.ErfOp: _call(xmath.ErfOp),
    graph.SoftplusOp: _softplus,
    graph.SoftsignOp: lambda b, x, _: b.fop(arith.DivfOp, x, _add(b, 1.0, b.fop(xmath.AbsFOp, x))),
    graph.HardSwishOp: lambda b, x, _: b.fop(arith.MulfOp, x, _hard_sigmoid(b, x, 1 / 6, 0.5)),
    graph.LeakyReluOp: lambda b, x, p: _select(b, "olt", x, 0.0, _mul(b, p["alpha"], x), x),
    graph.HardSigmoidOp: lambda b, x, p: _hard_sigmoid(b, x, p["alpha"], p["beta"]),
    graph.EluOp: lambda b, x, p: _expm1_below_zero(b, x, p["alpha"], "olt"),
    graph.SeluOp: lambda b, x, p: _mul(b, p["gamma"], _expm1_below_zero(b, x, p["alpha"], "ole")),
    graph.GeluOp: _gelu,
    graph.ClipOp: _clip,
    graph.SignOp: _sign,
    graph.FloorOp: _call(xmath.FloorOp),
    graph.CeilOp: _call(xmath.CeilOp),
    graph.RoundOp: _call(xmath.RoundEvenOp),
    graph.SinOp: _call(xmath.SinOp),
    graph.CosOp: _call(xmath.CosOp),
    graph.TanOp: _call(xmath.TanOp),
    graph.AsinOp: _call(xmath.AsinOp),
    graph.AcosOp: _call(xmath.AcosOp),
    graph.AtanOp: _call(xmath.AtanOp),
    graph.SinhOp: _call(xmath.SinhOp),
    graph.CoshOp: _call(xmath.CoshOp),
    graph.AsinhOp: _call(xmath.AsinhOp),
    graph.AcoshOp: _call(xmath.AcoshOp),
    graph.AtanhOp: _call(xmath.AtanhOp),
    graph.MishOp: _mish,
    graph.ThresholdedReluOp: lambda b, x, p: _select(b, "ogt", x, float(p["alpha"]), x, 0.0),
    graph.ShrinkOp: _shrink,
    graph.CeluOp: _celu,
}


def _int_select(b: IRBuilder, predicate: str, lhs: SSAValue, rhs: SSAValue, then: SSAValue,
                otherwise: SSAValue) -> SSAValue:
    """``lhs <predicate> rhs ? then : otherwise`` on integers (signed predicates, made
    unsigned for unsigned integers)."""
    if dtypes.is_unsigned(lhs.type) and predicate[0] == "s":
        predicate = f"u{predicate[1:]}"
    condition = b.insert(arith.CmpiOp(lhs, rhs, predicate)).results[0]
    return b.fop(arith.SelectOp, condition, then, otherwise)


#: Integer versions of the functions that ONNX defines on integers too (``Neg``, ``Abs``,
#: ``Add``, ``Sub``, ``Mul``, ``Div``, ``Max``, ``Min``, ``Sum``), keyed like the float ones.
INTEGER_UNARY: dict[type[Operation], UnaryFunction] = {
    graph.NegOp: lambda b, x, _: b.fop(arith.SubiOp, b.constant(0, x.type), x),
    graph.AbsOp: lambda b, x, _: _int_select(
        b, "slt", x, b.constant(0, x.type), b.fop(arith.SubiOp, b.constant(0, x.type), x), x),
    graph.SignOp: lambda b, x, _: _int_select(
        b, "sgt", x, b.constant(0, x.type), b.constant(1, x.type), _int_select(
            b, "slt", x, b.constant(0, x.type), b.constant(-1, x.type), b.constant(0, x.type))),
    graph.BitwiseNotOp: lambda b, x, _: b.fop(arith.XOrIOp, x, b.constant(-1, x.type)),
}


def _int_div(b: IRBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    """C's ``x / y``, truncating toward zero as ONNX's integer ``Div`` does, but 0 for
    ``y == 0`` and ``-x`` for ``y == -1``: the two divisions that trap on the CPU (the
    quotient is undefined in ONNX; the emu must not crash the process)."""
    zero, one, minus_one = (b.constant(v, x.type) for v in (0, 1, -1))
    safe = _int_select(b, "eq", y, zero, one, y)
    if dtypes.is_unsigned(x.type):
        return _int_select(b, "eq", y, zero, zero, b.fop(arith.DivUIOp, x, safe))
    quotient = _int_select(b, "eq", y, minus_one, b.fop(arith.SubiOp, zero, x),
                           b.fop(arith.DivSIOp, x, safe))
    return _int_select(b, "eq", y, zero, zero, quotient)


def _float_mod(b: IRBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    """numpy.mod: ``fmod(x, y)``, plus ``y`` where that is nonzero and its sign is not
    ``y``'s; a zero takes the sign of ``y``. NaN for an infinite ``x`` or a zero ``y``."""
    r = b.fop(RemFOp, x, y, name="r")
    zero = b.constant(0.0, y.type)
    nonzero = b.insert(arith.CmpfOp(r, zero, "one")).results[0]
    signs_differ = b.fop(arith.XOrIOp, b.insert(arith.CmpfOp(r, zero, "olt")).results[0],
                         b.insert(arith.CmpfOp(y, zero, "olt")).results[0])
    r = b.fop(arith.SelectOp, b.fop(arith.AndIOp, nonzero, signs_differ),
              b.fop(arith.AddfOp, r, y), r)
    is_zero = b.insert(arith.CmpfOp(r, zero, "oeq")).results[0]
    return b.fop(arith.SelectOp, is_zero, b.fop(xmath.CopySignOp, zero, y), r)


def _int_mod(b: IRBuilder, x: SSAValue, y: SSAValue, fmod: bool) -> SSAValue:
    """C's ``x % y`` (``fmod``) or Python's (the sign of ``y``); 0 for ``y`` of 0 or (signed)
    -1, the remainders that trap on the CPU (by 0 it is undefined in ONNX)."""
    zero, one, minus_one = (b.constant(v, x.type) for v in (0, 1, -1))
    trapping = b.insert(arith.CmpiOp(y, zero, "eq")).results[0]
    if dtypes.is_unsigned(x.type):  # both remainders are C's
        return b.fop(arith.RemUIOp, x, b.fop(arith.SelectOp, trapping, one, y), name="r")
    trapping = b.fop(arith.OrIOp, trapping, b.insert(arith.CmpiOp(y, minus_one, "eq")).results[0])
    r = b.fop(arith.RemSIOp, x, b.fop(arith.SelectOp, trapping, one, y), name="r")
    if fmod:
        return r
    signs_differ = b.fop(arith.XOrIOp, b.insert(arith.CmpiOp(r, zero, "slt")).results[0],
                         b.insert(arith.CmpiOp(y, zero, "slt")).results[0])
    adjust = b.fop(arith.AndIOp, b.insert(arith.CmpiOp(r, zero, "ne")).results[0], signs_differ)
    return b.fop(arith.SelectOp, adjust, b.fop(arith.AddiOp, r, y), r)


def _mod(fmod: bool) -> ElementFunction:
    def mod(b: IRBuilder, xs: Sequence[SSAValue]) -> SSAValue:
        if _is_float(xs[0]):
            return b.fop(RemFOp, *xs) if fmod else _float_mod(b, *xs)
        return _int_mod(b, *xs, fmod)
    return mod


def _shift(b: IRBuilder, x: SSAValue, y: SSAValue, left: bool) -> SSAValue:
    """``x << y`` or ``x >> y`` (arithmetic for signed ``x``) for ``y`` in ``[0, bits)``;
    otherwise what the shift by ``bits - 1`` fills in: 0, or -1 right of a negative ``x``."""
    bits = x.type.width.data  # type: ignore[attr-defined]  (an integer type)
    if dtypes.is_unsigned(x.type):  # logical shifts, no negative amounts
        in_range = b.insert(arith.CmpiOp(y, b.constant(bits, y.type), "ult")).results[0]
        zero = b.constant(0, x.type)
        safe = b.fop(arith.SelectOp, in_range, y, zero)
        shifted = b.fop(arith.ShLIOp if left else arith.ShRUIOp, x, safe)
        return b.fop(arith.SelectOp, in_range, shifted, zero)
    in_range = b.fop(arith.AndIOp, b.insert(arith.CmpiOp(y, b.constant(0, y.type), "sge")).results[0],
                     b.insert(arith.CmpiOp(y, b.constant(bits, y.type), "slt")).results[0])
    if left:
        zero = b.constant(0, x.type)
        shifted = b.fop(arith.ShLIOp, x, b.fop(arith.SelectOp, in_range, y, zero))
        return b.fop(arith.SelectOp, in_range, shifted, zero)
    return b.fop(arith.ShRSIOp, x, b.fop(arith.SelectOp, in_range, y, b.constant(bits - 1, x.type)))


def _prelu(b: IRBuilder, xs: Sequence[SSAValue]) -> SSAValue:
    x, slope = xs
    if _is_float(x):
        return _select(b, "olt", x, 0.0, b.fop(arith.MulfOp, slope, x), x)
    return _int_select(b, "slt", x, b.constant(0, x.type), b.fop(arith.MuliOp, slope, x), x)


#: Integer-only binary ops: op -> (C symbol for the header, element function).
BITWISE: dict[type[Operation], tuple[str, ElementFunction]] = {
    graph.BitwiseAndOp: ("&", lambda b, xs: b.fop(arith.AndIOp, *xs)),
    graph.BitwiseOrOp: ("|", lambda b, xs: b.fop(arith.OrIOp, *xs)),
    graph.BitwiseXorOp: ("^", lambda b, xs: b.fop(arith.XOrIOp, *xs)),
    graph.ShiftLeftOp: ("<<", lambda b, xs: _shift(b, *xs, left=True)),
    graph.ShiftRightOp: (">>", lambda b, xs: _shift(b, *xs, left=False)),
}


INFIX: dict[type[Operation], tuple[str, type[Operation], Callable[..., SSAValue]]] = {
    # op -> (symbol, float op, integer function (b, x, y))
    graph.AddOp: ("+", arith.AddfOp, lambda b, x, y: b.fop(arith.AddiOp, x, y)),
    graph.SubOp: ("-", arith.SubfOp, lambda b, x, y: b.fop(arith.SubiOp, x, y)),
    graph.MulOp: ("*", arith.MulfOp, lambda b, x, y: b.fop(arith.MuliOp, x, y)),
    graph.DivOp: ("/", arith.DivfOp, _int_div),
}


def _is_float(x: SSAValue) -> bool:
    return dtypes.is_float(x.type)


def _fold(b: IRBuilder, xs: Sequence[SSAValue], float_fn: Callable[..., SSAValue],
          int_fn: Callable[..., SSAValue]) -> SSAValue:
    fn = float_fn if _is_float(xs[0]) else int_fn
    return reduce(lambda x, y: fn(b, x, y), xs)


#: Binary and variadic ops: the element from the elements of all operands.
NARY: dict[type[Operation], ElementFunction] = {
    graph.PowOp: lambda b, xs: b.fop(xmath.PowFOp, *xs),
    graph.MaxOp: lambda b, xs: _fold(b, xs, _max,
                                     lambda b, x, y: _int_select(b, "sgt", x, y, x, y)),
    graph.MinOp: lambda b, xs: _fold(b, xs, _min,
                                     lambda b, x, y: _int_select(b, "slt", x, y, x, y)),
    graph.SumOp: lambda b, xs: _fold(b, xs, lambda b, x, y: b.fop(arith.AddfOp, x, y),
                                     lambda b, x, y: b.fop(arith.AddiOp, x, y)),
    graph.MeanOp: lambda b, xs: b.fop(
        arith.DivfOp, reduce(lambda x, y: b.fop(arith.AddfOp, x, y), xs), b.constant(len(xs), xs[0].type)),
    graph.PReluOp: _prelu,
}


def _f32_text(value: float | str) -> str:
    return str(np.float32(value)) if isinstance(value, float) else value


def element_function(op: Operation) -> tuple[str, ElementFunction] | None:
    """The header expression and the per-element IR builder of an elementwise graph op."""
    args = [f"x{i}" for i in range(len(op.operands))]
    kind = op.name.split(".")[-1]
    if type(op) in INFIX:
        symbol, float_op, int_fn = INFIX[type(op)]
        return f" {symbol} ".join(args), lambda b, xs: (
            b.fop(float_op, *xs) if _is_float(xs[0]) else int_fn(b, *xs))
    if type(op) in BITWISE:
        symbol, function = BITWISE[type(op)]
        return f" {symbol} ".join(args), function
    if isinstance(op, graph.ModOp):
        fmod = op.fmod is not None
        return f"{'fmod' if fmod else 'mod'}({', '.join(args)})", _mod(fmod)
    if type(op) in NARY:
        return f"{kind}({', '.join(args)})", NARY[type(op)]
    if type(op) in UNARY or type(op) in INTEGER_UNARY:
        assert isinstance(op, graph.UnaryElementwiseOp)
        params = op.parameters()
        shown = [*args, *(f"{k}={_f32_text(v)}" for k, v in params.items())]
        fn, int_fn = UNARY.get(type(op)), INTEGER_UNARY.get(type(op))
        return f"{kind}({', '.join(shown)})", lambda b, xs: (
            int_fn if int_fn is not None and not _is_float(xs[0]) else fn)(b, xs[0], params)
    return logic_function(op)



def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


@schedules(graph.UnaryElementwiseOp, graph.BinaryElementwiseOp, graph.VariadicElementwiseOp,
           graph.CompareOp, graph.LogicalOp, graph.NotOp, graph.IsNanOp, graph.IsInfOp,
           graph.WhereOp, graph.CastOp)
def elementwise_op_kernel(name: str, op: Operation) -> tm.KernelOp:
    """The kernel of an elementwise op (arguments: its operands, then its result) on the
    elementwise template, computing `element_function`; NoTemplate for an op without one."""
    if (element := element_function(op)) is None:
        raise NoTemplate(f"no schedule template for '{op.name}'")
    expression, compute = element
    return elementwise_kernel(
        name, _shape(op.results[0]), [_shape(v) for v in op.operands], compute, expression,
        element_types=[v.type.get_element_type()  # type: ignore[attr-defined]
                       for v in (*op.operands, op.results[0])])
