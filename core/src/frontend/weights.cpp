#include "estuary/frontend/weights.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "estuary/support/error.h"

namespace estuary {

std::string dimsText(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

uint64_t WeightSource::elementCount(const std::vector<int64_t>& dims, const std::string& what) const {
  uint64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0) raise(model_, ": ", what, " has a negative dimension (", dim, ")");
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(dim), &count) || count > (uint64_t{1} << 60)) {
      raise(model_, ": ", what, " has more elements than a tensor can hold");
    }
  }
  return count;
}

Tensor WeightSource::fromBytes(DType dtype, std::vector<int64_t> dims, std::string_view bytes,
                               const std::shared_ptr<const void>& owner, const std::string& what) {
  const uint64_t expected = elementCount(dims, what) * dtypeSize(dtype);
  if (bytes.size() != expected) {
    raise(model_, ": ", what, " has ", bytes.size(), " bytes of data, its type ", dtypeName(dtype), dimsText(dims),
          " needs ", expected);
  }
  if (reinterpret_cast<uintptr_t>(bytes.data()) % dtypeSize(dtype) == 0) {
    ++wrapped_;
    return Tensor::wrap(dtype, std::move(dims), bytes.data(), owner);
  }
  ++copied_;
  return Tensor::copyOf(dtype, std::move(dims), bytes.data());
}

const MappedFile& WeightSource::file(const std::string& path, const std::string& what) {
  auto found = files_.find(path);
  if (found != files_.end()) return found->second;
  MappedFile mapped;
  try {
    mapped = mapFile(path, "file");
  } catch (const Error& error) {
    raise(model_, ": ", what, " cannot be read: ", error.what());
  }
  return files_.emplace(path, std::move(mapped)).first->second;
}

const MappedFile& WeightSource::fileBeside(const std::string& location, const std::string& what) {
  bool leaves = location.empty() || location.front() == '/';
  // ".." as a whole path component climbs out; inside a name ("a..b") it does not.
  for (size_t start = 0; !leaves && start <= location.size();) {
    size_t end = location.find('/', start);
    if (end == std::string::npos) end = location.size();
    leaves = location.compare(start, end - start, "..") == 0;
    start = end + 1;
  }
  if (leaves && (allowed_dirs_.empty() || location.empty())) {
    raise(model_, ": ", what, " is at '", location, "', which is not a path inside the model's directory",
          " (allow another folder explicitly to read it)");
  }
  const bool absolute = location.front() == '/';
  return mapInside(directory_.empty() || absolute ? location : directory_ + "/" + location, location, what);
}

const MappedFile& WeightSource::fileInside(const std::string& path, const std::string& what) {
  return mapInside(path, path, what);
}

namespace {

// Whether the real path `real` lies in the real path `folder`.
bool contains(const std::filesystem::path& folder, const std::filesystem::path& real) {
  return std::mismatch(folder.begin(), folder.end(), real.begin(), real.end()).first == folder.end();
}

}  // namespace

const MappedFile& WeightSource::mapInside(const std::string& path, const std::string& shown, const std::string& what) {
  // The words of a path may stay inside while a symbolic link on the way leads out. Compare
  // real paths (a file that does not exist is reported by file(), with its name).
  std::error_code missing;
  std::filesystem::path real = std::filesystem::canonical(path, missing);
  if (missing) return file(path, what);
  std::filesystem::path folder = std::filesystem::canonical(directory_.empty() ? "." : directory_);
  if (contains(folder, real)) return file(path, what);
  std::string allowed;
  for (const std::string& dir : allowed_dirs_) {
    std::error_code unusable;
    std::filesystem::path allowed_folder = std::filesystem::canonical(dir, unusable);
    if (unusable) raise(model_, ": the allowed folder '", dir, "' cannot be resolved: ", unusable.message());
    if (contains(allowed_folder, real)) return file(path, what);
    allowed += (allowed.empty() ? "" : ", ") + ("'" + allowed_folder.string() + "'");
  }
  if (allowed.empty()) {
    raise(model_, ": ", what, " is at '", shown, "', which resolves to '", real.string(),
          "', outside the model's directory '", folder.string(), "' (through a symbolic link)");
  }
  raise(model_, ": ", what, " is at '", shown, "', which resolves to '", real.string(),
        "', outside the model's directory '", folder.string(), "' and the folders allowed (", allowed, ")");
}

}  // namespace estuary
