// mapFile and releaseMappedPages: released pages of a mapping leave the resident set and read
// back unchanged; memory that no mapFile mapping holds is never touched.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "estuary/support/mapped_file.h"

namespace estuary {
namespace {

namespace fs = std::filesystem;

// The resident kilobytes of the mapping starting at `start`, from /proc/self/smaps.
long residentKilobytes(const void* start) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  const auto address = reinterpret_cast<uintptr_t>(start);
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream header(line);
    if (header >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= address && address < end;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      return std::stol(line.substr(4));
    }
  }
  return -1;
}

class MappedFileTest : public testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() / ("estuary_mapped_" + std::to_string(::getpid()) + ".bin");
    bytes_.resize(64 * static_cast<size_t>(::sysconf(_SC_PAGESIZE)));
    for (size_t i = 0; i < bytes_.size(); ++i) bytes_[i] = static_cast<char>(i * 7 + 3);
    std::ofstream(path_, std::ios::binary).write(bytes_.data(), static_cast<std::streamsize>(bytes_.size()));
  }
  void TearDown() override { fs::remove(path_); }

  fs::path path_;
  std::vector<char> bytes_;
};

TEST_F(MappedFileTest, ReleasedPagesLeaveTheResidentSetAndReadBackUnchanged) {
  MappedFile file = mapFile(path_.string(), "test file");
  ASSERT_EQ(file.bytes(), std::string_view(bytes_.data(), bytes_.size()));  // touches every page
  const long before = residentKilobytes(file.data);
  ASSERT_GT(before, 0);
  releaseMappedPages(file.data, file.size);
  EXPECT_LT(residentKilobytes(file.data), before);
  EXPECT_EQ(file.bytes(), std::string_view(bytes_.data(), bytes_.size()));
}

TEST_F(MappedFileTest, MemoryOutsideMappingsIsLeftAlone) {
  std::vector<char> heap = bytes_;
  releaseMappedPages(heap.data(), heap.size());  // MADV_DONTNEED here would zero it
  EXPECT_EQ(heap, bytes_);
  MappedFile file = mapFile(path_.string(), "test file");
  std::vector<char> copy(file.data, file.data + file.size);
  file = MappedFile{};  // unmapped: its range is no mapping of mapFile's any more
  releaseMappedPages(copy.data(), copy.size());
  EXPECT_EQ(copy, bytes_);
}

}  // namespace
}  // namespace estuary
