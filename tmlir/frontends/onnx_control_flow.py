"""The ONNX frontend's control flow: ``If``, ``Loop`` and ``Scan``, flattened before import.

A compiler for static shapes runs a fixed sequence of kernels, so every branch and trip
count must be decided when the model is compiled. `ControlFlowInliner` rewrites the ONNX
graph between the rounds of constant folding and shape inference (``onnx.py``), so that
what it produces is folded, inferred and imported like any other node:

- ``If`` whose ``cond`` is a constant (an initializer, a ``Constant`` node, or a value that
  folding computed from constants and static shapes) is replaced by the nodes of the
  taken branch.
- ``Loop`` whose trip count ``M`` and ``cond`` are constants (or absent) is unrolled when
  the body's condition output is known at every iteration: a constant, the body's own
  ``cond`` input passed through, or computed from the iteration number and loop-carried
  values that are themselves computed from constants alone (a counter; evaluated with
  onnx's reference implementation). The iteration number becomes a constant per
  iteration, loop-carried values are threaded from one copy of the body to the next, and
  each scan output is its iterations' values stacked on a new first axis
  (``Unsqueeze`` + ``Concat``).
- ``Scan`` is unrolled over the static extent of its scan axes: each step reads
  ``Gather(x, t, axis)`` of its scan inputs (``t`` counted down for a reverse direction)
  and stacks its scan outputs along their ``scan_output_axes``. Before opset 9 every input
  and output has a batch axis first (and ``sequence_lens``, which must then be the full
  length): each batch element is scanned apart and the results stacked.

Subgraphs see outer values by name (ONNX lexical scoping); each copy of a subgraph gets
fresh names for the values it defines, and nested subgraphs are renamed with their own
definitions shadowing outer names. A loop's initializers and ``Constant`` nodes are
loop-invariant: they are added once, not per iteration. Unrolling adds at most
`MAX_UNROLLED_NODES` nodes to a model; past that the import fails with a one-line error.

An ``If``, ``Loop`` or ``Scan`` that is still there when the model is imported decides on a
value computed at run time: its converter raises the one-line ``FrontendError`` that
``ImportContext.constant_input`` raises for any constant input computed at run time.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from onnx import GraphProto, ModelProto, NodeProto, TensorProto, helper, numpy_helper

from tmlir.frontends.onnx_common import FrontendError, one_line, type_kind
from tmlir.frontends.onnx_context import ImportContext
from tmlir.frontends.onnx_ops import ANY, BOOL, GRAPH, INT, INT64, INTS, onnx_op, operators
from tmlir.frontends.onnx_subgraphs import GraphRewrite, subgraphs, unshadow

MAX_UNROLLED_NODES = 4096
"""Nodes that unrolling loops and scans may add to one model, in all."""
_DEFAULT_DOMAINS = ("", "ai.onnx")


# -- the records: what is left at import decides at run time ----------------------------

@onnx_op("If", attributes={"then_branch": GRAPH, "else_branch": GRAPH}, inputs=((BOOL,),),
         constant_inputs=(0,), input_names=("cond",), outputs=None)
def if_at_run_time(ctx: ImportContext, node: NodeProto) -> None:
    ctx.attributes(node)
    ctx.constant_input(node, 0)  # a one-line error: computed at run time
    raise FrontendError(f"{ctx.label}: the condition is computed from shapes that shape inference "
                        "could not determine; not supported")  # else it was inlined


@onnx_op("Loop", attributes={"body": GRAPH}, inputs=((INT64,), (BOOL,), ANY),
         constant_inputs=(0, 1), input_names=("M", "cond", "v_initial"), outputs=None)
def loop_at_run_time(ctx: ImportContext, node: NodeProto) -> None:
    ctx.attributes(node)
    ctx.constant_ints(node, 0)  # one-line errors: computed at run time
    ctx.constant_input(node, 1)
    raise FrontendError(f"{ctx.label}: the trip count or condition is computed from shapes that "
                        "shape inference could not determine; not supported")  # else it was unrolled


@onnx_op("Scan", attributes={"body": GRAPH, "num_scan_inputs": INT, "directions": INTS,
                             "scan_input_axes": INTS, "scan_input_directions": INTS,
                             "scan_output_axes": INTS, "scan_output_directions": INTS},
         inputs=(ANY,), outputs=None)
def scan_at_run_time(ctx: ImportContext, node: NodeProto) -> None:
    ctx.attributes(node)
    raise FrontendError(f"{ctx.label}: the number of iterations must be known when the model is "
                        "compiled (the scan inputs need static shapes)")


# -- the rewrite ------------------------------------------------------------------------

def _label(node: NodeProto, index: int) -> str:
    """The node as ``onnx.py`` names it in errors."""
    return f"node '{node.name}' ({node.op_type})" if node.name else f"node #{index} ({node.op_type})"


def _check_tensors(graph: GraphProto, label: str, what: str) -> None:
    """A FrontendError if the subgraph `graph` (`what`, for the message) declares an input
    or output that is not a tensor (a sequence, an optional)."""
    for value in (*graph.input, *graph.output):
        kind = value.type.WhichOneof("value")
        if kind not in (None, "tensor_type"):
            raise FrontendError(f"{label}: '{value.name}' of the {what} is {type_kind(kind)}, not a "
                                "tensor (only tensors are supported)")


def _identities(sources: list[str], outputs: list[str]) -> list[NodeProto]:
    return [helper.make_node("Identity", [s], [o]) for s, o in zip(sources, outputs) if o]


class ControlFlowInliner:
    """Calling it on a model (shapes inferred as far as they are known) replaces, in place,
    each ``If``, ``Loop`` and ``Scan`` of the main graph that is decided by constants and
    static shapes; it returns whether it replaced any. Its count of unrolled nodes lasts
    across calls, so one inliner serves one model's import."""

    def __init__(self, limit: int = MAX_UNROLLED_NODES) -> None:
        self.limit = limit
        self.unrolled = 0
        """Nodes added so far by unrolling."""

    def __call__(self, model: ModelProto) -> bool:
        if not any(subgraphs(node) for node in model.graph.node):
            return False
        rewrite = GraphRewrite(model)
        unshadow(model.graph, set(), rewrite.fresh)
        nodes: list[NodeProto] = []
        inlined: set[str] = set()
        changed = False
        for index, node in enumerate(model.graph.node):
            convert = _INLINERS.get(node.op_type) if node.domain in _DEFAULT_DOMAINS else None
            replacement = convert(self, rewrite, node, _label(node, index)) if convert else None
            if replacement is None:
                nodes.append(node)
                continue
            nodes.extend(replacement)
            inlined.update(node.output)
            changed = True
        if not changed:
            return False
        graph = model.graph
        del graph.node[:]
        graph.node.extend(nodes)
        graph.initializer.extend(rewrite.added)
        infos = [v for v in graph.value_info if v.name not in inlined]  # shapes inference merged
        del graph.value_info[:]
        graph.value_info.extend(infos)
        return True

    def _count(self, label: str, nodes: int, what: str) -> None:
        self.unrolled += nodes
        if self.unrolled > self.limit:
            raise FrontendError(f"{label}: unrolling {what} would add more than {self.limit} nodes "
                                "to the model; loops that long are not supported")

    def inline_if(self, rewrite: GraphRewrite, node: NodeProto, label: str) -> list[NodeProto] | None:
        """The taken branch's nodes if the condition is a constant, else None."""
        attrs = operators()["If"].read_attributes(node, label)
        if len(node.input) != 1 or not node.input[0]:
            raise FrontendError(f"{label}: expected 1 input, got {len(node.input)}")
        cond = rewrite.constant(node.input[0], label)
        if cond is None:
            return None  # decided at run time: the converter says so
        if cond.size != 1:
            raise FrontendError(f"{label}: the condition must have one element, got shape "
                                f"{list(cond.shape)}")
        taken = "then_branch" if bool(cond.reshape(-1)[0]) else "else_branch"
        branch = attrs.get(taken)
        if not isinstance(branch, GraphProto):
            raise FrontendError(f"{label}: attribute '{taken}' is required")
        if len(branch.output) < len(node.output):
            raise FrontendError(f"{label}: {taken} has {len(branch.output)} outputs, the node "
                                f"{len(node.output)}")
        _check_tensors(branch, label, taken)
        nodes, outputs = rewrite.instantiate(branch, {}, "")
        return nodes + _identities(outputs, list(node.output))

    def unroll_loop(self, rewrite: GraphRewrite, node: NodeProto, label: str) -> list[NodeProto] | None:
        """The unrolled loop if its trip count and condition are constants, else None."""
        body = operators()["Loop"].read_attributes(node, label).get("body")
        if not isinstance(body, GraphProto):
            raise FrontendError(f"{label}: attribute 'body' is required")
        names = [*node.input, "", ""]
        trip: int | None = None
        if names[0]:
            if (m := rewrite.constant(names[0], label)) is None:
                return None  # decided at run time: the converter says so
            trip = int(m.reshape(-1)[0]) if m.size == 1 else -1
            if m.size != 1 or trip < 0:
                raise FrontendError(f"{label}: trip count 'M' must be one non-negative integer")
        cond = True
        if names[1]:
            if (c := rewrite.constant(names[1], label)) is None:
                return None
            if c.size != 1:
                raise FrontendError(f"{label}: 'cond' must have one element, got shape {list(c.shape)}")
            cond = bool(c.reshape(-1)[0])
        carried = list(node.input[2:])
        if len(body.input) != 2 + len(carried) or len(body.output) < 1 + len(carried):
            raise FrontendError(f"{label}: the body has {len(body.input)} inputs and "
                                f"{len(body.output)} outputs for {len(carried)} loop-carried values")
        scans = len(body.output) - 1 - len(carried)
        if len(node.output) > len(carried) + scans:
            raise FrontendError(f"{label}: expected at most {len(carried) + scans} outputs, got "
                                f"{len(node.output)}")
        _check_tensors(body, label, "body")
        if trip is None and cond and body.output[0].name == body.input[1].name:
            raise FrontendError(f"{label}: the loop has no trip count and its condition never "
                                "changes: it would not end")
        next_cond = _condition(rewrite, body, carried, label)
        base = node.name or node.output[0] or "loop"
        nodes, hoisted = rewrite.hoist(body)
        iteration_name, cond_name = body.input[0].name, body.input[1].name
        stacked: list[list[str]] = [[] for _ in range(scans)]
        i = 0
        while cond and (trip is None or i < trip):
            self._count(label, max(len(body.node), 1), f"iteration {i}")
            suffix = f".it{i}"
            bound = {**hoisted, **dict(zip([v.name for v in body.input[2:]], carried))}
            bound[iteration_name] = rewrite.add_constant(f"{base}.i{i}", np.array(i, np.int64))
            bound[cond_name] = rewrite.add_constant(f"{base}.cond{i}", np.array(cond))
            copies, outputs = rewrite.instantiate(body, bound, suffix, constants=False)
            nodes += copies
            carried = outputs[1:1 + len(carried)]
            for parts, name in zip(stacked, outputs[1 + len(carried):]):
                parts.append(name)
            cond = next_cond(i, cond)
            i += 1
        nodes += _identities(carried, list(node.output[:len(carried)]))
        for parts, output in zip(stacked, node.output[len(carried):]):
            if output and not parts:
                raise FrontendError(f"{label}: the loop runs no iteration, so its scan output "
                                    f"'{output}' would be empty; not supported")
            if output:
                nodes += rewrite.stack(parts, 0, output)
        return nodes

    def unroll_scan(self, rewrite: GraphRewrite, node: NodeProto, label: str) -> list[NodeProto] | None:
        """The unrolled scan if its scan axes have static extents, else None. Before opset 9
        every input and output has a batch axis first, each batch element scanned apart."""
        attrs = operators()["Scan"].read_attributes(node, label)
        body, count = attrs.get("body"), attrs.get("num_scan_inputs")
        if not isinstance(body, GraphProto) or not isinstance(count, int):
            raise FrontendError(f"{label}: attributes 'body' and 'num_scan_inputs' are required")
        _check_tensors(body, label, "body")
        batched = rewrite.opset < 9
        inputs = list(node.input)[1:] if batched else list(node.input)
        states = len(inputs) - count
        if count < 1 or states < 0 or "" in inputs or len(body.input) != len(inputs):
            raise FrontendError(f"{label}: {len(inputs)} inputs, {count} of them scanned, do not "
                                f"match the body's {len(body.input)} inputs")
        outputs_count = len(body.output) - states
        if outputs_count < 0 or len(node.output) > len(body.output):
            raise FrontendError(f"{label}: the body has {len(body.output)} outputs for {states} states")
        given = sorted(n for n in attrs if n.startswith(("scan_", "directions")))
        if wrong := [n for n in given if (n == "directions") != batched]:
            raise FrontendError(f"{label}: attribute '{wrong[0]}' is not defined in opset {rewrite.opset}")
        in_axes = [1] * count if batched else _ints(attrs, "scan_input_axes", count, 0, label)
        in_reverse = _ints(attrs, "directions" if batched else "scan_input_directions", count, 0, label)
        out_axes = _ints(attrs, "scan_output_axes", outputs_count, 0, label)
        out_reverse = _ints(attrs, "scan_output_directions", outputs_count, 0, label)
        if any(d not in (0, 1) for d in (*in_reverse, *out_reverse)):
            raise FrontendError(f"{label}: scan directions must be 0 (forward) or 1 (reverse)")
        shapes = [rewrite.static_shape(name) for name in inputs]
        if any(shape is None for shape in shapes):
            return None  # not known yet (or never: the converter says so)
        extents, batches = set(), {shape[0] for shape in shapes if batched and shape}  # type: ignore[index]
        for name, shape, axis in zip(inputs[states:], shapes[states:], in_axes):
            if not -len(shape) <= axis < len(shape):  # type: ignore[arg-type]
                raise FrontendError(f"{label}: scan axis {axis} is out of range for input '{name}' "
                                    f"of rank {len(shape)}")  # type: ignore[arg-type]
            extents.add(shape[axis])  # type: ignore[index]
        if len(extents) != 1 or len(batches) > 1:
            raise FrontendError(f"{label}: the scan inputs have different lengths "
                                f"{sorted(extents)} or batch sizes {sorted(batches)}")
        (steps,) = extents
        if batched and node.input[0]:
            lengths = rewrite.constant(node.input[0], label)
            if lengths is None or (lengths != steps).any():
                raise FrontendError(f"{label}: 'sequence_lens' must be a constant equal to the "
                                    f"sequence length {steps}")
        empty = node.output if 0 in batches else node.output[states:] if steps == 0 else []
        if any(empty):
            raise FrontendError(f"{label}: the scan has no step, so its outputs would be empty; "
                                "not supported")
        base = node.name or node.output[0] or "scan"
        nodes, hoisted = rewrite.hoist(body)
        if not batched:
            self._count(label, steps * (len(body.node) + count), f"{steps} steps")
            scanned = list(zip(inputs[states:], in_axes, in_reverse))
            carried, stacked = self._steps(rewrite, body, hoisted, inputs[:states], scanned, steps,
                                           base, nodes)
            nodes += _identities(carried, list(node.output[:states]))
        else:  # the same, per element of the batch; the results stacked on a new axis 0
            (batch,) = batches
            self._count(label, batch * steps * (len(body.node) + 2 * count + states), f"{steps} steps")
            per_element: list[list[str]] = [[] for _ in body.output]
            for b in range(batch):
                index = rewrite.add_constant(f"{base}.b{b}", np.array(b, np.int64))
                element = []
                for name in inputs:
                    element.append(rewrite.fresh(f"{name}.b{b}"))
                    nodes.append(helper.make_node("Gather", [name, index], [element[-1]], axis=0))
                scanned = list(zip(element[states:], [0] * count, in_reverse))
                carried, stacked = self._steps(rewrite, body, hoisted, element[:states], scanned, steps,
                                               f"{base}.b{b}", nodes)
                for parts, name in zip(per_element, carried):
                    parts.append(name)
                for parts, steps_of, output in zip(per_element[states:], stacked, node.output[states:]):
                    if output:
                        parts.append(rewrite.fresh(f"{output}.b{b}"))
                        nodes += rewrite.stack(steps_of, 0, parts[-1])
            stacked = per_element[states:]
            for parts, output in zip(per_element, node.output[:states]):
                if output:
                    nodes += rewrite.stack(parts, 0, output)
        for parts, output, axis, reverse in zip(stacked, node.output[states:], out_axes, out_reverse):
            if output:
                nodes += rewrite.stack(parts[::-1] if reverse else parts, axis, output)
        return nodes

    @staticmethod
    def _steps(rewrite: GraphRewrite, body: GraphProto, hoisted: dict[str, str], carried: list[str],
               scanned: list[tuple[str, int, int]], steps: int, base: str,
               nodes: list[NodeProto]) -> tuple[list[str], list[list[str]]]:
        """Append to `nodes` the steps of a scan over the (name, axis, reverse) of `scanned`
        from the states `carried`; the final states, and each scan output's per-step values."""
        states = len(carried)
        stacked: list[list[str]] = [[] for _ in body.output[states:]]
        for t in range(steps):
            suffix = f".it{t}"
            bound = {**hoisted, **dict(zip([v.name for v in body.input[:states]], carried))}
            for (name, axis, reverse), slot in zip(scanned, body.input[states:]):
                index = rewrite.add_constant(f"{base}.t{t}", np.array(steps - 1 - t if reverse else t,
                                                                      np.int64))
                bound[slot.name] = rewrite.fresh(slot.name + suffix)
                nodes.append(helper.make_node("Gather", [name, index], [bound[slot.name]], axis=axis))
            copies, outputs = rewrite.instantiate(body, bound, suffix, constants=False)
            nodes += copies
            carried = outputs[:states]
            for parts, name in zip(stacked, outputs[states:]):
                parts.append(name)
        return carried, stacked


def _ints(attrs: dict[str, object], name: str, count: int, default: int, label: str) -> list[int]:
    """The INTS attribute `name` of `count` entries (each `default` when absent)."""
    values = attrs.get(name)
    if values is None:
        return [default] * count
    if len(values) != count:  # type: ignore[arg-type]
        raise FrontendError(f"{label}: attribute '{name}' must have {count} entries, "
                            f"got {len(values)}")  # type: ignore[arg-type]
    return [int(v) for v in values]  # type: ignore[union-attr]


def _condition(rewrite: GraphRewrite, body: GraphProto, initial: list[str],
               label: str) -> Callable[[int, bool], bool]:
    """The loop body's condition output as a function of the iteration number and its
    condition input, called once per iteration in order. The condition may also depend on
    loop-carried values (a counter) if those are computed from constants alone, starting
    from the constants `initial` (the loop's initial values, by name); it is a FrontendError
    if it depends on anything known only at run time."""
    iteration, cond_in = body.input[0].name, body.input[1].name
    wanted = body.output[0].name
    if wanted == cond_in:
        return lambda i, cond: cond
    producers = {o: n for n in body.node for o in n.output if o}
    initializers = {t.name: t for t in body.initializer}
    carried = {v.name: k for k, v in enumerate(body.input[2:])}
    needed: set[int] = set()
    outer: dict[str, np.ndarray] = {}
    state: dict[str, np.ndarray] = {}  # the carried values the condition depends on, by body input
    stack = [wanted]
    while stack:
        name = stack.pop()
        if not name or name in (iteration, cond_in) or name in initializers or name in outer or name in state:
            continue
        producer = producers.get(name)
        if producer is None and name in carried:
            start = initial[carried[name]]
            value = rewrite.constant(start, label)
            if value is None:
                raise FrontendError(f"{label}: the loop condition ('{wanted}') depends on the loop-carried "
                                    f"value '{name}', whose initial value '{start}' is computed at run "
                                    "time; only loops whose trip count and condition are known when the "
                                    "model is compiled are supported")
            state[name] = value
            stack.append(body.output[1 + carried[name]].name)  # its next value
            continue
        if producer is None:
            if (value := rewrite.constant(name, label)) is None:
                raise FrontendError(f"{label}: the loop condition ('{wanted}') depends on '{name}', "
                                    "which is computed from tensor data at run time; only loops whose "
                                    "trip count and condition are known when the model is compiled "
                                    "are supported")
            outer[name] = value
            continue
        if subgraphs(producer) or producer.domain not in _DEFAULT_DOMAINS:
            raise FrontendError(f"{label}: the loop condition ('{wanted}') is computed by a "
                                f"{producer.op_type} node that cannot be evaluated when the model is "
                                "compiled")
        if id(producer) not in needed:
            needed.add(id(producer))
            stack.extend(producer.input)
    nexts = {name: body.output[1 + carried[name]].name for name in state}
    inputs = [helper.make_tensor_value_info(iteration, TensorProto.INT64, []),
              helper.make_tensor_value_info(cond_in, TensorProto.BOOL, [])]
    inputs += [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype), value.shape)
               for name, value in state.items()]
    computed = [n for n in dict.fromkeys([wanted, *nexts.values()]) if n in producers]
    graph = helper.make_graph(
        [n for n in body.node if id(n) in needed], "loop_condition", inputs,
        [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in computed],
        [*initializers.values(), *(numpy_helper.from_array(a, n) for n, a in outer.items())])
    try:
        from onnx.reference import ReferenceEvaluator

        evaluator = ReferenceEvaluator(helper.make_model(graph, opset_imports=[
            helper.make_opsetid("", rewrite.opset)]))
    except Exception as exc:
        raise FrontendError(f"{label}: cannot evaluate the loop condition: {one_line(exc)}") from exc
    constants = {n: numpy_helper.to_array(t) for n, t in initializers.items()} | outer

    def evaluate(i: int, cond: bool) -> bool:
        feed = {iteration: np.array(i, np.int64), cond_in: np.array(cond), **state}
        try:
            results = dict(zip(computed, evaluator.run(None, feed))) if computed else {}
        except Exception as exc:
            raise FrontendError(f"{label}: cannot evaluate the loop condition at iteration {i}: "
                                f"{one_line(exc)}") from exc
        known = {**constants, **feed, **results}
        state.update((name, np.asarray(known[after])) for name, after in nexts.items())
        return bool(np.asarray(known[wanted]).reshape(-1)[0])

    return evaluate


_INLINERS: dict[str, Callable[[ControlFlowInliner, GraphRewrite, NodeProto, str], list[NodeProto] | None]] = {
    "If": ControlFlowInliner.inline_if, "Loop": ControlFlowInliner.unroll_loop,
    "Scan": ControlFlowInliner.unroll_scan}
