// `estuary._estuary.fx`: what estuary.torch needs from C++. Python walks the FX graph and
// hands over a compact description (fx_graph.h); the frontend "pytorch" translates it into
// core IR, taking it in memory through loadModel() like any model; CompiledGraph builds it
// with the GE backend and runs it on torch tensors' memory, given as addresses, so that
// inputs, weights and outputs are never copied.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <mutex>

#include <fstream>

#include "estuary/frontend/frontend.h"
#include "estuary/frontend/weights.h"
#include "estuary/ge/model.h"
#include "estuary/sdk/build.h"
#include "estuary/sdk/session.h"
#include "estuary/pass/manager.h"
#include "estuary/pass/pipeline.h"
#include "estuary/pytorch/fx_graph.h"
#include "estuary/support/error.h"
#include "estuary/text/printer.h"
#include "frontend_bindings.h"

namespace py = pybind11;

namespace estuary::python {
namespace {

using pytorch::FxArg;
using pytorch::FxGraph;
using pytorch::FxNode;

// A reference to another FX node, by its index in the node list.
struct FxRef {
  size_t index;
};

// The targets Estuary translates: the frontend's table, the extensions plugins registered,
// and `extensions` ({target: function}).
std::vector<std::string> supportedTargets(const py::object& extensions) {
  std::vector<std::string> targets = loadFrontend("pytorch")->ops();
  for (const std::string& op : ConversionExtensions::global().ops("pytorch")) targets.push_back(op);
  for (const ConversionExtension& extension : pythonExtensions(extensions, "pytorch")) {
    targets.push_back(extension.op_type);
  }
  return targets;
}

DType dtypeNamed(const std::string& name, const std::string& where) {
  std::optional<DType> dtype = parseDType(name);
  if (!dtype) raise(where, ": unknown dtype '", name, "'");
  return *dtype;
}

FxArg argOf(const py::handle& object) {
  FxArg arg;
  if (object.is_none()) return arg;
  if (py::isinstance<FxRef>(object)) {
    arg.kind = FxArg::Kind::Node;
    arg.node = object.cast<FxRef>().index;
  } else if (py::isinstance<py::bool_>(object)) {
    arg.kind = FxArg::Kind::Bool;
    arg.bool_value = object.cast<bool>();
  } else if (py::isinstance<py::int_>(object)) {
    arg.kind = FxArg::Kind::Int;
    arg.int_value = object.cast<int64_t>();
  } else if (py::isinstance<py::float_>(object)) {
    arg.kind = FxArg::Kind::Float;
    arg.float_value = object.cast<double>();
  } else if (py::isinstance<py::str>(object)) {
    arg.kind = FxArg::Kind::String;
    arg.string_value = object.cast<std::string>();
  } else if (py::isinstance<py::list>(object) || py::isinstance<py::tuple>(object)) {
    arg.kind = FxArg::Kind::List;
    for (const py::handle& item : object) arg.list.push_back(argOf(item));
  } else {
    raise("an FX argument of Python type ", py::str(py::type::handle_of(object)).cast<std::string>(), " cannot be handed over");
  }
  return arg;
}

// A torch tensor's memory as a core-IR tensor through the frontend layer's weight source:
// wrapped without copying (the Python object held, and released under the GIL, for as long
// as the graph or a built model uses it).
Tensor wrapTensor(WeightSource& weights, const std::string& name, const py::object& tensor, DType dtype,
                  const std::vector<int64_t>& shape) {
  auto* address = reinterpret_cast<const char*>(tensor.attr("data_ptr")().cast<uintptr_t>());
  auto bytes = tensor.attr("untyped_storage")().attr("nbytes")().cast<size_t>();
  size_t offset = tensor.attr("storage_offset")().cast<size_t>() * dtypeSize(dtype);
  auto* owner = new py::object(tensor);
  std::shared_ptr<const void> keep_alive(owner, [](const py::object* held) {
    py::gil_scoped_acquire gil;
    delete held;
  });
  size_t size = static_cast<size_t>(weights.elementCount(shape, "parameter '" + name + "'")) * dtypeSize(dtype);
  if (offset > bytes || size > bytes - offset) raise("FX parameter '", name, "': its tensor holds fewer bytes than its shape");
  return weights.fromBytes(dtype, shape, std::string_view(address, size), keep_alive, "parameter '" + name + "'");
}

std::vector<int64_t> staticSizes(const FxNode& node) {
  std::vector<int64_t> shape;
  for (const std::string& size : node.sizes) {
    std::optional<Dim> dim = Dim::parse(size);
    if (!dim || !dim->isStatic()) raise("FX weight '", node.name, "' has the non-static size ", size);
    shape.push_back(dim->value());
  }
  return shape;
}

// nodes: ("input", name, dtype, sizes) | ("weight", name, dtype, sizes, tensor) |
//        ("symint", name, expression, runtime) |
//        ("call", name, target, args, kwargs, result_dtypes, arg_names)
std::shared_ptr<Graph> translate(const std::string& name, const py::list& nodes, const py::list& outputs,
                                 const py::object& extensions) {
  FxGraph fx;
  fx.name = name;
  WeightSource weights("FX graph '" + name + "'");
  for (const py::handle& entry : nodes) {
    py::tuple item = entry.cast<py::tuple>();
    std::string kind = item[0].cast<std::string>();
    FxNode node;
    node.name = item[1].cast<std::string>();
    if (kind == "input" || kind == "weight") {
      node.kind = kind == "input" ? FxNode::Kind::Input : FxNode::Kind::Weight;
      node.dtype = dtypeNamed(item[2].cast<std::string>(), "FX placeholder '" + node.name + "'");
      node.sizes = item[3].cast<std::vector<std::string>>();
      if (kind == "weight") {
        node.weight = wrapTensor(weights, node.name, item[4].cast<py::object>(), node.dtype, staticSizes(node));
      }
    } else if (kind == "symint") {
      node.kind = FxNode::Kind::SymInt;
      node.sizes = {item[2].cast<std::string>()};
      node.runtime = item.size() > 3 && item[3].cast<bool>();
    } else if (kind == "call") {
      node.kind = FxNode::Kind::Call;
      node.target = item[2].cast<std::string>();
      for (const py::handle& arg : item[3]) node.args.push_back(argOf(arg));
      for (const auto& [key, value] : item[4].cast<py::dict>()) {
        node.kwargs.emplace_back(key.cast<std::string>(), argOf(value));
      }
      for (const py::handle& dtype : item[5]) {
        std::string text = dtype.cast<std::string>();
        node.result_dtypes.push_back(text.empty() ? DType::Undefined : dtypeNamed(text, "FX node '" + node.name + "'"));
      }
      node.arg_names = item[6].cast<std::vector<std::string>>();
    } else {
      raise("FX node '", node.name, "': unknown kind '", kind, "'");
    }
    fx.nodes.push_back(std::move(node));
  }
  for (const py::handle& output : outputs) fx.outputs.push_back(argOf(output));
  FrontendOptions options;
  options.extensions = pythonExtensions(extensions, "pytorch");
  ModelInput input = ModelInput::object(pytorch::kFxGraphObjectType, &fx, nullptr, "FX graph '" + name + "'");
  py::gil_scoped_release release;
  return std::shared_ptr<Graph>(loadModel(input, options, "pytorch"));
}

// Runs a pipeline (a shipped one's name, a YAML file, or a pass list) over the graph; with `dump_dir`, the pass
// manager writes the IR before and after every pass there. Returns (pass, changes, seconds)
// per pass run.
std::vector<std::tuple<std::string, int64_t, double>> optimize(Graph& graph, const std::string& pipeline,
                                                               const std::string& dump_dir) {
  PassManager manager(resolvePipeline(pipeline));
  manager.setLog(nullptr);
  if (!dump_dir.empty()) {
    manager.setDebug(true);
    manager.setDumpDir(dump_dir);
  }
  {
    py::gil_scoped_release release;
    manager.run(graph);
  }
  std::vector<std::tuple<std::string, int64_t, double>> records;
  for (const PassRecord& record : manager.records()) records.emplace_back(record.name, record.changes, record.seconds);
  return records;
}

// Writes the graph's text form with large weights elided, for dumps.
void dumpGraph(const Graph& graph, const std::string& path, const std::string& title) {
  PrintOptions options;
  options.elide_tensors_above_bytes = 4096;
  std::ofstream out(path, std::ios::binary);
  out << "# " << title << "\n" << printGraph(graph, options);
  if (!out) raise("cannot write the IR dump '", path, "'");
}

// A graph built by the GE backend and run in an SDK session on caller memory: inputs (mutable
// ones are updated in place) and outputs are addresses of torch tensors whose shapes the caller
// states, in graph order (the session's lean form: no names to match per call).
class CompiledGraph {
 public:
  // `options`: more build options by key (sdk::BuildConfig), such as precision_mode.
  CompiledGraph(const Graph& graph, int threads, const std::map<std::string, std::string>& options) {
    sdk::BuildConfig config = sdk::BuildConfig::fromMap(options);
    config.pipeline.clear();  // optimized already, by the caller's pipeline
    config.backend.num_threads = threads;
    py::gil_scoped_release release;
    model_ = sdk::buildGraph(graph, config);
    session_.addCompiledModel(kGraphId, model_);
  }

  // (dtype, shape) of each output for these inputs: their shapes, and their values where
  // the shapes of the outputs depend on them (a size given at run time).
  std::vector<std::pair<std::string, std::vector<int64_t>>> outputSpecs(const std::vector<uintptr_t>& addresses,
                                                                        const std::vector<std::vector<int64_t>>& shapes) {
    std::vector<ge::HostTensor> inputs = hostTensors(shapes, addresses);
    std::vector<ge::TensorDesc> descs;
    {
      py::gil_scoped_release release;
      descs = session_.outputDescs(kGraphId, inputs);
    }
    std::vector<std::pair<std::string, std::vector<int64_t>>> specs;
    for (const ge::TensorDesc& desc : descs) specs.emplace_back(std::string(dtypeName(desc.dtype)), desc.dimVector());
    return specs;
  }

  void run(const std::vector<uintptr_t>& input_addresses, const std::vector<std::vector<int64_t>>& input_shapes,
           const std::vector<uintptr_t>& output_addresses, const std::vector<std::vector<int64_t>>& output_shapes) {
    std::vector<ge::HostTensor> inputs = hostTensors(input_shapes, input_addresses);
    const auto& infos = model_->outputs();
    if (output_addresses.size() != infos.size() || output_shapes.size() != infos.size()) {
      raise("the graph has ", infos.size(), " outputs, ", output_addresses.size(), " were given");
    }
    std::vector<ge::HostTensor> outputs;
    for (size_t i = 0; i < infos.size(); ++i) {
      outputs.push_back(ge::HostTensor::of(ge::TensorDesc::of(infos[i].type.dtype, output_shapes[i]),
                                           reinterpret_cast<void*>(output_addresses[i])));
    }
    py::gil_scoped_release release;
    session_.runGraph(kGraphId, inputs, outputs);
  }

  // What the most recent plan runs: its op histogram (fused ops included) and the fusions
  // the backend made while building it.
  py::dict report() const {
    const ge::BuildReport& built = model_->report();
    py::dict report;
    report["ops_after"] = built.ops_after;
    report["fused_epilogues"] = built.fused_epilogues;
    report["folded_transposes"] = built.folded_transposes;
    return report;
  }

 private:
  std::vector<ge::HostTensor> hostTensors(const std::vector<std::vector<int64_t>>& shapes,
                                          const std::vector<uintptr_t>& addresses) const {
    const auto& infos = model_->inputs();
    if (shapes.size() != infos.size()) raise("the graph takes ", infos.size(), " inputs, ", shapes.size(), " were given");
    std::vector<ge::HostTensor> tensors;
    for (size_t i = 0; i < infos.size(); ++i) {
      void* data = addresses.empty() ? nullptr : reinterpret_cast<void*>(addresses[i]);
      tensors.push_back(ge::HostTensor::of(ge::TensorDesc::of(infos[i].type.dtype, shapes[i]), data));
    }
    return tensors;
  }

  static constexpr sdk::GraphId kGraphId = 0;
  std::shared_ptr<ge::CompiledModel> model_;
  sdk::Session session_;  // PyTorch may run a compiled module from several threads

  friend class TorchOp;
};

// One op run by Estuary and called like a PyTorch op: torch tensors in, new contiguous
// torch tensors out. What FX mode's fused ops run: the FX graph calls it directly, so that a
// call costs about what a PyTorch op's does (in Python, the same steps cost several times
// more inside a large graph, where the interpreter's code is no longer in the caches).
// Arguments after the tensors are constants of the build (an RMSNorm's eps), given as numbers
// or 0-d tensors (a model's Python float with dynamic=True), then the op's `fixed` ones; each
// new set of values is built once by `build(values) -> CompiledGraph`. The GIL is held
// throughout (the ops are single kernels on activations, shorter than a GIL hand-over), which
// also guards the op's own state; each run takes a context of the build's session.
class TorchOp {
 public:
  TorchOp(py::function build, std::vector<py::object> input_dtypes, std::vector<py::object> output_dtypes,
          py::object empty, py::object empty_like, std::string name, py::list fixed)
      : build_(std::move(build)), input_dtypes_(std::move(input_dtypes)), output_dtypes_(std::move(output_dtypes)),
        empty_(std::move(empty)), empty_like_(std::move(empty_like)), name_(std::move(name)), fixed_(std::move(fixed)) {}

  py::object call(const py::args& args) {
    const size_t count = input_dtypes_.size();
    if (args.size() < count) raise(name_, ": takes ", count, " tensors, ", args.size(), " arguments were given");
    CompiledGraph& graph = builtFor(args);
    std::vector<py::object> held;  // contiguous copies live until the run is done
    std::vector<ge::HostTensor> inputs;
    held.reserve(count);
    inputs.reserve(count);
    const auto& infos = graph.model_->inputs();
    for (size_t i = 0; i < count; ++i) {
      py::object tensor = py::reinterpret_borrow<py::object>(args[i]);
      py::object dtype = tensor.attr(names_.dtype);
      if (!dtype.is(input_dtypes_[i])) {
        raise(name_, ": tensor ", i, " has dtype ", py::str(dtype).cast<std::string>(), ", built for ",
              py::str(input_dtypes_[i]).cast<std::string>());
      }
      if (!tensor.attr(names_.is_contiguous)().cast<bool>()) tensor = tensor.attr(names_.contiguous)();
      std::vector<int64_t> dims;
      for (const py::handle& size : tensor.attr(names_.shape)) dims.push_back(PyLong_AsLongLong(size.ptr()));
      auto* data = reinterpret_cast<void*>(PyLong_AsVoidPtr(tensor.attr(names_.data_ptr)().ptr()));
      inputs.push_back(ge::HostTensor::of(ge::TensorDesc::of(infos[i].type.dtype, dims), data));
      held.push_back(std::move(tensor));
    }
    std::vector<ge::TensorDesc> descs = graph.session_.outputDescs(CompiledGraph::kGraphId, inputs);
    py::tuple results(descs.size());
    std::vector<ge::HostTensor> outputs;
    for (size_t k = 0; k < descs.size(); ++k) {
      // Most fused ops return their first input's shape and dtype: empty_like is the cheaper call.
      py::object result = descs[k] == inputs[0].desc() && output_dtypes_[k].is(input_dtypes_[0])
                              ? empty_like_(held[0])
                              : empty_(py::cast(descs[k].dimVector()), py::arg("dtype") = output_dtypes_[k]);
      outputs.push_back(ge::HostTensor::of(descs[k], PyLong_AsVoidPtr(result.attr(names_.data_ptr)().ptr())));
      results[k] = std::move(result);
    }
    graph.session_.runGraph(CompiledGraph::kGraphId, inputs, outputs);
    return descs.size() == 1 ? results[0] : py::object(results);
  }

 private:
  CompiledGraph& builtFor(const py::args& args) {
    key_.clear();  // a member, so that a call allocates nothing here
    for (size_t i = input_dtypes_.size(); i < args.size(); ++i) key_.push_back(constantOf(args[i]).cast<double>());
    auto found = built_.find(key_);
    if (found == built_.end()) {
      py::list values;
      for (size_t i = input_dtypes_.size(); i < args.size(); ++i) values.append(constantOf(args[i]));
      for (const py::handle& value : fixed_) values.append(value);
      py::object graph = build_(values);
      found = built_.emplace(key_, std::make_pair(graph, &graph.cast<CompiledGraph&>())).first;
    }
    return *found->second.second;
  }

  // A constant argument as a Python number: a 0-d tensor's item().
  py::object constantOf(py::handle arg) const {
    if (PyFloat_Check(arg.ptr()) || PyLong_Check(arg.ptr())) return py::reinterpret_borrow<py::object>(arg);
    return arg.attr(names_.item)();
  }

  // The tensor attributes a call reads, as Python strings made once.
  struct Names {
    py::str dtype{"dtype"}, is_contiguous{"is_contiguous"}, contiguous{"contiguous"}, shape{"shape"},
        data_ptr{"data_ptr"}, item{"item"};
  };

  py::function build_;
  std::vector<py::object> input_dtypes_, output_dtypes_;
  py::object empty_, empty_like_;
  std::string name_;
  Names names_;
  py::list fixed_;
  std::map<std::vector<double>, std::pair<py::object, CompiledGraph*>> built_;  // constants -> build
  std::vector<double> key_;
};

}  // namespace

void registerTorchBindings(py::module_& parent) {
  py::module_ m = parent.def_submodule("fx", "FX graphs into core IR, and GE runs on torch tensors' memory.");
  py::class_<FxRef>(m, "Ref", "A reference to the FX node at this index of the node list.")
      .def(py::init<size_t>(), py::arg("index"))
      .def_readonly("index", &FxRef::index);
  m.def("supported_targets", &supportedTargets, py::arg("extensions") = py::none(),
        "The FX call_function targets with a translation: the frontend's, registered extensions'\n"
        "and those of `extensions` ({target: function}).");
  m.def("translate", &translate, py::arg("name"), py::arg("nodes"), py::arg("outputs"),
        py::arg("extensions") = py::none(),
        "Translates an FX graph description into a core-IR Graph through the frontend 'pytorch';\n"
        "`extensions` ({target: function(node)}) translate targets Estuary lacks.");
  m.def("optimize", &optimize, py::arg("graph"), py::arg("pipeline"), py::arg("dump_dir") = "",
        "Runs a pipeline (YAML file or pass list) over the graph; returns (pass, changes, seconds) per run.");
  m.def("dump", &dumpGraph, py::arg("graph"), py::arg("path"), py::arg("title"),
        "Writes the graph's text form, large weights elided.");
  py::class_<CompiledGraph>(m, "CompiledGraph", "A graph built by the GE backend, run on torch tensors' memory.")
      .def(py::init<const Graph&, int, const std::map<std::string, std::string>&>(), py::arg("graph"),
           py::arg("threads") = 0, py::arg("options") = std::map<std::string, std::string>{})
      .def("output_specs", &CompiledGraph::outputSpecs, py::arg("input_addresses"), py::arg("input_shapes"))
      .def("run", &CompiledGraph::run, py::arg("input_addresses"), py::arg("input_shapes"),
           py::arg("output_addresses"), py::arg("output_shapes"))
      .def("report", &CompiledGraph::report);
  // dynamic_attr: FX's generated code names a call after its target's __module__ and __name__.
  py::class_<TorchOp>(m, "TorchOp", py::dynamic_attr(), "One op run by Estuary, called like a PyTorch op on torch tensors.")
      .def(py::init<py::function, std::vector<py::object>, std::vector<py::object>, py::object, py::object,
                    std::string, py::list>(),
           py::arg("build"), py::arg("input_dtypes"), py::arg("output_dtypes"), py::arg("empty"), py::arg("empty_like"),
           py::arg("name"), py::arg("fixed") = py::list())
      .def("__call__", &TorchOp::call);
}

}  // namespace estuary::python
