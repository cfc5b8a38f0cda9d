#pragma once
// What the Python package passes to the frontend layer: the options of a load
// (frontend/model_input.h) from keyword arguments, and Python functions as conversion
// extensions (frontend/translator_table.h), which see the node through estuary.NodeContext.
#include "estuary/sdk/options.h"
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "estuary/frontend/model_input.h"

namespace estuary::python {

// Registers estuary.NodeContext and estuary.Value (what a Python extension sees).
void registerFrontendBindings(pybind11::module_& m);

// Conversion extensions from a dict {"Op" or "domain::Op": function(node) -> values}; None
// gives none. The functions apply to `frontend` ("" for every frontend).
std::vector<ConversionExtension> pythonExtensions(const pybind11::object& extensions, const std::string& frontend = "");

// A model given as a path, an os.PathLike, or a list of them (a program and its weights).
ModelInput modelInputOf(const pybind11::object& model);

// The options of a load from the keyword arguments the Python functions share.
struct LoadArguments {
  std::optional<std::string> framework;
  std::optional<std::string> weights;
  std::vector<std::string> allowed_dirs;
  std::optional<std::string> signature;
  std::vector<std::string> outputs;
  std::map<std::string, std::string> frontend_options;
  pybind11::object extensions = pybind11::none();

  // The frontend's options and framework as the SDK's build config holds them.
  sdk::BuildConfig config() const;
};

}  // namespace estuary::python
