"""Graph-engine mode: FX graphs run as Estuary IR on the GE backend.

A functionalized ATen graph is partitioned into the regions Estuary translates and the rest
(run by PyTorch). Each region is translated by the C++ frontend on its first call, when the
real parameters are at hand (they become constants sharing the parameters' memory: frozen, as
TorchAir's frozen_parameter), optimized by the pipeline and built by the GE backend. Runs hand
the GE backend the addresses of the torch tensors: inputs and mutated inputs (a KV cache) are
used in place, outputs are written into tensors allocated by torch.
"""
import warnings

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from .._estuary import EstuaryError, UnsupportedOpsError, load_plugin
from .._estuary import fx as _fx
from . import describe, eager_compare, patterns
from .debug import DebugDump


def _unsupported_reason(node, targets):
    """Why Estuary cannot run a call_function node, or None when it can."""
    if describe.target_name(node.target) not in targets:
        return "no Estuary translation"
    if node.target is torch.ops.aten.copy_.default and node.args[0].op != "placeholder":
        return "copy_ into a value that is not a graph input"  # functionalization's epilogue only
    values = node.meta.get("val")
    values = values if isinstance(values, (list, tuple)) else [values]
    for value in values:
        if isinstance(value, torch.Tensor) and value.dtype not in describe.TORCH_DTYPES.values():
            return f"dtype {value.dtype}, which Estuary has no tensors of"
    return None


class _EstuarySupport(OperatorSupportBase):
    def __init__(self, targets):
        super().__init__()
        self._targets = targets

    def is_node_supported(self, submodules, node):
        return node.op == "call_function" and _unsupported_reason(node, self._targets) is None


def unsupported_targets(gm, targets):
    """{target: [(node name, reason)]} of the nodes Estuary cannot run."""
    found = {}
    for node in gm.graph.nodes:
        reason = _unsupported_reason(node, targets) if node.op == "call_function" else None
        if reason:
            found.setdefault(describe.target_name(node.target), []).append((node.name, reason))
    return found


class GraphEngineGraph:
    """One FX graph (or partition) run by the GE backend.

    static: the placeholder indices that are parameters or buffers (constants of the build).
    floats: the placeholder indices that are Python floats as 0-d f64 tensors (a model's eps);
        each build takes their values as constants, so that the pipeline sees an RMSNorm's
        epsilon or an attention's scale, and a new value means a new build.
    """

    def __init__(self, gm, static, floats, config, name, debug):
        self.gm = gm
        self.config = config
        self.name = name
        self.debug = debug
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.static = [i for i in range(len(placeholders)) if i in static and not describe.is_symint_node(placeholders[i])]
        self.floats = [i for i in range(len(placeholders)) if i in floats and i not in static]
        self.float_values = None  # the floats' values the builds hold
        # Symbols and where their values are found: (input index, dim).
        self.symbols = {}
        for i, node in enumerate(placeholders):
            value = node.meta.get("val")
            if isinstance(value, torch.Tensor):
                for d, size in enumerate(value.shape):
                    if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
                        self.symbols.setdefault(str(size.node.expr), (i, d))
        # Sizes passed as SymInts that the tensor inputs' dims do not give (computed in another
        # region, or a symbol Dynamo passes alone): run-time inputs, 0-d i64 tensors.
        self.scalar_inputs = set()
        self.scalar_symbols = {}  # symbol -> the scalar input that is it
        for i, node in enumerate(placeholders):
            value = node.meta.get("val")
            if isinstance(value, torch.SymInt) and {str(s) for s in value.node.expr.free_symbols} - set(self.symbols):
                self.scalar_inputs.add(i)
                if value.node.expr.is_Symbol:
                    self.scalar_symbols[str(value.node.expr)] = i
        # In dynamic mode the build takes those sizes at run time; with fixed dims they are
        # constants of each build.
        self.runtime = [i for i, n in enumerate(placeholders) if i not in self.static and i not in self.floats and
                        (not describe.is_symint_node(n) or (i in self.scalar_inputs and config.effective_dynamic))]
        outputs, self.returns_tuple = describe.output_layout(gm)
        # Outputs that are sizes (SymInts): a size the region was given is handed back; with
        # symbolic sizes the graph computes the others (their symbols need not be bound by
        # the region's inputs), with fixed dims they are computed here. None stays None.
        self.output_kinds = []
        for out in outputs:
            value = out.meta.get("val") if isinstance(out, torch.fx.Node) else out
            if isinstance(value, torch.Tensor):
                self.output_kinds.append(("tensor", None))
            elif isinstance(value, torch.SymInt) and out.op == "placeholder":
                self.output_kinds.append(("given", placeholders.index(out)))
            elif isinstance(value, torch.SymInt):
                self.output_kinds.append(("computed" if config.effective_dynamic else "size", value.node.expr))
            else:
                self.output_kinds.append(("constant", value))
        # signature -> (CompiledGraph, shape keys it has run): a graph per signature when sizes
        # are fixed (dynamic=False, built for those sizes, as TorchAir recompiles); the shape
        # keys only count new plans against recompile_limit, the plans are the backend's.
        self.models = {}
        self.builds = 0
        self.frozen = None      # data pointers of the parameters the builds hold
        self.eager = False
        # compare=True: the optimized IR of the first build, until the first call compares it.
        self.awaiting_comparison = None
        self.compared = not config.effective_compare

    def _bindings(self, args):
        bindings = {symbol: int(args[i].shape[d]) for symbol, (i, d) in self.symbols.items()}
        bindings.update({symbol: int(args[i]) for symbol, i in self.scalar_symbols.items()})
        return bindings

    def _build(self, args, concrete):
        weights = {}
        for i in self.static:
            tensor = args[i].detach()
            weights[i] = tensor if tensor.is_contiguous() else tensor.contiguous()
        for i in self.floats:
            weights[i] = args[i].detach().clone()  # Dynamo makes a new tensor per call
        nodes, outputs, index = describe.describe_graph(self.gm, weights, concrete,
                                                        self.scalar_inputs if concrete is None else ())
        tensor_outputs = [_fx.Ref(index[o]) for o, (kind, _) in zip(describe.output_layout(self.gm)[0], self.output_kinds)
                          if kind in ("tensor", "computed")]
        graph = _fx.translate(self.name, nodes, tensor_outputs, self.config.extensions)
        self.debug.ir(self.name, "translated", graph)
        records = _fx.optimize(graph, self.config.effective_pipeline, self.debug.pass_dir(self.name))
        self.debug.log(f"{self.name}: passes that changed the IR: "
                       + (", ".join(f"{p} ({c})" for p, c, _ in records if c) or "none"))
        self.debug.ir(self.name, "optimized", graph)
        options = self.config.build_options
        model = _fx.CompiledGraph(graph, self.config.effective_threads, options)
        self.debug.log(f"{self.name}: built for {'symbolic sizes' if concrete is None else concrete}"
                       + (f" with {options}" if options else ""))
        if not self.compared:
            self.awaiting_comparison = graph
        return model

    def _compare(self, args):
        """compare=True: this first call's values against eager PyTorch's, before the compiled run
        (which may update inputs in place). A comparison that fails warns; the run goes on."""
        graph, self.awaiting_comparison = self.awaiting_comparison, None
        self.compared = True
        try:
            report, path = eager_compare.compare_with_eager(self.gm, graph, args, self.runtime, set(self.static),
                                                            self.config, self.name, self.debug)
        except (EstuaryError, TypeError, ValueError, OSError) as error:
            warnings.warn(f"estuary: graph '{self.name}': the comparison with eager PyTorch failed: {error}")
            self.debug.log(f"{self.name}: comparison with eager PyTorch failed: {error}")
            return
        summary = report.summary().replace("\n", " ")  # one line of debug.log
        self.debug.log(f"{self.name}: compared with eager PyTorch ({path}): {summary}")
        if not report.clean:
            warnings.warn(f"estuary: graph '{self.name}' drifts from eager PyTorch: {summary} Report: {path}")

    def _fall_back(self, error):
        if self.config.effective_fallback == "error":
            raise error
        warnings.warn(f"estuary: graph '{self.name}' runs eagerly in PyTorch: {error}")
        self.debug.log(f"{self.name}: eager: {error}")
        self.eager = True

    def __call__(self, *args):
        if self.eager:
            return self.gm(*args)
        pointers = [args[i].data_ptr() for i in self.static]
        float_values = [float(args[i]) for i in self.floats]
        if self.frozen is not None and (pointers != self.frozen or float_values != self.float_values):
            self.models.clear()  # parameters were replaced or a float changed: rebuild with the new ones
        bindings = self._bindings(args)
        dynamic = self.config.effective_dynamic
        signature = None if dynamic else tuple(sorted(bindings.items()))
        inputs = [torch.tensor(int(args[i]), dtype=torch.int64) if i in self.scalar_inputs else args[i]
                  for i in self.runtime]
        shapes = [tuple(t.shape) for t in inputs]
        entry = self.models.get(signature)
        # Output shapes may depend on the sizes given at run time, not only on the shapes.
        shape_key = (tuple(shapes), tuple(int(args[i]) for i in self.runtime if i in self.scalar_inputs))
        new_plan = entry is None or shape_key not in entry[1]
        if new_plan:
            if self.builds >= self.config.effective_recompile_limit:
                if self.config.effective_fallback == "error":
                    raise EstuaryError(f"graph '{self.name}' was built {self.builds} times for new input shapes "
                                       f"(recompile_limit={self.config.effective_recompile_limit}), and "
                                       "fallback='error' forbids running it eagerly")
                warnings.warn(f"estuary: graph '{self.name}' was built {self.builds} times for new input shapes "
                              f"(recompile_limit={self.config.effective_recompile_limit}); it runs eagerly from now on")
                self.debug.log(f"{self.name}: recompile limit reached, eager from now on")
                self.eager = True
                return self.gm(*args)
            self.builds += 1
            if entry is None:
                try:
                    entry = self.models[signature] = (self._build(args, None if dynamic else bindings), set())
                except (EstuaryError, TypeError) as error:  # TypeError: an FX argument describe cannot hand over
                    self._fall_back(error)
                    return self.gm(*args)
                self.frozen, self.float_values = pointers, float_values
            entry[1].add(shape_key)
        model = entry[0]
        if self.awaiting_comparison is not None:
            self._compare(args)
        # A new shape builds its plan here; the backend's plan cache answers for the others.
        specs = model.output_specs([t.data_ptr() for t in inputs], [list(s) for s in shapes])
        if new_plan and self.debug.enabled:
            report = model.report()
            ops = ", ".join(f"{op} x{count}" for op, count in sorted(report["ops_after"].items()))
            self.debug.log(f"{self.name}: plan for input shapes {shapes}: {report['fused_epilogues']} node(s) "
                           f"fused into matmul/convolution epilogues; runs {ops}")
        contiguous = [t if t.is_contiguous() else t.contiguous() for t in inputs]
        outputs = [torch.empty(shape, dtype=describe.TORCH_DTYPES[dtype]) for dtype, shape in specs]
        model.run([t.data_ptr() for t in contiguous], [list(s) for s in shapes],
                  [t.data_ptr() for t in outputs], [list(t.shape) for t in outputs])
        for original, used in zip(inputs, contiguous):
            if used is not original:  # a mutated input that was not contiguous gets its update back
                original.copy_(used)
        results = []
        tensors = iter(outputs)
        for kind, what in self.output_kinds:
            if kind == "tensor":
                results.append(next(tensors))
            elif kind == "computed":
                results.append(int(next(tensors).reshape(-1)[0]))
            elif kind == "given":
                results.append(int(args[what]))
            elif kind == "size":
                results.append(int(what.xreplace({s: bindings[str(s)] for s in what.free_symbols})))
            else:
                results.append(what)
        return tuple(results) if self.returns_tuple else results[0]


class _Region(torch.nn.Module):
    """A partition's submodule replaced by its GE runner."""

    def __init__(self, runner):
        super().__init__()
        self.runner = runner

    def forward(self, *args):
        return self.runner(*args)


def compile_graph(gm, static, floats, config, name, debug: DebugDump):
    """A callable running `gm` (an aot inference graph) with the GE backend where it can."""
    if patterns.has_user_patterns():
        debug.log(f"{name}: user patterns: {patterns.apply_user_patterns(gm)} replacement(s)")
        debug.fx(name, "after_user_patterns", gm)
    for plugin in config.plugins or ():
        load_plugin(plugin)
    targets = set(_fx.supported_targets(config.extensions))
    missing = unsupported_targets(gm, targets)
    if not missing:
        return GraphEngineGraph(gm, static, floats, config, name, debug)
    if config.effective_fallback == "error":
        listing = "; ".join(f"{t} (nodes {', '.join(n for n, _ in nodes)}: {nodes[0][1]})"
                            for t, nodes in sorted(missing.items()))
        raise UnsupportedOpsError(f"FX graph '{name}': ops Estuary cannot run: {listing}")
    debug.log(f"{name}: partitioned; PyTorch runs {sorted(missing)}")
    partitioner = CapabilityBasedPartitioner(gm, _EstuarySupport(targets), allows_single_node_partition=False)
    partitioned = partitioner.partition_and_fuse()
    placeholders = {n: i for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}
    for node in list(partitioned.graph.nodes):
        if node.op != "call_module":
            continue
        submodule = getattr(partitioned, node.target)
        inner = [n for n in submodule.graph.nodes if n.op == "placeholder"]
        for inner_node, outer in zip(inner, node.args):  # fake values, for sizes and dtypes
            if "val" not in inner_node.meta and isinstance(outer, torch.fx.Node):
                inner_node.meta["val"] = outer.meta.get("val")
        region_static = {k for k, a in enumerate(node.args) if placeholders.get(a, -1) in static}
        region_floats = {k for k, a in enumerate(node.args) if placeholders.get(a, -1) in floats}
        runner = GraphEngineGraph(submodule, region_static, region_floats, config, f"{name}.{node.target}", debug)
        setattr(partitioned, node.target, _Region(runner))
    partitioned.recompile()
    debug.fx(name, "partitioned", partitioned)
    regions = sum(1 for node in partitioned.graph.nodes if node.op == "call_module")
    calls = sum(1 for node in gm.graph.nodes if node.op == "call_function")
    left = sum(len(nodes) for nodes in missing.values())
    listing = ", ".join(f"{target} x{len(nodes)} ({nodes[0][1]})" for target, nodes in sorted(missing.items()))
    warnings.warn(f"estuary: graph '{name}': {left} of {calls} ops run in PyTorch, around {regions} Estuary "
                  f"region(s): {listing}. fallback='error' makes this an error.")
    return partitioned
