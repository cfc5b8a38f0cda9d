#pragma once
// Writes protobuf messages byte by byte, for tests that need exact control over a file:
// field order and offsets (alignment of raw data), wrong wire types, truncation.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace estuary::test {

class ProtoWriter {
 public:
  ProtoWriter& varint(uint32_t field, uint64_t value) {
    key(field, 0);
    putVarint(value);
    return *this;
  }
  ProtoWriter& bytes(uint32_t field, std::string_view value) {
    key(field, 2);
    putVarint(value.size());
    bytes_.append(value);
    return *this;
  }
  ProtoWriter& message(uint32_t field, const ProtoWriter& value) { return bytes(field, value.str()); }
  ProtoWriter& fixed32(uint32_t field, uint32_t bits) {
    key(field, 5);
    for (int b = 0; b < 4; ++b) bytes_.push_back(static_cast<char>(bits >> (8 * b)));
    return *this;
  }
  ProtoWriter& fixed64(uint32_t field, uint64_t bits) {
    key(field, 1);
    for (int b = 0; b < 8; ++b) bytes_.push_back(static_cast<char>(bits >> (8 * b)));
    return *this;
  }
  const std::string& str() const { return bytes_; }

  // Varints without keys: the payload of a packed repeated field.
  static std::string packedVarints(std::initializer_list<uint64_t> values) {
    ProtoWriter payload;
    for (uint64_t value : values) payload.putVarint(value);
    return payload.str();
  }

 private:
  void key(uint32_t field, uint32_t wire_type) { putVarint(uint64_t{field} << 3 | wire_type); }
  void putVarint(uint64_t value) {
    do {
      uint8_t byte = value & 0x7f;
      value >>= 7;
      bytes_.push_back(static_cast<char>(value ? byte | 0x80 : byte));
    } while (value);
  }
  std::string bytes_;
};

}  // namespace estuary::test
