"""The ONNX frontend's comparisons, boolean logic, ``Where``, ``IsNaN`` and ``Cast``, the
run-time ``GatherElements`` and ``GatherND``, and the shape ops that only constant
folding can compute.

`LogicConverters` is a mixin of the frontend's importer (``onnx.py``), one method per op
type (`CONVERTERS`); `ATTRIBUTES`, `CHOICES` and `INPUT_DTYPES` extend the frontend's
tables. What each op imports to:

- ``Equal``, ``Less``, ``LessOrEqual``, ``Greater``, ``GreaterOrEqual``: ``graph.equal``,
  ``graph.less``, ... (an ``i1`` result); ``And``, ``Or``, ``Xor``, ``Not``: ``graph.and``,
  ``graph.or``, ``graph.xor``, ``graph.not``.
- ``Where``: ``graph.where``; ``IsNaN``: ``graph.is_nan``; ``Cast`` (``to`` one of float32,
  int64, int32, bool; ``saturate`` only matters for float8, which is not supported):
  ``graph.cast``, or the input itself when it already has that type.
- ``GatherElements``: ``graph.take_along_axis``; ``GatherND``: ``graph.gather_nd``.
- ``Shape``, ``Size``, ``ConstantOfShape``, ``Range``: their results are known when the
  model is compiled (static shapes, constant inputs), so ``onnx_fold`` has replaced them
  by constants before import; one that is left computes a shape from run-time data, which
  a compiler for static shapes cannot take, and gets a one-line error.
"""

from __future__ import annotations

from onnx import AttributeProto, NodeProto

from tmlir import dtypes
from tmlir.dialects import graph
from tmlir.frontends._onnx_common import FrontendError

_INT, _TENSOR = AttributeProto.INT, AttributeProto.TENSOR

_COMPARISONS: dict[str, type[graph.CompareOp]] = {
    "Equal": graph.EqualOp, "Less": graph.LessOp, "LessOrEqual": graph.LessEqualOp,
    "Greater": graph.GreaterOp, "GreaterOrEqual": graph.GreaterEqualOp,
}
_LOGICAL: dict[str, type[graph.LogicalOp]] = {"And": graph.AndOp, "Or": graph.OrOp,
                                              "Xor": graph.XorOp}
_COMPILE_TIME = ("Shape", "Size", "ConstantOfShape", "Range")

CONVERTERS: dict[str, str] = {  # op type -> converter method
    **{op: "comparison" for op in _COMPARISONS}, **{op: "logical" for op in _LOGICAL},
    "Not": "logical_not", "Where": "where", "IsNaN": "is_nan", "Cast": "cast",
    "GatherElements": "gather_elements", "GatherND": "gather_nd",
    **{op: "compile_time_only" for op in _COMPILE_TIME},
}
ATTRIBUTES: dict[str, dict[str, int]] = {  # op type -> supported attribute -> its type
    "Cast": {"to": _INT, "saturate": _INT}, "GatherElements": {"axis": _INT},
    "GatherND": {"batch_dims": _INT}, "Shape": {"start": _INT, "end": _INT},
    "ConstantOfShape": {"value": _TENSOR},
}
CHOICES: dict[tuple[str, str], tuple[object, ...]] = {}
_ANY, _NUMERIC, _BOOL = dtypes.DTYPES, dtypes.NUMERIC, (dtypes.BOOL,)
#: op type -> the dtypes each input may have (the last entry repeats).
INPUT_DTYPES: dict[str, tuple[tuple[dtypes.DType, ...], ...]] = {
    "Equal": (_ANY,), **{op: (_NUMERIC,) for op in _COMPARISONS if op != "Equal"},
    **{op: (_BOOL,) for op in (*_LOGICAL, "Not")}, "Where": (_BOOL, _ANY), "Cast": (_ANY,),
    "GatherElements": (_ANY, dtypes.INTEGERS), "GatherND": (_ANY, (dtypes.INT64,)),
    "Shape": (_ANY,), "Size": (_ANY,), "ConstantOfShape": ((dtypes.INT64,),),
    "Range": (_NUMERIC,),
}


class LogicConverters:
    """Converters of the frontend's importer (``_GraphImporter``, whose helpers they use:
    ``inputs``, ``define``, ``attributes``, ``result_type``, ``label``, ...)."""

    def comparison(self, node: NodeProto) -> None:
        self.attributes(node)
        lhs, rhs = self.inputs(node, 2)
        self.same_dtype(lhs, rhs)
        shape = self.result_type(node).get_shape()
        self.define(node.output[0], _COMPARISONS[node.op_type](lhs, rhs, shape))

    def logical(self, node: NodeProto) -> None:
        self.attributes(node)
        lhs, rhs = self.inputs(node, 2)
        shape = self.result_type(node).get_shape()
        self.define(node.output[0], _LOGICAL[node.op_type](lhs, rhs, shape))

    def logical_not(self, node: NodeProto) -> None:
        self.attributes(node)
        (x,) = self.inputs(node, 1)
        self.define(node.output[0], graph.NotOp(x))

    def is_nan(self, node: NodeProto) -> None:
        self.attributes(node)
        (x,) = self.inputs(node, 1)
        self.define(node.output[0], graph.IsNanOp(x))

    def where(self, node: NodeProto) -> None:
        self.attributes(node)
        condition, lhs, rhs = self.inputs(node, 3)
        self.same_dtype(lhs, rhs, "X and Y")
        self.define(node.output[0], graph.WhereOp(condition, lhs, rhs, self.result_type(node)))

    def cast(self, node: NodeProto) -> None:
        attrs = self.attributes(node)
        if "to" not in attrs:
            raise FrontendError(f"{self.label}: attribute 'to' is required")
        (x,) = self.inputs(node, 1)
        code = int(attrs["to"])  # type: ignore[call-overload]
        target = dtypes.from_onnx(code)
        if target is None:
            raise FrontendError(f"{self.label}: cannot cast to {dtypes.onnx_name(code)} "
                                f"(supported: {dtypes.SUPPORTED_NAMES})")
        if x.type.get_element_type() == target.ir:
            self.values[node.output[0]] = x
            return
        self.define(node.output[0], graph.CastOp(x, target.ir))

    def gather_elements(self, node: NodeProto) -> None:
        attrs = self.attributes(node)
        x, indices = self.inputs(node, 2)
        rank = len(x.type.get_shape())
        axis = self.axis_of(int(attrs.get("axis", 0)), rank)  # type: ignore[call-overload]
        self.define(node.output[0], graph.TakeAlongAxisOp(x, indices, axis,
                                                          self.result_type(node)))

    def gather_nd(self, node: NodeProto) -> None:
        attrs = self.attributes(node)
        x, indices = self.inputs(node, 2)
        batch_dims = int(attrs.get("batch_dims", 0))  # type: ignore[call-overload]
        self.define(node.output[0], graph.GatherNdOp(x, indices, batch_dims,
                                                     self.result_type(node)))

    def compile_time_only(self, node: NodeProto) -> None:
        runtime = [n for n in node.input if n and n not in self.initializers]
        what = f"input '{runtime[0]}' is computed at run time" if runtime else "it was not folded"
        raise FrontendError(f"{self.label}: {node.op_type} must be computable when the model "
                            f"is compiled, but {what}")
