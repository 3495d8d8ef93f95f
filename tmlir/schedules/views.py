"""Kernel arguments viewed with fewer unit dims than the template indexes them with.

A template may index a buffer with more dimensions than the tensor has, where the extra
ones have extent 1: the 2-D convolution template run on a 1-D convolution (``H = 1``), or
a per-channel ``(C,)`` operand broadcast as ``(C, 1, 1)`` against an ``(N, C, H, W)``
tensor. Both shapes have the same row-major storage, so `view_kernel_args` retypes the
kernel argument to the buffer the host passes and drops the index of every access on the
removed dims: inside a buffer, an index on an extent-1 dim can only be 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects import arith
from xdsl.rewriter import Rewriter

from tmlir.dialects import tm
from tmlir.schedules.common import f32_memref


def removed_unit_dims(shape: Sequence[int], view: Sequence[int]) -> list[int]:
    """The dims of `shape` to remove to get `view`; each must have extent 1."""
    removed, j = [], 0
    for d, extent in enumerate(shape):
        if j < len(view) and view[j] == extent:
            j += 1
        elif extent == 1:
            removed.append(d)
        else:
            break
    if j != len(view) or len(shape) - len(removed) != len(view):
        raise ValueError(f"view {list(view)} is not {list(shape)} without unit dims")
    return removed


def view_kernel_args(kernel: tm.KernelOp, shapes: Mapping[int, Sequence[int]]) -> tm.KernelOp:
    """Retype kernel argument ``i`` to a buffer of ``shapes[i]``, its shape without some
    extent-1 dims, and drop those dims' indices from its ``tm.load`` / ``tm.load_vector`` /
    ``tm.store``s (which must not guard them) and the ``tm.cp_async``s that copy from it.
    Returns `kernel`, changed in place."""
    block = kernel.body.block
    for index, view in shapes.items():
        old = block.args[index]
        shape = tuple(old.type.get_shape())
        removed = removed_unit_dims(shape, tuple(view))
        if not removed:
            continue
        new = block.insert_arg(f32_memref(view), index)
        new.name_hint = old.name_hint
        kept = [d for d in range(len(shape)) if d not in removed]
        for use in list(old.uses):
            access = use.operation
            if isinstance(access, tm.CpAsyncOp) and access.src is old:  # a copy from the argument
                copy = tm.CpAsyncOp(access.bytes.data, access.dst, list(access.dst_indices), new,
                                    [access.src_indices[d] for d in kept], access.inside)
                copy.attributes.update(access.attributes)
                Rewriter.replace_op(access, copy)
                continue
            assert isinstance(access, tm.LoadOp | tm.LoadVectorOp | tm.StoreOp) and access.memref is old, access
            assert not set(access.guarded_dims) & set(removed), "a removed unit dim is guarded"
            indices = [access.indices[d] for d in kept]
            guard = [kept.index(d) for d in access.guarded_dims]
            replacement: tm.LoadOp | tm.LoadVectorOp | tm.StoreOp
            if isinstance(access, tm.LoadVectorOp):
                assert len(shape) - 1 not in removed, "a vector load's last dim is removed"
                replacement = tm.LoadVectorOp(new, indices, access.width, guard)
                for result, value in zip(access.res, replacement.results):
                    value.name_hint = result.name_hint
            elif isinstance(access, tm.LoadOp):
                replacement = tm.LoadOp(new, indices, guard)
                replacement.result.name_hint = access.result.name_hint
            else:
                replacement = tm.StoreOp(access.value, new, indices, guard)
            replacement.attributes.update(access.attributes)
            dropped = [access.indices[d] for d in removed]
            Rewriter.replace_op(access, replacement)
            for value in dropped:  # the constant 0 of a broadcast, now unused
                if isinstance(value.owner, arith.ConstantOp) and not value.uses:
                    Rewriter.erase_op(value.owner)
        block.erase_arg(old)
    return kernel

