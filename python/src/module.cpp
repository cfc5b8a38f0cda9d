// The `estuary._estuary` extension module: the C++ core and GE backend for Python.
// Python only hands over arrays and names; the C++ side does the work, without the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "estuary/ge/model.h"
#include "estuary/ge/offline_model.h"
#include "estuary/ir/verifier.h"
#include "estuary/pass/manager.h"
#include "estuary/pass/pipeline.h"
#include "estuary/serialize/graph_file.h"
#include "estuary/support/error.h"
#include "estuary/text/parser.h"
#include "estuary/text/printer.h"

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

void optimizeGraph(Graph& graph, const std::string& pipeline) {
  Pipeline steps = pipeline.find(".yaml") != std::string::npos || pipeline.find(".yml") != std::string::npos
                       ? loadPipelineFile(pipeline)
                       : parsePassList(pipeline);
  PassManager manager(std::move(steps));
  manager.setLog(nullptr);
  manager.run(graph);
}

}  // namespace
}  // namespace estuary::python

PYBIND11_MODULE(_estuary, m) {
  using namespace estuary;
  using estuary::python::Model;
  m.doc() = "Estuary: one graph IR, YAML pass pipelines, and a graph-engine backend for the CPU.";
  py::register_exception<Error>(m, "EstuaryError", PyExc_RuntimeError);

  py::class_<Graph, std::shared_ptr<Graph>>(m, "Graph", "A graph in Estuary's core IR.")
      .def_static("parse", [](const std::string& text) { return std::shared_ptr<Graph>(parseGraph(text)); },
                  py::arg("text"), "Parses the text form.")
      .def_static("load", [](const std::string& path) { return std::shared_ptr<Graph>(readGraphFile(path)); },
                  py::arg("path"), "Reads a .est text file or a binary IR file.")
      .def("save", [](const Graph& graph, const std::string& path) { writeGraphFile(graph, path); }, py::arg("path"))
      .def("text", [](const Graph& graph) { return printGraph(graph); })
      .def("verify", [](const Graph& graph) { verifyGraph(graph); })
      .def("optimize", &estuary::python::optimizeGraph, py::arg("pipeline"),
           "Runs a pass list ('canonicalize,cse,dce') or a pipeline YAML file in place.")
      .def_property_readonly("name", &Graph::name)
      .def_property_readonly("num_nodes", &Graph::numNodes)
      .def("op_counts", [](const Graph& graph) {
        std::map<std::string, size_t> counts;
        for (Node* node : graph.nodes()) ++counts[node->qualifiedOpType()];
        return counts;
      })
      .def("__str__", [](const Graph& graph) { return printGraph(graph); });

  py::class_<Model>(m, "Model", "A graph built by the GE backend for the CPU, ready to run.")
      .def(py::init([](const py::object& source, int threads) {
             ge::BuildOptions options;
             options.num_threads = threads;
             if (py::isinstance<Graph>(source)) {
               return Model(ge::CompiledModel::build(*source.cast<std::shared_ptr<Graph>>(), options));
             }
             std::string path = py::str(source);
             if (ge::isOfflineModelFile(path)) return Model(ge::CompiledModel::load(path, options));
             std::unique_ptr<Graph> graph = readGraphFile(path);
             return Model(ge::CompiledModel::build(*graph, options));
           }),
           py::arg("source"), py::arg("threads") = 0,
           "Loads an offline model (.eom), or builds one from an IR file path or a Graph.\n"
           "threads=0 uses every core.")
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
}
