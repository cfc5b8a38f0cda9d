// `estuary._estuary.tf`: what estuary.tensorflow needs from C++. Python takes a concrete
// function's GraphDef and captured values from TensorFlow in memory; the frontend
// "tensorflow" translates them (estuary/tensorflow/concrete_function.h), the captured values
// wrapped where NumPy holds them, not copied.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "conversions.h"
#include "estuary/frontend/frontend.h"
#include "estuary/frontend/weights.h"
#include "estuary/support/error.h"
#include "estuary/tensorflow/concrete_function.h"
#include "frontend_bindings.h"
#include "tensorflow_bindings.h"

namespace py = pybind11;

namespace estuary::python {
namespace {

// A NumPy array's memory as a tensor, the array held (and released under the GIL) for as
// long as the graph or a model built from it uses the tensor.
Tensor wrapArray(WeightSource& weights, const std::string& name, const py::handle& value) {
  py::array array = py::array::ensure(value, py::array::c_style);
  if (!array) raise("captured value '", name, "' is not an array NumPy can hold");
  DType dtype = dtypeOfNumpy(array.dtype());
  std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
  auto* owner = new py::object(array);
  std::shared_ptr<const void> keep_alive(owner, [](const py::object* held) {
    py::gil_scoped_acquire gil;
    delete held;
  });
  std::string_view bytes(static_cast<const char*>(array.data()), static_cast<size_t>(array.nbytes()));
  return weights.fromBytes(dtype, shape, bytes, keep_alive, "captured value '" + name + "'");
}

// graph_def: GraphDef bytes; inputs and outputs: (tensor, name) pairs; captures:
// (Placeholder name, NumPy array) pairs.
std::shared_ptr<Graph> translate(const std::string& name, const py::bytes& graph_def,
                                 const std::vector<std::pair<std::string, std::string>>& inputs,
                                 const std::vector<std::pair<std::string, std::string>>& outputs,
                                 const py::list& captures, const py::object& extensions) {
  tensorflow::ConcreteFunction function;
  function.graph_def = graph_def;
  function.inputs = inputs;
  function.outputs = outputs;
  WeightSource weights("tf.function '" + name + "'");
  for (const py::handle& capture : captures) {
    auto pair = capture.cast<py::tuple>();
    std::string placeholder = pair[0].cast<std::string>();
    function.captures.emplace_back(placeholder, wrapArray(weights, placeholder, pair[1]));
  }
  FrontendOptions options;
  options.extensions = pythonExtensions(extensions, "tensorflow");
  ModelInput input = ModelInput::object(tensorflow::kConcreteFunctionObjectType, &function, nullptr,
                                        "tf.function '" + name + "'");
  py::gil_scoped_release release;
  return std::shared_ptr<Graph>(loadModel(input, options, "tensorflow"));
}

}  // namespace

void registerTensorflowBindings(py::module_& parent) {
  py::module_ m = parent.def_submodule("tf", "TensorFlow concrete functions into core IR, in memory.");
  m.def("translate", &translate, py::arg("name"), py::arg("graph_def"), py::arg("inputs"), py::arg("outputs"),
        py::arg("captures"), py::arg("extensions") = py::none(),
        "Translates a concrete function (its GraphDef bytes, its argument Placeholders and returned\n"
        "tensors as (tensor, name) pairs, and (Placeholder, array) pairs for what it captures) into a\n"
        "core-IR Graph through the frontend 'tensorflow'.");
}

}  // namespace estuary::python
