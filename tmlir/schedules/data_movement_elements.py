"""The elements of the data-movement ops: where each output element comes from.

An `Element` is the value of output element ``i`` from a `Load` of operand elements at
coordinates it computes (index arithmetic only: nothing is stored). The data-movement
template (``data_movement.py``) stores it, one thread per output element; post-scheduling
fusion (``fusion.py``) evaluates the same `Element` inside another kernel, with loads that
compute the operands in turn.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, scf
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tmlir.dialects import graph
from tmlir.ir.builder import Index, IRBuilder
from tmlir.schedules.common import broadcast_index
from tmlir.schedules.resize_element import ResizeOptions, resize_element

MAX_GATHER_TABLE = 256
"""Constant gather indices that are no progression become a select chain up to this size."""

Load = Callable[[int, Sequence[Index]], SSAValue]
"""The element of operand ``k`` at tensor coordinates (none for a rank-0 operand)."""

Element = Callable[[IRBuilder, list[Index], Load], SSAValue]
"""The result's element at coordinates ``i``, from the operands' elements (`Load`): what a
data-movement kernel stores, and what a fused kernel computes in place of a load."""


def transpose_element(perm: Sequence[int]) -> Element:
    """``out[i] = x[j]`` with ``j[perm[k]] = i[k]``."""
    def element(b: IRBuilder, i: list[Index], load: Load) -> SSAValue:
        j: list[Index] = [0] * len(perm)
        for k, p in enumerate(perm):
            j[p] = i[k]
        return load(0, j)
    return element


def slice_element(starts: Sequence[int], steps: Sequence[int]) -> Element:
    """``out[i] = x[starts + i * steps]`` (a negative step counts down from its start)."""
    def element(b: IRBuilder, i: list[Index], load: Load) -> SSAValue:
        return load(0, [b.add(start, b.mul(c, step)) if step > 0 else b.sub(start, b.mul(c, -step))
                        for c, start, step in zip(i, starts, steps)])
    return element


def expand_element(in_shape: Sequence[int], out_shape: Sequence[int]) -> Element:
    """numpy broadcasting of `in_shape` to `out_shape`."""
    return lambda b, i, load: load(0, broadcast_index(i, out_shape, in_shape))


def tile_element(in_shape: Sequence[int], out_shape: Sequence[int]) -> Element:
    """``out[i] = x[i % in_shape]`` (no remainder along dims that are not repeated)."""
    return lambda b, i, load: load(0, [c if n == o else b.rem(c, n)
                                       for c, n, o in zip(i, in_shape, out_shape)])


def depth_to_space_element(channels: int, block: int, mode: str) -> Element:
    """``out[n, c, h * b + i, w * b + j] = x[n, k, h, w]``: ``k = (i * b + j) * channels + c``
    in ``DCR`` mode, ``c * b * b + i * b + j`` in ``CRD`` (`channels`: the result's)."""
    def element(b: IRBuilder, i: list[Index], load: Load) -> SSAValue:
        n, c, y, x = i
        offset = b.add(b.mul(b.rem(y, block), block), b.rem(x, block))
        k = (b.add(b.mul(offset, channels), c) if mode == "DCR"
             else b.add(b.mul(c, block * block), offset))
        return load(0, [n, k, b.div(y, block), b.div(x, block)])
    return element


def space_to_depth_element(channels: int, block: int, mode: str) -> Element:
    """``out[n, k, h, w] = x[n, c, h * b + i, w * b + j]``: ``k = (i * b + j) * channels + c``
    in ``DCR`` mode, ``c * b * b + i * b + j`` in ``CRD`` (`channels`: the input's)."""
    def element(b: IRBuilder, i: list[Index], load: Load) -> SSAValue:
        n, k, h, w = i
        if mode == "DCR":
            c, offset = b.rem(k, channels), b.div(k, channels)
        else:
            c, offset = b.div(k, block * block), b.rem(k, block * block)
        return load(0, [n, c, b.add(b.mul(h, block), b.div(offset, block)),
                        b.add(b.mul(w, block), b.rem(offset, block))])
    return element


def gather_element(in_shape: Sequence[int], out_shape: Sequence[int], axis: int,
                   indices: Sequence[int]) -> Element:
    """``out[a, k, c] = x[a, indices[k], c]`` (``a``: the dims before `axis`; ``k``: the
    index dims, ``c``: the dims after), `indices` constant, row-major and non-negative.
    Raises ValueError for a table it cannot build (see `_lookup`)."""
    index_rank = len(out_shape) - len(in_shape) + 1
    index_shape = out_shape[axis:axis + index_rank]
    _check_table(indices)

    def element(b: IRBuilder, i: list[Index], load: Load) -> SSAValue:
        flat: Index = 0
        for c, n in zip(i[axis:axis + index_rank], index_shape):
            flat = b.add(b.mul(flat, n), c)
        return load(0, [*i[:axis], _lookup(b, flat, indices), *i[axis + index_rank:]])
    return element


def _is_progression(table: Sequence[int]) -> bool:
    step = table[1] - table[0] if len(table) > 1 else 0
    return all(later - earlier == step for earlier, later in itertools.pairwise(table))


def _check_table(table: Sequence[int]) -> None:
    if len(table) > MAX_GATHER_TABLE and not _is_progression(table):
        raise ValueError(f"{len(table)} gather indices that are not a progression (at most "
                         f"{MAX_GATHER_TABLE} are supported)")


def _lookup(b: IRBuilder, k: Index, table: Sequence[int]) -> Index:
    """``table[k]`` as index arithmetic: ``first + k * step`` for a progression, else a
    chain of selects on ``k`` (at most MAX_GATHER_TABLE entries)."""
    if isinstance(k, int) or len(table) == 1:
        return table[k if isinstance(k, int) else 0]
    if _is_progression(table):
        step = table[1] - table[0]
        return b.add(table[0], b.mul(k, step)) if step >= 0 else b.sub(table[0], b.mul(k, -step))
    result: SSAValue = b.value(table[-1])
    for position in range(len(table) - 2, -1, -1):
        hit = b.eq(k, position)
        result = b.fop(arith.SelectOp, hit, b.value(table[position]), result)
    result.name_hint = "index"
    return result


def pad_element(in_shape: Sequence[int], pads: Sequence[int], mode: str, value: float,
                element_type: Attribute) -> Element:
    """`pads`: the begins of every dim, then the ends (negative: crop, constant mode
    only); `mode` one of ``graph.PAD_MODES``."""
    rank = len(in_shape)
    pairs = list(zip(pads[:rank], pads[rank:]))

    def element(b: IRBuilder, i: list[Index], load: Load) -> SSAValue:
        if mode != "constant":
            return load(0, [_border_index(b, mode, c, n, begin) if begin or end else c
                            for c, n, (begin, end) in zip(i, in_shape, pairs)])
        checks = []
        for c, n, (begin, end) in zip(i, in_shape, pairs):
            if begin > 0:
                checks.append(b.ge(c, begin))
            if end > 0:
                checks.append(b.lt(c, begin + n))
        inside = b.all_of(checks)
        if inside is not None:
            inside.name_hint = "inside"

        def source() -> SSAValue:  # computed where it is in range
            return load(0, [b.sub(c, begin) if begin >= 0 else b.add(c, -begin)
                            for c, (begin, _) in zip(i, pairs)])

        return b.value_if(inside, source, value, b.computed_type(element_type), "v")
    return element


def _border_index(b: IRBuilder, mode: str, c: Index, n: int, begin: int) -> Index:
    """The source index along a dim padded by `begin` (>= 0) in `mode`: ``c - begin`` in
    the middle; selects pick the edge or the mirror outside it, a remainder wraps."""
    if mode == "wrap":
        return b.rem(b.add(c, (-begin) % n), n)
    middle = b.insert(arith.SubiOp(b.value(c), b.value(begin))).results[0] if begin else c
    if mode == "edge":
        before, after = b.value(0), b.value(n - 1)
    else:  # reflect: c < begin reads begin - c, c >= begin + n reads 2 (n - 1) + begin - c
        before = b.insert(arith.SubiOp(b.value(begin), b.value(c))).results[0] if begin \
            else b.value(0)
        after = b.insert(arith.SubiOp(b.value(2 * (n - 1) + begin), b.value(c))).results[0]
    inner = b.fop(arith.SelectOp, b.lt(c, begin + n), middle, after)
    return b.fop(arith.SelectOp, b.lt(c, begin), before, inner) if begin else inner


def concat_element(extents: Sequence[int], axis: int, element_type: Attribute) -> Element:
    """The element of the input whose segment of `axis` holds the coordinate: ``if`` on
    the segment bounds, innermost the last input (empty inputs are skipped)."""
    bounds = list(itertools.accumulate(extents))
    pieces = [k for k, n in enumerate(extents) if n > 0]

    def element(b: IRBuilder, i: list[Index], load: Load) -> SSAValue:
        def from_input(k: int) -> SSAValue:
            offset = bounds[k] - extents[k]
            return load(k, [*i[:axis], b.sub(i[axis], offset), *i[axis + 1:]])

        def select(rest: list[int]) -> SSAValue:
            k, *others = rest
            if not others:
                return from_input(k)
            inside = b.lt(i[axis], bounds[k], f"in{k}")
            return _either(b, inside, lambda: from_input(k), lambda: select(others),
                           element_type)

        return select(pieces)
    return element


def _either(b: IRBuilder, condition: SSAValue, then: Callable[[], SSAValue],
            otherwise: Callable[[], SSAValue], element_type: Attribute) -> SSAValue:
    """``condition ? then() : otherwise()``, each computed only in its branch."""
    then_block, other_block = Block(), Block()
    with b.at(then_block):
        b.insert(scf.YieldOp(then()))
    with b.at(other_block):
        b.insert(scf.YieldOp(otherwise()))
    return b.insert(scf.IfOp(condition, [b.computed_type(element_type)], [then_block], [other_block]),
                    "v").results[0]


# -- the element of each graph op ----------------------------------------------------------

def comma_list(values: Sequence[int]) -> str:
    """``1,2,3``: how a kernel header shows a list parameter."""
    return ",".join(map(str, values))


def shape_of(value: SSAValue) -> tuple[int, ...]:
    """The static shape of a tensor value."""
    return tuple(value.type.get_shape())  # type: ignore[attr-defined]


ElementBuilder = Callable[[Operation], tuple[Element, dict[str, int | str]]]
"""The `Element` of one data-movement op and the parameters its kernel header shows."""

_ELEMENTS: dict[type[Operation], ElementBuilder] = {}


def element_of_op(*op_types: type[Operation]) -> Callable[[ElementBuilder], ElementBuilder]:
    """Register the decorated function as the element builder of `op_types`: their kernels
    are `data_movement_op_kernel`'s, and fusion computes them inside other kernels."""
    def register(builder: ElementBuilder) -> ElementBuilder:
        for op_type in op_types:
            assert op_type not in _ELEMENTS, f"{op_type.__name__} already has an element"
            _ELEMENTS[op_type] = builder
        return builder
    return register


def element_for(op: Operation) -> tuple[Element, dict[str, int | str]]:
    """The `Element` of a data-movement op but split (an `Injective` op without an element
    function) and the parameters its kernel header shows. Raises ValueError for what the
    template cannot do."""
    builder = _ELEMENTS.get(type(op))
    if builder is None:
        raise AssertionError(f"not an element op: {op.name}")
    return builder(op)


def _result_element_type(op: Operation) -> Attribute:
    return op.results[0].type.get_element_type()  # type: ignore[attr-defined]


@element_of_op(graph.TransposeOp)
def _transpose(op: graph.TransposeOp) -> tuple[Element, dict[str, int | str]]:
    return transpose_element(op.permutation), {"perm": comma_list(op.permutation)}


@element_of_op(graph.SliceOp)
def _slice(op: graph.SliceOp) -> tuple[Element, dict[str, int | str]]:
    starts, steps = op.starts.get_values(), op.steps.get_values()
    return slice_element(starts, steps), {"starts": comma_list(starts), "steps": comma_list(steps)}


@element_of_op(graph.GatherOp)
def _gather(op: graph.GatherOp) -> tuple[Element, dict[str, int | str]]:
    element = gather_element(shape_of(op.input), shape_of(op.result), op.axis_value, op.index_values)
    return element, {"axis": op.axis_value, "indices": len(op.index_values)}


@element_of_op(graph.ExpandOp)
def _expand(op: graph.ExpandOp) -> tuple[Element, dict[str, int | str]]:
    return expand_element(shape_of(op.input), shape_of(op.result)), {}


@element_of_op(graph.TileOp)
def _tile(op: graph.TileOp) -> tuple[Element, dict[str, int | str]]:
    in_shape, out_shape = shape_of(op.input), shape_of(op.result)
    repeats = [o // n if n else 1 for n, o in zip(in_shape, out_shape)]
    return tile_element(in_shape, out_shape), {"repeats": comma_list(repeats)}


@element_of_op(graph.PadOp)
def _pad(op: graph.PadOp) -> tuple[Element, dict[str, int | str]]:
    pads = op.pads.get_values()
    element = pad_element(shape_of(op.input), pads, op.mode_value, op.pad_value,
                          _result_element_type(op))
    return element, {"mode": op.mode_value, "pads": comma_list(pads)}


@element_of_op(graph.ConcatOp)
def _concat(op: graph.ConcatOp) -> tuple[Element, dict[str, int | str]]:
    extents = [shape_of(v)[op.axis_value] for v in op.inputs]
    return (concat_element(extents, op.axis_value, _result_element_type(op)),
            {"axis": op.axis_value, "sizes": comma_list(extents)})


@element_of_op(graph.ResizeOp)
def _resize(op: graph.ResizeOp) -> tuple[Element, dict[str, int | str]]:
    ctm = op.coordinate_transformation_mode.data
    info: dict[str, int | str] = {"mode": op.mode.data, "coordinate_transformation_mode": ctm}
    if op.mode.data == "nearest":
        info["nearest_mode"] = op.nearest_mode_value
    options = ResizeOptions(op.nearest_mode_value, op.cubic_coeff_a_value, op.exclude_outside is not None,
                            op.antialias is not None, op.roi_values, op.extrapolation_value_value)
    if op.mode.data == "cubic":
        info["cubic_coeff_a"] = f"{options.cubic_coeff_a:g}"
    for flag in ("exclude_outside", "antialias"):
        if getattr(options, flag):
            info[flag] = 1
    if options.roi is not None:
        info["roi"] = ",".join(f"{v:g}" for v in options.roi)
        info["extrapolation_value"] = f"{options.extrapolation_value:g}"
    return resize_element(shape_of(op.input), shape_of(op.result), op.scale_values, op.mode.data,
                          ctm, options), info


@element_of_op(graph.DepthToSpaceOp)
def _depth_to_space(op: graph.DepthToSpaceOp) -> tuple[Element, dict[str, int | str]]:
    element = depth_to_space_element(shape_of(op.result)[1], op.block, op.mode.data)
    return element, {"blocksize": op.block, "mode": op.mode.data}


@element_of_op(graph.SpaceToDepthOp)
def _space_to_depth(op: graph.SpaceToDepthOp) -> tuple[Element, dict[str, int | str]]:
    element = space_to_depth_element(shape_of(op.input)[1], op.block, op.mode.data)
    return element, {"blocksize": op.block, "mode": op.mode.data}


def trilu_element(k: int, upper: bool, element_type: Attribute) -> Element:
    """``x[i]`` where ``column - row >= k`` (`upper`) or ``<= k`` (lower), else 0; the
    comparison is of non-negative indices, with ``k`` moved to the side it adds to."""
    def element(b: IRBuilder, i: list[Index], load: Load) -> SSAValue:
        row, col = b.add(i[-2], max(k, 0)), b.add(i[-1], max(-k, 0))
        keep = b.ge(col, row, "keep") if upper else b.ge(row, col, "keep")
        zero = b.constant(0, b.computed_type(element_type))
        return b.fop(arith.SelectOp, keep, load(0, i), zero, name="v")
    return element


@element_of_op(graph.TriluOp)
def _trilu(op: graph.TriluOp) -> tuple[Element, dict[str, int | str]]:
    element = trilu_element(op.k_value, op.upper_value, _result_element_type(op))
    return element, {"k": op.k_value, "upper": int(op.upper_value)}


def element_op_types() -> tuple[type[Operation], ...]:
    """The op types with a registered element (the data-movement template schedules them)."""
    return tuple(_ELEMENTS)

