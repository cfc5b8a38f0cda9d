"""Graph dumps, laid out as npugraph_ex does:

    <dir>/estuary/debug.log
    <dir>/estuary/model__<N>/dynamo_out_graph.txt
    <dir>/estuary/model__<N>/forward/000_aot_forward_graph.txt, 001_..._<step>.txt, ...
    <dir>/estuary/model__<N>/ir/000_<graph>_<stage>.est          translated, optimized
    <dir>/estuary/model__<N>/ir/<graph>_passes/001_before_<pass>.est, 001_after_<pass>.est, ...

<dir> is CompilerConfig.debug_dir, or with TORCH_COMPILE_DEBUG=1 PyTorch's debug directory
(torch_compile_debug/run_*); both are read at compile time.
"""
import itertools
import os

_model_numbers = itertools.count()


class DebugDump:
    def __init__(self, directories):
        self.roots = directories
        self.model = None
        self.fx_count = itertools.count()
        self.ir_count = itertools.count()

    @classmethod
    def for_config(cls, config):
        directories = []
        if config.debug_dir:
            directories.append(os.path.join(config.debug_dir, "estuary"))
        if os.environ.get("TORCH_COMPILE_DEBUG") == "1":
            from torch._dynamo.utils import get_debug_dir
            directories.append(os.path.join(get_debug_dir(), "estuary"))
        dump = cls(directories)
        if directories:
            dump.model = f"model__{next(_model_numbers)}"
        return dump

    @property
    def enabled(self):
        return bool(self.roots)

    def _write(self, relative, text):
        for root in self.roots:
            path = os.path.join(root, self.model, relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)

    def dynamo_graph(self, gm):
        if self.enabled:
            self._write("dynamo_out_graph.txt", gm.print_readable(print_output=False))

    def fx(self, name, step, gm):
        if self.enabled:
            self._write(f"forward/{next(self.fx_count):03d}_aot_forward_graph_{step}.txt",
                        f"# {name}\n" + gm.print_readable(print_output=False))
            self.log(f"{name}: FX graph {step}")

    def ir(self, name, stage, graph):
        if self.enabled:
            from .._estuary import fx
            number = next(self.ir_count)
            for root in self.roots:
                directory = os.path.join(root, self.model, "ir")
                os.makedirs(directory, exist_ok=True)
                fx.dump(graph, os.path.join(directory, f"{number:03d}_{name}_{stage}.est"), f"{name}: {stage}")
            self.log(f"{name}: IR {stage}: {graph.op_counts()}")

    def pass_dir(self, name):
        """Where the pass manager dumps the IR before and after each pass ("" when off).
        With several roots, the first gets the per-pass dumps."""
        if not self.enabled:
            return ""
        directory = os.path.join(self.roots[0], self.model, "ir", f"{name}_passes")
        os.makedirs(directory, exist_ok=True)
        return directory

    def log(self, message):
        for root in self.roots:
            os.makedirs(root, exist_ok=True)
            with open(os.path.join(root, "debug.log"), "a") as f:
                f.write(f"[{self.model}] {message}\n")
