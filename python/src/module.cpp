// The `estuary._estuary` extension module: the C++ core and GE backend for Python.
// Python only hands over arrays and names; the C++ side does the work, without the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <filesystem>

#include "estuary/frontend/frontend.h"
#include "estuary/ge/model.h"
#include "estuary/ge/offline_model.h"
#include "estuary/ir/verifier.h"
#include "estuary/pass/manager.h"
#include "estuary/pass/pipeline.h"
#include "estuary/plugin/loader.h"
#include "estuary/sdk/build.h"
#include "estuary/sdk/parser.h"
#include "estuary/sdk/session.h"
#include "estuary/serialize/graph_file.h"
#include "estuary/support/error.h"
#include "estuary/support/limits.h"
#include "estuary/text/parser.h"
#include "estuary/text/printer.h"
#include "estuary/transforms/input_shapes.h"
#include "estuary/transforms/precision.h"
#include "frontend_bindings.h"
#include "conversions.h"
#include "tensorflow_bindings.h"
#include "torch_bindings.h"

namespace py = pybind11;

namespace estuary::python {
namespace {

py::dict ioInfo(const ge::IoInfo& info) {
  py::dict entry;
  entry["name"] = info.name;
  entry["dtype"] = std::string(dtypeName(info.type.dtype));
  py::list shape;
  for (const Dim& dim : info.type.shape.dims()) shape.append(dimObject(dim));
  entry["shape"] = shape;
  entry["mutable"] = info.is_mutable;
  return entry;
}

// A compiled model that any number of Python threads may run at once: run() releases the GIL
// and runs it in an SDK session (each run on a run context of its own), the same way a C++ or
// C integration does. Outputs are the session's buffers, handed to NumPy without a copy.
class Model {
 public:
  Model(std::shared_ptr<ge::CompiledModel> model) : model_(std::move(model)), session_(std::make_unique<sdk::Session>()) {
    session_->addCompiledModel(kGraphId, model_);
  }

  py::list run(const py::object& feeds) {
    std::vector<py::array> arrays;
    std::vector<sdk::NamedTensor> tensors = inputTensors(feeds, arrays);
    std::vector<sdk::NamedTensor> outputs;
    {
      py::gil_scoped_release release;
      outputs = session_->runGraph(kGraphId, tensors);
    }
    // Each array keeps the session's buffer alive (an output of data-dependent length, NonZero,
    // comes back with its actual dims, its values at the buffer's start).
    py::list results;
    for (sdk::NamedTensor& output : outputs) {
      auto* storage = new std::shared_ptr<void>(std::move(output.storage));
      py::capsule owner(storage, [](void* kept) { delete static_cast<std::shared_ptr<void>*>(kept); });
      const ge::TensorDesc desc = output.tensor.desc();
      results.append(py::array(numpyDtype(desc.dtype), desc.dimVector(), output.tensor.data, owner));
    }
    return results;
  }

  // A run on a context of its own that calls observer(info, array) after every step with each
  // result: info = {"node", "op", "value", "inputs": [value names]}, array a copy.
  py::list runObserved(const py::object& feeds, const py::function& observer) {
    std::vector<py::array> arrays;
    std::vector<sdk::NamedTensor> tensors = inputTensors(feeds, arrays);
    std::vector<ge::HostTensor> inputs;
    for (const sdk::NamedTensor& tensor : tensors) inputs.push_back(tensor.tensor);
    std::unique_ptr<ge::RunContext> context = model_->createContext();
    context->setObserver([&observer](const ge::ObservedValue& seen) {
      py::dict info;
      info["node"] = seen.node.name();
      info["op"] = seen.node.qualifiedOpType();
      info["value"] = seen.node.output(seen.output)->name();
      py::list input_names;
      for (const Value* input : seen.node.inputs()) input_names.append(input ? input->name() : std::string());
      info["inputs"] = input_names;
      const ge::TensorDesc desc = seen.tensor.desc();
      py::array copy(numpyDtype(desc.dtype), desc.dimVector());
      std::memcpy(copy.mutable_data(), seen.tensor.data, desc.byteSize());
      observer(info, copy);
    });
    py::list results;
    for (const ge::HostTensor& output : context->run(inputs)) {
      py::array copy(numpyDtype(output.dtype), output.desc().dimVector());
      std::memcpy(copy.mutable_data(), output.data, output.desc().byteSize());
      results.append(copy);
    }
    return results;
  }

  py::list inputs() const {
    py::list list;
    for (const ge::IoInfo& info : model_->inputs()) list.append(ioInfo(info));
    return list;
  }
  py::list outputs() const {
    py::list list;
    for (const ge::IoInfo& info : model_->outputs()) list.append(ioInfo(info));
    return list;
  }
  const ge::CompiledModel& compiled() const { return *model_; }

  // The feeds (a dict by name or a list in input order) as the model's input tensors; `arrays`
  // keeps the arrays they point into.
  std::vector<sdk::NamedTensor> inputTensors(const py::object& feeds, std::vector<py::array>& arrays) const {
    const auto& inputs = model_->inputs();
    arrays.assign(inputs.size(), py::array());
    if (py::isinstance<py::dict>(feeds)) {
      py::dict dict = feeds.cast<py::dict>();
      std::vector<bool> given(inputs.size(), false);
      for (auto item : dict) {
        size_t index = model_->inputIndex(item.first.cast<std::string>());
        arrays[index] = py::array::ensure(item.second);
        given[index] = true;
      }
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (!given[i]) raiseAs<InputValueError>("input '", inputs[i].name, "' was not given");
      }
    } else {
      py::sequence sequence = feeds.cast<py::sequence>();
      if (sequence.size() != inputs.size()) {
        raiseAs<InputValueError>("the model takes ", inputs.size(), " inputs, ", sequence.size(), " were given");
      }
      for (size_t i = 0; i < inputs.size(); ++i) arrays[i] = py::array::ensure(sequence[i]);
    }
    std::vector<sdk::NamedTensor> tensors(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      DType want = inputs[i].type.dtype;
      if (!arrays[i]) raiseAs<InputTypeError>("input '", inputs[i].name, "' is not convertible to an array");
      // Equivalent, not identical: an array that went through pickle (a Ray handle call) has a
      // dtype object of its own; a byte-swapped one is not equivalent and is refused.
      if (!py::detail::npy_api::get().PyArray_EquivTypes_(arrays[i].dtype().ptr(), numpyDtype(want).ptr())) {
        raiseAs<InputTypeError>("input '", inputs[i].name, "': expected dtype ", dtypeName(want), ", got ",
                                py::str(arrays[i].dtype()).cast<std::string>());
      }
      // Only a mutable input (a state the graph updates in place) is written, in the caller's
      // array itself: it must be writable and C-contiguous (a copy would take the update).
      // A read-only array (np.broadcast_to, a read-only memory map) serves any other input.
      const bool c_contiguous = arrays[i].flags() & py::array::c_style;
      if (inputs[i].is_mutable && (!arrays[i].writeable() || !c_contiguous)) {
        raiseAs<InputValueError>("input '", inputs[i].name, "' is updated in place by the model, but the array given is ",
                                 arrays[i].writeable() ? "not C-contiguous" : "read-only");
      }
      // Contiguous arrays are used in place; others are copied once into C order.
      if (!c_contiguous) arrays[i] = py::array::ensure(arrays[i], py::array::c_style);
      std::vector<int64_t> dims(arrays[i].shape(), arrays[i].shape() + arrays[i].ndim());
      tensors[i] = {inputs[i].name,
                    ge::HostTensor::of(ge::TensorDesc::of(want, dims), const_cast<void*>(arrays[i].data())), nullptr};
    }
    return tensors;
  }

 private:
  static constexpr sdk::GraphId kGraphId = 0;
  std::shared_ptr<ge::CompiledModel> model_;
  std::unique_ptr<sdk::Session> session_;
};

void optimizeGraph(Graph& graph, const std::string& pipeline, const std::vector<std::string>& disable) {
  sdk::BuildConfig config;
  config.pipeline = pipeline;
  config.disabled_passes = disable;
  std::unique_ptr<PassManager> manager = sdk::makePassManager(config);
  if (manager) manager->run(graph);
}

// The `limits` keyword: {"tensor": 4 << 30 or "4GiB", "plan": ..., "run": ..., "plans": 16},
// each key optional; None keeps this machine's defaults.
ResourceLimits limitsOf(const py::object& given) {
  ResourceLimits limits = ResourceLimits::forThisMachine();
  if (given.is_none()) return limits;
  if (!py::isinstance<py::dict>(given)) throw py::type_error("limits must be a dict such as {'tensor': '4GiB'}");
  for (auto [key, value] : given.cast<py::dict>()) {
    const std::string name = py::str(key);
    auto size = [&]() -> size_t {
      if (py::isinstance<py::str>(value)) return parseByteSize(value.cast<std::string>());
      if (!py::isinstance<py::int_>(value) || value.cast<py::int_>() < py::int_(0)) {
        throw py::value_error("limits['" + name + "'] must be a number of bytes or a size such as '4GiB'");
      }
      return value.cast<size_t>();
    };
    if (name == "tensor") {
      limits.tensor_bytes = size();
    } else if (name == "plan") {
      limits.plan_bytes = size();
    } else if (name == "run") {
      limits.run_bytes = size();
    } else if (name == "plans") {
      limits.plans = std::max<size_t>(1, value.cast<size_t>());
    } else {
      throw py::value_error("limits has no key '" + name + "' (keys: tensor, plan, run, plans)");
    }
  }
  return limits;
}

py::dict limitsDict(const ResourceLimits& limits) {
  py::dict result;
  result["tensor"] = limits.tensor_bytes;
  result["plan"] = limits.plan_bytes;
  result["run"] = limits.run_bytes;
  result["plans"] = limits.plans;
  return result;
}

// The `input_shapes` keyword: {"x": [1, 3, 224, 224], "ids": ["1~16", 128]} (-1 keeps a dim,
// "lo~hi" or (lo, hi) keeps it symbolic within a range), or the command line's spec string
// "x:1,3,224,224;ids:1~16,128". Both go through the SDK's one parser.
void setInputShapes(sdk::BuildConfig& config, const py::object& given) {
  if (given.is_none()) return;
  std::string spec;
  if (py::isinstance<py::str>(given)) {
    spec = given.cast<std::string>();
  } else if (py::isinstance<py::dict>(given)) {
    for (auto [key, dims] : given.cast<py::dict>()) {
      const std::string name = py::str(key);
      if (!py::isinstance<py::sequence>(dims) || py::isinstance<py::str>(dims)) {
        throw py::type_error("input_shapes['" + name + "'] must be a list of dims such as [1, 3, 224, 224]");
      }
      std::string list;
      for (py::handle dim : dims.cast<py::sequence>()) {
        std::string text;
        if (py::isinstance<py::int_>(dim) || py::isinstance<py::str>(dim)) {
          text = py::str(dim);
        } else if (py::isinstance<py::tuple>(dim) && py::len(dim) == 2) {
          text = py::str(dim.cast<py::tuple>()[0]).cast<std::string>() + "~" +
                 py::str(dim.cast<py::tuple>()[1]).cast<std::string>();
        } else {
          throw py::type_error("input_shapes['" + name + "']: a dim is a size, -1, \"lo~hi\" or (lo, hi), got " +
                               py::repr(dim).cast<std::string>());
        }
        list += (list.empty() ? "" : ",") + text;
      }
      spec += name + ":" + list + ";";
    }
  } else {
    throw py::type_error("input_shapes must be a dict {name: dims} or a string such as \"x:1,3,224,224\"");
  }
  sdk::parseInputShapeSpec(spec, config.input_shapes, config.input_ranges);
}

// The keyword arguments every loading function takes, as pybind11 declares them.
#define ESTUARY_LOAD_KWARGS                                                                          \
  py::arg("framework") = py::none(), py::arg("weights") = py::none(),                                 \
      py::arg("allowed_dirs") = std::vector<std::string>{}, py::arg("signature") = py::none(),      \
      py::arg("outputs") = std::vector<std::string>{},                                              \
      py::arg("frontend_options") = std::map<std::string, std::string>{}, py::arg("extensions") = py::none()

constexpr const char* kLoadKwargsDoc =
    "framework: the frontend ('onnx', ...); chosen from the model when None.\n"
    "weights: where the weights are when not where the frontend looks.\n"
    "allowed_dirs: folders besides the model's own where files the model names (external data,\n"
    "    weight shards) may lie; others are refused.\n"
    "signature: the variant to load (a SavedModel's signature).\n"
    "outputs: names of values to return instead of the model's outputs.\n"
    "frontend_options: frontend-specific keys {key: value}.\n"
    "extensions: {\"Op\" or \"domain::Op\": function(node: NodeContext) -> values}, translations of\n"
    "    ops the frontend lacks or that should translate differently.";

// An exception class deriving from both EstuaryError and a Python built-in, raised for the
// C++ ErrorType; returns the class.
template <typename ErrorType>
PyObject* registerBuiltinError(py::module_& m, const char* name, const py::object& estuary_error, PyObject* builtin) {
  py::tuple bases = py::make_tuple(estuary_error, py::reinterpret_borrow<py::object>(builtin));
  py::object type = py::reinterpret_steal<py::object>(
      PyErr_NewException((std::string("estuary._estuary.") + name).c_str(), bases.ptr(), nullptr));
  if (!type) throw py::error_already_set();
  m.attr(name) = type;
  static PyObject* const raised_type = type.release().ptr();  // lives as long as the module
  py::register_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised) std::rethrow_exception(raised);
    } catch (const ErrorType& error) {
      PyErr_SetString(raised_type, error.what());
    }
  });
  return raised_type;
}

}  // namespace
}  // namespace estuary::python

PYBIND11_MODULE(_estuary, m) {
  using namespace estuary;
  using estuary::python::Model;
  using estuary::python::registerBuiltinError;
  m.doc() = "Estuary: one graph IR, YAML pass pipelines, and a graph-engine backend for the CPU.";
  auto estuary_error = py::register_exception<Error>(m, "EstuaryError", PyExc_RuntimeError);
  // Any other C++ exception (a bug: an index out of range) is an EstuaryError too, saying it
  // is internal, so that callers (the torch.compile fallback) catch one type. pybind11 tries
  // the translators registered last first: this one passes Estuary's own errors, bad_alloc
  // and the exceptions pybind11 translates itself on by rethrowing.
  static PyObject* const internal_error_type = estuary_error.ptr();
  py::register_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised) std::rethrow_exception(raised);
    } catch (const Error&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const py::builtin_exception&) {
      throw;  // py::value_error and its kin: Python's own exception types, meant as such
    } catch (const py::error_already_set&) {
      throw;
    } catch (const std::exception& error) {
      PyErr_SetString(internal_error_type, (std::string("internal error: ") + error.what()).c_str());
    }
  });
  // Registered after its base, so that its translator is tried first.
  py::register_exception<UnsupportedOpsError>(m, "UnsupportedOpsError", estuary_error.ptr());
  // Input errors are EstuaryErrors and what Python callers expect: TypeError for a wrong
  // dtype or kind, ValueError for a wrong shape, size or name.
  registerBuiltinError<InputTypeError>(m, "InputTypeError", estuary_error, PyExc_TypeError);
  registerBuiltinError<InputValueError>(m, "InputValueError", estuary_error, PyExc_ValueError);
  // A model past its resource limits, or memory running out anywhere: an EstuaryError and a
  // MemoryError, never an abort.
  static PyObject* const resource_limit_type =
      registerBuiltinError<ResourceLimitError>(m, "ResourceLimitError", estuary_error, PyExc_MemoryError);
  py::register_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised) std::rethrow_exception(raised);
    } catch (const std::bad_alloc&) {
      PyErr_SetString(resource_limit_type, "out of memory");
    }
  });
  m.def(
      "precision_modes",
      [] {
        py::dict modes;
        for (std::string_view spelling : precisionModeSpellingList()) {
          modes[py::str(std::string(spelling))] = precisionModeName(*parsePrecisionMode(spelling));
        }
        return modes;
      },
      "Every spelling precision_mode takes (Estuary's and ATC's), each with the mode's name.");
  m.def("default_limits", [] { return python::limitsDict(ResourceLimits::forThisMachine()); },
        "This machine's resource limits, in bytes (tensor, plan, run) and plans per model: what\n"
        "`limits` starts from.");

  py::class_<Graph, std::shared_ptr<Graph>>(m, "Graph", "A graph in Estuary's core IR.")
      .def_static("parse", [](const std::string& text) { return std::shared_ptr<Graph>(parseGraph(text)); },
                  py::arg("text"), "Parses the text form.")
      .def_static("load", [](const std::string& path) { return std::shared_ptr<Graph>(readGraphFile(path)); },
                  py::arg("path"), "Reads a .est text file or a binary IR file.")
      .def("save", [](const Graph& graph, const std::string& path) { writeGraphFile(graph, path); }, py::arg("path"))
      .def("text", [](const Graph& graph) { return printGraph(graph); })
      .def("verify", [](const Graph& graph) { verifyGraph(graph); })
      .def_static("import_model",
                  [](const py::object& model, const std::optional<std::string>& framework,
                     const std::optional<std::string>& weights, const std::vector<std::string>& allowed_dirs, const std::optional<std::string>& signature,
                     const std::vector<std::string>& outputs, const std::map<std::string, std::string>& keys,
                     const py::object& extensions) {
                    python::LoadArguments load{framework, weights, allowed_dirs, signature, outputs, keys, extensions};
                    sdk::BuildConfig config = load.config();
                    ModelInput input = python::modelInputOf(model);
                    py::gil_scoped_release release;
                    return std::shared_ptr<Graph>(sdk::parseModel(input, config));
                  },
                  py::arg("model"), ESTUARY_LOAD_KWARGS,
                  (std::string("Translates a framework's model (a file, a directory, or a list of paths)\n"
                               "into core IR.\n") + python::kLoadKwargsDoc).c_str())
      .def("optimize", &estuary::python::optimizeGraph, py::arg("pipeline"),
           py::arg("disable") = std::vector<std::string>{},
           "Runs a shipped pipeline ('O2'), a pipeline YAML file or a pass list\n"
           "('canonicalize,cse,dce') in place; `disable` switches passes off by name.")
      .def_property_readonly("name", &Graph::name)
      .def_property_readonly("num_nodes", &Graph::numNodes)
      .def("op_counts", [](const Graph& graph) {
        std::map<std::string, size_t> counts;
        for (Node* node : graph.nodes()) ++counts[node->qualifiedOpType()];
        return counts;
      })
      .def("__str__", [](const Graph& graph) { return printGraph(graph); });

  m.def(
      "load_plugin",
      [](const std::string& name_or_path) {
        PluginHandle plugin = PluginLoader::global().load(name_or_path);
        py::dict registered;
        registered["name"] = plugin->name();
        registered["path"] = plugin->path();
        registered["ops"] = plugin->ops();
        registered["passes"] = plugin->passes();
        registered["frontends"] = plugin->frontends();
        registered["conversions"] = plugin->conversions();
        return registered;
      },
      py::arg("name_or_path"),
      "Loads a plugin (a name found like pipeline plugins, or a path): its ops, passes,\n"
      "frontends and conversion extensions are registered for every later load. Returns\n"
      "what it registered.");
  m.def(
      "convert",
      [](const py::object& model, const std::optional<std::string>& output, const py::object& input_shapes,
         const std::string& pipeline, const std::vector<std::string>& disable, int threads,
         const std::string& device, const std::string& precision_mode, const std::optional<std::string>& precision_lists,
         const std::optional<std::string>& modify_mixlist, const std::optional<std::string>& keep_dtype,
         bool allow_slow_precision, bool tune_kernels, const std::optional<std::string>& timing_cache,
         double tuning_budget, const py::object& limits, const std::optional<std::string>& framework,
         const std::optional<std::string>& weights, const std::vector<std::string>& allowed_dirs,
         const std::optional<std::string>& signature, const std::vector<std::string>& outputs,
         const std::map<std::string, std::string>& keys, const py::object& extensions) {
        python::LoadArguments load{framework, weights, allowed_dirs, signature, outputs, keys, extensions};
        sdk::BuildConfig config = load.config();
        python::setInputShapes(config, input_shapes);
        config.pipeline = pipeline;
        config.disabled_passes = disable;
        config.set("device", device);
        config.set("precision_mode", precision_mode);
        config.precision_lists = precision_lists.value_or("");
        config.modify_mixlist = modify_mixlist.value_or("");
        config.keep_dtype = keep_dtype.value_or("");
        config.allow_slow_precision = allow_slow_precision;
        config.backend.tune_kernels = tune_kernels;
        config.set("timing_cache", timing_cache.value_or(""));
        config.set("tuning_budget", std::to_string(tuning_budget));
        config.backend.num_threads = threads;
        config.backend.limits = python::limitsOf(limits);
        ModelInput input = python::modelInputOf(model);
        py::gil_scoped_release release;
        std::shared_ptr<ge::CompiledModel> converted = sdk::convertModel(input, config);
        if (output) converted->save(*output);
        return Model(converted);
      },
      py::arg("model"), py::arg("output") = py::none(), py::kw_only(), py::arg("input_shapes") = py::none(),
      py::arg("pipeline") = "O2", py::arg("disable") = std::vector<std::string>{}, py::arg("threads") = 0,
      py::arg("device") = "cpu", py::arg("precision_mode") = "origin", py::arg("precision_lists") = py::none(),
      py::arg("modify_mixlist") = py::none(), py::arg("keep_dtype") = py::none(), py::arg("allow_slow_precision") = false,
      py::arg("tune_kernels") = false, py::arg("timing_cache") = py::none(), py::arg("tuning_budget") = 60.0,
      py::arg("limits") = py::none(), ESTUARY_LOAD_KWARGS,
      (std::string("Converts a framework's model into a runnable Model, like `estuary convert`: translate,\n"
                   "fix input_shapes ({'x': [1, 3, 224, 224]}, -1 keeps a dim symbolic, '1~16' or (1, 16) bounds it;\n"
                   "or the command line's 'x:1,3,224,224'), run the pipeline,\n"
                   "build; writes the offline model to `output` when given.\n"
                   "device: 'cpu', or 'reference' (plain kernels in f32/f64, to check results against).\n"
                   "precision_mode: 'origin' (the model's dtypes), 'fp32', 'bf16', 'fp16', 'mixed-bf16', 'mixed-fp16'\n"
                   "    or ATC's names; precision_lists, modify_mixlist and keep_dtype are files as `estuary convert`\n"
                   "    takes them; a 16-bit mode this CPU has no fast kernels for is refused unless\n"
                   "    allow_slow_precision=True.\n"
                   "tune_kernels: time each kernel a node could run on this machine and keep the fastest, as\n"
                   "    `estuary convert` does by default (off here: builds stay fast and reproducible);\n"
                   "    timing_cache: a file of earlier measurements, reused and extended; tuning_budget: the\n"
                   "    most seconds measuring may take.\n"
                   "limits: {'tensor': '4GiB', 'plan': ..., 'run': ..., 'plans': 16}, any of them, replacing\n"
                   "    this machine's defaults (default_limits()); a model past them raises ResourceLimitError.\n") +
       python::kLoadKwargsDoc).c_str());

  py::class_<Model>(m, "Model", "A graph built by the GE backend for a device (the CPU unless told), ready to run.")
      .def(py::init([](const py::object& source, int threads, const std::string& device, const py::object& limits,
                       const py::object& input_shapes, const std::map<std::string, std::string>& options,
                       const std::optional<std::string>& framework,
                       const std::optional<std::string>& weights, const std::vector<std::string>& allowed_dirs, const std::optional<std::string>& signature,
                       const std::vector<std::string>& outputs, const std::map<std::string, std::string>& keys,
                       const py::object& extensions) {
             python::LoadArguments load{framework, weights, allowed_dirs, signature, outputs, keys, extensions};
             sdk::BuildConfig config = load.config();
             for (const auto& [key, value] : options) config.set(key, value);
             python::setInputShapes(config, input_shapes);
             config.set("device", device);
             config.backend.num_threads = threads;
             config.backend.limits = python::limitsOf(limits);
             if (py::isinstance<Graph>(source)) {
               std::shared_ptr<Graph> graph = source.cast<std::shared_ptr<Graph>>();
               config.pipeline.clear();  // a Graph is built as it is; Graph.optimize() runs pipelines
               py::gil_scoped_release release;
               return Model(sdk::buildGraph(*graph, config));
             }
             ModelInput input = python::modelInputOf(source);
             py::gil_scoped_release release;
             return Model(sdk::openModel(input, config));
           }),
           py::arg("source"), py::arg("threads") = 0, py::kw_only(), py::arg("device") = "cpu", py::arg("limits") = py::none(),
           py::arg("input_shapes") = py::none(), py::arg("options") = std::map<std::string, std::string>{},
           ESTUARY_LOAD_KWARGS,
           (std::string("Loads an offline model (.eom), builds an IR file (.est, .estir) or a Graph, or\n"
                        "converts a framework's model (a file, a directory, or a list of paths) with the O2\n"
                        "pipeline. threads=0 uses every core; device, limits and input_shapes as estuary.convert\n"
                        "takes them; options: more build options by key (the SDK's BuildConfig keys), e.g.\n"
                        "{'precision_mode': 'bf16'}.\n") +
            python::kLoadKwargsDoc).c_str())
      .def("run", &Model::run, py::arg("inputs"),
           "Runs with a dict name -> array or a list in input order; returns the outputs as a list.\n"
           "C-contiguous inputs of the right dtype are read in place; outputs are written in place.")
      .def("run_observed", &Model::runObserved, py::arg("inputs"), py::arg("observer"),
           "Runs as run() does, and calls observer(info, array) after every step of the plan with each\n"
           "result it computed: info = {'node', 'op', 'value', 'inputs': [value names]}, array a copy in\n"
           "row-major order. What `estuary compare` measures; slower than run().")
      .def_property_readonly("inputs", &Model::inputs)
      .def_property_readonly("outputs", &Model::outputs)
      .def_property_readonly("num_threads", [](const Model& model) { return model.compiled().numThreads(); })
      .def_property_readonly("device", [](const Model& model) { return model.compiled().device().name(); },
                             "The device the model was built for: 'cpu' or 'reference'.")
      .def("report", [](const Model& model) {
        const ge::BuildReport& report = model.compiled().report();
        py::dict result;
        result["ops_before"] = report.ops_before;
        result["ops_after"] = report.ops_after;
        result["planned_activation_bytes"] = report.planned_activation_bytes;
        result["lower_bound_bytes"] = report.lower_bound_bytes;
        result["weight_bytes"] = report.weight_bytes;
        result["kernels"] = report.kernels;
        result["tuning"] = report.tuning;  // per node with a choice of kernels: the choice and its times
        result["warnings"] = report.warnings;  // what the build worked around (an unreadable timing cache)
        result["properties"] = model.compiled().properties();
        py::dict node_dtypes;  // the dtype each node of the built graph computes its first result in
        for (const Node* node : model.compiled().graph().nodes()) {
          if (!node->is("Constant") && node->numOutputs() > 0) {
            node_dtypes[py::str(node->name())] = dtypeName(node->output()->dtype());
          }
        }
        result["node_dtypes"] = node_dtypes;
        return result;
      });
  python::registerFrontendBindings(m);
  python::registerTorchBindings(m);
  python::registerTensorflowBindings(m);
}
