// ConstantBytes (cpu/onednn_kernel.h): the buffer a kernel's pre-packed constants live in
// starts at a cache line, and one of 2 MiB or more at a huge page; it starts zeroed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu/onednn_kernel.h"

namespace estuary::ge {
namespace {

uintptr_t address(const cpu::ConstantBytes& bytes) { return reinterpret_cast<uintptr_t>(bytes.data()); }

bool allZero(const cpu::ConstantBytes& bytes) {
  return std::all_of(bytes.data(), bytes.data() + bytes.size(), [](std::byte b) { return b == std::byte{0}; });
}

TEST(ConstantBytes, StartAtACacheLineAndLargeOnesAtAHugePage) {
  constexpr size_t kHugePage = size_t{2} << 20;
  for (size_t size : {size_t{0}, size_t{1}, size_t{100}, size_t{4096}, kHugePage - 1}) {
    cpu::ConstantBytes bytes(size);
    EXPECT_EQ(bytes.size(), size);
    ASSERT_NE(bytes.data(), nullptr) << size;
    EXPECT_EQ(address(bytes) % 64, 0u) << size;
    EXPECT_TRUE(allZero(bytes)) << size;
  }
  for (size_t size : {kHugePage, 3 * kHugePage + 17}) {
    cpu::ConstantBytes bytes(size);
    EXPECT_EQ(address(bytes) % kHugePage, 0u) << size;
    EXPECT_TRUE(allZero(bytes)) << size;
    std::memset(bytes.data(), 0x5a, size);  // every byte is there to write
  }
}

TEST(ConstantBytes, ACopyHoldsTheSameBytes) {
  std::vector<std::byte> source(1000);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<std::byte>(i * 7);
  cpu::ConstantBytes copy(source.data(), source.size());
  ASSERT_EQ(copy.size(), source.size());
  EXPECT_EQ(std::memcmp(copy.data(), source.data(), source.size()), 0);
}

}  // namespace
}  // namespace estuary::ge
