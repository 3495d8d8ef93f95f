# ONNX value names become valid SSA name hints; tm.inputs/tm.outputs keep the originals.
# (xDSL drops a trailing _<digits> from a hint and renumbers clashes as _1, _2, ...)
# RUN: python %s %t.onnx && tm-opt %t.onnx | filecheck %s
import os
import sys

from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "inputs"))
from onnx_models import save  # noqa: E402

# CHECK-LABEL: func.func @main(%v0: tensor<2x3xf32>) -> tensor<2x4xf32>
# CHECK-SAME:    attributes {tm.inputs = ["0"], tm.outputs = ["1"]}
# CHECK-NEXT:    %onnx__MatMul = graph.weight "onnx::MatMul_12" : tensor<3x3xf32>
# CHECK-NEXT:    %layer1_MatMul_output = graph.matmul %v0, %onnx__MatMul : {{.*}}
# CHECK-NEXT:    %layer1_Relu_output = graph.relu %layer1_MatMul_output : tensor<2x3xf32>
# CHECK-NEXT:    %onnx__MatMul_1 = graph.weight "onnx::MatMul_13" : tensor<3x4xf32>
# CHECK-NEXT:    %v1 = graph.matmul %layer1_Relu_output, %onnx__MatMul_1 : {{.*}}
# CHECK-NEXT:    func.return %v1 : tensor<2x4xf32>
nodes = [
    helper.make_node("MatMul", ["0", "onnx::MatMul_12"], ["/layer1/MatMul_output_0"],
                     name="/layer1/MatMul"),
    helper.make_node("Relu", ["/layer1/MatMul_output_0"], ["/layer1/Relu_output_0"],
                     name="/layer1/Relu"),
    helper.make_node("MatMul", ["/layer1/Relu_output_0", "onnx::MatMul_13"], ["1"],
                     name="/layer2/MatMul"),
]
save(sys.argv[1], nodes, [("0", [2, 3])], [("1", None)],
     [("onnx::MatMul_12", [3, 3]), ("onnx::MatMul_13", [3, 4])])
