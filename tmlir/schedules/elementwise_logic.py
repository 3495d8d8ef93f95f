"""Per-element functions of the graph ops whose result type differs from their operands'
(``dialects/graph/logic.py``): comparisons, boolean logic, ``is_nan``, ``is_inf``, ``where``
and ``cast``.

``logic_function(op)`` gives, like ``element_function``, the header expression and the
IR builder of one output element. Float comparisons use ordered predicates (false when
either side is NaN, as numpy's ``<`` and ``==``); ``is_nan`` is ``x != x``. ``cast``
follows ONNX ``Cast``: float to integer truncates toward zero (C's conversion), anything
to bool is ``x != 0`` (so NaN is true), a bool becomes 0 or 1, integers wrap when
narrowed (int8 to uint8 too: a ``builtin.unrealized_conversion_cast``, C's conversion),
the narrow floats (float16, bfloat16, float8) are converted as float32 and rounded when
stored (a saturating cast to float8 is clipped first, by the frontend).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType, TensorType, UnrealizedConversionCastOp
from xdsl.ir import Attribute, Operation, SSAValue

from tmlir import dtypes
from tmlir.dialects import graph
from tmlir.ir.builder import IRBuilder
from tmlir.schedules.elementwise import ElementFunction

#: comparison op -> (C symbol for the header, float predicate, integer predicate)
_COMPARISONS: dict[type[Operation], tuple[str, str, str]] = {
    graph.EqualOp: ("==", "oeq", "eq"),
    graph.LessOp: ("<", "olt", "slt"),
    graph.LessEqualOp: ("<=", "ole", "sle"),
    graph.GreaterOp: (">", "ogt", "sgt"),
    graph.GreaterEqualOp: (">=", "oge", "sge"),
}
_LOGICAL: dict[type[Operation], tuple[str, type[Operation]]] = {
    graph.AndOp: ("&&", arith.AndIOp), graph.OrOp: ("||", arith.OrIOp),
    graph.XorOp: ("^", arith.XOrIOp),
}


def _compare(b: IRBuilder, xs: Sequence[SSAValue], float_predicate: str,
             int_predicate: str) -> SSAValue:
    if dtypes.is_float(xs[0].type):
        return b.insert(arith.CmpfOp(xs[0], xs[1], float_predicate)).results[0]
    if dtypes.is_unsigned(xs[0].type) and int_predicate[0] == "s":
        int_predicate = f"u{int_predicate[1:]}"
    return b.insert(arith.CmpiOp(xs[0], xs[1], int_predicate)).results[0]


def convert(b: IRBuilder, x: SSAValue, to: Attribute) -> SSAValue:
    """`x` converted to the element type `to` with ONNX ``Cast``'s semantics, computed in
    `to`'s computed type (``f32`` for a narrow float: the store rounds it, see `IRBuilder.store`)."""
    to = b.computed_type(to)
    source, target = dtypes.of_ir(x.type), dtypes.of_ir(to)
    if source == target:
        return x
    if target.is_bool:
        zero = b.constant(0, x.type)
        if source.is_float:
            return b.insert(arith.CmpfOp(x, zero, "une")).results[0]
        return b.insert(arith.CmpiOp(x, zero, "ne")).results[0]
    if source.is_bool:
        op = arith.UIToFPOp(x, to) if target.is_float else arith.ExtUIOp(x, to)
    elif source.is_float and target.is_float:
        wider = target.numpy.itemsize > source.numpy.itemsize
        op = arith.ExtFOp(x, to) if wider else arith.TruncFOp(x, to)
    elif source.is_float:  # truncation toward zero (out of range: undefined in ONNX)
        op = arith.FPToUIOp(x, to) if target.is_unsigned else arith.FPToSIOp(x, to)
    elif target.is_float:
        op = arith.UIToFPOp(x, to) if source.is_unsigned else arith.SIToFPOp(x, to)
    else:
        assert isinstance(x.type, IntegerType) and isinstance(to, IntegerType)
        if to.width.data > x.type.width.data:  # the source's sign decides how it widens
            op = arith.ExtUIOp(x, to) if source.is_unsigned else arith.ExtSIOp(x, to)
        elif to.width.data < x.type.width.data:
            op = arith.TruncIOp(x, to)
        else:  # the same bits read with the other sign (arith has no op for it)
            op = UnrealizedConversionCastOp.get([x], [to])
    return b.insert(op).results[0]


def _result_element(op: Operation) -> Attribute:
    result = op.results[0].type
    assert isinstance(result, TensorType)
    return result.get_element_type()


def _is_inf(op: graph.IsInfOp) -> tuple[str, ElementFunction]:
    """``x == inf``, ``x == -inf``, either, or false, by which ones `op` detects."""
    negative, positive = op.detects()
    infinities = [v for v, detect in ((-math.inf, negative), (math.inf, positive)) if detect]

    def is_inf(b: IRBuilder, xs: Sequence[SSAValue]) -> SSAValue:
        if not infinities:
            return b.constant(False, graph.I1)
        tests = [b.insert(arith.CmpfOp(xs[0], b.constant(v, xs[0].type), "oeq")).results[0] for v in infinities]
        return tests[0] if len(tests) == 1 else b.fop(arith.OrIOp, *tests)

    shown = "" if negative and positive else f", detect_{'negative' if negative else 'positive'}_only"
    return f"is_inf(x0{shown if infinities else ', none'})", is_inf


def logic_function(op: Operation) -> tuple[str, ElementFunction] | None:
    """The header expression and per-element IR builder of a comparison, logical op,
    ``is_nan``, ``where`` or ``cast``; None for any other op."""
    match op:
        case _ if type(op) in _COMPARISONS:
            symbol, float_predicate, int_predicate = _COMPARISONS[type(op)]
            return f"x0 {symbol} x1", lambda b, xs: _compare(b, xs, float_predicate,
                                                            int_predicate)
        case _ if type(op) in _LOGICAL:
            symbol, op_type = _LOGICAL[type(op)]
            return f"x0 {symbol} x1", lambda b, xs: b.fop(op_type, *xs)
        case graph.NotOp():
            return "!x0", lambda b, xs: b.fop(arith.XOrIOp, xs[0], b.constant(1, xs[0].type))
        case graph.IsNanOp():
            return "is_nan(x0)", lambda b, xs: b.insert(
                arith.CmpfOp(xs[0], xs[0], "une")).results[0]
        case graph.IsInfOp():
            return _is_inf(op)
        case graph.WhereOp():
            return "x0 ? x1 : x2", lambda b, xs: b.fop(arith.SelectOp, *xs)
        case graph.CastOp():
            to = _result_element(op)
            return f"cast(x0, to={to})", lambda b, xs: convert(b, xs[0], to)
    return None
