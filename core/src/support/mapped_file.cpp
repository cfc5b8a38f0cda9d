#include "estuary/support/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "estuary/support/error.h"

namespace estuary {

namespace {

// The live mappings mapFile made (start address -> size), so that releaseMappedPages only
// ever drops pages that the file holds.
struct Mappings {
  std::mutex mutex;
  std::map<uintptr_t, size_t> ranges;
};

Mappings& liveMappings() {
  static Mappings* mappings = new Mappings;  // never destroyed: mappings may outlive statics
  return *mappings;
}

}  // namespace

void releaseMappedPages(const void* data, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page, last = (begin + bytes) / page * page;
  if (first >= last) return;
  Mappings& mappings = liveMappings();
  std::lock_guard<std::mutex> lock(mappings.mutex);
  auto after = mappings.ranges.upper_bound(begin);
  if (after == mappings.ranges.begin()) return;
  const auto& [start, size] = *std::prev(after);
  if (begin + bytes > start + size) return;
  // The mapping is private and read-only, so its pages are never dirty: dropping them loses
  // nothing, and the next access faults them in from the page cache or the file.
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

MappedFile mapFile(const std::string& path, std::string_view what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) raise(path, ": cannot open the ", what, ": ", std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    int error = errno;
    ::close(fd);
    raise(path, ": cannot read the ", what, ": ", S_ISREG(info.st_mode) ? std::strerror(error) : "not a regular file");
  }
  MappedFile file;
  file.size = static_cast<uint64_t>(info.st_size);
  if (file.size == 0) {
    ::close(fd);
    return file;
  }
  void* base = ::mmap(nullptr, static_cast<size_t>(file.size), PROT_READ, MAP_PRIVATE, fd, 0);
  int error = errno;
  ::close(fd);
  if (base == MAP_FAILED) raise(path, ": cannot map the ", what, ": ", std::strerror(error));
  file.data = static_cast<const char*>(base);
  {
    std::lock_guard<std::mutex> lock(liveMappings().mutex);
    liveMappings().ranges[reinterpret_cast<uintptr_t>(base)] = static_cast<size_t>(file.size);
  }
  file.owner = std::shared_ptr<const void>(base, [size = file.size](const void* p) {
    {
      std::lock_guard<std::mutex> lock(liveMappings().mutex);
      liveMappings().ranges.erase(reinterpret_cast<uintptr_t>(p));
    }
    ::munmap(const_cast<void*>(p), static_cast<size_t>(size));
  });
  return file;
}

}  // namespace estuary
