"""The ``dot`` target: a Graphviz picture of graph-level IR, fusion groups as clusters.

``tm-opt model.onnx -p graph-partition -t dot > model.dot``, then ``dot -Tsvg model.dot``
(Graphviz is not needed to write the text). Drawn, in program order:

* a node per function argument (an ellipse ``input <name>``, the ONNX name where the
  function has ``tm.inputs``) and per returned value (a double ellipse ``output <name>``);
* a box per graph op: its kind without ``graph.`` and its result shape, with the element
  type when it is not f32 (``matmul\\n4x16``, ``cast\\n1x16 i64``);
* an edge per use of a value, from its producer to its user, unlabelled (the shapes are on
  the nodes). A use of a ``graph.fused`` result is drawn from the inner op that produces
  the yielded value;
* each ``graph.fused`` group as ``subgraph cluster_<n>`` labelled ``<anchor kind> group``,
  holding exactly its member ops; the anchor (the group's one op that is not injective, see
  :func:`tmlir.schedules.fusion.anchor_of`) is bold and filled orange. A malformed group is
  labelled ``group`` and has no anchor;
* ``graph.weight``s are not drawn (models have hundreds), nor their edges, unless
  ``-t 'dot{weights=true}'``: then each is a small grey box with its weight name.

One ``digraph`` per module. A module with one function draws it at the top level; with
several, each is a ``subgraph cluster_fn<i>`` labelled ``@name``. Node ids are ``in<i>``,
``op<i>``, ``w<i>`` and ``out<i>``, numbered in program order, so the same IR always gives
the same text. IR below the graph level (after ``convert-graph-to-tm``) is refused with
one line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, Float32Type, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from tmlir.dialects import graph
from tmlir.schedules.fusion import FusionError, anchor_of

_GRAPH_LEVEL = ("builtin", "func", "graph")
_INPUT = "shape = ellipse, fillcolor = \"#d8f0d8\""
_OUTPUT = "shape = ellipse, peripheries = 2, fillcolor = \"#f0d8d8\""
_WEIGHT = "fontsize = 8, height = 0.2, fillcolor = \"#eeeeee\", color = \"#999999\""
_ANCHOR = "style = \"rounded,filled,bold\", fillcolor = \"#f6c177\", penwidth = 2"
_CLUSTER = "style = filled; fillcolor = \"#e8eef7\"; color = \"#9fb3d1\";"


class DotEmitError(DiagnosticException):
    """The module is not graph-level IR."""


def quote(text: str) -> str:
    """`text` as a quoted DOT string; a newline becomes DOT's ``\\n`` line break."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def type_text(type: Attribute) -> str:
    """``1x64x56x56`` for a tensor of f32, ``1x16 i64`` for another element type."""
    if not isinstance(type, TensorType):
        return str(type)
    shape = "x".join("?" if d < 0 else str(d) for d in type.get_shape()) or "scalar"
    element = type.get_element_type()
    return shape if isinstance(element, Float32Type) else f"{shape} {element}"


def _names(fn: func.FuncOp, key: str, values: Sequence[SSAValue]) -> list[str]:
    """The ONNX names of `fn`'s inputs or outputs (attribute `key`), else IR names."""
    attr = fn.attributes.get(key)
    if isinstance(attr, ArrayAttr) and len(attr) == len(values):
        return [a.data if isinstance(a, StringAttr) else str(a) for a in attr]
    return [v.name_hint or str(i) for i, v in enumerate(values)]


class _Drawer:
    """Collects node declarations (with clusters) and edges, numbering nodes in order."""

    def __init__(self, weights: bool) -> None:
        self.weights = weights
        self.lines: list[str] = []
        self.edges: list[str] = []
        self.source: dict[SSAValue, str] = {}  # value -> id of the node that produces it
        self.counts: Counter[str] = Counter()
        self.clusters = 0

    def node(self, prefix: str, label: str, attrs: str, indent: str) -> str:
        node = quote(f"{prefix}{self.counts[prefix]}")
        self.counts[prefix] += 1
        extra = f", {attrs}" if attrs else ""
        self.lines.append(f"{indent}{node} [label = {quote(label)}{extra}];")
        return node

    def uses(self, node: str, values: Sequence[SSAValue]) -> None:
        self.edges.extend(f"  {self.source[v]} -> {node};" for v in values if v in self.source)

    def op(self, op: Operation, indent: str, attrs: str = "") -> None:
        kind = op.name.removeprefix("graph.")
        shapes = ", ".join(type_text(r.type) for r in op.results)
        node = self.node("op", f"{kind}\n{shapes}" if shapes else kind, attrs, indent)
        self.uses(node, op.operands)
        self.source.update((r, node) for r in op.results)

    def group(self, fused: graph.FusedOp, indent: str) -> None:
        try:
            anchor: Operation | None = anchor_of(fused.members, fused.yielded)
        except FusionError:
            anchor = None
        label = f"{anchor.name.removeprefix('graph.')} group" if anchor else "group"
        self.lines.append(f"{indent}subgraph cluster_{self.clusters} {{")
        self.lines.append(f"{indent}  label = {quote(label)}; {_CLUSTER}")
        self.clusters += 1
        for op in fused.members:
            self.op(op, indent + "  ", _ANCHOR if op is anchor else "")
        self.lines.append(f"{indent}}}")
        self.source.update((r, self.source[v]) for r, v in zip(fused.outputs, fused.yielded)
                           if v in self.source)

    def function(self, fn: func.FuncOp, indent: str) -> None:
        block = fn.body.block
        for arg, name in zip(block.args, _names(fn, "tm.inputs", block.args)):
            self.source[arg] = self.node("in", f"input {name}\n{type_text(arg.type)}", _INPUT, indent)
        for op in block.ops:
            if isinstance(op, graph.FusedOp):
                self.group(op, indent)
            elif isinstance(op, graph.WeightOp):
                if self.weights:
                    label = f"{op.weight_name.data}\n{type_text(op.result.type)}"
                    self.source[op.result] = self.node("w", label, _WEIGHT, indent)
            elif isinstance(op, func.ReturnOp):
                for value, name in zip(op.arguments, _names(fn, "tm.outputs", op.arguments)):
                    node = self.node("out", f"output {name}\n{type_text(value.type)}", _OUTPUT, indent)
                    self.uses(node, [value])
            else:
                self.op(op, indent)


def emit_dot(module: ModuleOp, weights: bool = False) -> str:
    """The DOT text of graph-level `module` (see the module docstring)."""
    for op in module.walk():
        if op.dialect_name() not in _GRAPH_LEVEL:
            raise DotEmitError(f"-t dot draws graph-level IR, but '{op.name}' is below it; "
                               "run -t dot before convert-graph-to-tm")
    functions = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    drawer = _Drawer(weights)
    for i, fn in enumerate(functions):
        if len(functions) == 1:
            drawer.function(fn, "  ")
            continue
        drawer.lines.append(f"  subgraph cluster_fn{i} {{")
        drawer.lines.append(f"    label = {quote('@' + fn.sym_name.data)}; style = dashed;")
        drawer.function(fn, "    ")
        drawer.lines.append("  }")
    source = module.attributes.get("graph.source")
    title = source.data if isinstance(source, StringAttr) else "tmlir"
    return "\n".join([
        "// graph-level IR drawn by tm-opt -t dot; render it with: dot -Tsvg this.dot -o this.svg",
        f"digraph {quote(title)} {{",
        ("  node [shape = box, style = \"rounded,filled\", fillcolor = white, "
         "fontname = Helvetica, fontsize = 10];"),
        "  edge [color = \"#555555\", arrowsize = 0.6];",
        *drawer.lines,
        *drawer.edges,
        "}",
        "",
    ])


@dataclass(frozen=True)
class DotTarget(Target):
    """``-t dot``: graph-level IR as Graphviz DOT text; ``-t 'dot{weights=true}'`` also
    draws the ``graph.weight``s."""

    name: ClassVar[str] = "dot"
    weights: bool = False

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(emit_dot(module, self.weights))
