#include "conversions.h"

#include "estuary/support/error.h"

namespace py = pybind11;

namespace estuary::python {

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

DType dtypeOfNumpy(const py::object& dtype) {
  py::dtype numpy = py::dtype::from_args(dtype);
  for (DType candidate : {DType::F32, DType::F64, DType::F16, DType::I8, DType::I16, DType::I32, DType::I64, DType::U8,
                          DType::Bool}) {
    if (numpy.equal(numpyDtype(candidate))) return candidate;
  }
  if (py::str(numpy).cast<std::string>() == "bfloat16") return DType::BF16;
  raise("Estuary has no element type for NumPy's ", py::str(numpy).cast<std::string>());
}

py::object dimObject(const Dim& dim) {
  if (dim.isStatic()) return py::int_(dim.value());
  if (dim.isSymbolic()) return py::str(dim.str());
  return py::none();
}

}  // namespace estuary::python
