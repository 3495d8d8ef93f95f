"""The ONNX frontend's control flow (``tmlir/frontends/onnx_control_flow.py``): which graph
ops an ``If``, ``Loop`` or ``Scan`` decided by constants leaves after import (the taken
branch only, one copy of a loop body per iteration), how subgraph names are scoped, and
the one-line errors for control flow decided at run time or too long to unroll. Numerical
checks against onnxruntime are in tests/e2e/test_control_flow.py."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func

from tmlir.dialects import graph
from tmlir.frontends.onnx import FrontendError, import_onnx
from tmlir.frontends.onnx_common import RunTimeValueError
from tmlir.frontends.onnx_control_flow import ControlFlowInliner

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def info(name: str, elem: int = F, shape: list[int] | None = None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def subgraph(nodes, inputs, outputs, constants=None) -> onnx.GraphProto:
    return helper.make_graph(nodes, "sub", inputs, [info(o, F) if isinstance(o, str) else o
                                                    for o in outputs],
                             [numpy_helper.from_array(np.asarray(v), n)
                              for n, v in (constants or {}).items()])


def make_model(nodes, inputs, outputs=("y",), constants=None, opset: int = 17) -> onnx.ModelProto:
    graph_proto = helper.make_graph(
        nodes, "control_flow", inputs, [info(o) for o in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in (constants or {}).items()])
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def op_names(model: onnx.ModelProto, **kwargs) -> list[str]:
    (function,) = import_onnx(model, **kwargs).module.ops
    return [op.name for op in function.body.block.ops if not isinstance(op, func.ReturnOp)]


def relu_or_neg(cond: str = "c") -> onnx.NodeProto:
    return helper.make_node("If", [cond], ["y"],
                            then_branch=subgraph([helper.make_node("Relu", ["x"], ["t"])], [], ["t"]),
                            else_branch=subgraph([helper.make_node("Neg", ["x"], ["e"])], [], ["e"]))


X = info("x", F, [2, 3])


# -- If ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [(True, "graph.relu"), (False, "graph.neg")])
def test_if_on_a_constant_imports_the_taken_branch_only(value, expected):
    model = make_model([relu_or_neg()], [X], constants={"c": np.array(value)})
    assert op_names(model) == [expected]


def test_if_on_a_constant_node_and_on_a_folded_shape_comparison():
    constant = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array(False)))
    assert op_names(make_model([constant, relu_or_neg()], [X])) == ["graph.neg"]
    shape_test = [helper.make_node("Shape", ["x"], ["s"]),
                  helper.make_node("Gather", ["s", "one"], ["d"], axis=0),
                  helper.make_node("Equal", ["d", "three"], ["c"]), relu_or_neg()]
    model = make_model(shape_test, [X], constants={"one": np.array(1), "three": np.array(3)})
    assert op_names(model) == ["graph.relu"]


def test_branch_outputs_may_be_outer_values():
    """Both outputs of the taken branch are values of the main graph, one of them twice."""
    then = subgraph([], [], ["x", "x"])
    nodes = [helper.make_node("If", ["c"], ["a", "b"], then_branch=then, else_branch=then),
             helper.make_node("Add", ["a", "b"], ["y"])]
    model = make_model(nodes, [X], constants={"c": np.array(True)})
    (function,) = import_onnx(model).module.ops
    (add, _) = function.body.block.ops
    assert add.operands[0] is add.operands[1] is function.args[0]


def test_branch_names_may_shadow_outer_names_and_have_initializers():
    """The branch defines its own 'x' (from 'x' outside) and reads an initializer of its own
    named like an outer value; the outer 'x' and 'w' stay what they were."""
    then = subgraph([helper.make_node("Add", ["x", "w"], ["x"]),  # 'w' is the branch's own
                     helper.make_node("Mul", ["x", "x"], ["t"])], [], ["t"],
                    constants={"w": np.full((2, 3), 2, np.float32)})
    nodes = [helper.make_node("If", ["c"], ["t0"], then_branch=then,
                              else_branch=subgraph([helper.make_node("Identity", ["x"], ["e"])], [], ["e"])),
             helper.make_node("Sub", ["t0", "w"], ["y"])]
    model = make_model(nodes, [X], constants={"c": np.array(True), "w": np.ones((2, 3), np.float32)})
    imported = import_onnx(model)
    (function,) = imported.module.ops
    add, mul, sub = [op for op in function.body.block.ops
                     if isinstance(op, graph.AddOp | graph.MulOp | graph.SubOp)]
    assert add.operands[0] is function.args[0] and mul.operands[0] is mul.operands[1] is add.results[0]
    weights = {op.results[0]: imported.weights[op.weight_name.data]
               for op in function.body.block.ops if isinstance(op, graph.WeightOp)}
    assert (weights[add.operands[1]] == 2).all() and (weights[sub.operands[1]] == 1).all()


def test_shadowing_names_do_not_stop_shape_inference():
    """The branch's 's' (float) shadows the outer 's' (the int64 shape): onnx's shape
    inference would mix them up, so the branch's is renamed before inference; the
    condition is known only after inference and folding."""
    then = subgraph([helper.make_node("Sigmoid", ["x"], ["s"]),
                     helper.make_node("Mul", ["s", "s"], ["t"])], [], ["t"])
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "one"], ["d"], axis=0),
             helper.make_node("Equal", ["d", "three"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then,
                              else_branch=subgraph([helper.make_node("Neg", ["x"], ["e"])], [], ["e"]))]
    model = make_model(nodes, [X], constants={"one": np.array(1), "three": np.array(3)})
    assert op_names(model) == ["graph.sigmoid", "graph.mul"]


def test_if_on_a_model_input_is_compiled_per_value():
    model = make_model([relu_or_neg()], [X, info("c", B, [])])
    with pytest.raises(RunTimeValueError, match=r"^node #0 \(If\): input 'cond' \('c'\) is a model "
                       "input, whose value must be known") as caught:
        import_onnx(model)
    assert caught.value.inputs == ("c",)
    assert op_names(model, input_values={"c": np.array(False)}) == ["graph.neg"]


def test_if_on_tensor_data_is_an_error():
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]), relu_or_neg()]
    model = make_model(nodes, [X], constants={"zero": np.array(0, np.float32)})
    with pytest.raises(FrontendError, match=r"^node #2 \(If\): input 'cond' \('c'\)"):
        import_onnx(model)


def test_if_condition_of_several_elements_is_an_error():
    model = make_model([relu_or_neg()], [X], constants={"c": np.array([True, False])})
    with pytest.raises(FrontendError, match=r"^node #0 \(If\): the condition must have one element, "
                       r"got shape \[2\]$"):
        import_onnx(model)


# -- Loop -------------------------------------------------------------------------------

def loop_body(extra_nodes=(), cond_out: str = "c_in", constants=None) -> onnx.GraphProto:
    """acc = acc * x + i per iteration; scan output: acc."""
    nodes = [helper.make_node("Mul", ["acc_in", "x"], ["prod"]),
             helper.make_node("Cast", ["i"], ["fi"], to=F),
             helper.make_node("Add", ["prod", "fi"], ["acc_out"]),
             helper.make_node("Identity", ["acc_out"], ["scan"]), *extra_nodes]
    return subgraph(nodes, [info("i", I64, []), info("c_in", B, []), info("acc_in", F, [2, 3])],
                    [info(cond_out, B, []), "acc_out", "scan"], constants)


def test_loop_with_a_constant_trip_count_is_unrolled():
    model = make_model([helper.make_node("Loop", ["m", "", "x"], ["acc", "ys"], body=loop_body())],
                       [X], ["acc", "ys"], constants={"m": np.array(3)})
    names = op_names(model)
    assert names.count("graph.mul") == 3 and names.count("graph.add") == 3
    assert names[-1] == "graph.concat" and names.count("graph.reshape") == 3


def test_loop_condition_from_the_iteration_number():
    """``while i < 1`` with a huge M (as exporters write): two iterations."""
    body = loop_body([helper.make_node("Less", ["i", "one"], ["go"])], cond_out="go",
                     constants={"one": np.array(1)})
    model = make_model([helper.make_node("Loop", ["m", "t", "x"], ["acc", "ys"], body=body)],
                       [X], ["acc", "ys"], constants={"m": np.array(2**62), "t": np.array(True)})
    assert op_names(model).count("graph.mul") == 2


def test_loop_condition_from_data_is_an_error():
    body = loop_body([helper.make_node("ReduceMax", ["acc_out"], ["mx"], keepdims=0),
                      helper.make_node("Less", ["mx", "ten"], ["go"])], cond_out="go")
    model = make_model([helper.make_node("Loop", ["m", "", "x"], ["acc"], body=body, name="L")],
                       [X], ["acc"], constants={"m": np.array(4), "ten": np.array(10, np.float32)})
    with pytest.raises(FrontendError, match=r"^node 'L' \(Loop\): the loop condition \('go'\) depends "
                       r"on '\w+', which is computed from tensor data at run time"):
        import_onnx(model)


def test_loop_trip_count_from_data_is_an_error():
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Cast", ["s"], ["m"], to=I64),
             helper.make_node("Loop", ["m", "", "x"], ["acc", "ys"], body=loop_body())]
    with pytest.raises(FrontendError, match=r"^node #2 \(Loop\): input 'M' \('m'\)"):
        import_onnx(make_model(nodes, [X], ["acc", "ys"]))


def test_loop_without_iterations():
    loop = helper.make_node("Loop", ["m", "", "x"], ["acc"], body=loop_body())
    assert op_names(make_model([loop], [X], ["acc"], constants={"m": np.array(0)})) == []
    loop = helper.make_node("Loop", ["m", "", "x"], ["acc", "ys"], body=loop_body())
    with pytest.raises(FrontendError, match="runs no iteration, so its scan output 'ys' would be empty"):
        import_onnx(make_model([loop], [X], ["acc", "ys"], constants={"m": np.array(0)}))


def test_loop_that_would_not_end_is_an_error():
    loop = helper.make_node("Loop", ["", "", "x"], ["acc", "ys"], body=loop_body(), name="forever")
    with pytest.raises(FrontendError, match=r"^node 'forever' \(Loop\): the loop has no trip count and its "
                       "condition never changes: it would not end$"):
        import_onnx(make_model([loop], [X], ["acc", "ys"]))


def test_unrolling_is_bounded():
    loop = helper.make_node("Loop", ["m", "", "x"], ["acc"], body=loop_body(), name="long")
    with pytest.raises(FrontendError, match=r"^node 'long' \(Loop\): unrolling iteration 1024 would "
                       r"add more than 4096 nodes to the model"):
        import_onnx(make_model([loop], [X], ["acc"], constants={"m": np.array(5000)}))
    small = make_model([loop], [X], ["acc"], constants={"m": np.array(3)})
    with pytest.raises(FrontendError, match="more than 8 nodes"):
        ControlFlowInliner(limit=8)(small)


def test_loop_constants_are_added_once_and_nested_if_uses_the_iteration_number():
    """The body's initializer becomes one weight; its If (``i == 0``) takes the then branch
    in the first iteration only."""
    branch = subgraph([helper.make_node("Add", ["acc_in", "w"], ["b"])], [], ["b"])
    other = subgraph([helper.make_node("Sub", ["acc_in", "w"], ["b2"])], [], ["b2"])
    body = subgraph([helper.make_node("Equal", ["i", "zero"], ["first"]),
                     helper.make_node("If", ["first"], ["acc_out"], then_branch=branch, else_branch=other)],
                    [info("i", I64, []), info("c_in", B, []), info("acc_in", F, [2, 3])],
                    [info("c_in", B, []), "acc_out"],
                    constants={"w": np.ones((2, 3), np.float32), "zero": np.array(0)})
    model = make_model([helper.make_node("Loop", ["m", "", "x"], ["y"], body=body)], [X],
                       constants={"m": np.array(3)})
    imported = import_onnx(model)
    (function,) = imported.module.ops
    names = [op.name for op in function.body.block.ops]
    assert names == ["graph.weight", "graph.add", "graph.sub", "graph.sub", "func.return"]
    assert len(imported.weights) == 1


def test_constants_read_two_subgraphs_down_survive_folding():
    """The trip count is folded from a shape; the body's If reads the outer Constant 'k',
    which folding must keep (it reads subgraphs at every depth). 'k' is one weight."""
    then = subgraph([helper.make_node("Add", ["acc_in", "k"], ["a"])], [], ["a"])
    other = subgraph([helper.make_node("Sub", ["acc_in", "k"], ["b"])], [], ["b"])
    body = subgraph([helper.make_node("Equal", ["i", "zero"], ["first"]),
                     helper.make_node("If", ["first"], ["acc_out"], then_branch=then, else_branch=other)],
                    [info("i", I64, []), info("c", B, []), info("acc_in", F, [2, 3])],
                    [info("c", B, []), "acc_out"])
    nodes = [helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.ones((2, 3), np.float32))),
             helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0))),
             helper.make_node("Shape", ["x"], ["s"]), helper.make_node("ReduceMin", ["s"], ["m"], keepdims=0),
             helper.make_node("Loop", ["m", "", "x"], ["y"], body=body)]
    imported = import_onnx(make_model(nodes, [X]))
    (function,) = imported.module.ops
    assert [op.name for op in function.body.block.ops][1:-1] == ["graph.add", "graph.sub"]
    assert len(imported.weights) == 1


def test_nested_loops_are_unrolled():
    inner = subgraph([helper.make_node("Add", ["v_in", "x"], ["v_out"])],
                     [info("j", I64, []), info("cj", B, []), info("v_in", F, [2, 3])],
                     [info("cj", B, []), "v_out"])
    outer = subgraph([helper.make_node("Loop", ["two", "", "u_in"], ["u_out"], body=inner)],
                     [info("i", I64, []), info("ci", B, []), info("u_in", F, [2, 3])],
                     [info("ci", B, []), "u_out"], constants={"two": np.array(2)})
    model = make_model([helper.make_node("Loop", ["three", "", "x"], ["y"], body=outer)], [X],
                       constants={"three": np.array(3)})
    assert op_names(model) == ["graph.add"] * 6


# -- Scan -------------------------------------------------------------------------------

def test_scan_is_unrolled_over_its_static_axis():
    body = subgraph([helper.make_node("Add", ["s_in", "row"], ["s_out"]),
                     helper.make_node("Identity", ["s_out"], ["out"])],
                    [info("s_in", F, [3]), info("row", F, [3])], ["s_out", "out"])
    scan = helper.make_node("Scan", ["init", "x"], ["total", "ys"], body=body, num_scan_inputs=1,
                            scan_input_directions=[1], scan_output_axes=[1])
    model = make_model([scan], [info("init", F, [3]), X], ["total", "ys"])
    names = op_names(model)
    assert names.count("graph.gather") == 2 and names.count("graph.add") == 2
    assert names[-1] == "graph.concat"


def test_scan_before_opset_9_scans_each_batch_element():
    body = subgraph([helper.make_node("Add", ["s_in", "row"], ["s_out"]),
                     helper.make_node("Identity", ["s_out"], ["out"])],
                    [info("s_in", F, [3]), info("row", F, [3])], ["s_out", "out"])
    scan = helper.make_node("Scan", ["", "init", "x"], ["y", "ys"], body=body, num_scan_inputs=1)
    inputs = [info("init", F, [2, 3]), info("x", F, [2, 4, 3])]
    assert op_names(make_model([scan], inputs, ["y", "ys"], opset=8)).count("graph.add") == 8
    lengths = helper.make_node("Scan", ["lens", "init", "x"], ["y", "ys"], body=body, num_scan_inputs=1)
    model = make_model([lengths], inputs, ["y", "ys"], constants={"lens": np.array([4, 3])}, opset=8)
    with pytest.raises(FrontendError, match=r"^node #0 \(Scan\): 'sequence_lens' must be a constant "
                       "equal to the sequence length 4$"):
        import_onnx(model)
    axes = helper.make_node("Scan", ["", "init", "x"], ["y", "ys"], body=body, num_scan_inputs=1,
                            scan_input_axes=[0])
    with pytest.raises(FrontendError, match="attribute 'scan_input_axes' is not defined in opset 8"):
        import_onnx(make_model([axes], inputs, ["y", "ys"], opset=8))


def test_scan_with_a_bad_attribute_is_an_error():
    body = subgraph([helper.make_node("Identity", ["row"], ["out"])], [info("row", F, [3])], ["out"])
    scan = helper.make_node("Scan", ["x"], ["y"], body=body, num_scan_inputs=1, scan_input_axes=[0, 1])
    with pytest.raises(FrontendError, match="attribute 'scan_input_axes' must have 1 entries, got 2"):
        import_onnx(make_model([scan], [X]))
