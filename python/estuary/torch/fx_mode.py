"""FX mode (npugraph_ex): the FX graph, optimized in place, is run by PyTorch's kernels.

Passes, in npugraph_ex's order, each switchable in CompilerConfig:
  pattern_fusion_pass  the user's register_replacement ones, common subexpressions computed
                       once, then Estuary's default fusions (attention into SDPA, decomposed
                       linears and matmuls made whole; RMSNorm, rotary embeddings and
                       SiLU-gated products into Estuary's kernels)
  inplace_pass         out-of-place ops on intermediates become in-place where no alias or
                       later use forbids it (torch.fx.passes.reinplace)
  input_inplace_pass   functionalization undone on graph inputs: "new value + copy_ into the
                       input" becomes the in-place op on the input again (a KV cache update
                       writes the cache instead of a copy of it)
Each pass's graph is dumped when dumps are on, with a log of what it changed. Then the graph's
calls are bound to what they run (fx_lowering.py), which is what PyTorch runs.
"""
import torch
from torch.fx._lazy_graph_module import _LazyGraphModule
from torch.fx.operator_schemas import normalize_function
from torch.fx.passes.dialect.common.cse_pass import CSEPass, get_CSE_banned_ops
from torch.fx.passes.reinplace import _maybe_get_inplace_op, reinplace

from . import patterns
from .fx_attention import fuse_attention, is_view, storage_of
from .fx_gated_mlp import fuse_gated_mlps
from .fx_lowering import lower_calls
from .fx_matmul import fuse_matmuls
from .fx_rms_norm import fuse_rms_norms
from .fx_rotary import fuse_rotary_embeddings

_COPY_ = torch.ops.aten.copy_.default


def _in_place_count(gm):
    return sum(1 for n in gm.graph.nodes if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)
               and n.target._schema.name.endswith("_"))


def _compute_once(gm):
    """Common subexpressions computed once (torch's CSE pass on the functional graph; random
    and in-place ops are left alone): a BERT's attention mask is computed once, not per
    layer, and the fusions below see one node where the model wrote one value twice.
    Returns how many nodes went."""
    result = CSEPass(get_CSE_banned_ops())(gm)
    if not result.modified:
        return 0
    before = len(gm.graph.nodes)
    gm.graph = result.graph_module.graph
    gm.recompile()
    return before - len(gm.graph.nodes)


def pattern_fusion_pass(gm):
    # The user's replacements first: they say what the user wants where a default fusion
    # would also match, and they are traced from decomposed ATen (a Linear as view + mm).
    replaced = patterns.apply_user_patterns(gm)
    repeated = _compute_once(gm)
    attentions = fuse_attention(gm)
    products = fuse_matmuls(gm)
    norms, with_add = fuse_rms_norms(gm)
    rotaries = fuse_rotary_embeddings(gm)
    gated = fuse_gated_mlps(gm)
    return (f"{attentions} attention(s) fused into scaled_dot_product_attention, {products} decomposed "
            f"linear/matmul(s) made whole, {norms} RMSNorm(s) into Estuary's kernel ({with_add} with the "
            f"residual Add), {rotaries} rotary embedding(s) and {gated} SiLU-gated product(s) into Estuary's "
            f"kernels, {replaced} user replacement(s), {repeated} repeated computation(s) made once")


class _OutOfPlace:
    """A node's target while reinplacing, which torch's reinplace does not know and so leaves
    out of place; it calls the op itself."""

    def __init__(self, target):
        self.target = target
        self.__name__ = f"out_of_place_{getattr(target, '__name__', 'op')}"

    def __call__(self, *args, **kwargs):
        return self.target(*args, **kwargs)


def _must_stay_out_of_place(node):
    """Nodes torch's reinplace gets wrong: an op whose first argument shares storage with
    another of its tensor arguments (y[..., 1:] - y[..., :-1], y.t() + y), whose in-place form
    would overwrite elements it still has to read; and an op whose first argument is a size
    (a SymInt where the schema takes a tensor, with dynamic shapes), which reinplace's checks
    fail on, as they do on an op returning a size (aten.sym_size.int)."""
    if node.op != "call_function" or not node.args or not isinstance(node.target, torch._ops.OpOverload):
        return False
    results = node.meta.get("val")
    results = results if isinstance(results, (list, tuple)) else [results]
    if any(not isinstance(result, torch.Tensor) for result in results):
        return True
    if _maybe_get_inplace_op(node.target) is None:
        return False
    written = storage_of(node.args[0])
    if written is None:
        return True
    others = [a for a in (*node.args[1:], *node.kwargs.values()) if isinstance(a, torch.fx.Node)]
    return any(storage is not None and storage == written for storage in map(storage_of, others))


def inplace_pass(gm):
    before = _in_place_count(gm)
    shielded = [node for node in gm.graph.nodes if _must_stay_out_of_place(node)]
    for node in shielded:
        node.target = _OutOfPlace(node.target)
    samples = [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]
    try:
        reinplace(gm, *samples)
    finally:
        for node in shielded:
            node.target = node.target.target
    gm.recompile()
    kept = f", {len(shielded)} kept out of place (overlapping arguments, or a size as the first)" if shielded else ""
    return f"{_in_place_count(gm) - before} op(s) made in-place on intermediates{kept}"


def _reads_after(value, position, order, ignore):
    """Whether `value` (or a view of it) is read by a node at or after `position`."""
    for user in value.users:
        if user in ignore:
            continue
        if order[user] >= position:
            return True
        if is_view(user) and _reads_after(user, position, order, ignore):
            return True
    return False


_aten = torch.ops.aten
# Functional writes into part of a tensor, and the view they write through.
_SCATTER_VIEWS = {
    _aten.select_scatter.default: lambda a: (_aten.select.int, (a["dim"], a["index"])),
    _aten.slice_scatter.default: lambda a: (_aten.slice.Tensor, (a.get("dim", 0), a.get("start"), a.get("end"),
                                                                 a.get("step", 1))),
}


def _updates_first_argument(node):
    return (isinstance(node, torch.fx.Node) and node.op == "call_function" and bool(node.args)
            and isinstance(node.args[0], torch.fx.Node)
            and (node.target in _SCATTER_VIEWS or _maybe_get_inplace_op(node.target) is not None))


def _write_in_place(graph, link, destination):
    """Emits, before `link`, the in-place form of `link` applied to `destination`."""
    with graph.inserting_before(link):
        if link.target in _SCATTER_VIEWS:
            arguments = normalize_function(link.target, link.args, link.kwargs, normalize_to_only_use_kwargs=True).kwargs
            view_op, view_args = _SCATTER_VIEWS[link.target](arguments)
            view = graph.call_function(view_op, (destination, *view_args))
            return graph.call_function(_COPY_, (view, arguments["src"]))
        updated = graph.call_function(_maybe_get_inplace_op(link.target), (destination, *link.args[1:]), link.kwargs)
        updated.meta = dict(link.meta)
        return updated


def input_inplace_pass(gm):
    graph = gm.graph
    order = {node: i for i, node in enumerate(graph.nodes)}
    restored = []
    for copy in [n for n in graph.nodes if n.op == "call_function" and n.target is _COPY_]:
        destination, source = copy.args[0], copy.args[1]
        if destination.op != "placeholder":
            continue
        # The functional updates from the input to the copied value: op(input), then each
        # next op taking the previous result as its first argument (cache[:, 3] = k;
        # cache[:, 4:6] = b is a select_scatter then a slice_scatter).
        chain, node = [], source
        while node is not destination and _updates_first_argument(node):
            chain.append(node)
            node = node.args[0]
        if node is not destination or not chain:
            continue
        chain.reverse()
        if any(len(link.users) != 1 for link in chain[:-1]):
            continue  # an intermediate value is read elsewhere: it must stay a value of its own
        # The input's old value must not be read once the first in-place write happened.
        if _reads_after(destination, order[chain[0]] + 1, order, ignore={chain[0], copy}):
            continue
        # copy_ returns its destination, which holds the new value from here on: a use of the
        # copy's result (a graph output, in generate with a static cache) reads the input.
        copy.replace_all_uses_with(destination)
        graph.erase_node(copy)
        for link in chain:
            written = _write_in_place(graph, link, destination)
            link.replace_all_uses_with(destination)
            graph.erase_node(link)
            restored.append(f"{link.name} -> {written.target}")
    if restored:
        graph.lint()
        gm.recompile()
    return f"{len(restored)} functional update(s) restored to in-place ops" + (
        f": {', '.join(restored)}" if restored else "")


PASSES = [("pattern_fusion_pass", pattern_fusion_pass), ("inplace_pass", inplace_pass),
          ("input_inplace_pass", input_inplace_pass)]


def compile_fx_graph(gm, static, floats, config, name, debug):
    """Runs the enabled passes on gm (an aot inference graph) and returns the function PyTorch
    runs: gm's generated forward itself, without nn.Module's and GraphModule's call layers
    (five Python frames a call, which a sub-millisecond model feels)."""
    for pass_name, run in PASSES:
        if not config.fx_pass_enabled(pass_name):
            continue
        change = run(gm)
        debug.fx(name, f"after_{pass_name}", gm)
        debug.log(f"{name}: {pass_name}: {change}")
    debug.fx(name, "optimized", gm)
    debug.log(f"{name}: lowering: {lower_calls(gm)}")
    debug.fx(name, "returned", gm)
    _LazyGraphModule.force_recompile(gm)
    return gm.forward
