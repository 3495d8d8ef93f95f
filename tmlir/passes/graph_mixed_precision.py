"""``graph-mixed-precision``: float32 matmuls, convolutions and attentions run on tensor
cores with half-precision operands.

In: ``graph`` IR and, in the context, the model's weight table (``tmlir.context``). Out:
every ``graph.matmul`` (and 2-D ``graph.conv``) whose operands, bias and result are f32
and whose problem a tensor-core template takes on ``target-arch`` (``matmul_tc`` or
``conv2d_tc``'s ``check_problem`` with the option's ``dtype``; not an op with a pinned
``schedule``) reads its lhs and rhs (input and weight) in ``dtype`` (``f16`` or ``bf16``,
rounded to nearest even); its bias and result stay f32, so it accumulates and writes in
f32. Likewise every ``graph.attention`` with f32 q, k, v and result that ``attention_tc``
takes (D a multiple of 16, Dv of 8) reads q, k and v in ``dtype``; its bias (the mask),
its math (softmax in f32) and its result stay f32. Other ops (f64, f16 already, K or N
not a multiple of 8, depthwise convolutions, any op before sm_80, ...) are left as they
are. This is opt-in: it trades float32 operand
precision for tensor-core speed.

``dtype=tf32`` converts nothing: it marks each such f32 matmul (and convolution) with the
unit attribute ``tf32`` (``templates.TF32_ATTR``), which lets ``matmul_tc`` (``conv2d_tc``)
build it with TF32 mma on its f32 operands (rounded to a 10-bit mantissa inside the mma;
weights stay f32 in the table)::

    %y = graph.matmul %x, %w {tf32} : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>

How an operand is converted decides what it costs at run time:

* a ``graph.weight`` is converted once, here: its data rounded into a new table entry
  ``<name>.f16`` (``.bf16``; numbered if taken), read by a new ``graph.weight`` of the
  narrow type. The f32 entry is kept; its ``graph.weight`` leaves the IR when nothing else
  reads it. Every matmul reading one weight shares one converted copy;
* a ``graph.constant`` (the pass run on its own, before ``graph-outline-constants``)
  becomes a narrow ``graph.constant`` beside it;
* a ``graph.reshape`` (which has no kernel) becomes the reshape of its narrowed input, and
  a value widened from the narrow type (a float16 model's ``f16 -> f32`` cast) is replaced
  by the narrow value itself: both exact (the reshape's cast reads what a kernel writes; a
  widened value needs no cast back);
* anything else (an activation, or a weight with no table to hold the converted data: a
  ``.mlir`` file under ``tm-opt``) gets a ``graph.cast`` right after its definition, one
  per value. ``graph-partition`` puts it in its producer's kernel, which writes the 16-bit
  copy beside the f32 value (a *narrow copy*: the tensor-core matmul then copies it by
  ``cp.async``), or into its reader's prologue (the reader rounds what it loads); only a
  cast that several kernels read and no producer's kernel can write (of a model input) is
  an elementwise kernel of its own.

    %y = graph.matmul %x, %w : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
  ->
    %w_f16 = graph.weight "w.f16" : tensor<64x48xf16>
    %x_f16 = graph.cast %x : tensor<32x64xf32> -> tensor<32x64xf16>
    %y = graph.matmul %x_f16, %w_f16 : (tensor<32x64xf16>, tensor<64x48xf16>) -> tensor<32x48xf32>

The originals nothing reads any more (f32 weights, constants, reshapes, widening casts)
leave the IR.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import ml_dtypes
import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, ModuleOp, TensorType, UnitAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tmlir.context import WeightTable, fresh_weight_name, weight_table
from tmlir.dialects import graph

HalfDType = Literal["f16", "bf16", "tf32"]
_ELEMENTS: dict[str, tuple[Attribute, np.dtype]] = {
    "f16": (Float16Type(), np.dtype(np.float16)),
    "bf16": (BFloat16Type(), np.dtype(ml_dtypes.bfloat16)),
}


@dataclass(frozen=True)
class GraphMixedPrecision(ModulePass):
    """Give the f32 matmuls, convolutions and attentions the tensor-core templates take f16
    (or bf16) operands; weights are converted at compile time, results and biases stay f32.
    With ``dtype=tf32``, mark the f32 matmuls ``tf32`` instead: TF32 mma on f32 operands."""

    name = "graph-mixed-precision"

    dtype: HalfDType = "f16"
    """The operands' element type: ``f16`` or ``bf16`` (accumulation stays f32); ``tf32``
    marks the matmuls instead (operands stay f32, the mma rounds them)."""
    target_arch: str = "sm_90"
    """The GPU architecture: before sm_80 there are no tensor cores, and nothing changes."""

    def __post_init__(self) -> None:
        from tmlir.passes.convert_graph_to_tm import check_target_arch

        check_target_arch(self.name, self.target_arch)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.dtype == "tf32":
            from tmlir.schedules.templates import TF32_ATTR

            for anchor in [o for o in op.walk() if isinstance(o, graph.MatmulOp | graph.ConvOp)]:
                if takes_tensor_cores(anchor, Float32Type(), self.target_arch):
                    anchor.attributes[TF32_ATTR] = UnitAttr()
            return
        element, numpy_dtype = _ELEMENTS[self.dtype]
        taken = {w.weight_name.data for w in op.walk() if isinstance(w, graph.WeightOp)}
        converter = _Converter(self.dtype, element, numpy_dtype, weight_table(ctx), taken)
        for anchor in [o for o in op.walk() if isinstance(o, graph.MatmulOp | graph.ConvOp)]:
            if takes_tensor_cores(anchor, element, self.target_arch):
                converter.convert_operands(anchor)
        for attention in [o for o in op.walk() if isinstance(o, graph.AttentionOp)]:
            if attention_takes_tensor_cores(attention, element, self.target_arch):
                converter.convert_operands(attention, (0, 1, 2))
        converter.erase_unused_originals()


def takes_tensor_cores(op: graph.MatmulOp | graph.ConvOp, element: Attribute, arch: str = "sm_90") -> bool:
    """Whether `op` is an f32 matmul or 2-D convolution (operands, bias, result) outside
    any fused group, without a pinned schedule, whose problem a tensor-core template
    (``matmul_tc``, ``conv2d_tc``) takes with operands of `element` on `arch`."""
    from tmlir.schedules.pinned import SCHEDULE_ATTR
    from tmlir.schedules.templates import has_tensor_cores, tensor_cores_cover, tunable_problem

    if not has_tensor_cores(arch) or not isinstance(op.parent_op(), func.FuncOp) \
            or SCHEDULE_ATTR in op.attributes:
        return False
    if not all(isinstance(v.type, TensorType) and isinstance(v.type.get_element_type(), Float32Type)
               for v in (*op.operands, *op.results)):
        return False
    tunable = tunable_problem(op, arch)
    return tunable is not None and tensor_cores_cover(tunable[1], element)


def attention_takes_tensor_cores(op: graph.AttentionOp, element: Attribute, arch: str = "sm_90") -> bool:
    """Whether `op` is an attention outside any fused group whose q, k, v and result are
    f32 and whose problem ``attention_tc`` takes with q, k, v of `element` on `arch`."""
    from tmlir.schedules.attention_params import AttentionProblem
    from tmlir.schedules.attention_tc_params import covers
    from tmlir.schedules.templates import has_tensor_cores

    if not has_tensor_cores(arch) or not isinstance(op.parent_op(), func.FuncOp):
        return False
    if not all(isinstance(v.type, TensorType) and isinstance(v.type.get_element_type(), Float32Type)
               for v in (op.q, op.k, op.v, op.result)):
        return False
    return covers(AttentionProblem.of(op), element, arch)


@dataclass
class _Converter:
    """Converts matmul operands to the narrow type, one converted value per original value
    and one table entry per weight name."""

    dtype: str
    element: Attribute
    numpy_dtype: np.dtype
    table: WeightTable | None
    taken: set[str]
    values: dict[SSAValue, SSAValue] = field(default_factory=dict)
    entries: dict[str, str] = field(default_factory=dict)  # f32 weight name -> narrow one

    def convert_operands(self, op: Operation, indices: tuple[int, ...] = (0, 1)) -> None:
        """Narrow `op`'s operands `indices` (a matmul's lhs and rhs, a convolution's input
        and weight; an attention's q, k and v)."""
        for index in indices:
            op.operands[index] = self.narrow(op.operands[index])

    def narrow(self, value: SSAValue) -> SSAValue:
        """`value` in the narrow type (made once per value)."""
        if value not in self.values:
            self.values[value] = self.make_narrow(value)
        return self.values[value]

    def make_narrow(self, value: SSAValue) -> SSAValue:
        owner = value.owner
        if isinstance(owner, graph.CastOp) and owner.input.type == self.narrow_type(value):
            return owner.input  # a widened narrow value: the narrow value is exactly it
        if isinstance(owner, graph.WeightOp) and self.table is not None \
                and owner.weight_name.data in self.table:
            new: Operation = graph.WeightOp(self.narrow_entry(owner.weight_name.data), self.narrow_type(value))
        elif isinstance(owner, graph.ConstantOp):
            new = graph.ConstantOp.from_array(owner.array().astype(self.numpy_dtype))
        elif isinstance(owner, graph.ReshapeOp):  # no kernel: the reshape of the narrow input
            new = graph.ReshapeOp(self.narrow(owner.input), self.narrow_type(value))
        else:
            new = graph.CastOp(value, self.element)
        new.results[0].name_hint = f"{value.name_hint}_{self.dtype}" if value.name_hint else None
        at = InsertPoint.after(owner) if isinstance(owner, Operation) else \
            InsertPoint.at_start(owner) if isinstance(owner, Block) else None
        assert at is not None
        Rewriter.insert_op(new, at)
        return new.results[0]

    def narrow_entry(self, name: str) -> str:
        """The table entry holding weight `name` rounded to the narrow type (made once)."""
        assert self.table is not None
        if name not in self.entries:
            narrow = fresh_weight_name(self.table, f"{name}.{self.dtype}", self.taken)
            self.taken.add(narrow)
            self.table[narrow] = np.ascontiguousarray(np.asarray(self.table[name]).astype(self.numpy_dtype))
            self.entries[name] = narrow
        return self.entries[name]

    def narrow_type(self, value: SSAValue) -> TensorType:
        assert isinstance(value.type, TensorType)
        return TensorType(self.element, value.type.get_shape())

    def erase_unused_originals(self) -> None:
        """The f32 weights, constants, reshapes and widening casts nothing reads any more
        leave the IR (table entries stay); a reshape first, then what it read."""
        for value in reversed(list(self.values)):
            owner = value.owner
            if isinstance(owner, graph.WeightOp | graph.ConstantOp | graph.ReshapeOp | graph.CastOp) \
                    and not value.uses and owner.parent is not None:
                Rewriter.erase_op(owner)
