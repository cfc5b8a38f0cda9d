#include "pd_params.h"

#include <algorithm>
#include <cstring>

#include "estuary/frontend/protobuf.h"
#include "estuary/support/error.h"
#include "pd_messages.h"

namespace estuary::paddle_frontend {

namespace {

class Cursor {
 public:
  Cursor(std::string_view bytes, const std::string& path) : bytes_(bytes), path_(path) {}

  template <typename T>
  T read(const std::string& what, const std::string& parameter) {
    T value;
    std::memcpy(&value, take(sizeof(T), what, parameter).data(), sizeof(T));
    return value;
  }

  std::string_view take(uint64_t count, const std::string& what, const std::string& parameter) {
    if (count > bytes_.size() - at_) {
      raise(path_, ": the file ends at byte ", bytes_.size(), " inside parameter '", parameter, "' (", what,
            ": ", count, " more bytes needed): it is shorter than the program's parameters need");
    }
    std::string_view part = bytes_.substr(at_, count);
    at_ += count;
    return part;
  }

  size_t at() const { return at_; }
  size_t size() const { return bytes_.size(); }

 private:
  std::string_view bytes_;
  const std::string& path_;
  size_t at_ = 0;
};

}  // namespace

std::map<std::string, Tensor> readParameters(const MappedFile& file, const std::string& path,
                                             std::vector<ParameterSpec> specs, WeightSource& weights) {
  std::sort(specs.begin(), specs.end(), [](const ParameterSpec& a, const ParameterSpec& b) { return a.name < b.name; });
  Cursor cursor(file.bytes(), path);
  std::map<std::string, Tensor> tensors;
  for (const ParameterSpec& spec : specs) {
    const size_t start = cursor.at();
    if (cursor.read<uint32_t>("version", spec.name) != 0) {
      raise(path, ": parameter '", spec.name, "' at byte ", start, " does not start with version 0 (the file is not a "
            ".pdiparams, or not the one of this program)");
    }
    uint64_t levels = cursor.read<uint64_t>("LoD level count", spec.name);
    if (levels > 8) raise(path, ": parameter '", spec.name, "' at byte ", start, " claims ", levels, " LoD levels");
    for (uint64_t level = 0; level < levels; ++level) {
      cursor.take(cursor.read<uint64_t>("LoD level size", spec.name), "LoD level", spec.name);
    }
    if (cursor.read<uint32_t>("tensor version", spec.name) != 0) {
      raise(path, ": parameter '", spec.name, "' at byte ", start, " has a tensor version other than 0");
    }
    int32_t desc_size = cursor.read<int32_t>("TensorDesc size", spec.name);
    if (desc_size < 0) raise(path, ": parameter '", spec.name, "': a negative TensorDesc size");
    std::string_view desc_bytes = cursor.take(static_cast<uint64_t>(desc_size), "TensorDesc", spec.name);
    TensorDesc desc = proto::decode<TensorDesc>(
        proto::Source{path, file.data, "a Paddle parameter file", "framework.proto"}, desc_bytes);
    std::optional<DType> dtype = dtypeFromPd(desc.data_type);
    if (!dtype) {
      raise(path, ": parameter '", spec.name, "' holds ", pdTypeName(desc.data_type), " elements, which Estuary lacks");
    }
    bool agrees = *dtype == spec.dtype && desc.dims.size() == spec.dims.size();
    for (size_t d = 0; agrees && d < desc.dims.size(); ++d) agrees = spec.dims[d] < 0 || spec.dims[d] == desc.dims[d];
    if (!agrees) {
      raise(path, ": parameter '", spec.name, "' is ", dtypeName(*dtype), dimsText(desc.dims), " in the file, but the "
            "program declares ", dtypeName(spec.dtype), dimsText(spec.dims));
    }
    uint64_t bytes = weights.elementCount(desc.dims, "parameter '" + spec.name + "'") * dtypeSize(*dtype);
    std::string_view data = cursor.take(bytes, "data", spec.name);
    tensors.emplace(spec.name, weights.fromBytes(*dtype, desc.dims, data, file.owner, "parameter '" + spec.name + "'"));
  }
  if (cursor.at() != cursor.size()) {
    raise(path, ": ", cursor.size() - cursor.at(), " bytes follow the last of the program's ", specs.size(),
          " parameters: the file is longer than the program's parameters need (another model's?)");
  }
  return tensors;
}

}  // namespace estuary::paddle_frontend
