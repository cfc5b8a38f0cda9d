#pragma once
// While a FileSizeLimit lives, this process's files may not grow past `bytes`: a write beyond
// fails with EFBIG, as one on a full disk fails with ENOSPC (SIGXFSZ, which would kill the
// process, is ignored meanwhile). For tests of what a failed write leaves behind.
#include <sys/resource.h>

#include <csignal>
#include <cstdint>

namespace estuary::testing {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(uint64_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    previous_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, previous_handler_);
  }

 private:
  rlimit saved_{};
  void (*previous_handler_)(int) = nullptr;
};

}  // namespace estuary::testing
