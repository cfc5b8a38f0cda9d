"""register_replacement: user fusions, with the meaning of npugraph_ex's (and inductor's) API.

    estuary.torch.register_replacement(search_fn, replace_fn, example_inputs,
                                       trace_fn=fwd_only, extra_check=..., search_fn_pattern=None)

search_fn is traced with example_inputs into a pattern (a tuple result gives a multi-output
pattern), replace_fn into its replacement; extra_check(match) may veto a match (match.kwargs
maps search_fn's parameter names to FX nodes whose meta["val"] holds their fake values);
search_fn_pattern replaces tracing with a ready pattern; trace_fn=joint_fwd_bwd traces forward
and backward, for training graphs. A registered replacement applies in fx mode
(pattern_fusion_pass) and in graph-engine mode, on the FX graph before translation, so that
what the replacement calls is translated (or, if Estuary lacks it, run by PyTorch).

This is the one module that touches torch._inductor.pattern_matcher (a private API, pinned to
the behaviour of torch 2.13), and it imports it only when a replacement is registered or
applied: the import takes seconds.
"""
import functools
import importlib


# The decompositions estuary.torch's aot_autograd uses: none. Patterns must be traced with
# the same table, or they never match (inductor's default table decomposes silu, gelu,
# layer_norm, ... which our graphs keep whole).
DECOMPOSITIONS = {}


def _matcher():
    return importlib.import_module("torch._inductor.pattern_matcher")


@functools.lru_cache(maxsize=None)
def _user_pass():
    return _matcher().PatternMatcherPass(pass_name="estuary_user_patterns")


_registered = []  # (search_fn name, replace_fn name): what apply() may have used, for logs


def fwd_only(fn, args, *, run_functional_passes=True, get_decomp_fn=None):
    """Traces fn for inference (inductor's fwd_only with Estuary's decompositions)."""
    return _matcher().fwd_only(fn, args, run_functional_passes=run_functional_passes,
                               get_decomp_fn=get_decomp_fn or (lambda: DECOMPOSITIONS))


def joint_fwd_bwd(fn, args, *, get_decomp_fn=None):
    """Traces fn's forward and backward, for patterns in training graphs."""
    return _matcher().joint_fwd_bwd(fn, args, get_decomp_fn=get_decomp_fn or (lambda: DECOMPOSITIONS))


def _return_true(match):
    return True


def register_replacement(search_fn, replace_fn, example_inputs, trace_fn=fwd_only, extra_check=_return_true,
                         search_fn_pattern=None, scalar_workaround=None):
    """Registers a fusion; returns whether it was registered (False when inductor declines,
    e.g. a joint_fwd_bwd pattern under inference mode)."""
    registered = _register(search_fn, replace_fn, example_inputs, trace_fn, extra_check, search_fn_pattern,
                           scalar_workaround, _user_pass())
    if registered:
        _registered.append((search_fn.__name__, replace_fn.__name__))
    return bool(registered)


def _register(search_fn, replace_fn, example_inputs, trace_fn, extra_check, search_fn_pattern, scalar_workaround,
              pass_dict):
    return _matcher().register_replacement(
        search_fn, replace_fn, list(example_inputs), trace_fn, pass_dict, extra_check=extra_check,
        scalar_workaround=scalar_workaround, search_fn_pattern=search_fn_pattern,
        get_decomp_fn=lambda: DECOMPOSITIONS)


def clear_replacements():
    """Forgets every replacement registered with register_replacement."""
    _user_pass.cache_clear()
    _registered.clear()


def has_user_patterns():
    return bool(_registered)


def apply_user_patterns(gm):
    """Applies the registered replacements to gm; returns the number of replacements."""
    if not _registered:
        return 0
    count = _user_pass().apply(gm)
    if count:
        # A replacement goes where the pattern's first node was; in a joint graph it may read
        # backward values defined later (inductor sorts after its joint-graph passes too).
        _matcher().stable_topological_sort(gm.graph)
        gm.graph.lint()
        gm.recompile()
    return count
