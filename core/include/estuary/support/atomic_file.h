#pragma once
// A file written whole or not at all: the bytes go to a temporary file beside the target,
// which commit() flushes to the disk and renames over it. A full disk, an error or an
// interrupted write leave whatever was at the path before (a good model) untouched and no
// temporary behind; saving over a file that is still mapped (a model loaded from it) is safe,
// since the old file lives on until its mappings are gone.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace estuary {

class AtomicFile {
 public:
  // Opens the temporary file; raises an Error naming `path` when it cannot.
  explicit AtomicFile(std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // without commit(), removes the temporary file

  void write(const void* data, size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  uint64_t position() const { return position_; }
  // Flushes the bytes to the disk and closes the temporary file; raises an Error naming the
  // path on failure. For several files that must all be complete before any replaces its
  // predecessor (a graph and its side file): finish each, then commit each.
  void finish();
  // finish() if not done, then renames into place.
  void commit();

 private:
  std::string path_;
  std::string temporary_;
  FILE* file_;
  uint64_t position_ = 0;
  bool committed_ = false;
};

// `bytes` written to `path` through an AtomicFile.
void writeFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace estuary
