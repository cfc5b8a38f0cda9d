#pragma once
// Conversions the bindings share: element types between NumPy and Estuary, dims as Python
// values.
#include <pybind11/numpy.h>

#include "estuary/ir/dtype.h"
#include "estuary/ir/shape.h"

namespace estuary::python {

// The NumPy dtype of an Estuary element type (bf16 through ml_dtypes). Raises for types
// NumPy lacks.
pybind11::dtype numpyDtype(DType dtype);
// The Estuary element type of a NumPy dtype (or anything np.dtype() takes: np.float32, "f4").
// Raises naming it when Estuary has none.
DType dtypeOfNumpy(const pybind11::object& dtype);
// A dim as Python shows it: an int, a symbol's text ("batch"), or None when unknown.
pybind11::object dimObject(const Dim& dim);

}  // namespace estuary::python
