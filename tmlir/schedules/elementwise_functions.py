"""What every elementwise graph op computes per element, for the elementwise template.

``element_function(op)`` gives the ``expr`` text that the kernel's header comment shows
(``leaky_relu(x0, alpha=0.1)``, ``x0 + x1``) and the ``ElementFunction`` that builds the
``arith`` / ``math`` IR of one output element from the loaded operand elements, or None
for an op that is not elementwise. Formulas are chosen for float32 accuracy (``expm1``
for ELU/SELU, ``log1p`` for softplus, tanh-GELU as ``x * sigmoid(2u)`` so that no
``1 + tanh`` cancels) and for numpy's NaN semantics: ``max``, ``min``, ``clip`` and
``relu`` give NaN for a NaN operand, where CUDA's ``fmaxf`` would give the other one.
``neg``, ``abs``, ``add``, ``sub``, ``mul``, ``div``, ``max``, ``min`` and ``sum`` also
take integers (``i64``, ``i32``); comparisons, logic, ``where`` and ``cast`` are in
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
from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import Operation, SSAValue

from tmlir.dialects import graph, tm
from tmlir.ir.builder import IRBuilder
from tmlir.schedules.elementwise import ElementFunction, elementwise_kernel
from tmlir.schedules.elementwise_logic import logic_function
from tmlir.schedules.registry import NoTemplate, schedules

Params = dict[str, float | str]
UnaryFunction = Callable[[IRBuilder, SSAValue, Params], SSAValue]


# -- building blocks ----------------------------------------------------------------------

def _select(b: IRBuilder, predicate: str, lhs: SSAValue, rhs: SSAValue | float,
            then: SSAValue | float, otherwise: SSAValue | float) -> SSAValue:
    """``lhs <predicate> rhs ? then : otherwise`` (floats become f32 constants, one each)."""
    constants: dict[float, SSAValue] = {}

    def value(v: SSAValue | float) -> SSAValue:
        if not isinstance(v, float):
            return v
        if v not in constants:
            constants[v] = b.f32(v)
        return constants[v]

    lhs, rhs, then, otherwise = (value(v) for v in (lhs, rhs, then, otherwise))
    condition = b.insert(arith.CmpfOp(lhs, rhs, predicate)).results[0]
    return b.fop(arith.SelectOp, condition, then, otherwise)


def _extremum(b: IRBuilder, x: SSAValue, y: SSAValue | float, predicate: str) -> SSAValue:
    """``y`` if ``x <predicate> y`` or ``y`` is NaN, else ``x``: NaN when either is NaN.

    A constant ``y`` needs no NaN test at run time.
    """
    if isinstance(y, float):
        return b.f32(y) if math.isnan(y) else _select(b, predicate, x, y, y, x)
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
    return b.fop(arith.MulfOp, b.f32(k), x)


def _add(b: IRBuilder, k: float, x: SSAValue) -> SSAValue:
    return b.fop(arith.AddfOp, b.f32(k), x)


def _call(op_type: type[Operation]) -> UnaryFunction:
    return lambda b, x, _: b.fop(op_type, x)


# -- the functions ------------------------------------------------------------------------

def _sigmoid(b: IRBuilder, x: SSAValue, _: Params) -> SSAValue:
    e = b.fop(xmath.ExpOp, b.fop(arith.NegfOp, x))
    return b.fop(arith.DivfOp, b.f32(1.0), _add(b, 1.0, e))


def _softplus(b: IRBuilder, x: SSAValue, _: Params) -> SSAValue:
    """``max(x, 0) + log1p(exp(-|x|))``: no overflow, and accurate for x << 0."""
    tail = b.fop(xmath.Log1pOp, b.fop(xmath.ExpOp, b.fop(arith.NegfOp, b.fop(xmath.AbsFOp, x))))
    return b.fop(arith.AddfOp, b.fop(arith.MaxnumfOp, x, b.f32(0.0)), tail)


def _hard_sigmoid(b: IRBuilder, x: SSAValue, alpha: float, beta: float) -> SSAValue:
    t = b.fop(arith.AddfOp, _mul(b, alpha, x), b.f32(beta), name="t")
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


UNARY: dict[type[Operation], UnaryFunction] = {
    graph.ReluOp: lambda b, x, _: _max(b, x, 0.0),
    graph.SigmoidOp: _sigmoid,
    graph.TanhOp: _call(xmath.TanhOp),
    graph.ExpOp: _call(xmath.ExpOp),
    graph.LogOp: _call(xmath.LogOp),
    graph.SqrtOp: _call(xmath.SqrtOp),
    graph.ReciprocalOp: lambda b, x, _: b.fop(arith.DivfOp, b.f32(1.0), x),
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
}


def _int_select(b: IRBuilder, predicate: str, lhs: SSAValue, rhs: SSAValue, then: SSAValue,
                otherwise: SSAValue) -> SSAValue:
    """``lhs <predicate> rhs ? then : otherwise`` on integers (signed predicates)."""
    condition = b.insert(arith.CmpiOp(lhs, rhs, predicate)).results[0]
    return b.fop(arith.SelectOp, condition, then, otherwise)


#: Integer versions of the functions that ONNX defines on integers too (``Neg``, ``Abs``,
#: ``Add``, ``Sub``, ``Mul``, ``Div``, ``Max``, ``Min``, ``Sum``), keyed like the float ones.
INTEGER_UNARY: dict[type[Operation], UnaryFunction] = {
    graph.NegOp: lambda b, x, _: b.fop(arith.SubiOp, b.constant(0, x.type), x),
    graph.AbsOp: lambda b, x, _: _int_select(
        b, "slt", x, b.constant(0, x.type), b.fop(arith.SubiOp, b.constant(0, x.type), x), x),
}


def _int_div(b: IRBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    """C's ``x / y``, truncating toward zero as ONNX's integer ``Div`` does, but 0 for
    ``y == 0`` and ``-x`` for ``y == -1``: the two divisions that trap on the CPU (the
    quotient is undefined in ONNX; the emu must not crash the process)."""
    zero, one, minus_one = (b.constant(v, x.type) for v in (0, 1, -1))
    safe = _int_select(b, "eq", y, zero, one, y)
    quotient = _int_select(b, "eq", y, minus_one, b.fop(arith.SubiOp, zero, x),
                           b.fop(arith.DivSIOp, x, safe))
    return _int_select(b, "eq", y, zero, zero, quotient)


INFIX: dict[type[Operation], tuple[str, type[Operation], Callable[..., SSAValue]]] = {
    # op -> (symbol, float op, integer function (b, x, y))
    graph.AddOp: ("+", arith.AddfOp, lambda b, x, y: b.fop(arith.AddiOp, x, y)),
    graph.SubOp: ("-", arith.SubfOp, lambda b, x, y: b.fop(arith.SubiOp, x, y)),
    graph.MulOp: ("*", arith.MulfOp, lambda b, x, y: b.fop(arith.MuliOp, x, y)),
    graph.DivOp: ("/", arith.DivfOp, _int_div),
}


def _is_float(x: SSAValue) -> bool:
    return isinstance(x.type, Float32Type)


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
        arith.DivfOp, reduce(lambda x, y: b.fop(arith.AddfOp, x, y), xs), b.f32(float(len(xs)))),
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
    if type(op) in NARY:
        return f"{kind}({', '.join(args)})", NARY[type(op)]
    if type(op) in UNARY:
        assert isinstance(op, graph.UnaryElementwiseOp)
        params = op.parameters()
        shown = [*args, *(f"{k}={_f32_text(v)}" for k, v in params.items())]
        fn, int_fn = UNARY[type(op)], INTEGER_UNARY.get(type(op))
        return f"{kind}({', '.join(shown)})", lambda b, xs: (
            fn if _is_float(xs[0]) or int_fn is None else int_fn)(b, xs[0], params)
    return logic_function(op)



def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


@schedules(graph.UnaryElementwiseOp, graph.BinaryElementwiseOp, graph.VariadicElementwiseOp,
           graph.CompareOp, graph.LogicalOp, graph.NotOp, graph.IsNanOp, graph.WhereOp,
           graph.CastOp)
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
