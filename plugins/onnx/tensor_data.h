#pragma once
// ONNX TensorProto -> Estuary Tensor. Data in raw_data or in an external file is wrapped
// where it lies (the model's or the external file's mapping kept alive by the tensor), so
// weights are not copied; only tensors stored in the typed fields (float_data, int64_data ...;
// small ones) and raw data not aligned to its element size are copied. Kernels read weights
// through typed pointers, which must be aligned to the element size; protobuf places
// raw_data at any byte offset, so a misaligned one is copied into an aligned buffer.
#include <map>
#include <optional>
#include <string>

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
  // `model` is the model file's mapping; external data paths are relative to `model_directory`.
  TensorReader(const MappedFile& model, std::string model_path, std::string model_directory)
      : model_(model), model_path_(std::move(model_path)), directory_(std::move(model_directory)) {}

  // `what` names the tensor in errors ("initializer 'w'", "attribute 'value' of node 'c'").
  Tensor read(const TensorProto& proto, const std::string& what);

  // How many tensors were wrapped in place and how many copied (typed fields, misaligned).
  size_t wrapped() const { return wrapped_; }
  size_t copied() const { return copied_; }

 private:
  Tensor fromBytes(DType dtype, std::vector<int64_t> dims, const char* data,
                   const std::shared_ptr<const void>& owner);
  Tensor fromTypedFields(const TensorProto& proto, DType dtype, std::vector<int64_t> dims,
                         const std::string& what);
  Tensor fromExternal(const TensorProto& proto, DType dtype, std::vector<int64_t> dims, const std::string& what);
  const MappedFile& externalFile(const std::string& location, const std::string& what);
  static std::string shapeText(const std::vector<int64_t>& dims);

  const MappedFile& model_;
  std::string model_path_;
  std::string directory_;
  std::map<std::string, MappedFile> external_files_;
  size_t wrapped_ = 0;
  size_t copied_ = 0;
};

}  // namespace estuary::onnx_frontend
