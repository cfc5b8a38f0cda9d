"""FX mode (npugraph_ex): the FX graph, optimized in place, is run by PyTorch's kernels.

Passes, in npugraph_ex's order, each switchable in CompilerConfig:
  pattern_fusion_pass  Estuary's default fusions and the user's register_replacement ones
  inplace_pass         out-of-place ops on intermediates become in-place where no alias or
                       later use forbids it (torch.fx.passes.reinplace)
  input_inplace_pass   functionalization undone on graph inputs: "new value + copy_ into the
                       input" becomes the in-place op on the input again (a KV cache update
                       writes the cache instead of a copy of it)
Each pass's graph is dumped when dumps are on, with a log of what it changed.
"""
import torch
from torch.fx.passes.reinplace import _maybe_get_inplace_op, reinplace

from . import patterns

_COPY_ = torch.ops.aten.copy_.default


def _in_place_count(gm):
    return sum(1 for n in gm.graph.nodes if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)
               and n.target._schema.name.endswith("_"))


def pattern_fusion_pass(gm):
    replaced = patterns.apply_default_patterns(gm) + patterns.apply_user_patterns(gm)
    return f"{replaced} replacement(s)"


def inplace_pass(gm):
    before = _in_place_count(gm)
    samples = [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]
    reinplace(gm, *samples)
    gm.recompile()
    return f"{_in_place_count(gm) - before} op(s) made in-place on intermediates"


def _is_view(node):
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return False
    returns = target._schema.returns
    return bool(returns) and returns[0].alias_info is not None and not returns[0].alias_info.is_write


def _reads_after(value, position, order, ignore):
    """Whether `value` (or a view of it) is read by a node at or after `position`."""
    for user in value.users:
        if user in ignore:
            continue
        if order[user] >= position:
            return True
        if _is_view(user) and _reads_after(user, position, order, ignore):
            return True
    return False


def input_inplace_pass(gm):
    graph = gm.graph
    order = {node: i for i, node in enumerate(graph.nodes)}
    restored = []
    for copy in [n for n in graph.nodes if n.op == "call_function" and n.target is _COPY_]:
        destination, source = copy.args[0], copy.args[1]
        if destination.op != "placeholder" or not isinstance(source, torch.fx.Node) or source.op != "call_function":
            continue
        if not source.args or source.args[0] is not destination:
            continue
        in_place = _maybe_get_inplace_op(source.target)
        if in_place is None:
            continue
        # The input's old value must not be read once the in-place op has written it.
        if _reads_after(destination, order[source] + 1, order, ignore={source, copy}):
            continue
        with graph.inserting_before(source):
            updated = graph.call_function(in_place, source.args, source.kwargs)
        updated.meta = dict(source.meta)
        source.replace_all_uses_with(updated)
        graph.erase_node(copy)
        graph.erase_node(source)
        restored.append(f"{source.name} -> {in_place}")
    if restored:
        graph.lint()
        gm.recompile()
    return f"{len(restored)} copy_ pair(s) restored to in-place ops" + (f": {', '.join(restored)}" if restored else "")


PASSES = [("pattern_fusion_pass", pattern_fusion_pass), ("inplace_pass", inplace_pass),
          ("input_inplace_pass", input_inplace_pass)]


def compile_fx_graph(gm, static, config, name, debug):
    """Runs the enabled passes on gm (an aot inference graph) and returns it for PyTorch to run."""
    for pass_name, run in PASSES:
        if not config.fx_pass_enabled(pass_name):
            continue
        change = run(gm)
        debug.fx(name, f"after_{pass_name}", gm)
        debug.log(f"{name}: {pass_name}: {change}")
    debug.fx(name, "returned", gm)
    return gm
