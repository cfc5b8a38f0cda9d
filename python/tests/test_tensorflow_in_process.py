"""estuary.tensorflow in TensorFlow's own process (TF Adapter's graph mode for TF 2): the
models of tensorflow_models.py built here, handed to Estuary in memory, and run at two batch
sizes from one translation against TensorFlow's outputs. Runs in TensorFlow's environment."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

import estuary  # noqa: E402
import estuary.tensorflow  # noqa: E402
import tensorflow_models  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def assert_close(actual, expected):
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL * scale)


def sample_inputs(name, sample):
    rng = np.random.default_rng(1)
    make = tensorflow_models.INPUTS.get(name, lambda b, r: r.standard_normal((b,) + sample).astype(np.float32))
    return [make(batch, rng) for batch in (1, 3)]


@pytest.mark.parametrize("name", list(tensorflow_models.MODELS))
def test_function_matches_tensorflow(name):
    tf.keras.utils.set_random_seed(0)
    model, _, sample = tensorflow_models.MODELS[name]()
    fast = estuary.tensorflow.function(model if isinstance(model, tf.keras.Model) else model.__call__)
    for x in sample_inputs(name, sample):
        expected = model(x).numpy()
        from_tensor = fast(tf.constant(x))
        assert isinstance(from_tensor, tf.Tensor)
        assert_close(from_tensor.numpy(), expected)
        from_array = fast(x)
        assert isinstance(from_array, np.ndarray)
        assert_close(from_array, expected)


def test_tf_compat_v1_program_through_wrap_function():
    # A TF 1-style program (v1 variables, cond and while_loop) wrapped as a TF 2 function.
    v1 = tf.compat.v1
    rng = np.random.default_rng(0)
    weights = rng.standard_normal((8, 8)).astype(np.float32) * 0.3

    def program(x):
        w = v1.get_variable("w", initializer=weights)

        def step(i, h):
            h = v1.cond(tf.reduce_sum(h) > 0, lambda: tf.tanh(tf.matmul(h, w)), lambda: tf.nn.relu(h) - 0.1)
            return i + 1, h
        _, h = v1.while_loop(lambda i, h: i < 3, step, [tf.constant(0), x])
        return v1.cond(tf.reduce_mean(x) > 0, lambda: h * 2.0, lambda: h + 1.0)

    wrapped = v1.wrap_function(program, [tf.TensorSpec((None, 8), tf.float32, name="x")])
    fast = estuary.tensorflow.function(wrapped)
    for sign, batch in ((1, 1), (-1, 3)):
        x = sign * np.abs(rng.standard_normal((batch, 8))).astype(np.float32)
        assert_close(fast(x), wrapped(tf.constant(x)).numpy())


def test_variables_are_read_when_the_function_is_made():
    dense = tf.keras.layers.Dense(3)
    inputs = tf.keras.Input((4,), name="features")
    model = tf.keras.Model(inputs, dense(inputs))
    x = np.ones((2, 4), np.float32)
    before = estuary.tensorflow.function(model)
    expected = model(x).numpy()
    dense.kernel.assign(dense.kernel * 2.0)
    assert_close(before(x), expected)
    assert_close(estuary.tensorflow.function(model)(x), model(x).numpy())


def test_structured_outputs_and_names():
    @tf.function(input_signature=[tf.TensorSpec((None, 4), tf.float32, name="a"),
                                  tf.TensorSpec((None, 4), tf.float32, name="b")])
    def both(a, b):
        return {"sum": a + b, "product": a * b}

    fast = estuary.tensorflow.function(both)
    assert fast.input_names == ["a", "b"]
    assert fast.output_names == ["product", "sum"]
    a, b = np.full((2, 4), 3, np.float32), np.full((2, 4), 2, np.float32)
    result = fast(a, b)
    assert set(result) == {"sum", "product"}
    assert_close(result["sum"], a + b)
    assert_close(result["product"], a * b)


def test_errors_say_what_to_do():
    @tf.function
    def unsigned(x):
        return x + 1

    with pytest.raises(TypeError, match="has no input_signature: give one"):
        estuary.tensorflow.function(unsigned)
    with pytest.raises(TypeError, match="takes a Keras model, a tf.function or a concrete function, not int"):
        estuary.tensorflow.function(3)

    @tf.function(input_signature=[tf.TensorSpec((None, 4), tf.float32, name="x")])
    def special(x):
        return tf.math.lgamma(x)

    with pytest.raises(estuary.UnsupportedOpsError, match="Lgamma"):
        estuary.tensorflow.function(special)
    fast = estuary.tensorflow.function(tf.function(lambda x: x * 2.0,
                                                   input_signature=[tf.TensorSpec((2,), tf.float32)]))
    with pytest.raises(TypeError, match="takes 1 inputs"):
        fast(np.ones(2, np.float32), np.ones(2, np.float32))
