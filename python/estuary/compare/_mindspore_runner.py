"""MindSpore as estuary.compare's reference, run in MindSpore's Python (see _framework_runner.py):

    python _mindspore_runner.py REQUEST.json       (REQUEST's "model": a .mindir, or a split
                                                    model's _graph.mindir)

MindSpore runs a loaded MindIR as one graph (nn.GraphCell) that hands back the graph's outputs
only. So the runner rewrites the MindIR as ONNX Runtime's reference rewrites an ONNX file: for
each batch, a copy of the model whose main graph returns a new MakeTuple of its own result and
the values asked for, which MindSpore loads (mindspore.load), compiles and runs. Every value
handed back is computed by MindSpore's run of the copy; the original graph is all there, with
its side effects ordered as before, only its return is wider.

Names, as Estuary's MindSpore frontend (plugins/mindspore/ms_graph.cpp) gives them:
- a node's value is its output's name (its name when it has none): "<graph>:CNode_36:35"; a
  node is named after its value, its op is its primitive's (Conv2D, BiasAdd, Tanh), a call's
  Call, While or If;
- the elements of an op's or a call's tuple result (LayerNorm's) are "<node>#<i>": the copy
  returns the tuple, and the runner takes it apart;
- a main-graph input is its Python name ("x" of "<graph>:x"), or "x_input" where a node, input,
  parameter or graph of the model is named "x";
- the outputs are "output", or "output_<i>" of several (an output that is a graph input keeps
  the input's name).
Plumbing (Load, Depend, UpdateState, MakeTuple, TupleGetItem of a MakeTuple, Partial, Switch)
makes no value. Values inside the graphs a call, a branch or a loop runs are not in the main
graph, so MindSpore cannot return them: they are left out.
"""
import os
import sys

import numpy as np

import _framework_runner  # beside this file, on sys.path as the script's folder

REF = "REF::"
# Ops that only order side effects, pass values through or make closures: no value of their own.
PLUMBING = {"Load", "Depend", "UpdateState", "Partial", "Switch"}
# The name of the node the runner adds: the main graph returns it.
RETURNED = "estuary_compare_returned"
# AttributeProto types (mind_ir.proto) of integers, and of the scalars a tuple of which (a shape)
# the frontend takes as one value.
INTEGERS = {2, 3, 4, 5, 6, 7, 12, 13}  # UINT8, INT8, UINT16, INT16, INT32, INT64, UINT32, UINT64
SCALARS = INTEGERS | {1, 9, 39}  # FLOAT, BOOL, SCALAR


class MindSporeModel:
    def __init__(self, request, feeds):
        import mindspore
        from mindspore.train import mind_ir_pb2
        self.mindspore, self.pb = mindspore, mind_ir_pb2
        self.path, self.folder = request["model"], request["folder"]
        if request.get("threads"):
            mindspore.device_context.cpu.op_tuning.threads_num(request["threads"])
        self.model = mind_ir_pb2.ModelProto()
        with open(self.path, "rb") as file:
            self.model.ParseFromString(file.read())
        graph = self.model.graph
        self.primitives = {primitive.name: primitive.op_type for primitive in self.model.primitives}
        self.graphs = {function.name: function for function in [graph, *self.model.functions]}
        self.nodes = {}  # every graph's nodes by the name of their value: MindIR names them uniquely
        for function in self.graphs.values():
            for node in function.node:
                self.nodes[_value(node)] = node
        self.inputs = [info for info in graph.input if not self._is_monad(info)]
        # The frontend's value name -> its producer, and its handle: (what the copy's MakeTuple
        # takes, None for the model's own result; the element of that to hand back, or None).
        self.values, self.producers = {}, {}
        self._index_inputs(feeds)
        self._index_nodes(graph)
        self._index_outputs(graph)
        self.make_tuple = next((name for name, op in self.primitives.items() if op == "MakeTuple"), None)
        if self.make_tuple is None:
            raise ValueError(f"{self.path}: the model has no MakeTuple primitive to return its values with")
        self.copy_path = self._copy_path()

    def _is_monad(self, info):
        return info.denotation in ("UMonadType", "IOMonadType") or \
            info.attr_info.type in (self.pb.AttributeProto.UMONAD, self.pb.AttributeProto.IOMONAD)

    def _index_inputs(self, feeds):
        """The main graph's inputs by the frontend's names; the feeds put in their order."""
        self.input_names = {}  # MindIR name -> the frontend's
        taken = set()
        defined = set(self.nodes) | set(self.graphs) | {info.name for function in self.graphs.values()
                                                          for info in [*function.input, *function.parameter]}
        for info in self.inputs:
            name = info.name
            if ":" in name:  # "<graph>:x" -> "x", "x_input" where "x" is taken, else the full name
                short = name.rsplit(":", 1)[1]
                name = next((candidate for candidate in (short, short + "_input")
                             if candidate not in defined and candidate not in taken), name)
                taken.add(name)
            self.input_names[info.name] = name
            self.values[name] = (info.name, None)
        names = list(self.input_names.values())
        if sorted(feeds) != sorted(names):
            raise ValueError(f"{self.path}: MindSpore's graph takes inputs {', '.join(names)}; "
                             f"given {', '.join(feeds)}")
        self.feeds = [self.mindspore.Tensor(feeds[name]) for name in names]

    def _op(self, node):
        """A node's op as the frontend names it: its primitive's, Constant, or Call, While or If."""
        if node.op_type == "Constant":
            return "Constant"
        primitive = self._primitive(node)
        if primitive is not None:
            return primitive
        target = node.op_type[len(REF):]
        if target in self.graphs:
            return "While" if self._is_loop_header(self.graphs[target]) else "Call"
        if target in self.nodes:  # a closure: a Switch's chosen branch, or a Partial called
            chooser = self._through(target)
            return "If" if chooser is not None and self._primitive(chooser) == "Switch" else "Call"
        raise ValueError(f"{self.path}: node '{node.name}' ({node.op_type}) refers to '{target}', which is no "
                         f"primitive, graph or node of the model")

    def _primitive(self, node):
        """The op of a primitive node; None for a constant or a call."""
        if node.op_type == "Constant":
            return None
        if not node.op_type.startswith(REF):
            return node.op_type  # an older file: the op itself
        return self.primitives.get(node.op_type[len(REF):])

    def _through(self, name):
        """The node `name` denotes once Load and Depend are looked through (None: an input, a parameter)."""
        node = self.nodes.get(name)
        while node is not None and node.input and self._primitive(node) in ("Load", "Depend"):
            node = self.nodes.get(node.input[0])
        return node

    def _is_loop_header(self, graph):
        """Whether a called graph is a while loop's header, as the frontend tells one: its result is
        a Switch's choice, one of whose branches ends by calling the header again."""
        result = self._through(graph.output[0].name) if graph.output else None
        if result is None or not result.op_type.startswith(REF):
            return False
        switch = self._through(result.op_type[len(REF):])
        if switch is None or self._primitive(switch) != "Switch":
            return False
        for branch in switch.input[1:]:  # a graph, or a Partial binding one
            partial = self._through(branch)
            if partial is not None and self._primitive(partial) == "Partial" and partial.input:
                branch = partial.input[0]
            body = self.graphs.get(branch)
            tail = self._through(body.output[0].name) if body is not None and body.output else None
            if tail is not None and tail.op_type == REF + graph.name:
                return True
        return False

    def _abstract(self, node):
        return next((attribute for attribute in node.attribute if attribute.name == "shape"), None)

    def _arity(self, node):
        """How many values a node's result is: 0 for one (a tensor, a scalar, a tuple of scalars,
        a shape), else its tuple's elements, as the frontend counts them."""
        abstract = self._abstract(node)
        if abstract is None or abstract.type not in (self.pb.AttributeProto.TUPLE, self.pb.AttributeProto.LIST):
            return 0
        return 0 if all(element.type in SCALARS for element in abstract.values) else len(abstract.values)

    def _index_nodes(self, graph):
        """The values of the main graph's ops and calls: one, or the elements of a tuple result."""
        for node in graph.node:
            name = _value(node)
            op = self._op(node)
            if op == "Constant" or op in PLUMBING or (op in ("MakeTuple", "TupleGetItem") and self._is_plumbing(node)):
                continue
            arity = self._arity(node)
            for index in range(arity):
                self.values[f"{name}#{index}"] = (name, index)
                self.producers[f"{name}#{index}"] = (name, op)
            if not arity:
                self.values[name] = (name, None)
                self.producers[name] = (name, op)

    def _is_plumbing(self, node):
        """Whether a MakeTuple or TupleGetItem only groups values or takes a group apart (a tuple of
        scalars, a shape, and an element of one are values of their own)."""
        if self._primitive(node) == "MakeTuple":
            return bool(self._arity(node))
        source = self._through(node.input[0]) if node.input else None
        return source is not None and bool(self._arity(source))

    def _constant_index(self, node):
        constant = self.nodes.get(node.input[1]) if len(node.input) == 2 else None
        if constant is None or constant.op_type != "Constant" or not constant.attribute or \
                constant.attribute[0].type not in INTEGERS:
            raise ValueError(f"{self.path}: node '{node.name}' (TupleGetItem): the index is not a constant integer")
        value = constant.attribute[0]
        return value.ints[0] if value.ints else value.i

    def _index_outputs(self, graph):
        """The outputs, named "output" or "output_<i>": the elements of the main graph's result as
        MindSpore returns it, flattened; each with the node that computed it."""
        computed = self._resolve(graph.output[0].name)
        self.output_count = len(computed)
        for index, value in enumerate(computed):
            if value in self.input_names.values():
                continue  # a graph input passed through keeps its name, which is offered already
            name = "output" if len(computed) == 1 else f"output_{index}"
            self.values[name] = (None, index)
            node = self.nodes.get(value.split("#")[0])
            if node is not None:
                self.producers[name] = self.producers.get(value, (_value(node), self._op(node)))

    def _resolve(self, name):
        """The frontend's names of the values the MindIR value `name` stands for: one, or a tuple's
        elements, flattened as the frontend flattens the graph's result."""
        if name in self.input_names:
            return [self.input_names[name]]
        node = self._through(name)
        if node is None:
            return [name]  # a parameter
        op = self._op(node)
        if op == "MakeTuple" and self._arity(node):
            return [value for element in node.input for value in self._resolve(element)]
        if op == "TupleGetItem":
            source = self._through(node.input[0])
            if source is not None and self._op(source) == "MakeTuple" and self._arity(source):
                return self._resolve(source.input[self._constant_index(node)])
            if source is not None and self._arity(source):
                return [f"{_value(source)}#{self._constant_index(node)}"]
        return [f"{_value(node)}#{index}" for index in range(self._arity(node))] or [_value(node)]

    def tensor_of(self, name):
        return self.values.get(name)

    def fetch(self, handles):
        """The values of `handles`, from MindSpore's run of a copy of the model whose main graph
        returns them too."""
        returned = list(dict.fromkeys(name for name, _ in handles if name is not None))
        result = self._run_returning(returned)
        by_name = dict(zip(returned, result[1:]))
        outputs = _flatten(result[0])
        if len(outputs) != self.output_count:
            raise ValueError(f"{self.path}: MindSpore returns {len(outputs)} outputs where the graph's result has "
                             f"{self.output_count}")
        return [_array(outputs[index] if name is None else by_name[name] if index is None else by_name[name][index])
                for name, index in handles]

    def _run_returning(self, names):
        """MindSpore's run of the model whose main graph returns (its own result, *names)."""
        marked = self.pb.ModelProto()
        marked.CopyFrom(self.model)
        graph = marked.graph
        own = graph.output[0]
        returned = graph.node.add(name=RETURNED, op_type=REF + self.make_tuple, output=[RETURNED],
                                  input=[own.name, *names])
        # MindSpore checks a node's abstract (its "shape" attribute) against what it infers.
        abstract = returned.attribute.add(name="shape", type=self.pb.AttributeProto.TUPLE)
        abstract.values.add().CopyFrom(own.attr_info if own.denotation == "Tuple" else _tensors(self.pb, own))
        for name in names:
            node = self.nodes.get(name)
            abstract.values.add().CopyFrom(self._abstract(node) if node is not None else
                                           _tensors(self.pb, next(info for info in self.inputs if info.name == name)))
        abstract.seq_info.is_dyn_len = False
        own.Clear()
        own.name, own.denotation = RETURNED, "Tuple"
        own.attr_info.CopyFrom(abstract)
        try:
            with open(self.copy_path, "wb") as file:
                file.write(marked.SerializeToString())
            cell = self.mindspore.nn.GraphCell(self.mindspore.load(self.copy_path))
            return cell(*self.feeds)
        finally:
            if os.path.exists(self.copy_path):
                os.remove(self.copy_path)

    def _copy_path(self):
        """Where the copy is written: the request's folder; beside the model for a split model,
        whose weights MindSpore finds only in the graph file's own folder (it refuses a path that
        leads out of it)."""
        if not any(parameter.HasField("external_data") for parameter in self.model.graph.parameter):
            return os.path.join(self.folder, "returning.mindir")
        beside = os.path.dirname(os.path.abspath(self.path))
        if not os.access(beside, os.W_OK):
            raise PermissionError(f"{self.path}: its weights are in a _variables folder, so the copy MindSpore runs "
                                  f"must lie beside it, and {beside} cannot be written")
        return os.path.join(beside, f".estuary_compare_{os.getpid()}.mindir")


def _value(node):
    """The name of a node's value, which names the node too."""
    return node.output[0] if node.output else node.name


def _tensors(pb, info):
    """A value info's tensor as a node's abstract (a TENSORS attribute)."""
    abstract = pb.AttributeProto(type=pb.AttributeProto.TENSORS)
    abstract.tensors.extend(info.tensor)
    return abstract


def _flatten(result):
    """MindSpore's nested tuples of tensors as a list; a tuple of scalars (a shape) is one value."""
    if isinstance(result, (tuple, list)) and not all(np.isscalar(element) for element in result):
        return [array for element in result for array in _flatten(element)]
    return [result]


def _array(value):
    return value.asnumpy() if hasattr(value, "asnumpy") else np.asarray(value)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    _framework_runner.serve(MindSporeModel)
