#include "crc32c.h"

#include <array>
#include <cstring>

namespace estuary::tensorflow_frontend {
namespace {

constexpr uint32_t kPolynomial = 0x82f63b78u;  // CRC32C, reflected

// Eight tables, so that the software path consumes eight bytes per step ("slicing by 8").
std::array<std::array<uint32_t, 256>, 8> makeTables() {
  std::array<std::array<uint32_t, 256>, 8> tables{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (kPolynomial & (0u - (crc & 1)));
    tables[0][i] = crc;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (size_t t = 1; t < 8; ++t) tables[t][i] = (tables[t - 1][i] >> 8) ^ tables[0][tables[t - 1][i] & 0xff];
  }
  return tables;
}

uint32_t crc32cSoftware(uint32_t crc, const unsigned char* data, size_t size) {
  static const auto tables = makeTables();
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, data, 8);
    word ^= crc;
    crc = tables[7][word & 0xff] ^ tables[6][(word >> 8) & 0xff] ^ tables[5][(word >> 16) & 0xff] ^
          tables[4][(word >> 24) & 0xff] ^ tables[3][(word >> 32) & 0xff] ^ tables[2][(word >> 40) & 0xff] ^
          tables[1][(word >> 48) & 0xff] ^ tables[0][word >> 56];
    data += 8;
    size -= 8;
  }
  while (size--) crc = (crc >> 8) ^ tables[0][(crc ^ *data++) & 0xff];
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32cHardware(uint32_t crc, const unsigned char* data, size_t size) {
  uint64_t wide = crc;
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, data, 8);
    wide = __builtin_ia32_crc32di(wide, word);
    data += 8;
    size -= 8;
  }
  crc = static_cast<uint32_t>(wide);
  while (size--) crc = __builtin_ia32_crc32qi(crc, *data++);
  return crc;
}
#endif

}  // namespace

uint32_t crc32c(std::string_view bytes, uint32_t crc_before) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
#if defined(__x86_64__)
  static const bool hardware = __builtin_cpu_supports("sse4.2");
  if (hardware) return ~crc32cHardware(~crc_before, data, bytes.size());
#endif
  return ~crc32cSoftware(~crc_before, data, bytes.size());
}

}  // namespace estuary::tensorflow_frontend
