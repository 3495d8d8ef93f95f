# An op the frontend does not support is one error line naming the node, the op and the
# supported ops; tm-opt exits with status 1.
# RUN: python %s %t.onnx && not tm-opt %t.onnx 2>&1 | filecheck %s
import os
import sys

from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "inputs"))
from onnx_models import save  # noqa: E402

# CHECK: tm-opt: error: node 'det1' (Det): unsupported op type; supported: Abs, Acos, {{.*}}, Add, {{.*}}, Conv, {{.*}}, Gemm, {{.*}}, MatMul, {{.*}}, Relu, {{.*}}, Tanh{{.*}}{{$}}
# CHECK-NOT: Traceback
save(sys.argv[1], [
    helper.make_node("Relu", ["x"], ["r"], name="relu"),
    helper.make_node("Det", ["r"], ["y"], name="det1"),
], [("x", [2, 4, 4])], [("y", None)])
