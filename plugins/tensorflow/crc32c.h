#pragma once
// CRC32C (Castagnoli), as TensorFlow's tensor bundles and LevelDB-format tables checksum
// their data: with the SSE4.2 instruction where the CPU has it, by table elsewhere.
#include <cstdint>
#include <string_view>

namespace estuary::tensorflow_frontend {

// The CRC32C of `bytes`; given the CRC of what came before them, the CRC of the whole.
uint32_t crc32c(std::string_view bytes, uint32_t crc_before = 0);

// Tables and bundles store CRCs masked (a CRC of data that contains CRCs is weak otherwise):
// rotated right by 15 bits plus a constant.
inline uint32_t unmaskCrc(uint32_t masked) {
  uint32_t rotated = masked - 0xa282ead8u;
  return (rotated >> 17) | (rotated << 15);
}

}  // namespace estuary::tensorflow_frontend
