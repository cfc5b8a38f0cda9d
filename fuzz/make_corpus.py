"""Writes the fuzzers' seed corpora (fuzz/corpus/<harness>/): small real files made by the
frameworks themselves (tiny models with seeded weights: a convolution, a matmul with an add,
a small MLP, control flow where the format has it), Estuary's own formats made by the
command line, and NumPy files.

Each framework runs in its own environment (frameworks pin conflicting NumPy and protobuf
versions; never import two of them into one process). Without arguments, this script runs
every section in its environment, one process each:

    python3 fuzz/make_corpus.py                                  # everything
    .venvs/torch/bin/python      fuzz/make_corpus.py onnx        # one section
    .venvs/tensorflow/bin/python fuzz/make_corpus.py tensorflow
    .venvs/paddle/bin/python     fuzz/make_corpus.py paddle      # PIR, legacy CNNs (OldIrGuard)
    .venvs/paddle2/bin/python    fuzz/make_corpus.py paddle2     # legacy programs with control flow
    .venvs/mindspore/bin/python  fuzz/make_corpus.py mindspore
    .venv/bin/python             fuzz/make_corpus.py estuary     # .npy/.npz/.yaml/.est/.estir/.eom

The estuary section runs build/bin/estuary (the normal build) on the ONNX seeds to make
.est, .estir and .eom files, so it comes after the onnx section. Inputs holding several
files (SavedModels, Paddle programs with their parameters) join them with the separator of
fuzz/fuzz_support.h. Outputs are reproducible except where a framework stamps a time or a
version into its files.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(HERE, "corpus")
FIXTURES = os.path.join(HERE, "fixtures")
SEPARATOR = b"\n--estuary-fuzz-part--\n"  # fuzz_support.h: kPartSeparator

SECTIONS = {
    "onnx": ".venvs/torch",
    "tensorflow": ".venvs/tensorflow",
    "paddle": ".venvs/paddle",
    "paddle2": ".venvs/paddle2",
    "mindspore": ".venvs/mindspore",
    "estuary": ".venv",
}


def out_dir(harness):
    path = os.path.join(CORPUS, harness)
    os.makedirs(path, exist_ok=True)
    return path


def write(harness, name, data):
    with open(os.path.join(out_dir(harness), name), "wb") as out:
        out.write(data)


def read(path):
    with open(path, "rb") as source:
        return source.read()


def joined(*parts):
    return SEPARATOR.join(parts)


# ONNX: PyTorch's exporters, and control flow written with onnx.helper.
def make_onnx():
    import numpy as np
    import onnx
    import torch
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper as nh

    torch.manual_seed(0)

    class Conv(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(4)

        def forward(self, x):
            return torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)

    class MatMulAdd(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(8, 6))
            self.b = torch.nn.Parameter(torch.randn(6))

        def forward(self, x):
            return x @ self.w + self.b

    class Mlp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4),
                                           torch.nn.Softmax(-1))

        def forward(self, x):
            return self.net(torch.nn.functional.layer_norm(x, (8,)))

    # wide: a weight above 1 KiB, which .estir files keep in their side file and .eom files in
    # their weights section.
    models = {"conv": (Conv(), (1, 3, 8, 8)), "matmul_add": (MatMulAdd(), (2, 8)), "mlp": (Mlp(), (2, 8)),
              "wide": (torch.nn.Linear(16, 32), (2, 16))}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (model, shape) in models.items():
            model.eval()
            x = torch.randn(*shape)
            path = os.path.join(tmp, f"{name}.onnx")
            torch.onnx.export(model, (x,), path, input_names=["x"], output_names=["y"],
                              dynamic_axes={"x": {0: "batch"}}, opset_version=17, dynamo=False)
            write("onnx", f"{name}_opset17.onnx", read(path))
        # The dynamo-based exporter (opset 18 on, other op forms), weights kept in the file.
        try:
            path = os.path.join(tmp, "mlp_dynamo.onnx")
            torch.onnx.export(Mlp().eval(), (torch.randn(2, 8),), path, input_names=["x"], dynamo=True,
                              external_data=False, verbose=False)
            write("onnx", "mlp_dynamo.onnx", read(path))
        except Exception as error:  # the dynamo exporter needs onnxscript
            print(f"make_corpus: skipped the dynamo export: {error}", file=sys.stderr)

    # If and Loop (subgraphs), written with onnx.helper.
    x = h.make_tensor_value_info("x", T.FLOAT, ["batch", 4])
    y = h.make_tensor_value_info("y", T.FLOAT, ["batch", 4])
    then_graph = h.make_graph([h.make_node("Relu", ["x"], ["t"])], "then", [],
                              [h.make_tensor_value_info("t", T.FLOAT, ["batch", 4])])
    else_graph = h.make_graph([h.make_node("Neg", ["x"], ["e"])], "else", [],
                              [h.make_tensor_value_info("e", T.FLOAT, ["batch", 4])])
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"]),
         h.make_node("Add", ["h_in", "step"], ["h_out"]),
         h.make_node("Mul", ["h_out", "half"], ["scan"])],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
         h.make_tensor_value_info("h_in", T.FLOAT, ["batch", 4])],
        [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("h_out", T.FLOAT, ["batch", 4]),
         h.make_tensor_value_info("scan", T.FLOAT, ["batch", 4])],
        [nh.from_array(np.full((4,), 0.5, np.float32), "half")])
    graph = h.make_graph(
        [h.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
         h.make_node("Greater", ["s", "zero"], ["positive"]),
         h.make_node("If", ["positive"], ["branch"], then_branch=then_graph, else_branch=else_graph),
         h.make_node("Loop", ["trips", "true", "branch"], ["y", "scans"], body=body)],
        "control_flow", [x], [y],
        [nh.from_array(np.array(0.0, np.float32), "zero"), nh.from_array(np.array(3, np.int64), "trips"),
         nh.from_array(np.array(True), "true"), nh.from_array(np.ones(4, np.float32), "step")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 16)], producer_name="make_corpus",
                         ir_version=8)
    onnx.checker.check_model(model)
    write("onnx", "if_loop_opset16.onnx", model.SerializeToString())


# TensorFlow: frozen GraphDefs (lowered TF 1 control flow and functional While/If) and
# SavedModels made with tf.saved_model.save.
def make_tensorflow():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    rng = np.random.default_rng(0)

    def variable(*shape):
        return tf.Variable(rng.standard_normal(shape).astype(np.float32) * 0.3)

    class Conv(tf.Module):
        def __init__(self):
            super().__init__()
            self.kernel = variable(3, 3, 3, 4)
            self.bias = variable(4)

        @tf.function(input_signature=[tf.TensorSpec((None, 8, 8, 3), tf.float32, name="x")])
        def __call__(self, x):
            y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, self.kernel, 1, "SAME"), self.bias))
            return tf.nn.max_pool2d(y, 2, 2, "VALID")

    class MatMulAdd(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = variable(8, 6)
            self.b = variable(6)

        @tf.function(input_signature=[tf.TensorSpec((None, 8), tf.float32, name="x")])
        def __call__(self, x):
            return tf.matmul(x, self.w) + self.b

    class Mlp(tf.Module):
        def __init__(self):
            super().__init__()
            self.w1, self.b1, self.w2, self.b2 = variable(8, 16), variable(16), variable(16, 4), variable(4)

        @tf.function(input_signature=[tf.TensorSpec((None, 8), tf.float32, name="x")])
        def __call__(self, x):
            hidden = tf.nn.gelu(tf.matmul(x, self.w1) + self.b1)
            return tf.nn.softmax(tf.matmul(hidden, self.w2) + self.b2)

    class ControlFlow(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = variable(4, 4)

        @tf.function(input_signature=[tf.TensorSpec((None, 4), tf.float32, name="x")])
        def __call__(self, x):
            def step(i, h):
                h = tf.cond(tf.reduce_sum(h) > 0, lambda: tf.tanh(h @ self.w), lambda: tf.sigmoid(h @ self.w))
                return i + 1, h
            _, h = tf.while_loop(lambda i, h: i < 3, step, (tf.constant(0), x))
            return h

    models = {"conv": Conv(), "matmul_add": MatMulAdd(), "mlp": Mlp(), "control_flow": ControlFlow()}
    with tempfile.TemporaryDirectory() as tmp:
        for name, model in models.items():
            function = model.__call__.get_concrete_function()
            frozen = convert_variables_to_constants_v2(function).graph.as_graph_def()
            write("tf_graphdef", f"{name}.pb", frozen.SerializeToString())
            if name == "control_flow":
                functional = convert_variables_to_constants_v2(function, lower_control_flow=False)
                write("tf_graphdef", f"{name}_functional.pb", functional.graph.as_graph_def().SerializeToString())
            directory = os.path.join(tmp, name)
            tf.saved_model.save(model, directory, signatures=model.__call__)
            variables = os.path.join(directory, "variables")
            write("tf_savedmodel", f"{name}.parts",
                  joined(read(os.path.join(directory, "saved_model.pb")),
                         read(os.path.join(variables, "variables.index")),
                         read(os.path.join(variables, "variables.data-00000-of-00001"))))


# Paddle: PIR programs (inference.json) and, under OldIrGuard, legacy ProgramDescs.
def paddle_models():
    global paddle, nn  # Paddle 2.6's dy2st resolves names in forward() among the module's globals
    import paddle
    import paddle.nn as nn

    class Conv(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2D(4)

        def forward(self, x):
            return nn.functional.max_pool2d(nn.functional.relu(self.bn(self.conv(x))), 2)

    class MatMulAdd(nn.Layer):
        def __init__(self):
            super().__init__()
            self.w = self.create_parameter([8, 6])
            self.b = self.create_parameter([6], is_bias=True, default_initializer=nn.initializer.Normal())

        def forward(self, x):
            return paddle.matmul(x, self.w) + self.b

    class Mlp(nn.Layer):
        def __init__(self):
            super().__init__()
            self.first = nn.Linear(8, 16)
            self.second = nn.Linear(16, 4)

        def forward(self, x):
            return nn.functional.softmax(self.second(nn.functional.gelu(self.first(x))))

    class ControlFlow(nn.Layer):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 4)

        def forward(self, x):
            y = self.linear(x)
            if paddle.mean(x) > 0:
                y = y * 2.0
            else:
                y = y - 1.0
            i = paddle.zeros([1], dtype="int64")
            while i < 3:
                y = paddle.tanh(self.linear(y))
                i = i + 1
            return y

    return {"conv": (Conv, [None, 3, 8, 8]), "matmul_add": (MatMulAdd, [None, 8]), "mlp": (Mlp, [None, 8]),
            "control_flow": (ControlFlow, [None, 4])}


def save_paddle(names, legacy):
    import paddle
    from paddle.static import InputSpec

    models = paddle_models()
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            paddle.seed(0)
            constructor, shape = models[name]
            model = constructor()
            model.eval()
            prefix = os.path.join(tmp, name, "inference")
            spec = [InputSpec(shape, "float32", "x")]
            guard = legacy and hasattr(getattr(paddle, "pir_utils", None), "OldIrGuard")
            try:
                if guard:
                    with paddle.pir_utils.OldIrGuard():
                        paddle.jit.save(model, prefix, input_spec=spec)
                else:
                    paddle.jit.save(model, prefix, input_spec=spec)
            except Exception as error:
                print(f"make_corpus: paddle {paddle.__version__} could not save {name} "
                      f"({'legacy' if legacy else 'PIR'}): {error}", file=sys.stderr)
                continue
            params = read(prefix + ".pdiparams") if os.path.exists(prefix + ".pdiparams") else b""
            if legacy:
                suffix = "" if guard else "_paddle2"
                write("paddle_legacy", f"{name}{suffix}.parts", joined(read(prefix + ".pdmodel"), params))
            else:
                write("paddle_pir", f"{name}.parts", joined(read(prefix + ".json"), params))
                if name == "conv":
                    # The paddle_params harness's fixed program, and its own parameters.
                    write("paddle_params", f"{name}.pdiparams", params)
                    os.makedirs(os.path.join(FIXTURES, "paddle_params"), exist_ok=True)
                    shutil.copyfile(prefix + ".json", os.path.join(FIXTURES, "paddle_params", "inference.json"))


def make_paddle():
    save_paddle(["conv", "matmul_add", "mlp", "control_flow"], legacy=False)
    save_paddle(["conv"], legacy=True)  # Paddle 3.3 writes legacy programs of CNNs only


def make_paddle2():
    save_paddle(["control_flow", "mlp", "matmul_add"], legacy=True)


# MindSpore: MindIR files from mindspore.export.
def make_mindspore():
    import numpy as np
    import mindspore as ms
    import mindspore.nn as nn
    import mindspore.ops as ops
    from mindspore import Tensor

    ms.set_context(mode=ms.GRAPH_MODE)

    class Conv(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, pad_mode="same", has_bias=True)
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.MaxPool2d(2, 2)

        def construct(self, x):
            return self.pool(ops.relu(self.bn(self.conv(x))))

    class MatMulAdd(nn.Cell):
        def __init__(self):
            super().__init__()
            rng = np.random.default_rng(0)
            self.w = ms.Parameter(Tensor(rng.standard_normal((8, 6)).astype(np.float32)), name="w")
            self.b = ms.Parameter(Tensor(rng.standard_normal((6,)).astype(np.float32)), name="b")

        def construct(self, x):
            return ops.matmul(x, self.w) + self.b

    class Mlp(nn.Cell):
        def __init__(self):
            super().__init__()
            self.first = nn.Dense(8, 16)
            self.second = nn.Dense(16, 4)

        def construct(self, x):
            return ops.softmax(self.second(ops.gelu(self.first(x))), -1)

    class ControlFlow(nn.Cell):
        def __init__(self):
            super().__init__()
            self.dense = nn.Dense(4, 4)

        def construct(self, x):
            y = self.dense(x)
            if ops.reduce_mean(x) > 0:
                y = y * 2.0
            else:
                y = y - 1.0
            i = 0
            while i < 3:
                y = ops.tanh(self.dense(y))
                i += 1
            return y

    models = {"conv": (Conv, [3, 8, 8]), "matmul_add": (MatMulAdd, [8]), "mlp": (Mlp, [8]),
              "control_flow": (ControlFlow, [4])}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (constructor, shape) in models.items():
            ms.set_seed(0)
            model = constructor()
            model.set_train(False)
            path = os.path.join(tmp, name)
            try:
                ms.export(model, Tensor(shape=[None] + shape, dtype=ms.float32), file_name=path, file_format="MINDIR")
            except Exception as error:
                print(f"make_corpus: mindspore could not export {name}: {error}", file=sys.stderr)
                continue
            write("mindir", f"{name}.mindir", read(path + ".mindir"))


# Estuary's own formats, NumPy files and YAML pipelines; no framework.
def make_estuary():
    import numpy as np

    # .npy and .npz: the test data NumPy wrote (tests/data/npy), and a few more.
    npy_data = os.path.join(ROOT, "tests", "data", "npy")
    for name in sorted(os.listdir(npy_data)):
        target = "npy" if name.endswith(".npy") else "npz" if name.endswith(".npz") else None
        if target and os.path.getsize(os.path.join(npy_data, name)) <= 16384:
            shutil.copyfile(os.path.join(npy_data, name), os.path.join(out_dir(target), name))
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "a.npy"), rng.standard_normal((2, 3, 4)).astype(np.float32))
        write("npy", "f4_2x3x4.npy", read(os.path.join(tmp, "a.npy")))
        np.save(os.path.join(tmp, "b.npy"), np.arange(12, dtype=">i8").reshape(3, 4))
        write("npy", "i8_big_endian_3x4.npy", read(os.path.join(tmp, "b.npy")))
        np.savez(os.path.join(tmp, "c.npz"), x=np.ones((2, 2), np.float16), mask=np.array([True, False]))
        write("npz", "f2_bool.npz", read(os.path.join(tmp, "c.npz")))
        np.savez_compressed(os.path.join(tmp, "d.npz"), ids=np.arange(6, dtype=np.int32), y=np.zeros((3,), np.uint8))
        write("npz", "i4_u1_compressed.npz", read(os.path.join(tmp, "d.npz")))

    # YAML pipelines: the shipped ones, the golden tests' pipelines, and a switch file.
    for name in sorted(os.listdir(os.path.join(ROOT, "configs"))):
        if name.endswith(".yaml"):
            shutil.copyfile(os.path.join(ROOT, "configs", name), os.path.join(out_dir("yaml_pipeline"), name))
    write("yaml_pipeline", "switches.yaml", b"cse: off\ncanonicalize: on\nsimplify: off\n")
    write("yaml_pipeline", "options.yaml",
          b"name: options\nsettings:\n  verify: true\npasses:\n  - pass: canonicalize\n    options:\n"
          b"      disable: [dropout, identity]\n  - pass: infer_shapes\n    options:\n      strict: true\n"
          b"  - group: g\n    max_iterations: 3\n    enabled: false\n    passes: [cse, dce]\n")

    # ONNX seeds: a few of the frontend's golden fixtures (one op form each).
    golden = os.path.join(ROOT, "tests", "onnx", "golden")
    for name in sorted(os.listdir(golden)):
        if name.endswith(".onnx") and any(key in name for key in ("if_", "loop", "function", "attention",
                                                                  "constant_forms", "layer_norm", "clip_pad_topk",
                                                                  "resize", "slice", "scan", "split")):
            shutil.copyfile(os.path.join(golden, name), os.path.join(out_dir("onnx"), name))

    # IR text (.est): the example and a few golden pass cases' input IR.
    shutil.copyfile(os.path.join(ROOT, "examples", "decoder_block.est"), os.path.join(out_dir("est_text"), "decoder_block.est"))
    estuary = os.path.join(ROOT, "build", "bin", "estuary")
    onnx_seeds = os.path.join(CORPUS, "onnx")
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("conv_opset17", "mlp_opset17", "matmul_add_opset17", "if_loop_opset16", "wide_opset17"):
            model = os.path.join(onnx_seeds, f"{name}.onnx")
            if not os.path.exists(model):
                continue
            # model.estir: the graph file names its side file, and the harness writes model.estir.
            os.makedirs(os.path.join(tmp, name))
            est = os.path.join(tmp, name, "model.est")
            estir = os.path.join(tmp, name, "model.estir")
            eom = os.path.join(tmp, name, "model.eom")
            with open(est, "wb") as text:
                subprocess.run([estuary, "convert", "--model", model, "--mode", "ir"], check=True, stdout=text)
            subprocess.run([estuary, "optimize", est, "-o", estir, "--pipeline", "O1"], check=True,
                           stdout=subprocess.DEVNULL)
            shutil.copyfile(est, os.path.join(out_dir("est_text"), f"{name}.est"))
            # The binary form and, when it has one, its side file (a second part).
            data = read(estir)
            if os.path.exists(estir + ".weights"):
                data = joined(data, read(estir + ".weights"))
            write("estir_binary", f"{name}.estir", data)
            subprocess.run([estuary, "build", estir, "-o", eom, "--input-shape", "x:2," + {
                "conv_opset17": "3,8,8", "mlp_opset17": "8", "matmul_add_opset17": "8",
                "if_loop_opset16": "4", "wide_opset17": "16"}[name]], check=True, stdout=subprocess.DEVNULL)
            write("eom", f"{name}.eom", read(eom))


def main():
    sections = sys.argv[1:]
    if not sections:
        for section in ("onnx", "tensorflow", "paddle", "paddle2", "mindspore", "estuary"):
            python = os.path.join(ROOT, SECTIONS[section], "bin", "python")
            print(f"make_corpus: {section} ({os.path.relpath(python, ROOT)})", flush=True)
            subprocess.run([python, os.path.abspath(__file__), section], check=True)
        return
    for section in sections:
        {"onnx": make_onnx, "tensorflow": make_tensorflow, "paddle": make_paddle, "paddle2": make_paddle2,
         "mindspore": make_mindspore, "estuary": make_estuary}[section]()


if __name__ == "__main__":
    main()
