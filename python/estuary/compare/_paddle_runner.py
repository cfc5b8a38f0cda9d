"""Paddle as estuary.compare's reference, run in Paddle's Python (see _framework_runner.py):

    python _paddle_runner.py REQUEST.json       (REQUEST's "model": an inference.json or .pdmodel)

The program is loaded with paddle.static.load_inference_model and run by Paddle's static
executor, which fetches any value of the program's main block once the program's own fetch
ops are gone (they would claim the fetch columns).

Names, as Estuary's Paddle frontend gives them:
- a PIR program (inference.json): a value is "%ID", its id in the JSON file; inputs take their
  data op's name, outputs their fetch op's. The loaded program has no such ids, but its main
  block holds the file's ops in the file's order: the runner reads the file too and pairs them.
- a legacy program (inference.pdmodel): a value is its variable's name, and a variable written
  again gets a version ("x@1"). The executor hands back a variable's last value only, so only
  variables written at most once are offered; a versioned value is left out.
A node is named after its first result, as Estuary names it.
"""
import json
import os
import sys

import _framework_runner  # beside this file, on sys.path as the script's folder

# The values of these PIR ops are no tensors of the program (builtin.combine's vectors) or
# are the graph's edges (data and fetch name them instead).
PIR_HIDDEN = {"builtin.combine", "builtin.split", "pd_op.data", "pd_op.fetch"}


# The dialects of a PIR file's op names ("1.conv2d"), as Paddle's serializer numbers them.
PIR_DIALECTS = {"0": "builtin", "1": "pd_op", "2": "cf", "3": "custom_op", "4": "pd_dist"}


def _pir_op_name(written):
    """The op name a loaded program gives an op of the file: "1.conv2d" -> "pd_op.conv2d";
    "p", the file's short name for a parameter, -> "builtin.parameter"."""
    if written == "p":
        return "builtin.parameter"
    dialect, _, name = written.partition(".")
    return f"{PIR_DIALECTS.get(dialect, dialect)}.{name}"


def _prefix_and_form(path):
    """(path without extension, "pir" or "legacy") of the program `path` names."""
    stem, extension = os.path.splitext(path)
    return stem, "pir" if extension == ".json" else "legacy"


class PaddleModel:
    def __init__(self, request, feeds):
        prefix, form = _prefix_and_form(request["model"])
        if request.get("threads"):
            os.environ["OMP_NUM_THREADS"] = str(request["threads"])
        if form == "legacy":  # else Paddle 3 translates the program to PIR, and its names are gone
            os.environ["FLAGS_enable_pir_api"] = "0"
        import paddle
        paddle.enable_static()
        self.executor = paddle.static.Executor(paddle.CPUPlace())
        self.program, feed_names, _ = paddle.static.load_inference_model(prefix, self.executor)
        for name in feeds:
            if name not in feed_names:
                raise ValueError(f"{request['model']}: Paddle's program has no input '{name}' (its inputs: "
                                 f"{', '.join(sorted(feed_names))})")
        self.feeds = feeds
        self.values, self.producers = {}, {}
        if form == "pir":
            self._index_pir(request["model"])
        else:
            self._index_legacy()

    def _index_pir(self, path):
        block = self.program.global_block()
        for op in [op for op in block.ops if op.name() == "pd_op.fetch"]:
            block.remove_op(op)
        with open(path) as file:
            written = [(_pir_op_name(entry["#"]), entry)
                       for entry in json.load(file)["program"]["regions"][0]["blocks"][0]["ops"]]
        kept = [(kind, entry) for kind, entry in written if kind != "pd_op.fetch"]
        ops = block.ops
        if len(ops) != len(kept):
            raise ValueError(f"{path}: Paddle loads {len(ops)} ops where the file has {len(kept)}; "
                             f"its values cannot be matched with Estuary's")
        for op, (kind, entry) in zip(ops, kept):
            if op.name() != kind:
                raise ValueError(f"{path}: Paddle loads op '{op.name()}' where the file has '{kind}'; "
                                 f"its values cannot be matched with Estuary's")
            if kind == "pd_op.data":
                self.values[op.attrs()["name"]] = op.result(0)
            if kind in PIR_HIDDEN or kind == "builtin.parameter":
                continue
            ids = [result["%"] for result in entry.get("O", [])]
            node = (f"%{ids[0]}" if ids else kind, kind.split(".", 1)[1])
            for index, value_id in enumerate(ids):
                if value_id:  # 0 is the null value, which Estuary leaves unnamed
                    self.values[f"%{value_id}"] = op.result(index)
                    self.producers[f"%{value_id}"] = node
        for kind, entry in written:  # the outputs take their fetch ops' names
            if kind != "pd_op.fetch" or not entry.get("I"):
                continue
            name = next((attribute["AT"].get("D") for attribute in entry.get("A", []) if attribute.get("N") == "name"),
                        None)
            source = f"%{entry['I'][0]['%']}"
            if name and source in self.values:
                self.values[name] = self.values[source]
                if source in self.producers:
                    self.producers[name] = self.producers[source]

    def _index_legacy(self):
        block = self.program.global_block()
        for index in reversed(range(len(block.ops))):
            if block.ops[index].type == "fetch":
                block._remove_op(index)
        writes = {}
        for program_block in self.program.blocks:
            for op in program_block.ops:
                for name in op.output_arg_names:
                    writes[name] = writes.get(name, 0) + 1
        fed = set(self.feeds)
        for op in block.ops:
            if op.type == "feed":
                continue
            outputs = [name for name in op.output_arg_names if name]
            for name in outputs:
                if writes[name] == 1 and name not in fed and block.has_var(name) and not block.var(name).persistable:
                    self.values[name] = name
                    if outputs[0] in self.values:  # the node's name is its first result's, unversioned
                        self.producers[name] = (outputs[0], op.type)
        for name in fed:
            self.values[name] = name

    def tensor_of(self, name):
        return self.values.get(name)

    def fetch(self, handles):
        return self.executor.run(self.program, feed=self.feeds, fetch_list=handles)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    _framework_runner.serve(PaddleModel)
