"""``convert-tm-to-gpu``: tm kernels and host ops to the ``tmgpu`` level.

In: tm IR whose task mappings are lowered (``tm-lower-mappings``). Out:
``tmgpu.kernel``s with ``tmgpu.thread_id``/``block_id``, ``__shared__`` and per-thread
arrays, barriers and warp shuffles (``tm.shuffle`` → ``tmgpu.shuffle``, one to one); ``tm.load``/``tm.store`` become ``memref.load``/``memref.store``,
wrapped in ``scf.if`` bound checks for their guarded dimensions (a guarded load yields
0 when out of range); host ``tm.launch`` becomes ``tmgpu.launch`` with the kernel's grid
and block sizes, and a host ``tm.view`` (a buffer seen with another shape) becomes
``tmgpu.view``. A shared or register buffer with a data layout becomes 1-D storage of
``layout.size`` elements, and each access to it indexes ``layout.offset(indices)``,
computed with ``arith`` ops (guards still check the logical indices against the logical
shape).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from tmlir.dialects import tm, tmgpu
from tmlir.ir.builder import Index, IRBuilder
from tmlir.layout import DataLayout

Layouts = dict[SSAValue, DataLayout]
"""The data layout of each laid-out (now 1-D) buffer."""


def linear_offset(b: IRBuilder, layout: DataLayout, indices: Sequence[Index]) -> Index:
    """``layout.offset(indices)`` as folded index arithmetic (see tmlir.layout).

    Atom ``k`` sees coordinates ``(i / inner_k) % shape_k`` (no ``%`` for the outermost
    atom; 0 where its extent is 1), where ``inner_k`` is the product of the shapes of the
    atoms inside it, and contributes ``sum(coord * stride) * size(atoms inside it)``. A
    single ``row_major`` atom is ``i * cols + j``. The indices must be in range (a
    guarded access checks them before).
    """
    offset: Index = 0
    inner, scale = list(layout.shape), layout.size
    for k, atom in enumerate(layout.atoms):
        inner = [n // d for n, d in zip(inner, atom.shape)]
        scale //= atom.size
        for i, n, d, stride in zip(indices, inner, atom.shape, atom.strides):
            if d > 1:
                coord = b.div(i, n) if k == 0 else b.rem(b.div(i, n), d)
                offset = b.add(offset, b.mul(coord, stride * scale))
    return offset


def _storage_indices(b: IRBuilder, layouts: Layouts, buffer: SSAValue,
                     indices: Sequence[SSAValue]) -> list[SSAValue]:
    layout = layouts.get(buffer)
    return list(indices) if layout is None else [b.value(linear_offset(b, layout, indices))]


def _in_bounds(b: IRBuilder, access: tm.GuardedAccess, shape: Sequence[int],
               indices) -> SSAValue | None:
    condition: SSAValue | None = None
    for d in access.guarded_dims:
        check = b.lt(indices[d], shape[d])
        condition = check if condition is None else b.fop(arith.AndIOp, condition, check)
    return condition


def _logical_shape(layouts: Layouts, buffer: SSAValue) -> Sequence[int]:
    layout = layouts.get(buffer)
    return layout.shape if layout is not None else buffer.type.get_shape()


def _convert_load(op: tm.LoadOp, layouts: Layouts) -> list[SSAValue]:
    b = IRBuilder.before(op)
    condition = _in_bounds(b, op, _logical_shape(layouts, op.memref), op.indices)
    if condition is None:
        indices = _storage_indices(b, layouts, op.memref, op.indices)
        return b.insert(memref.LoadOp.get(op.memref, indices)).results
    then, other = Block(), Block()
    with b.at(then):
        indices = _storage_indices(b, layouts, op.memref, op.indices)
        v = b.insert(memref.LoadOp.get(op.memref, indices)).results[0]
        b.insert(scf.YieldOp(v))
    with b.at(other):
        elem = op.result.type
        zero = IntegerAttr(0, elem) if isinstance(elem, IndexType | IntegerType) \
            else FloatAttr(0.0, elem)
        b.insert(scf.YieldOp(b.insert(arith.ConstantOp(zero)).results[0]))
    return b.insert(scf.IfOp(condition, [op.result.type], [then], [other])).results


def _convert_store(op: tm.StoreOp, layouts: Layouts) -> None:
    b = IRBuilder.before(op)
    condition = _in_bounds(b, op, _logical_shape(layouts, op.memref), op.indices)
    if condition is None:
        indices = _storage_indices(b, layouts, op.memref, op.indices)
        b.insert(memref.StoreOp.get(op.value, op.memref, indices))
        return
    with b.if_(condition):
        indices = _storage_indices(b, layouts, op.memref, op.indices)
        b.insert(memref.StoreOp.get(op.value, op.memref, indices))


def _replace(op: Operation, new: Operation) -> None:
    IRBuilder.before(op).insert(new)
    for old_result, new_result in zip(op.results, new.results):
        new_result.name_hint = old_result.name_hint
        old_result.replace_all_uses_with(new_result)
    op.detach()
    op.erase()


def _move_kernel(kernel: tm.KernelOp) -> tmgpu.KernelOp:
    new = tmgpu.KernelOp(kernel.sym_name.data, [], kernel.block.data, dict(kernel.attributes))
    new.body.detach_block(0).erase()
    new.body.add_block(kernel.body.detach_block(0))
    _replace(kernel, new)
    return new


@dataclass(frozen=True)
class ConvertTmToGpu(ModulePass):
    """Lower tm kernels, buffers, accesses and launches to the tmgpu level."""

    name = "convert-tm-to-gpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        leftover = next((o for o in op.walk() if isinstance(o, tm.ForTaskOp)), None)
        if leftover is not None:
            raise PassFailedException(
                "convert-tm-to-gpu: tm.for_task remains; run tm-lower-mappings first"
            )
        sizes = {k.sym_name.data: (k.grid.data, k.block.data)
                 for k in op.walk() if isinstance(k, tm.KernelOp)}
        layouts: Layouts = {}
        for inner in list(op.walk()):
            match inner:
                case tm.KernelOp():
                    _move_kernel(inner)
                case tm.BlockIdOp():
                    _replace(inner, tmgpu.BlockIdOp("x"))
                case tm.ThreadIdOp():
                    _replace(inner, tmgpu.ThreadIdOp("x"))
                case tm.AllocOp():
                    scope = inner.scope.data
                    new_type = {"global": tmgpu.AllocOp, "shared": tmgpu.SharedAllocOp,
                                "register": tmgpu.LocalAllocOp}[scope]
                    layout = inner.data_layout
                    if layout is None:
                        _replace(inner, new_type(inner.result.type))
                        continue
                    storage = MemRefType(inner.result.type.element_type, [layout.size])
                    new = new_type(storage)
                    _replace(inner, new)
                    layouts[new.result] = layout
                case tm.BarrierOp():
                    _replace(inner, tmgpu.BarrierOp())
                case tm.ShuffleOp():
                    _replace(inner, tmgpu.ShuffleOp(inner.value, inner.mode.data,
                                                    inner.offset.data, inner.width.data))
                case tm.LoadOp():
                    results = _convert_load(inner, layouts)
                    results[0].name_hint = inner.result.name_hint
                    inner.result.replace_all_uses_with(results[0])
                    inner.detach()
                    inner.erase()
                case tm.StoreOp():
                    _convert_store(inner, layouts)
                    inner.detach()
                    inner.erase()
                case tm.WeightOp():
                    _replace(inner, tmgpu.WeightOp(inner.weight_name.data, inner.result.type))
                case tm.ViewOp():
                    _replace(inner, tmgpu.ViewOp(inner.source, inner.result.type))
                case tm.LaunchOp():
                    name = inner.kernel.string_value()
                    _replace(inner, tmgpu.LaunchOp(name, inner.args, *sizes[name]))
                case _:
                    pass
