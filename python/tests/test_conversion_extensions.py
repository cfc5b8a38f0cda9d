"""Conversion extensions: a model with a custom op converts without changing Estuary, the op
translated by a Python function or by a plugin (tests/plugins/conversions.cpp), for an
ONNX model and for a PyTorch module compiled with estuary.torch.backend.

Plugins register for the whole process, so the plugin cases run in a subprocess each.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import estuary

PLUGIN = os.path.join(os.environ["ESTUARY_TEST_PLUGIN_DIR"], "libestuary_test_conversions.so")
ALPHA = 0.75


def scaled_tanh_model(path):
    """An ONNX model whose middle node is test.ops::ScaledTanh, an op no frontend knows."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("ScaledTanh", ["r"], ["t"], name="custom", domain="test.ops", alpha=ALPHA),
        helper.make_node("Neg", ["t"], ["y"], name="neg"),
    ]
    graph = helper.make_graph(nodes, "custom_op",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
                              value_info=[helper.make_tensor_value_info("t", TensorProto.FLOAT, ["batch", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("test.ops", 1)])
    onnx.save(model, str(path))
    return str(path)


def expected(x):
    return -(ALPHA * np.tanh(np.maximum(x, 0)))


def python_scaled_tanh(node):
    x = node.input(0)
    tanh = node.emit("Tanh", [x])
    return node.emit("Mul", [tanh, node.constant(np.array(node.attr("alpha", 1.0), np.float32))])


def run_python(code):
    """Runs `code` in a fresh interpreter with this test's environment; returns stdout."""
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            env=dict(os.environ, ESTUARY_TEST_PLUGIN=PLUGIN), timeout=600)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def onnx_model(tmp_path):
    return scaled_tanh_model(tmp_path / "custom.onnx")


def test_onnx_custom_op_is_listed_until_an_extension_translates_it(onnx_model):
    with pytest.raises(estuary.UnsupportedOpsError, match=r"test\.ops::ScaledTanh \(opset 1\): 'custom'"):
        estuary.Model(onnx_model)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    model = estuary.Model(onnx_model, extensions={"test.ops::ScaledTanh": python_scaled_tanh})
    np.testing.assert_allclose(model.run([x])[0], expected(x), rtol=1e-6, atol=1e-6)
    converted = estuary.convert(onnx_model, extensions={"test.ops::ScaledTanh": python_scaled_tanh},
                                input_shapes={"x": [2, 4]})
    np.testing.assert_allclose(converted.run([x[:2]])[0], expected(x[:2]), rtol=1e-6, atol=1e-6)


def test_an_extension_overrides_a_translation(onnx_model):
    # Relu translated as Abs: a user's own semantics win over the frontend's table.
    model = estuary.Model(onnx_model, extensions={
        "test.ops::ScaledTanh": python_scaled_tanh,
        "Relu": lambda node: node.emit("Abs", [node.input(0)]),
    })
    x = np.array([[-1, 2, -3, 4]], np.float32)
    np.testing.assert_allclose(model.run([x])[0], -(ALPHA * np.tanh(np.abs(x))), rtol=1e-6)


def test_extension_mistakes_name_the_op(onnx_model):
    def wrong_type(node):
        return node.cast(node.input(0), np.int64)

    with pytest.raises(estuary.EstuaryError,
                       match=r"node 'custom' \(test\.ops::ScaledTanh, opset 1\): the conversion extension \(Python "
                             r"function .*wrong_type\) returned i64 for output 0 't', the model declares f32"):
        estuary.Model(onnx_model, extensions={"test.ops::ScaledTanh": wrong_type})

    def raises(node):
        raise ValueError("alpha out of range")

    with pytest.raises(estuary.EstuaryError, match=r"node 'custom' .*failed: ValueError: alpha out of range"):
        estuary.Model(onnx_model, extensions={"test.ops::ScaledTanh": raises})
    with pytest.raises(estuary.EstuaryError, match="attribute 'beta' is missing"):
        estuary.Model(onnx_model, extensions={"test.ops::ScaledTanh": lambda node: node.attr("beta")})
    with pytest.raises(estuary.EstuaryError, match="not callable"):
        estuary.Model(onnx_model, extensions={"test.ops::ScaledTanh": 3})


def test_onnx_custom_op_from_a_plugin(onnx_model):
    output = run_python(f"""
        import numpy as np, estuary
        registered = estuary.load_plugin("{PLUGIN}")
        print(registered["conversions"])
        x = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)
        y = estuary.Model("{onnx_model}").run([x])[0]
        print(float(np.abs(y - (-({ALPHA} * np.tanh(np.maximum(x, 0))))).max()))
    """)
    conversions, error = output.strip().splitlines()
    assert conversions == "['onnx:test.ops::ScaledTanh', 'pytorch:estuary_test.scaled_tanh.default']"
    assert float(error) < 1e-6


def test_onnx_custom_op_from_a_plugin_on_the_command_line(onnx_model, tmp_path):
    cli = os.environ["ESTUARY_CLI"]
    without = subprocess.run([cli, "convert", onnx_model, "-o", str(tmp_path / "m.eom")], capture_output=True, text=True)
    assert without.returncode == 1 and "test.ops::ScaledTanh" in without.stderr
    converted = subprocess.run([cli, "convert", onnx_model, "-o", str(tmp_path / "m.eom"), "--plugin", PLUGIN,
                                "--input-shape", "x:2,4"], capture_output=True, text=True)
    assert converted.returncode == 0, converted.stderr
    x = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(estuary.Model(str(tmp_path / "m.eom")).run([x])[0], expected(x), rtol=1e-6, atol=1e-6)


TORCH_MODULE = """
import torch

@torch.library.custom_op("estuary_test::scaled_tanh", mutates_args=())
def scaled_tanh(x: torch.Tensor, alpha: float) -> torch.Tensor:
    return alpha * torch.tanh(x)

@scaled_tanh.register_fake
def _(x, alpha):
    return torch.empty_like(x)

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.ops.estuary_test.scaled_tanh(self.linear(x), %r) + 1

torch.manual_seed(0)
block = Block().eval()
x = torch.randn(4, 8)
""" % ALPHA


def torch_namespace():
    namespace = {}
    exec(TORCH_MODULE, namespace)
    return namespace


def test_pytorch_custom_op_by_a_python_extension():
    torch = pytest.importorskip("torch")
    import estuary.torch as et
    namespace = torch_namespace()
    block, x = namespace["block"], namespace["x"]

    def translate(node):
        tanh = node.emit("Tanh", [node.input("x")])
        return node.emit("Mul", [tanh, node.constant(np.array(node.attr("alpha"), np.float32))])

    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"estuary_test\.scaled_tanh\.default"), torch.no_grad():
        torch.compile(block, backend=et.backend(mode="ge", fallback="error"))(x)
    torch._dynamo.reset()
    compiled = torch.compile(block, backend=et.backend(
        mode="ge", fallback="error", extensions={"estuary_test.scaled_tanh.default": translate}))
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), block(x), rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()


def test_pytorch_custom_op_from_a_plugin():
    pytest.importorskip("torch")
    output = run_python(TORCH_MODULE + f"""
import estuary.torch as et
compiled = torch.compile(block, backend=et.backend(mode="ge", fallback="error", plugins=["{PLUGIN}"]))
with torch.no_grad():
    print(float((compiled(x) - block(x)).abs().max()))
""")
    assert float(output.strip()) < 1e-5
