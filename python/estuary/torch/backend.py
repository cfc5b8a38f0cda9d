"""estuary.torch.backend: the torch.compile backend.

    model = torch.compile(model, backend=estuary.torch.backend(estuary.torch.CompilerConfig()))

Dynamo's graph goes through aot_autograd with keep_inference_input_mutations=True: ATen-level,
functionalized inference graphs whose in-place updates of inputs and buffers (a KV cache) are
trailing aten.copy_ nodes, which graph-engine mode turns into mutable-input updates.
Graphs that need gradients run in PyTorch (graph-engine mode warns): replacements registered
with trace_fn=joint_fwd_bwd apply to their joint forward-and-backward graph.
"""
import functools
import warnings

import torch
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.partitioners import default_partition

from .._estuary import EstuaryError
from .config import CompilerConfig
from .debug import DebugDump
from . import fx_mode, graph_engine, patterns

_graph_numbers = iter(range(1 << 62))


def backend(config=None, **options):
    """A torch.compile backend. Pass a CompilerConfig, or its fields as keyword arguments."""
    if config is None:
        config = CompilerConfig.from_options(options)
    elif options:
        raise ValueError("estuary.torch.backend: pass either a CompilerConfig or keyword options, not both")
    elif not isinstance(config, CompilerConfig):
        raise TypeError(f"estuary.torch.backend: config must be a CompilerConfig, got {type(config).__name__}")
    config.validate()
    compile_inference = fx_mode.compile_fx_graph if config.mode == "fx" else graph_engine.compile_graph
    return functools.partial(_compile, config=config, compile_inference=compile_inference)


def _static_inputs():
    """Indices of the parameters and buffers the graph does not mutate: constants of a build.
    A mutated buffer (a KV cache) stays an input, updated in place."""
    context = torch._guards.TracingContext.try_get()
    if context is None or context.fw_metadata is None:
        return set()
    metadata = context.fw_metadata
    mutated = {i for i, info in enumerate(metadata.input_info) if info.mutates_data or info.mutates_metadata}
    return set(metadata.static_input_indices) - mutated


def _wrapped_floats(gm):
    """Indices of the inputs that are Python floats Dynamo passes as 0-d f64 tensors: with
    dynamic=True a model's epsilons and attention scalings become such inputs, guarded only
    by type."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    floats = set()
    for i, node in enumerate(placeholders):
        grapharg, value = node.meta.get("grapharg"), node.meta.get("example_value")
        if getattr(grapharg, "pass_arg_as_tensor", False) and isinstance(value, torch.Tensor) and value.is_floating_point():
            floats.add(i)
    return floats


def _compile(gm, example_inputs, *, config, compile_inference):
    debug = DebugDump.for_config(config)
    debug.dynamo_graph(gm)
    name = f"graph_{next(_graph_numbers)}"
    floats = _wrapped_floats(gm)

    def inference_compiler(aot_gm, fake_inputs):
        debug.fx(name, "received", aot_gm)
        compiled = compile_inference(aot_gm, _static_inputs(), floats, config, name, debug)
        return make_boxed_func(compiled)

    # A graph that needs gradients: AOT hands over the joint forward-and-backward graph first,
    # where replacements registered with trace_fn=joint_fwd_bwd apply (as inductor applies
    # its joint-graph patterns), then its forward and backward parts, which PyTorch runs.
    def partition(joint_gm, joint_inputs, **kwargs):
        if patterns.has_user_patterns():
            debug.fx(name, "joint_received", joint_gm)
            debug.log(f"{name}: user patterns in the joint graph: {patterns.apply_user_patterns(joint_gm)} "
                      "replacement(s)")
            debug.fx(name, "joint_after_user_patterns", joint_gm)
        return default_partition(joint_gm, joint_inputs, **kwargs)

    def forward_compiler(aot_gm, fake_inputs):
        if config.mode == "ge":
            message = (f"estuary: graph '{name}' needs gradients and runs in PyTorch; compile under "
                       "torch.no_grad() or torch.inference_mode() for Estuary to run it")
            if config.effective_fallback == "error":
                raise EstuaryError(message + " (fallback='error')")
            warnings.warn(message)
        debug.fx(name, "training_forward", aot_gm)
        return make_boxed_func(aot_gm.forward)

    def backward_compiler(aot_gm, fake_inputs):
        debug.fx(name, "training_backward", aot_gm)
        return make_boxed_func(aot_gm.forward)

    return aot_autograd(fw_compiler=forward_compiler, bw_compiler=backward_compiler,
                        inference_compiler=inference_compiler, partition_fn=partition,
                        keep_inference_input_mutations=True)(gm, example_inputs)
