"""``convert-tm-to-gpu``: tm kernels and host ops to the ``tmgpu`` level.

In: tm IR whose task mappings are lowered (``tm-lower-mappings``). Out:
``tmgpu.kernel``s with ``tmgpu.thread_id``/``block_id``, ``__shared__`` and per-thread
arrays, barriers, warp shuffles, the tensor-core and Hopper ops and the global ``atomic_add``,
``fence`` and ``load_cg`` (``tm.shuffle`` → ``tmgpu.shuffle``, ``tm.mma`` → ``tmgpu.mma``, ...,
one to one; a ``tm.wgmma_desc`` becomes a ``tmgpu.wgmma_desc`` with the fields its
buffer's layout gives);
``tm.load``/``tm.store`` become ``memref.load``/``memref.store``, wrapped in ``scf.if``
bound checks for their guarded dimensions (a guarded load yields 0 when out of range), and
``tm.load_vector`` becomes ``tmgpu.load_vector``, its guard an ``scf.if`` yielding zeros;
host ``tm.launch`` becomes ``tmgpu.launch`` with the kernel's grid and block sizes, and a
host ``tm.view`` (a buffer seen with another shape) becomes
``tmgpu.view``. A shared or register buffer with a data layout becomes 1-D storage of
``layout.size`` elements, and each access to it indexes ``layout.offset(indices)``,
computed with ``arith`` ops, a swizzle's XOR with ``shrui``/``andi``/``xori`` (guards
still check the logical indices against the logical shape).

Sizes past 32 bits: a kernel whose index values may pass 2^31 - 1 (a buffer of more
elements, more threads, or index arithmetic that reaches further: see
tmlir.ir.index_width) gets ``index_bits(64)``, and the CUDA printer computes its indices
in ``long long``; every other kernel keeps ``int``. A kernel of more blocks than CUDA's
grid allows (``max-grid``, default `MAX_GRID_X` = 2^31 - 1) is launched with
`GRID_STRIDE_BLOCKS` blocks (at most ``max-grid``) and loops over its virtual blocks::

    %first = tmgpu.block_id x
    %stride = tmgpu.grid_dim x
    scf.for %bid = %first to %blocks step %stride { <body>; tmgpu.barrier }

Every thread of a block makes the same trips, so barriers in the body stay legal; a
kernel with barriers gets one more at the end of each trip, so that no thread overwrites
shared memory that a slower one still reads. Its ``__shared__`` and per-thread arrays and
its thread id are declared before the loop.

One rewrite pattern per op kind, applied by a `PatternRewriteWalker` (outer ops first, so
an alloc is converted, and its layout recorded, before the accesses to it).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    IndexType,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import Rewriter

from tmlir.dialects import tm, tmgpu
from tmlir.gpu_limits import GRID_STRIDE_BLOCKS, MAX_GRID_X
from tmlir.ir.builder import Index, IRBuilder
from tmlir.ir.diagnostics import OpError
from tmlir.ir.index_width import needs_wide_index
from tmlir.layout import DataLayout

Layouts = dict[SSAValue, DataLayout]
"""The data layout of each laid-out (now 1-D) buffer."""


def linear_offset(b: IRBuilder, layout: DataLayout, indices: Sequence[Index]) -> Index:
    """``layout.offset(indices)`` as folded index arithmetic (see tmlir.layout).

    Atom ``k`` sees coordinates ``(i / inner_k) % shape_k`` (no ``%`` for the outermost
    atom; 0 where its extent is 1), where ``inner_k`` is the product of the shapes of the
    atoms inside it, and contributes ``sum(coord * stride) * size(atoms inside it)``. A
    single ``row_major`` atom is ``i * cols + j``. A swizzle then XORs bits of that offset
    into lower ones: ``o ^ ((o >> shift) & mask)``. The indices must be in range (a
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
    swizzle = layout.swizzle
    if swizzle is None:
        return offset
    if isinstance(offset, SSAValue) and offset.name_hint is None and all(offset is not i for i in indices):
        offset.name_hint = "unswizzled"  # read twice: the C code names it
    return b.xor(offset, b.and_(b.shr(offset, swizzle.shift), swizzle.mask))


def _storage_indices(b: IRBuilder, layouts: Layouts, buffer: SSAValue,
                     indices: Sequence[SSAValue]) -> list[SSAValue]:
    layout = layouts.get(buffer)
    return list(indices) if layout is None else [b.value(linear_offset(b, layout, indices))]


def _in_bounds(b: IRBuilder, access: tm.GuardedAccess | tm.LoadVectorOp, shape: Sequence[int],
               indices) -> SSAValue | None:
    condition: SSAValue | None = None
    for d in access.guarded_dims:
        check = b.lt(indices[d], shape[d])
        condition = check if condition is None else b.fop(arith.AndIOp, condition, check)
    return condition


def _logical_shape(layouts: Layouts, buffer: SSAValue) -> Sequence[int]:
    layout = layouts.get(buffer)
    return layout.shape if layout is not None else buffer.type.get_shape()


class ConvertLoad(RewritePattern):
    """``tm.load`` → ``memref.load``, in an ``scf.if`` yielding 0 out of bounds if guarded."""

    def __init__(self, layouts: Layouts) -> None:
        self.layouts = layouts

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tm.LoadOp, rewriter: PatternRewriter) -> None:
        b, layouts = IRBuilder.from_rewriter(rewriter), self.layouts
        condition = _in_bounds(b, op, _logical_shape(layouts, op.memref), op.indices)
        if condition is None:
            indices = _storage_indices(b, layouts, op.memref, op.indices)
            loaded = b.insert(memref.LoadOp.get(op.memref, indices)).results[0]
        else:
            then, other = Block(), Block()
            with b.at(then):
                indices = _storage_indices(b, layouts, op.memref, op.indices)
                v = b.insert(memref.LoadOp.get(op.memref, indices)).results[0]
                b.insert(scf.YieldOp(v))
            with b.at(other):
                elem = op.result.type
                # IRBuilder.constant: an unsigned zero cannot be an arith.constant
                zero = b.value(0) if isinstance(elem, IndexType) else b.constant(0, elem)
                b.insert(scf.YieldOp(zero))
            loaded = b.insert(scf.IfOp(condition, [op.result.type], [then], [other])).results[0]
        rewriter.replace(op, [], [loaded])  # `loaded` takes the load's name


class ConvertLoadVector(RewritePattern):
    """``tm.load_vector`` → ``tmgpu.load_vector`` (a global buffer: no layout), in an
    ``scf.if`` yielding zeros when a guarded index is out of range."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tm.LoadVectorOp, rewriter: PatternRewriter) -> None:
        b = IRBuilder.from_rewriter(rewriter)
        condition = _in_bounds(b, op, op.memref.type.get_shape(), op.indices)

        def load() -> list[SSAValue]:
            new = b.insert(tmgpu.LoadVectorOp(op.memref, op.indices, op.width))
            for old, value in zip(op.res, new.results):
                value.name_hint = old.name_hint
            return list(new.results)

        if condition is None:
            loaded = load()
        else:
            then, other = Block(), Block()
            with b.at(then):
                b.insert(scf.YieldOp(*load()))
            with b.at(other):
                zero = b.constant(0, op.res[0].type)
                b.insert(scf.YieldOp(*[zero] * op.width))
            types = [r.type for r in op.res]
            loaded = list(b.insert(scf.IfOp(condition, types, [then], [other])).results)
        rewriter.replace(op, [], loaded)  # the values take the load's names


class ConvertStore(RewritePattern):
    """``tm.store`` → ``memref.store``, inside an ``scf.if`` bound check if guarded."""

    def __init__(self, layouts: Layouts) -> None:
        self.layouts = layouts

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tm.StoreOp, rewriter: PatternRewriter) -> None:
        b, layouts = IRBuilder.from_rewriter(rewriter), self.layouts
        condition = _in_bounds(b, op, _logical_shape(layouts, op.memref), op.indices)
        with ExitStack() as scope:
            if condition is not None:
                scope.enter_context(b.if_(condition))
            indices = _storage_indices(b, layouts, op.memref, op.indices)
            b.insert(memref.StoreOp.get(op.value, op.memref, indices))
        rewriter.erase(op)


class ConvertAlloc(RewritePattern):
    """``tm.alloc`` → the tmgpu alloc of its scope (``global zeroed`` → ``tmgpu.alloc
    zeroed``); a laid-out buffer becomes 1-D storage of ``layout.size`` elements, recorded
    in `layouts` for the accesses that follow."""

    def __init__(self, layouts: Layouts) -> None:
        self.layouts = layouts

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tm.AllocOp, rewriter: PatternRewriter) -> None:
        if op.zeroed is not None:  # a kernel's counters
            rewriter.replace(op, tmgpu.AllocOp(op.result.type, zeroed=True))
            return
        new_type = {"global": tmgpu.AllocOp, "shared": tmgpu.SharedAllocOp,
                    "register": tmgpu.LocalAllocOp}[op.scope.data]
        layout = op.data_layout
        if layout is None:
            rewriter.replace(op, new_type(op.result.type))
            return
        new = new_type(MemRefType(op.result.type.element_type, [layout.size]))
        rewriter.replace(op, new)
        self.layouts[new.result] = layout


class ConvertKernel(RewritePattern):
    """``tm.kernel`` → ``tmgpu.kernel`` (the grid moves to the launches), body and scratch
    kinds moved; the kernels named in `wide` get ``index_bits(64)``."""

    def __init__(self, wide: set[str]) -> None:
        self.wide = wide

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tm.KernelOp, rewriter: PatternRewriter) -> None:
        bits = 64 if op.sym_name.data in self.wide else 32
        new = tmgpu.KernelOp(op.sym_name.data, [], op.block.data, dict(op.attributes), bits, op.scratch_kinds)
        new.body.detach_block(0).erase()
        new.body.add_block(op.body.detach_block(0))
        rewriter.replace(op, new)


class ConvertLaunch(RewritePattern):
    """``tm.launch @k`` → ``tmgpu.launch @k`` with the kernel's grid and block sizes."""

    def __init__(self, sizes: dict[str, tuple[int, int]]) -> None:
        self.sizes = sizes

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tm.LaunchOp, rewriter: PatternRewriter) -> None:
        name = op.kernel.string_value()
        rewriter.replace(op, tmgpu.LaunchOp(name, op.args, *self.sizes[name]))


class ConvertOneToOne(RewritePattern):
    """The ops with a direct tmgpu counterpart: worker ids, barrier, shuffle, the global
    atomic_add, fence and load_cg (their buffers are kernel arguments: no layout), weight, view."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        match op:
            case tm.BlockIdOp():
                new = tmgpu.BlockIdOp("x")
            case tm.ThreadIdOp():
                new = tmgpu.ThreadIdOp("x")
            case tm.BarrierOp():
                new = tmgpu.BarrierOp()
            case tm.ShuffleOp():
                new = tmgpu.ShuffleOp(op.value, op.mode.data, op.offset.data, op.width.data)
            case tm.AtomicAddOp():
                new = tmgpu.AtomicAddOp(op.memref, op.indices, op.value)
            case tm.LoadCgOp():
                new = tmgpu.LoadCgOp(op.memref, op.indices)
            case tm.FenceOp():
                new = tmgpu.FenceOp()
            case tm.WeightOp():
                new = tmgpu.WeightOp(op.weight_name.data, op.result.type)
            case tm.ViewOp():
                new = tmgpu.ViewOp(op.source, op.result.type)
            case _:
                return
        rewriter.replace(op, new)


LDMATRIX_ROW_BYTES = 16
"""The contiguous bytes of one ``ldmatrix`` row (one lane's address)."""


def _check_swizzle_keeps(op: Operation, layout: DataLayout | None, buffer: SSAValue, nbytes: int) -> None:
    """`op` moves `nbytes` contiguous bytes at one offset of `buffer`: a swizzle of its layout
    must not split them (it moves whole aligned pieces of ``2 ** base`` elements)."""
    if layout is None or layout.swizzle is None:
        return
    element_bytes = buffer.type.element_type.bitwidth // 8
    piece = (1 << layout.swizzle.base) * element_bytes
    if piece < nbytes:
        raise OpError(op, f"convert-tm-to-gpu: '{op.name}' moves {nbytes} contiguous bytes, but the "
                          f"layout '{layout}' keeps only {piece}-byte pieces together (the swizzle's "
                          f"base must be at least {(nbytes // element_bytes).bit_length() - 1})")


class ConvertTensorCore(RewritePattern):
    """``tm.mma``/``ldmatrix``/``cp_async``/``cp_async_commit``/``cp_async_wait`` → their
    tmgpu twins; an access to a laid-out shared buffer indexes its storage offset (a
    swizzle must keep the bytes an ``ldmatrix`` row or a ``cp.async`` moves together). A
    fragment must be a plain register buffer (no data layout): its C array is passed whole."""

    def __init__(self, layouts: Layouts) -> None:
        self.layouts = layouts

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        b, layouts = IRBuilder.from_rewriter(rewriter), self.layouts

        def storage(buffer: SSAValue, indices: Sequence[SSAValue], nbytes: int) -> list[SSAValue]:
            _check_swizzle_keeps(op, layouts.get(buffer), buffer, nbytes)
            return _storage_indices(b, layouts, buffer, indices)

        new: Operation
        match op:
            case tm.MmaOp() | tm.LdmatrixOp():
                fragments = [f for f, _ in op.accesses()] if isinstance(op, tm.MmaOp) else [op.frag]
                if any(f in layouts for f in fragments):
                    raise OpError(op, f"convert-tm-to-gpu: a fragment of '{op.name}' cannot have a data layout")
                if isinstance(op, tm.MmaOp):
                    new = tmgpu.MmaOp(op.shape.data, op.dtype.data, op.d, op.a, op.b, op.c,
                                      op.d_indices, op.a_indices, op.b_indices, op.c_indices)
                else:
                    new = tmgpu.LdmatrixOp(op.num.data, op.trans is not None, op.frag, op.smem,
                                           storage(op.smem, op.smem_indices, LDMATRIX_ROW_BYTES),
                                           op.frag_indices)
            case tm.CpAsyncOp():
                new = tmgpu.CpAsyncOp(op.bytes.data, op.dst, storage(op.dst, op.dst_indices, op.bytes.data),
                                      op.src, op.src_indices, op.inside)
            case tm.CpAsyncCommitOp():
                new = tmgpu.CpAsyncCommitOp()
            case tm.CpAsyncWaitOp():
                new = tmgpu.CpAsyncWaitOp(op.pending.data)
            case _:
                return
        rewriter.replace(op, new)


class ConvertHopper(RewritePattern):
    """Hopper's ops → their tmgpu twins. A ``tm.wgmma_desc`` becomes a descriptor by its
    fields: the start is the storage offset of its indices without the swizzle (the
    hardware swizzles start + offset, see tmlir.wgmma_layouts), LBO, SBO and the mode come
    from the buffer's layout. Accesses to laid-out shared buffers index their storage (a
    swizzle must keep a bulk copy's bytes together); accumulators must be plain register
    buffers."""

    def __init__(self, layouts: Layouts) -> None:
        self.layouts = layouts

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        b, layouts = IRBuilder.from_rewriter(rewriter), self.layouts

        def storage(buffer: SSAValue, indices: Sequence[SSAValue], nbytes: int) -> list[SSAValue]:
            _check_swizzle_keeps(op, layouts.get(buffer), buffer, nbytes)
            return _storage_indices(b, layouts, buffer, indices)

        def plain(buffers: Sequence[SSAValue]) -> None:
            if any(f in layouts for f in buffers):
                raise OpError(op, f"convert-tm-to-gpu: an accumulator of '{op.name}' cannot have a data layout")

        new: Operation
        match op:
            case tm.WgmmaDescOp():
                layout = layouts.get(op.smem)
                desc = op.descriptor(layout)
                start = list(op.indices) if layout is None else \
                    [b.value(linear_offset(b, DataLayout(layout.atoms), op.indices))]
                new = tmgpu.WgmmaDescOp(op.smem, start, desc.lbo, desc.sbo, desc.swizzle)
            case tm.WgmmaOp():
                plain([op.acc])
                new = tmgpu.WgmmaOp(op.shape.data, op.dtype.data, op.acc, op.desc_a, op.desc_b, op.a_major.data,
                                    op.b_major.data, op.acc_indices, op.scale_d)
            case tm.WgmmaWaitOp():
                plain(op.fragments)
                new = tmgpu.WgmmaWaitOp(op.pending.data, op.fragments)
            case tm.WgmmaFenceOp():
                new = tmgpu.WgmmaFenceOp()
            case tm.WgmmaCommitOp():
                new = tmgpu.WgmmaCommitOp()
            case tm.FenceProxyAsyncOp():
                new = tmgpu.FenceProxyAsyncOp()
            case tm.MbarrierInitOp():
                new = tmgpu.MbarrierInitOp(op.bar, storage(op.bar, op.bar_indices, 8), op.count.data)
            case tm.MbarrierArriveOp():
                new = tmgpu.MbarrierArriveOp(op.bar, storage(op.bar, op.bar_indices, 8),
                                             None if op.expect_tx is None else op.expect_tx.data)
            case tm.MbarrierWaitOp():
                new = tmgpu.MbarrierWaitOp(op.bar, storage(op.bar, op.bar_indices, 8), op.parity)
            case tm.CpAsyncBulkOp():
                new = tmgpu.CpAsyncBulkOp(op.bytes.data, op.dst, storage(op.dst, op.dst_indices, op.bytes.data),
                                          op.src, op.src_indices, op.bar, storage(op.bar, op.bar_indices, 8))
            case _:
                return
        rewriter.replace(op, new)


def grid_stride(kernel: tmgpu.KernelOp, blocks: int) -> None:
    """Make `kernel` run its `blocks` virtual blocks whatever its launch's grid: its body
    becomes a loop from ``blockIdx.x`` to `blocks` by ``gridDim.x`` (see the module
    docstring), whose counter replaces every ``tmgpu.block_id``."""
    top = kernel.body.block
    body = Block(arg_types=[IndexType()])
    ids = [o for o in kernel.walk() if isinstance(o, tmgpu.BlockIdOp)]
    body.args[0].name_hint = next((o.result.name_hint for o in ids if o.result.name_hint), "bid")
    for o in list(top.ops):
        if not isinstance(o, tmgpu.SharedAllocOp | tmgpu.LocalAllocOp | tmgpu.ThreadIdOp):
            o.detach()
            body.add_op(o)
    if any(isinstance(o, tmgpu.BarrierOp) for o in body.walk()):
        body.add_op(tmgpu.BarrierOp())
    body.add_op(scf.YieldOp())
    b = IRBuilder.at_end(top)
    first = b.insert(tmgpu.BlockIdOp("x"), "first_block").results[0]
    stride = b.insert(tmgpu.GridDimOp("x"), "grid_blocks").results[0]
    b.insert(scf.ForOp(first, b.value(blocks), stride, [], body))
    for o in ids:
        o.result.replace_all_uses_with(body.args[0])
        Rewriter.erase_op(o)


@dataclass(frozen=True)
class ConvertTmToGpu(ModulePass):
    """Lower tm kernels, buffers, accesses and launches to the tmgpu level.

    ``max-grid`` (default: CUDA's limit, 2^31 - 1) is the most blocks a launch may have; a
    kernel of more loops over its blocks (grid-stride). Lower it to test that path on
    small shapes.
    """

    name = "convert-tm-to-gpu"

    max_grid: int = MAX_GRID_X
    """The most blocks a launch may have; a kernel of more loops over its blocks (grid-stride)."""

    def __post_init__(self) -> None:
        if not 1 <= self.max_grid <= MAX_GRID_X:
            raise ValueError(f"convert-tm-to-gpu: max-grid must be in [1, {MAX_GRID_X}], got {self.max_grid}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        leftover = next((o for o in op.walk() if isinstance(o, tm.ForTaskOp)), None)
        if leftover is not None:
            raise OpError(leftover, "convert-tm-to-gpu: tm.for_task remains; run tm-lower-mappings first")
        kernels = [k for k in op.walk() if isinstance(k, tm.KernelOp)]
        wide = {k.sym_name.data for k in kernels if needs_wide_index(k, k.grid.data, k.block.data)}
        strided = {k.sym_name.data: k.grid.data for k in kernels if k.grid.data > self.max_grid}
        capped = min(GRID_STRIDE_BLOCKS, self.max_grid)
        sizes = {k.sym_name.data: (capped if k.sym_name.data in strided else k.grid.data, k.block.data)
                 for k in kernels}
        layouts: Layouts = {}
        patterns: list[RewritePattern] = [
            ConvertKernel(wide), ConvertAlloc(layouts), ConvertLoad(layouts), ConvertLoadVector(),
            ConvertStore(layouts),
            ConvertLaunch(sizes), ConvertOneToOne(), ConvertTensorCore(layouts), ConvertHopper(layouts),
        ]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns, dce_enabled=False),
                             apply_recursively=False).rewrite_module(op)
        for kernel in [k for k in op.ops if isinstance(k, tmgpu.KernelOp)]:
            if kernel.sym_name.data in strided:
                grid_stride(kernel, strided[kernel.sym_name.data])
