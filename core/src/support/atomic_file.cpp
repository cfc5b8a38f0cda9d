#include "estuary/support/atomic_file.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "estuary/support/error.h"

namespace estuary {
namespace {

// Unique across processes (the pid) and within one (two models saving the same timing cache
// from two threads).
std::string temporaryNameFor(const std::string& path) {
  static std::atomic<uint64_t> next{0};
  return path + ".tmp" + std::to_string(::getpid()) + "." + std::to_string(next.fetch_add(1));
}

}  // namespace

AtomicFile::AtomicFile(std::string path)
    : path_(std::move(path)), temporary_(temporaryNameFor(path_)),
      file_(std::fopen(temporary_.c_str(), "wb")) {
  if (!file_) raise(path_, ": cannot open for writing: ", std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (file_) std::fclose(file_);
  if (!committed_) std::remove(temporary_.c_str());
}

void AtomicFile::write(const void* data, size_t size) {
  if (size && std::fwrite(data, 1, size, file_) != size) raise(path_, ": cannot write: ", std::strerror(errno));
  position_ += size;
}

void AtomicFile::finish() {
  FILE* file = file_;
  file_ = nullptr;
  // The data reaches the disk before the name does: a crash after the rename must not leave a
  // file of the right name with blocks the disk never got.
  bool written = std::fflush(file) == 0 && ::fsync(fileno(file)) == 0;
  int error = errno;
  if (std::fclose(file) != 0 && written) {
    written = false;
    error = errno;
  }
  if (!written) raise(path_, ": cannot write: ", std::strerror(error));
}

void AtomicFile::commit() {
  if (file_) finish();
  if (std::rename(temporary_.c_str(), path_.c_str()) != 0) raise(path_, ": cannot replace: ", std::strerror(errno));
  committed_ = true;
}

void writeFileAtomically(const std::string& path, std::string_view bytes) {
  AtomicFile file(path);
  file.write(bytes);
  file.commit();
}

}  // namespace estuary
