// writeFileAtomically from several threads of one process at once (two models saving one
// timing cache): every write lands whole, and no temporary file is left behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "estuary/support/atomic_file.h"

namespace estuary {
namespace {

namespace fs = std::filesystem;

TEST(AtomicFile, ThreadsWritingOneFileEachLandWhole) {
  const fs::path dir = fs::temp_directory_path() / ("estuary_atomic_file_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "shared.cache").string();
  constexpr int kThreads = 4, kWrites = 50;
  std::vector<std::string> contents;
  for (int thread = 0; thread < kThreads; ++thread) contents.push_back(std::string(256 * 1024, char('a' + thread)));

  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> writers;
  for (int thread = 0; thread < kThreads; ++thread) {
    writers.emplace_back([&, thread] {
      try {
        for (int write = 0; write < kWrites; ++write) writeFileAtomically(path, contents[thread]);
      } catch (const std::exception& error) {
        errors[thread] = error.what();
      }
    });
  }
  for (std::thread& writer : writers) writer.join();

  for (const std::string& error : errors) EXPECT_EQ(error, "");
  std::ifstream file(path, std::ios::binary);
  const std::string landed((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_NE(std::find(contents.begin(), contents.end(), landed), contents.end()) << "a write landed torn";
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename(), "shared.cache") << "left behind";
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace estuary
