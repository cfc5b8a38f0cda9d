"""Writes the ONNX models of the frontend's golden tests (tests/onnx/golden/*.onnx).

Each model shows how one op of one opset translates; the expected IR is the .est file beside
it (see tests/onnx/README.md). Run with any Python that has the onnx package:

    python tests/onnx/make_fixtures.py

Every model passes onnx.checker with full checks, so the fixtures are valid ONNX of their
opset. Weights are small and fixed, so the files are reproducible byte for byte.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")


def save(name, opset, nodes, inputs, outputs, initializers=(), ir_version=8, check=True):
    graph = h.make_graph(nodes, name, inputs, outputs, list(initializers))
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="make_fixtures",
                         ir_version=ir_version)
    if check:
        onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(OUT, f"{name}.onnx"))


def vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def ints(name, values):
    return nh.from_array(np.array(values, dtype=np.int64), name)


def floats(name, shape, seed=0):
    return nh.from_array(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) * 0.5 - 1.0, name)


X = vi("x", T.FLOAT, ["batch", 4, 6])

# Reductions: axes an attribute before opset 13 (ReduceSum) / 18 (the others), an input after.
for opset in (11, 13):
    save(f"reduce_sum_opset{opset}", opset,
         [h.make_node("ReduceSum", ["x", "axes"] if opset >= 13 else ["x"], ["y"], name="sum",
                      keepdims=0, **({} if opset >= 13 else {"axes": [1]}))],
         [X], [vi("y", T.FLOAT, ["batch", 6])], [ints("axes", [1])] if opset >= 13 else [])
for opset in (17, 18):
    save(f"reduce_mean_opset{opset}", opset,
         [h.make_node("ReduceMean", ["x", "axes"] if opset >= 18 else ["x"], ["y"], name="mean",
                      **({} if opset >= 18 else {"axes": [-1]}))],
         [X], [vi("y", T.FLOAT, ["batch", 4, 1])], [ints("axes", [-1])] if opset >= 18 else [])

# Squeeze/Unsqueeze: axes an attribute before opset 13.
for opset in (11, 13):
    attr = {} if opset >= 13 else {"axes": [0, 3]}
    save(f"unsqueeze_squeeze_opset{opset}", opset,
         [h.make_node("Unsqueeze", ["x", "axes"] if opset >= 13 else ["x"], ["u"], name="unsqueeze", **attr),
          h.make_node("Squeeze", ["u", "axes"] if opset >= 13 else ["u"], ["y"], name="squeeze", **attr)],
         [X], [vi("y", T.FLOAT, ["batch", 4, 6])], [ints("axes", [0, 3])] if opset >= 13 else [])

# Split: `split` an attribute before 13, an input after; an equal split names its outputs'
# count with num_outputs from 18.
save("split_opset11", 11, [h.make_node("Split", ["x"], ["a", "b"], name="split", axis=2, split=[2, 4])],
     [X], [vi("a", T.FLOAT, ["batch", 4, 2]), vi("b", T.FLOAT, ["batch", 4, 4])])
save("split_opset13", 13, [h.make_node("Split", ["x", "sizes"], ["a", "b"], name="split", axis=2)],
     [X], [vi("a", T.FLOAT, ["batch", 4, 2]), vi("b", T.FLOAT, ["batch", 4, 4])], [ints("sizes", [2, 4])])
save("split_equal_opset13", 13, [h.make_node("Split", ["x"], ["a", "b", "c"], name="split", axis=2)],
     [X], [vi(n, T.FLOAT, ["batch", 4, 2]) for n in "abc"])
save("split_equal_opset18", 18, [h.make_node("Split", ["x"], ["a", "b", "c"], name="split", axis=2, num_outputs=3)],
     [X], [vi(n, T.FLOAT, ["batch", 4, 2]) for n in "abc"])

# Softmax family before 13: the input coerced to 2-D at `axis`; at the last axis that is
# the op itself.
save("softmax_opset11_axis1", 11, [h.make_node("Softmax", ["x"], ["y"], name="softmax")],
     [X], [vi("y", T.FLOAT, ["batch", 4, 6])])
save("logsoftmax_opset11_last_axis", 11, [h.make_node("LogSoftmax", ["x"], ["y"], name="logsoftmax", axis=2)],
     [X], [vi("y", T.FLOAT, ["batch", 4, 6])])
save("hardmax_opset13_axis1", 13, [h.make_node("Hardmax", ["x"], ["y"], name="hardmax", axis=1)],
     [X], [vi("y", T.FLOAT, ["batch", 4, 6])])

# BatchNormalization: inference form before 14, training_mode attribute from 14.
C = vi("c", T.FLOAT, ["batch", 3, 5, 5])
bn_params = [floats(n, [3]) for n in ("scale", "bias", "mean")] + [nh.from_array(np.ones(3, np.float32), "var")]
save("batch_norm_opset11", 11,
     [h.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["y"], name="bn", epsilon=1e-3)],
     [C], [vi("y", T.FLOAT, ["batch", 3, 5, 5])], bn_params)
save("batch_norm_opset15", 15,
     [h.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["y"], name="bn", training_mode=0)],
     [C], [vi("y", T.FLOAT, ["batch", 3, 5, 5])], bn_params)

# Dropout: ratio an attribute before 12, an input after.
save("dropout_opset11", 11, [h.make_node("Dropout", ["x"], ["y"], name="dropout", ratio=0.25)],
     [X], [vi("y", T.FLOAT, ["batch", 4, 6])])
save("dropout_opset13", 13, [h.make_node("Dropout", ["x", "ratio"], ["y"], name="dropout")],
     [X], [vi("y", T.FLOAT, ["batch", 4, 6])], [nh.from_array(np.array(0.25, np.float32), "ratio")])

# GroupNormalization: scale and bias per group in 18, per channel in 21. (The checker
# refuses GroupNormalization-18 as deprecated; exporters wrote it before 21 all the same.)
G = vi("g", T.FLOAT, ["batch", 4, 3])
save("group_norm_opset18", 18,
     [h.make_node("GroupNormalization", ["g", "scale", "bias"], ["y"], name="gn", num_groups=2)],
     [G], [vi("y", T.FLOAT, ["batch", 4, 3])], [floats("scale", [2]), floats("bias", [2])], check=False)
save("group_norm_opset21", 21,
     [h.make_node("GroupNormalization", ["g", "scale", "bias"], ["y"], name="gn", num_groups=2)],
     [G], [vi("y", T.FLOAT, ["batch", 4, 3])], [floats("scale", [4]), floats("bias", [4])])

# Resize: opset 11 fills unused roi/scales with empty tensors; 19 leaves them out.
R = vi("r", T.FLOAT, [1, 2, 4, 4])
empty = nh.from_array(np.zeros(0, np.float32), "empty")
save("resize_opset11_sizes", 11,
     [h.make_node("Resize", ["r", "empty", "empty", "sizes"], ["y"], name="resize", mode="nearest")],
     [R], [vi("y", T.FLOAT, [1, 2, 8, 8])], [empty, ints("sizes", [1, 2, 8, 8])])
save("resize_opset19_scales", 19,
     [h.make_node("Resize", ["r", "", "scales"], ["y"], name="resize", mode="linear",
                  coordinate_transformation_mode="half_pixel_symmetric")],
     [R], [vi("y", T.FLOAT, [1, 2, 8, 8])], [nh.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])

# Constant: the value_* forms become one `value` tensor.
save("constant_forms_opset13", 13,
     [h.make_node("Constant", [], ["f"], name="f", value_floats=[1.5, -2.0]),
      h.make_node("Constant", [], ["i"], name="i", value_int=7),
      h.make_node("Cast", ["i"], ["i_f"], name="cast", to=T.FLOAT),
      h.make_node("Add", ["f", "i_f"], ["y"], name="add")],
     [], [vi("y", T.FLOAT, [2])])

# Clip with min/max inputs (opset 11), Pad with axes (opset 18), TopK with k input.
save("clip_pad_topk_opset18", 18,
     [h.make_node("Clip", ["x", "lo", "hi"], ["c"], name="clip"),
      h.make_node("Pad", ["c", "pads", "", "pad_axes"], ["p"], name="pad", mode="reflect"),
      h.make_node("TopK", ["p", "k"], ["values", "indices"], name="topk", axis=-1)],
     [X], [vi("values", T.FLOAT, ["batch", 4, 3]), vi("indices", T.INT64, ["batch", 4, 3])],
     [nh.from_array(np.array(0.0, np.float32), "lo"), nh.from_array(np.array(6.0, np.float32), "hi"),
      ints("pads", [1, 1]), ints("pad_axes", [2]), ints("k", [3])])

# Symbolic dims: named dims become symbols (sanitized to identifiers), a name shared by two
# inputs the same symbol, unnamed dims fresh symbols.
save("symbolic_dims_opset17", 17,
     [h.make_node("Add", ["a", "b"], ["y"], name="add")],
     [vi("a", T.FLOAT, ["batch", "seq-len", 8]), vi("b", T.FLOAT, ["batch", None, 8])],
     [vi("y", T.FLOAT, ["batch", "seq-len", 8])])

# If with branches reading an outer value; Loop with a carried value.
then_g = h.make_graph([h.make_node("Neg", ["x"], ["t"], name="neg")], "then", [], [vi("t", T.FLOAT, None)])
else_g = h.make_graph([h.make_node("Abs", ["x"], ["e"], name="abs")], "else", [], [vi("e", T.FLOAT, None)])
save("if_opset16", 16,
     [h.make_node("If", ["cond"], ["y"], name="if", then_branch=then_g, else_branch=else_g)],
     [X, vi("cond", T.BOOL, [])], [vi("y", T.FLOAT, ["batch", 4, 6])])
body = h.make_graph([h.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
                     h.make_node("Add", ["acc_in", "x"], ["acc_out"], name="accumulate")], "body",
                    [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc_in", T.FLOAT, None)],
                    [vi("cond_out", T.BOOL, []), vi("acc_out", T.FLOAT, None)])
save("loop_opset13", 13,
     [h.make_node("Loop", ["n", "", "x"], ["acc"], name="loop", body=body)],
     [X, vi("n", T.INT64, [])], [vi("acc", T.FLOAT, ["batch", 4, 6])])

# Ops added in recent opsets, translated as they are.
Q = vi("q", T.FLOAT, [1, 2, 3, 4])
save("attention_opset23", 23, [h.make_node("Attention", ["q", "q", "q"], ["y"], name="attention", is_causal=1)],
     [Q], [vi("y", T.FLOAT, [1, 2, 3, 4])])
save("layer_norm_gelu_opset20", 20,
     [h.make_node("LayerNormalization", ["x", "gamma", "beta"], ["n"], name="ln", epsilon=1e-5),
      h.make_node("Gelu", ["n"], ["y"], name="gelu", approximate="tanh")],
     [X], [vi("y", T.FLOAT, ["batch", 4, 6])], [floats("gamma", [6]), floats("beta", [6])])
