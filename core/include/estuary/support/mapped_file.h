#pragma once
// A read-only memory mapping of a whole file. Tensors wrap parts of it without copying and
// keep it alive through `owner` (Tensor::wrap's keep-alive): the mapping goes away with the
// last of them.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace estuary {

struct MappedFile {
  const char* data = nullptr;
  uint64_t size = 0;
  std::shared_ptr<const void> owner;

  std::string_view bytes() const { return {data, static_cast<size_t>(size)}; }
};

// Maps `path` read-only. `what` says what the file is for errors ("ONNX model", "external
// data of initializer 'w'"): "<path>: cannot open the ONNX model: No such file or directory".
// An empty file gives an empty mapping (data == nullptr).
MappedFile mapFile(const std::string& path, std::string_view what);

}  // namespace estuary
