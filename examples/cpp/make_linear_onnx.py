"""Writes the ONNX model edit_onnx takes: y = Relu(x @ W), x: f32[batch, 8], W: f32[8, 4] with
seeded random values, written with ONNX's own helpers.

    python make_linear_onnx.py linear.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

weights = np.random.default_rng(3).standard_normal((8, 4)).astype(np.float32)
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "W"], ["h"], name="linear"), helper.make_node("Relu", ["h"], ["y"], name="act")],
    "linear_relu",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
    [numpy_helper.from_array(weights, "W")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
