# Models the frontend cannot import: one "tm-opt: error:" line each, exit status 1.
# RUN: python %s %t
# RUN: not tm-opt %t.dynamic.onnx 2>&1 | filecheck %s --check-prefix=DYNAMIC
# RUN: not tm-opt %t.dtype.onnx 2>&1 | filecheck %s --check-prefix=DTYPE
# RUN: not tm-opt %t.attribute.onnx 2>&1 | filecheck %s --check-prefix=ATTRIBUTE
# RUN: not tm-opt %t.garbage.onnx 2>&1 | filecheck %s --check-prefix=GARBAGE
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "inputs"))
from onnx_models import save  # noqa: E402

# DYNAMIC: tm-opt: error: input 'x': dynamic dimension 'batch' is not supported (dim 0)
save(f"{sys.argv[1]}.dynamic.onnx", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
     [("x", ["batch", 4])], [("y", None)])

# DTYPE: tm-opt: error: initializer 'w': unsupported dtype COMPLEX64 (supported: float32, {{.*}}, float8_e5m2fnuz){{$}}
model = helper.make_model(helper.make_graph(
    [helper.make_node("Add", ["x", "w"], ["y"], name="add")], "test",
    [helper.make_tensor_value_info("x", TensorProto.COMPLEX64, [2])],
    [helper.make_tensor_value_info("y", TensorProto.COMPLEX64, None)],
    [numpy_helper.from_array(np.ones([2], np.complex64), "w")],
), opset_imports=[helper.make_opsetid("", 17)])
model.graph.input[0].type.tensor_type.elem_type = TensorProto.FLOAT  # only w is wrong
model.ir_version = 10
onnx.save(model, f"{sys.argv[1]}.dtype.onnx")

# ATTRIBUTE: tm-opt: error: node 'fc' (Gemm): unsupported value 2 of attribute 'transB' (expected 0 or 1)
save(f"{sys.argv[1]}.attribute.onnx",
     [helper.make_node("Gemm", ["x", "w"], ["y"], name="fc", transB=2)],
     [("x", [2, 4]), ("w", [4, 4])], [("y", None)])

# GARBAGE: tm-opt: error: cannot parse ONNX model from '{{.*}}.garbage.onnx': {{.+}}
with open(f"{sys.argv[1]}.garbage.onnx", "wb") as f:
    f.write(b"this is not an ONNX model")
