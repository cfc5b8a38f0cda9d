#pragma once
// The `tf` submodule of `estuary._estuary` (tensorflow_bindings.cpp), used by
// estuary.tensorflow.
#include <pybind11/pybind11.h>

namespace estuary::python {
void registerTensorflowBindings(pybind11::module_& parent);
}  // namespace estuary::python
