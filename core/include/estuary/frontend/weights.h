#pragma once
// Where a model's weights come from: the model file's own mapping, files beside it (ONNX
// external data, a Paddle .pdiparams, TensorFlow variable shards, MindIR data_N files), or
// buffers handed over from Python (a torch tensor, a NumPy array). Whatever the source, bytes
// become Tensors without a copy when they are aligned to their element size, with the
// mapping or buffer kept alive by the tensors (and so by the graph and the built model).
// Kernels read weights through typed pointers, and protobuf places byte fields at any
// offset: a misaligned tensor is copied once into an aligned buffer.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/ir/dtype.h"
#include "estuary/ir/tensor.h"
#include "estuary/support/mapped_file.h"

namespace estuary {

class WeightSource {
 public:
  // `model` names the model in errors; files beside the model are found in `directory`.
  // Files the model names must lie in that directory or in one of `allowed_dirs`, folders
  // the user allowed explicitly (FrontendOptions::allowed_dirs).
  explicit WeightSource(std::string model, std::string directory = {}, std::vector<std::string> allowed_dirs = {})
      : model_(std::move(model)), directory_(std::move(directory)), allowed_dirs_(std::move(allowed_dirs)) {}

  // A tensor of `dtype` and `dims` over `bytes`, which `owner` keeps alive: wrapped when
  // aligned, copied otherwise. Raises an Error naming `what` when the byte count is not
  // what the type needs.
  Tensor fromBytes(DType dtype, std::vector<int64_t> dims, std::string_view bytes,
                   const std::shared_ptr<const void>& owner, const std::string& what);

  // A file beside the model, `location` relative to its directory, mapped once. Locations
  // leaving the directory (absolute, or through "..") are refused, as ONNX's external data
  // rules require: a model file must not make Estuary read arbitrary files. So is one whose
  // real path (symbolic links followed) lies outside the directory's. With allowed folders,
  // any location whose real path lies in the directory or in one of them is read.
  const MappedFile& fileBeside(const std::string& location, const std::string& what);
  // A file of the model's own folder found by its layout (a SavedModel's variable shards, the
  // parameters beside a Paddle program): mapped once, refused when its real path lies outside
  // the directory's real path and the allowed folders'.
  const MappedFile& fileInside(const std::string& path, const std::string& what);
  // A file the user named (a --weights path), mapped once.
  const MappedFile& file(const std::string& path, const std::string& what);

  // The element count of `dims`; raises naming `what` for a negative dim or a count whose
  // bytes overflow.
  uint64_t elementCount(const std::vector<int64_t>& dims, const std::string& what) const;
  // Records that a frontend made a tensor by converting values (typed protobuf fields).
  void countCopy() { ++copied_; }

  const std::string& model() const { return model_; }
  const std::string& directory() const { return directory_; }
  // How many tensors were wrapped in place and how many copied.
  size_t wrapped() const { return wrapped_; }
  size_t copied() const { return copied_; }

 private:
  // `path` mapped once, refused (naming it `shown`) when its real path is outside directory_'s
  // and every allowed folder's.
  const MappedFile& mapInside(const std::string& path, const std::string& shown, const std::string& what);

  std::string model_;
  std::string directory_;
  std::vector<std::string> allowed_dirs_;
  std::map<std::string, MappedFile> files_;
  size_t wrapped_ = 0;
  size_t copied_ = 0;
};

// "[2,3,4]", for errors about tensor shapes.
std::string dimsText(const std::vector<int64_t>& dims);

}  // namespace estuary
