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

// Drops the resident pages wholly inside [data, data + bytes) if the range lies in a live
// mapFile mapping; they are read in again on their next access. Anything else is left
// alone. For weights that a build packed into another layout: their original bytes would
// otherwise stay resident beside the packed copy.
void releaseMappedPages(const void* data, size_t bytes);

}  // namespace estuary
