#pragma once
// The `fx` submodule of `estuary._estuary` (torch_bindings.cpp), used by estuary.torch.
#include <pybind11/pybind11.h>

namespace estuary::python {
void registerTorchBindings(pybind11::module_& parent);
}  // namespace estuary::python
