#include "frontend_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>

#include "estuary/frontend/node_context.h"
#include "estuary/support/error.h"
#include "conversions.h"

namespace py = pybind11;

namespace estuary::python {
namespace {

py::array arrayOf(const Tensor& tensor) {
  py::array array(numpyDtype(tensor.dtype()), tensor.shape());
  if (tensor.byteSize() > 0) std::memcpy(array.mutable_data(), tensor.data(), tensor.byteSize());
  return array;
}

Tensor tensorOf(const py::object& object) {
  py::array array = py::array::ensure(object, py::array::c_style);
  if (!array) raise("a constant must be convertible to a NumPy array");
  std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
  return Tensor::copyOf(dtypeOfNumpy(array.dtype()), shape, array.data());
}

// A decoded attribute as a Python value: numbers, strings, lists, NumPy arrays for tensors,
// dtype names for element types.
py::object pythonValue(const AttrValue& value) {
  return std::visit(
      [](const auto& data) -> py::object {
        using T = std::decay_t<decltype(data)>;
        if constexpr (std::is_same_v<T, std::monostate> || std::is_same_v<T, AttrValue::GraphRef> ||
                      std::is_same_v<T, std::vector<AttrValue::GraphRef>>) {
          return py::none();
        } else if constexpr (std::is_same_v<T, DType>) {
          return py::str(std::string(dtypeName(data)));
        } else if constexpr (std::is_same_v<T, std::vector<DType>>) {
          py::list names;
          for (DType dtype : data) names.append(std::string(dtypeName(dtype)));
          return names;
        } else if constexpr (std::is_same_v<T, Tensor>) {
          return arrayOf(data);
        } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
          py::list arrays;
          for (const Tensor& tensor : data) arrays.append(arrayOf(tensor));
          return arrays;
        } else if constexpr (std::is_same_v<T, AttrShape>) {
          return data.ranked ? py::object(py::cast(data.dims)) : py::none();
        } else if constexpr (std::is_same_v<T, std::vector<AttrShape>>) {
          py::list shapes;
          for (const AttrShape& shape : data) shapes.append(shape.ranked ? py::object(py::cast(shape.dims)) : py::none());
          return shapes;
        } else {
          return py::cast(data);
        }
      },
      value.data);
}

// A Python value as an IR attribute: int, float, str, a NumPy dtype (element type), an
// array (tensor), or a list of ints, floats or strs.
Attribute attributeOf(const std::string& name, const py::handle& object) {
  if (py::isinstance<py::bool_>(object)) return int64_t{object.cast<bool>()};
  if (py::isinstance<py::int_>(object)) return object.cast<int64_t>();
  if (py::isinstance<py::float_>(object)) return object.cast<double>();
  if (py::isinstance<py::str>(object)) return object.cast<std::string>();
  if (py::isinstance<py::array>(object)) return tensorOf(py::reinterpret_borrow<py::object>(object));
  if (py::isinstance<py::dtype>(object) || py::isinstance<py::type>(object)) {
    return dtypeOfNumpy(py::reinterpret_borrow<py::object>(object));
  }
  if (py::isinstance<py::list>(object) || py::isinstance<py::tuple>(object)) {
    bool all_ints = true, all_numbers = true, all_strings = true;
    for (const py::handle& item : object) {
      bool is_int = py::isinstance<py::int_>(item);
      all_ints &= is_int;
      all_numbers &= is_int || py::isinstance<py::float_>(item);
      all_strings &= py::isinstance<py::str>(item);
    }
    if (all_ints) return object.cast<std::vector<int64_t>>();
    if (all_numbers) return object.cast<std::vector<double>>();
    if (all_strings) return object.cast<std::vector<std::string>>();
  }
  raise("attribute '", name, "': a ", py::str(py::type::handle_of(object).attr("__name__")).cast<std::string>(),
        " is not an attribute value (int, float, str, NumPy dtype or array, or a list of ints, floats or strs)");
}

std::vector<Value*> valuesOf(const py::object& result, const NodeContext& context) {
  std::vector<Value*> values;
  if (result.is_none()) return values;
  if (py::isinstance<Value>(result)) return {result.cast<Value*>()};
  if (!py::isinstance<py::list>(result) && !py::isinstance<py::tuple>(result)) {
    context.fail("a conversion extension returns an estuary.Value or a list of them, not ",
                 py::str(py::type::handle_of(result).attr("__name__")).cast<std::string>());
  }
  for (const py::handle& item : result) values.push_back(item.is_none() ? nullptr : item.cast<Value*>());
  return values;
}

// The message of a Python exception raised inside an extension: an EstuaryError's own text
// (which already names the node when NodeContext raised it), else "Type: text".
std::string messageOf(const py::error_already_set& error) {
  py::object estuary_error = py::module_::import("estuary._estuary").attr("EstuaryError");
  std::string text = py::str(error.value()).cast<std::string>();
  if (py::isinstance(error.value(), estuary_error)) return text;
  return py::str(error.type().attr("__name__")).cast<std::string>() + ": " + text;
}

}  // namespace

std::vector<ConversionExtension> pythonExtensions(const py::object& extensions, const std::string& frontend) {
  std::vector<ConversionExtension> found;
  if (extensions.is_none()) return found;
  if (!py::isinstance<py::dict>(extensions)) {
    raise("extensions must be a dict {\"Op\" or \"domain::Op\": function(node) -> values}");
  }
  for (const auto& [key, function] : extensions.cast<py::dict>()) {
    std::string op = key.cast<std::string>();
    if (!PyCallable_Check(function.ptr())) raise("the conversion extension for '", op, "' is not callable");
    ConversionExtension extension;
    extension.frontend = frontend;
    size_t separator = op.rfind("::");
    if (separator != std::string::npos) {
      extension.domain = op.substr(0, separator);
      op = op.substr(separator + 2);
    }
    extension.op_type = op;
    py::object name = py::getattr(function, "__qualname__", py::str(function));
    extension.origin = "Python function " + py::str(name).cast<std::string>();
    // Released with the GIL held: the options holding it may die on a thread without it.
    std::shared_ptr<py::object> callable(new py::object(py::reinterpret_borrow<py::object>(function)),
                                         [](py::object* held) {
                                           py::gil_scoped_acquire gil;
                                           delete held;
                                         });
    extension.translate = [callable](NodeContext& context) {
      py::gil_scoped_acquire gil;
      try {
        py::object result = (*callable)(py::cast(&context, py::return_value_policy::reference));
        return valuesOf(result, context);
      } catch (const py::error_already_set& error) {
        throw Error(messageOf(error));
      }
    };
    found.push_back(std::move(extension));
  }
  return found;
}

ModelInput modelInputOf(const py::object& model) {
  py::object fspath = py::module_::import("os").attr("fspath");
  if (py::isinstance<py::list>(model) || py::isinstance<py::tuple>(model)) {
    std::vector<std::string> paths;
    for (const py::handle& item : model) paths.push_back(fspath(item).cast<std::string>());
    return ModelInput::files(std::move(paths));
  }
  return ModelInput::path(fspath(model).cast<std::string>());
}

sdk::BuildConfig LoadArguments::config() const {
  sdk::BuildConfig config;
  config.framework = sdk::frameworkName(framework.value_or(""));
  config.frontend.variant = signature.value_or("");
  config.frontend.weights = weights.value_or("");
  config.frontend.allowed_dirs = allowed_dirs;
  config.frontend.outputs = outputs;
  config.frontend.keys = frontend_options;
  config.frontend.extensions = pythonExtensions(extensions, framework.value_or(""));
  return config;
}

void registerFrontendBindings(py::module_& m) {
  py::class_<Value, std::unique_ptr<Value, py::nodelete>>(m, "Value",
                                                          "A value of the graph being translated (see NodeContext).")
      .def_property_readonly("name", &Value::name)
      .def_property_readonly("dtype", [](const Value& value) { return std::string(dtypeName(value.dtype())); })
      .def_property_readonly("shape", [](const Value& value) -> py::object {
        if (!value.shape().isRanked()) return py::none();
        py::list dims;
        for (const Dim& dim : value.shape().dims()) dims.append(dimObject(dim));
        return dims;
      })
      .def("__repr__", [](const Value& value) { return "<estuary.Value '" + value.name() + "': " + value.type().str() + ">"; });

  py::class_<NodeContext, std::unique_ptr<NodeContext, py::nodelete>>(
      m, "NodeContext",
      "The node a conversion extension translates: its inputs as estuary.Value, its attributes,\n"
      "and emit() to build the IR nodes that compute it. Return the node's results.")
      .def_property_readonly("op_type", [](const NodeContext& node) { return std::string(node.opType()); })
      .def_property_readonly("domain", [](const NodeContext& node) { return std::string(node.domain()); })
      .def_property_readonly("version", &NodeContext::version)
      .def_property_readonly("name", [](const NodeContext& node) { return std::string(node.name()); })
      .def_property_readonly("num_inputs", &NodeContext::numInputs)
      .def_property_readonly("num_outputs", &NodeContext::numOutputs)
      .def("input", py::overload_cast<size_t>(&NodeContext::input, py::const_), py::arg("index"),
           py::return_value_policy::reference, "Input `index`, or None when absent.")
      .def("input", py::overload_cast<std::string_view>(&NodeContext::input, py::const_), py::arg("slot"),
           py::return_value_policy::reference, "The input a framework names `slot`, or None.")
      .def("inputs", &NodeContext::inputs, py::return_value_policy::reference)
      .def("attribute_names", [](const NodeContext& node) {
        std::vector<std::string> names;
        for (std::string_view name : node.decoder().attributeNames()) names.emplace_back(name);
        return names;
      })
      .def("has_attr", &NodeContext::hasAttr, py::arg("name"))
      .def(
          "attr",
          [](const NodeContext& node, const std::string& name, const py::args& fallback) -> py::object {
            if (fallback.size() > 1) throw py::type_error("attr(name[, default]) takes one default");
            std::optional<AttrValue> value = node.attribute(name);
            if (!value) {
              if (fallback.empty()) node.fail("attribute '", name, "' is missing");
              return fallback[0];
            }
            return pythonValue(*value);
          },
          py::arg("name"),
          "attr(name[, default]): the attribute as a Python value (a NumPy array for a tensor);\n"
          "`default` when absent, an error naming the node when absent without one.")
      .def(
          "emit",
          [](NodeContext& node, const std::string& op_type, const std::vector<Value*>& inputs,
             const py::dict& attributes, size_t num_outputs, const std::string& domain) -> py::object {
            NodeContext::Attributes converted;
            for (const auto& [key, value] : attributes) {
              std::string name = key.cast<std::string>();
              converted.emplace_back(name, attributeOf(name, value));
            }
            Node* made = node.emit(op_type, inputs, std::move(converted), num_outputs, domain);
            if (num_outputs == 1) return py::cast(made->output(), py::return_value_policy::reference);
            return py::cast(made->outputs(), py::return_value_policy::reference);
          },
          py::arg("op_type"), py::arg("inputs"), py::arg("attributes") = py::dict(), py::arg("num_outputs") = 1,
          py::arg("domain") = "",
          "Appends a core-IR node (None in `inputs` for an absent optional input) and infers its\n"
          "types; returns its output, or the list of them when num_outputs > 1.")
      .def(
          "constant", [](NodeContext& node, const py::object& array) { return node.constant(tensorOf(array)); },
          py::arg("array"), py::return_value_policy::reference, "A Constant node holding a copy of the array.")
      .def(
          "cast", [](NodeContext& node, Value* value, const py::object& dtype) {
            return node.cast(value, dtypeOfNumpy(dtype));
          },
          py::arg("value"), py::arg("dtype"), py::return_value_policy::reference)
      .def(
          "fail", [](const NodeContext& node, const std::string& message) { node.fail(message); }, py::arg("message"),
          "Raises an EstuaryError naming the model and the node.");
}

}  // namespace estuary::python
