#pragma once
// ONNX TensorProto -> Estuary Tensor. Data in raw_data or in an external file goes through
// the frontend layer's WeightSource, which wraps it where it lies (aligned to its element
// size) and copies it otherwise; tensors stored in the typed fields (float_data, int64_data
// ...; small ones) are converted.
#include <optional>
#include <string>

#include "estuary/frontend/weights.h"
#include "estuary/ir/dtype.h"
#include "estuary/ir/tensor.h"
#include "estuary/support/mapped_file.h"
#include "onnx_model.h"

namespace estuary::onnx_frontend {

// The Estuary element type of an ONNX TensorProto.DataType, or nullopt when Estuary has none
// (strings, unsigned 16/32/64-bit, complex, float8 ...).
std::optional<DType> dtypeFromOnnx(int32_t data_type);

class TensorReader {
 public:
  // `model` is the model file's mapping; external data is looked for beside `model_path`,
  // and may lie there or in `allowed_dirs` (FrontendOptions::allowed_dirs).
  TensorReader(const MappedFile& model, const std::string& model_path, std::vector<std::string> allowed_dirs = {});

  // `what` names the tensor in errors ("initializer 'w'", "attribute 'value' of node 'c'").
  Tensor read(const TensorProto& proto, const std::string& what);

  // A sparse tensor made dense (Estuary's tensors are dense): values scattered at their
  // indices (linear [NNZ] or coordinates [NNZ, rank]) into zeros of the dense shape.
  Tensor readSparse(const SparseTensorProto& proto, const std::string& what);

  const WeightSource& weights() const { return weights_; }

 private:
  Tensor fromTypedFields(const TensorProto& proto, DType dtype, const std::string& what);
  Tensor fromExternal(const TensorProto& proto, DType dtype, const std::string& what);

  const MappedFile& model_;
  WeightSource weights_;
};

}  // namespace estuary::onnx_frontend
