#include "estuary/support/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "estuary/support/error.h"

namespace estuary {

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
  file.owner = std::shared_ptr<const void>(base, [size = file.size](const void* p) {
    ::munmap(const_cast<void*>(p), static_cast<size_t>(size));
  });
  return file;
}

}  // namespace estuary
