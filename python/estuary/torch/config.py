"""CompilerConfig: how estuary.torch.backend compiles the graphs torch.compile hands it.

In the spirit of TorchAir's CompilerConfig and npugraph_ex's options, with one difference
users asked TorchAir for: an option that has no effect in the chosen mode is an error that
says so, never silently ignored.
"""
import dataclasses
from typing import Optional

from .. import _estuary

MODES = ("ge", "fx")
FALLBACKS = ("eager", "error")

# Options that only one mode reads, and why.
_GE_ONLY = {
    "pipeline": "the pass pipeline optimizes Estuary's IR, which only graph-engine mode builds",
    "threads": "threads are those of the GE backend's runs",
    "dynamic": "symbolic dims are a property of the IR graph the GE backend builds",
    "recompile_limit": "only graph-engine mode rebuilds a graph for new input shapes",
    "fallback": "fx mode runs every op with PyTorch's kernels; nothing needs a fallback",
    "extensions": "conversion extensions translate FX nodes into Estuary's IR, which only graph-engine mode builds",
    "plugins": "plugins bring translations, ops and kernels for the IR graph-engine mode builds",
    "precision_mode": "it chooses the dtypes of the IR graph the GE backend builds; fx mode runs PyTorch's "
                      "kernels in the graph's own dtypes",
    "allow_slow_precision": "it lets the GE backend build a 16-bit precision_mode",
    "compare": "it compares the GE backend's values with eager PyTorch's; fx mode's values are PyTorch's",
}
_FX_ONLY = {
    "inplace_pass": "it rewrites the FX graph PyTorch runs; graph-engine mode plans memory in place itself",
    "input_inplace_pass": "graph-engine mode maps functionalization's copy_ to mutable inputs itself",
    "pattern_fusion_pass": "graph-engine mode fuses with the pipeline's passes (option 'pipeline')",
}


@dataclasses.dataclass
class CompilerConfig:
    """Options of estuary.torch.backend.

    mode: "ge" translates FX graphs to Estuary's IR, optimizes them with `pipeline` and runs
        them on the GE backend; "fx" returns an optimized FX graph that PyTorch runs.
    pipeline: a shipped pipeline name ("O2"), a YAML file, or a comma-separated pass list (ge).
    threads: intra-op threads of the GE backend, 0 for one per core (ge).
    dynamic: True keeps PyTorch's symbolic sizes as symbolic dims, so one build serves every
        size (a plan per shape is made on first use); False builds a graph with fixed dims for
        each new input-shape signature (ge).
    recompile_limit: builds (plans or graphs) per FX graph for new input shapes after which
        that graph runs eagerly, with a warning; npugraph_ex's capture_limit (ge).
    fallback: "eager" runs ops Estuary cannot translate, and graphs it cannot build, with
        PyTorch (the graph is partitioned); "error" raises instead (ge).
    extensions: {target: function(node)}, translations of FX targets Estuary lacks (a custom
        op's "mylib.my_op.default"), see docs/frontends.md (ge).
    plugins: plugins to load before translating (names or paths), e.g. one registering
        conversion extensions and kernels for custom ops (ge).
    precision_mode: the dtypes every graph is built with, as estuary.convert takes it: 'origin'
        (the graph's own dtypes), 'fp32', 'bf16', 'fp16', 'mixed-bf16', 'mixed-fp16', 'fp64',
        or ATC's names (ge).
    allow_slow_precision: build a 16-bit precision_mode even where the CPU has no fast kernels
        for it, to check accuracy (ge).
    compare: on the first call of each compiled graph, compare every value it computes with
        eager PyTorch's and write a report (JSON, CSV, text table, and a PNG plot when
        matplotlib is installed) to <debug_dir or ./estuary_debug>/estuary/.../compare/ (ge).
    inplace_pass, input_inplace_pass, pattern_fusion_pass: npugraph_ex's FX passes (fx).
    debug_dir: where to write graph dumps; TORCH_COMPILE_DEBUG=1 writes them under PyTorch's
        debug directory too (both modes).
    """

    mode: str = "ge"
    pipeline: Optional[str] = None
    threads: Optional[int] = None
    dynamic: Optional[bool] = None
    recompile_limit: Optional[int] = None
    fallback: Optional[str] = None
    extensions: Optional[dict] = None
    plugins: Optional[list] = None
    precision_mode: Optional[str] = None
    allow_slow_precision: Optional[bool] = None
    compare: Optional[bool] = None
    inplace_pass: Optional[bool] = None
    input_inplace_pass: Optional[bool] = None
    pattern_fusion_pass: Optional[bool] = None
    debug_dir: Optional[str] = None

    def __post_init__(self):
        self.validate()

    def validate(self):
        """Raises ValueError for an unknown mode, a bad value, or an option of the other mode."""
        if self.mode not in MODES:
            raise ValueError(f"estuary.torch: mode must be one of {MODES}, got {self.mode!r}")
        other, other_mode = (_FX_ONLY, "fx") if self.mode == "ge" else (_GE_ONLY, "ge")
        for name, why in other.items():
            if getattr(self, name) is not None:
                raise ValueError(
                    f"estuary.torch: option '{name}' has no effect in mode '{self.mode}' "
                    f"(it applies in mode '{other_mode}': {why}); remove it or set mode='{other_mode}'")
        if self.fallback is not None and self.fallback not in FALLBACKS:
            raise ValueError(f"estuary.torch: fallback must be one of {FALLBACKS}, got {self.fallback!r}")
        if self.recompile_limit is not None and (not isinstance(self.recompile_limit, int) or self.recompile_limit < 1):
            raise ValueError(f"estuary.torch: recompile_limit must be an integer >= 1, got {self.recompile_limit!r}")
        if self.extensions is not None and not (isinstance(self.extensions, dict)
                                                and all(callable(f) for f in self.extensions.values())):
            raise ValueError("estuary.torch: extensions must be a dict {target: function(node)}")
        if self.plugins is not None and not isinstance(self.plugins, (list, tuple)):
            raise ValueError(f"estuary.torch: plugins must be a list of plugin names or paths, got {self.plugins!r}")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 0):
            raise ValueError(f"estuary.torch: threads must be an integer >= 0, got {self.threads!r}")
        modes = _estuary.precision_modes()
        if self.precision_mode is not None and self.precision_mode not in modes:
            raise ValueError(f"estuary.torch: precision_mode must be one of {', '.join(modes)}, "
                             f"got {self.precision_mode!r}")
        for name in ("allow_slow_precision", "compare"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), bool):
                raise ValueError(f"estuary.torch: {name} must be True or False, got {getattr(self, name)!r}")

    # The effective values, defaults filled in for the chosen mode.
    @property
    def effective_pipeline(self):
        return "O2" if self.pipeline is None else self.pipeline

    @property
    def effective_threads(self):
        return 0 if self.threads is None else self.threads

    @property
    def effective_dynamic(self):
        return True if self.dynamic is None else self.dynamic

    @property
    def effective_recompile_limit(self):
        return 64 if self.recompile_limit is None else self.recompile_limit

    @property
    def effective_fallback(self):
        return "eager" if self.fallback is None else self.fallback

    @property
    def effective_precision_mode(self):
        """The mode precision_mode names ('origin' for ATC's must_keep_origin_dtype)."""
        return "origin" if self.precision_mode is None else _estuary.precision_modes()[self.precision_mode]

    @property
    def effective_compare(self):
        return bool(self.compare)

    @property
    def build_options(self):
        """The SDK's build options (BuildConfig keys) these options set; empty when all are defaults."""
        options = {}
        if self.effective_precision_mode != "origin":
            options["precision_mode"] = self.effective_precision_mode
        if self.allow_slow_precision:
            options["allow_slow_precision"] = "true"
        return options

    def fx_pass_enabled(self, name):
        value = getattr(self, name)
        return True if value is None else value

    @classmethod
    def from_options(cls, options):
        """From a dict (torch.compile(options=...)); unknown keys raise, listing the known ones."""
        known = [field.name for field in dataclasses.fields(cls)]
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ValueError(f"estuary.torch: unknown option(s) {unknown}; known options: {known}")
        return cls(**options)
