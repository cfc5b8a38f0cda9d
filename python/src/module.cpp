// The `estuary._estuary` extension module: the C++ core and GE backend for Python.
// Python only hands over arrays and names; the C++ side does the work, without the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>

#include "estuary/frontend/frontend.h"
#include "estuary/ge/model.h"
#include "estuary/ge/offline_model.h"
#include "estuary/ir/verifier.h"
#include "estuary/pass/manager.h"
#include "estuary/pass/pipeline.h"
#include "estuary/serialize/graph_file.h"
#include "estuary/support/error.h"
#include "estuary/text/parser.h"
#include "estuary/text/printer.h"
#include "estuary/transforms/input_shapes.h"
#include "torch_bindings.h"

namespace py = pybind11;

namespace estuary::python {
namespace {

py::dtype numpyDtype(DType dtype) {
  switch (dtype) {
    case DType::F32: return py::dtype::of<float>();
    case DType::F64: return py::dtype::of<double>();
    case DType::F16: return py::dtype("float16");
    case DType::I8: return py::dtype::of<int8_t>();
    case DType::I16: return py::dtype::of<int16_t>();
    case DType::I32: return py::dtype::of<int32_t>();
    case DType::I64: return py::dtype::of<int64_t>();
    case DType::U8: return py::dtype::of<uint8_t>();
    case DType::Bool: return py::dtype::of<bool>();
    case DType::BF16: {
      // NumPy has no bfloat16; ml_dtypes (which JAX, ONNX and TensorFlow use) adds it.
      py::object bfloat16;
      try {
        bfloat16 = py::module_::import("ml_dtypes").attr("bfloat16");
      } catch (const py::error_already_set&) {
        raise("bf16 arrays need the ml_dtypes package (pip install ml_dtypes)");
      }
      return py::dtype::from_args(bfloat16);
    }
    default: raise("NumPy has no dtype for ", dtypeName(dtype));
  }
}

py::object dimObject(const Dim& dim) {
  if (dim.isStatic()) return py::int_(dim.value());
  if (dim.isSymbolic()) return py::str(dim.str());
  return py::none();
}

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

// A compiled model with one run context per Python object: Python callers that want several
// threads create several Model objects over one file, or share through C++.
class Model {
 public:
  Model(std::shared_ptr<ge::CompiledModel> model) : model_(std::move(model)), context_(model_->createContext()) {}

  py::list run(const py::object& feeds) {
    const auto& inputs = model_->inputs();
    std::vector<py::array> arrays(inputs.size());
    if (py::isinstance<py::dict>(feeds)) {
      py::dict dict = feeds.cast<py::dict>();
      std::vector<bool> given(inputs.size(), false);
      for (auto item : dict) {
        size_t index = model_->inputIndex(item.first.cast<std::string>());
        arrays[index] = py::array::ensure(item.second);
        given[index] = true;
      }
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (!given[i]) raise("input '", inputs[i].name, "' was not given");
      }
    } else {
      py::sequence sequence = feeds.cast<py::sequence>();
      if (sequence.size() != inputs.size()) raise("the model takes ", inputs.size(), " inputs, ", sequence.size(), " were given");
      for (size_t i = 0; i < inputs.size(); ++i) arrays[i] = py::array::ensure(sequence[i]);
    }
    std::vector<ge::HostTensor> tensors(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      DType want = inputs[i].type.dtype;
      if (!arrays[i]) raise("input '", inputs[i].name, "' is not convertible to an array");
      if (!arrays[i].dtype().is(numpyDtype(want))) {
        raise("input '", inputs[i].name, "': expected dtype ", dtypeName(want), ", got ",
              py::str(arrays[i].dtype()).cast<std::string>());
      }
      // Contiguous arrays are used in place; others are copied once into C order.
      if (!(arrays[i].flags() & py::array::c_style)) arrays[i] = py::array::ensure(arrays[i], py::array::c_style);
      std::vector<int64_t> dims(arrays[i].shape(), arrays[i].shape() + arrays[i].ndim());
      tensors[i] = ge::HostTensor::of(ge::TensorDesc::of(want, dims), arrays[i].mutable_data());
    }
    std::vector<ge::TensorDesc> descs;
    {
      py::gil_scoped_release release;
      descs = context_->outputDescs(tensors);
    }
    py::list results;
    std::vector<ge::HostTensor> outputs;
    for (const ge::TensorDesc& desc : descs) {
      py::array array(numpyDtype(desc.dtype), desc.dimVector());
      outputs.push_back(ge::HostTensor::of(desc, array.mutable_data()));
      results.append(array);
    }
    {
      py::gil_scoped_release release;
      context_->run(tensors, outputs);
    }
    // An output of data-dependent length (NonZero) was allocated at its upper bound; its
    // values sit compactly at the start, so the result is a view of that prefix.
    const std::vector<ge::TensorDesc>& produced = context_->producedOutputDescs();
    for (size_t k = 0; k < descs.size(); ++k) {
      if (produced[k] == descs[k]) continue;
      py::array flat = results[k].cast<py::array>().attr("reshape")(-1);
      results[k] = flat[py::slice(0, produced[k].numElements(), 1)].attr("reshape")(py::cast(produced[k].dimVector()));
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

 private:
  std::shared_ptr<ge::CompiledModel> model_;
  std::unique_ptr<ge::RunContext> context_;
};

// Where the shipped pipelines (configs/*.yaml) are; set by the package's __init__.py.
std::string& configDir() {
  static std::string dir;
  return dir;
}

// A pipeline YAML path, the name of a shipped pipeline ("O2"), or a pass list.
Pipeline pipelineFor(const std::string& pipeline) {
  if (pipeline.find('/') != std::string::npos || pipeline.find(".yaml") != std::string::npos ||
      pipeline.find(".yml") != std::string::npos) {
    return loadPipelineFile(pipeline);
  }
  std::string shipped = configDir() + "/" + pipeline + ".yaml";
  if (!configDir().empty() && std::filesystem::exists(shipped)) return loadPipelineFile(shipped);
  return parsePassList(pipeline);
}

void optimizeGraph(Graph& graph, const std::string& pipeline, const std::vector<std::string>& disable) {
  PassManager manager(pipelineFor(pipeline));
  for (const std::string& name : disable) manager.setEnabled(name, false);
  manager.setLog(nullptr);
  manager.run(graph);
}

std::shared_ptr<Graph> importModel(const std::string& path, const std::optional<std::string>& framework) {
  std::shared_ptr<const Frontend> frontend = framework ? loadFrontend(*framework) : frontendForFile(path);
  std::shared_ptr<Graph> graph = frontend->load(path);
  verifyGraph(*graph);
  return graph;
}

struct ConvertOptions {
  std::optional<std::string> output;
  std::optional<std::string> framework;
  InputShapes input_shapes;
  std::string pipeline = "O2";
  std::vector<std::string> disable;
  int threads = 0;
};

// What `estuary convert` does: translate, fix input shapes, optimize, build, and save when
// asked to.
std::shared_ptr<ge::CompiledModel> convertModel(const std::string& path, const ConvertOptions& options) {
  std::shared_ptr<Graph> graph = importModel(path, options.framework);
  fixInputShapes(*graph, options.input_shapes);
  optimizeGraph(*graph, options.pipeline, options.disable);
  ge::BuildOptions build;
  build.num_threads = options.threads;
  std::shared_ptr<ge::CompiledModel> model = ge::CompiledModel::build(*graph, build);
  if (options.output) model->save(*options.output);
  return model;
}

bool hasExtension(const std::string& path, std::string_view extension) {
  return path.size() > extension.size() && path.compare(path.size() - extension.size(), extension.size(), extension) == 0;
}

}  // namespace
}  // namespace estuary::python

PYBIND11_MODULE(_estuary, m) {
  using namespace estuary;
  using estuary::python::Model;
  m.doc() = "Estuary: one graph IR, YAML pass pipelines, and a graph-engine backend for the CPU.";
  auto estuary_error = py::register_exception<Error>(m, "EstuaryError", PyExc_RuntimeError);
  // Registered after its base, so that its translator is tried first.
  py::register_exception<UnsupportedOpsError>(m, "UnsupportedOpsError", estuary_error.ptr());

  py::class_<Graph, std::shared_ptr<Graph>>(m, "Graph", "A graph in Estuary's core IR.")
      .def_static("parse", [](const std::string& text) { return std::shared_ptr<Graph>(parseGraph(text)); },
                  py::arg("text"), "Parses the text form.")
      .def_static("load", [](const std::string& path) { return std::shared_ptr<Graph>(readGraphFile(path)); },
                  py::arg("path"), "Reads a .est text file or a binary IR file.")
      .def("save", [](const Graph& graph, const std::string& path) { writeGraphFile(graph, path); }, py::arg("path"))
      .def("text", [](const Graph& graph) { return printGraph(graph); })
      .def("verify", [](const Graph& graph) { verifyGraph(graph); })
      .def_static("import_model",
                  [](const std::string& path, const std::optional<std::string>& framework) {
                    py::gil_scoped_release release;
                    return estuary::python::importModel(path, framework);
                  },
                  py::arg("path"), py::arg("framework") = py::none(),
                  "Translates a framework's model (an .onnx file, ...) into core IR. The frontend is\n"
                  "found from the file unless `framework` names it.")
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

  m.def("_set_config_dir", [](const std::string& dir) { estuary::python::configDir() = dir; });
  m.def(
      "convert",
      [](const std::string& model, const std::optional<std::string>& output,
         const std::optional<std::string>& framework, const InputShapes& input_shapes, const std::string& pipeline,
         const std::vector<std::string>& disable, int threads) {
        estuary::python::ConvertOptions options{output, framework, input_shapes, pipeline, disable, threads};
        py::gil_scoped_release release;
        return Model(estuary::python::convertModel(model, options));
      },
      py::arg("model"), py::arg("output") = py::none(), py::kw_only(), py::arg("framework") = py::none(),
      py::arg("input_shapes") = InputShapes{}, py::arg("pipeline") = "O2",
      py::arg("disable") = std::vector<std::string>{}, py::arg("threads") = 0,
      "Converts a framework's model into a runnable Model, like `estuary convert`: translate,\n"
      "fix input_shapes ({'x': [1, 3, 224, 224]}, -1 keeps a dim symbolic), run the pipeline,\n"
      "build; writes the offline model to `output` when given.");

  py::class_<Model>(m, "Model", "A graph built by the GE backend for the CPU, ready to run.")
      .def(py::init([](const py::object& source, int threads) {
             ge::BuildOptions options;
             options.num_threads = threads;
             if (py::isinstance<Graph>(source)) {
               return Model(ge::CompiledModel::build(*source.cast<std::shared_ptr<Graph>>(), options));
             }
             std::string path = py::str(source);
             py::gil_scoped_release release;
             if (ge::isOfflineModelFile(path)) return Model(ge::CompiledModel::load(path, options));
             if (estuary::python::hasExtension(path, ".est") || estuary::python::hasExtension(path, ".estir")) {
               std::unique_ptr<Graph> graph = readGraphFile(path);
               return Model(ge::CompiledModel::build(*graph, options));
             }
             estuary::python::ConvertOptions convert;
             convert.threads = threads;
             return Model(estuary::python::convertModel(path, convert));
           }),
           py::arg("source"), py::arg("threads") = 0,
           "Loads an offline model (.eom), builds an IR file (.est, .estir) or a Graph, or\n"
           "converts a framework's model (.onnx, ...) with the O2 pipeline. threads=0 uses every core.")
      .def("run", &Model::run, py::arg("inputs"),
           "Runs with a dict name -> array or a list in input order; returns the outputs as a list.\n"
           "C-contiguous inputs of the right dtype are read in place; outputs are written in place.")
      .def_property_readonly("inputs", &Model::inputs)
      .def_property_readonly("outputs", &Model::outputs)
      .def_property_readonly("num_threads", [](const Model& model) { return model.compiled().numThreads(); })
      .def("report", [](const Model& model) {
        const ge::BuildReport& report = model.compiled().report();
        py::dict result;
        result["ops_before"] = report.ops_before;
        result["ops_after"] = report.ops_after;
        result["planned_activation_bytes"] = report.planned_activation_bytes;
        result["lower_bound_bytes"] = report.lower_bound_bytes;
        result["weight_bytes"] = report.weight_bytes;
        result["kernels"] = report.kernels;
        return result;
      });
  estuary::python::registerTorchBindings(m);
}
