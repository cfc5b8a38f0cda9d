#pragma once
// A reader of the protobuf wire format over bytes it does not own (a memory-mapped .onnx
// file), so that large byte fields (initializers' raw_data) come out as views of the file
// instead of copies. Estuary's ONNX frontend decodes ModelProto with it rather than with
// generated protobuf code: no protobuf package is registered, so nothing can clash with a
// framework that bundles ONNX's own onnx.proto in the same process.
//
// Every malformed input raises an Error naming the file, the message being read and the
// byte offset in the file.
#include <cstdint>
#include <string>
#include <string_view>

namespace estuary::onnx_frontend {

enum class WireType : uint8_t { Varint = 0, Fixed64 = 1, Bytes = 2, StartGroup = 3, EndGroup = 4, Fixed32 = 5 };

std::string_view wireTypeName(WireType type);

// The file being decoded: what errors name, and where offsets count from.
struct WireSource {
  std::string path;
  const char* begin = nullptr;
};

// One field of a message.
struct WireField {
  uint32_t number = 0;
  WireType type = WireType::Varint;
  uint64_t scalar = 0;      // Varint, Fixed64 and Fixed32 payloads
  std::string_view bytes;   // the Bytes payload (a string, a nested message, a packed list)
};

class WireReader {
 public:
  // Reads the fields of `message_name` (for errors) stored in `bytes`.
  WireReader(const WireSource& source, std::string_view bytes, std::string_view message_name)
      : source_(source), data_(bytes), message_(message_name) {}

  // Reads the next field; false at the end of the message.
  bool next(WireField& field);

  // Typed views of the current field, each checking the wire type; `field_name` is the
  // field's name in onnx.proto, for errors ("wrong wire type for ModelProto.graph").
  int64_t asInt64(const WireField& field, std::string_view field_name) const;
  int32_t asInt32(const WireField& field, std::string_view field_name) const;
  float asFloat(const WireField& field, std::string_view field_name) const;
  std::string_view asBytes(const WireField& field, std::string_view field_name) const;

  // Repeated scalars, accepted packed (one Bytes field) or unpacked (one field per element).
  template <typename Append>
  void forEachVarint(const WireField& field, std::string_view field_name, Append append) const;
  template <typename Append>
  void forEachFixed32(const WireField& field, std::string_view field_name, Append append) const;
  template <typename Append>
  void forEachFixed64(const WireField& field, std::string_view field_name, Append append) const;

  const WireSource& source() const { return source_; }
  // The byte offset of `at` in the file.
  uint64_t offsetOf(const char* at) const { return static_cast<uint64_t>(at - source_.begin); }
  // Raises "<file>: <message_name> at byte N: <what>".
  [[noreturn]] void fail(const char* at, const std::string& what) const;

 private:
  uint64_t readVarint(std::string_view& bytes, std::string_view what) const;
  void requireType(const WireField& field, WireType expected, std::string_view field_name) const;
  [[noreturn]] void failWireType(const WireField& field, std::string_view field_name) const;

  const WireSource& source_;
  std::string_view data_;
  std::string_view message_;
};

// --- Template definitions ------------------------------------------------------------------

template <typename Append>
void WireReader::forEachVarint(const WireField& field, std::string_view field_name, Append append) const {
  if (field.type == WireType::Varint) {
    append(field.scalar);
    return;
  }
  requireType(field, WireType::Bytes, field_name);
  std::string_view packed = field.bytes;
  while (!packed.empty()) append(readVarint(packed, field_name));
}

template <typename Append>
void WireReader::forEachFixed32(const WireField& field, std::string_view field_name, Append append) const {
  if (field.type == WireType::Fixed32) {
    append(static_cast<uint32_t>(field.scalar));
    return;
  }
  requireType(field, WireType::Bytes, field_name);
  if (field.bytes.size() % 4 != 0) {
    fail(field.bytes.data(), "packed field " + std::string(field_name) + " has " +
                                 std::to_string(field.bytes.size()) + " bytes, not a multiple of 4");
  }
  for (size_t i = 0; i < field.bytes.size(); i += 4) {
    uint32_t value = 0;
    for (int b = 3; b >= 0; --b) value = value << 8 | static_cast<uint8_t>(field.bytes[i + b]);
    append(value);
  }
}

template <typename Append>
void WireReader::forEachFixed64(const WireField& field, std::string_view field_name, Append append) const {
  if (field.type == WireType::Fixed64) {
    append(field.scalar);
    return;
  }
  requireType(field, WireType::Bytes, field_name);
  if (field.bytes.size() % 8 != 0) {
    fail(field.bytes.data(), "packed field " + std::string(field_name) + " has " +
                                 std::to_string(field.bytes.size()) + " bytes, not a multiple of 8");
  }
  for (size_t i = 0; i < field.bytes.size(); i += 8) {
    uint64_t value = 0;
    for (int b = 7; b >= 0; --b) value = value << 8 | static_cast<uint8_t>(field.bytes[i + b]);
    append(value);
  }
}

}  // namespace estuary::onnx_frontend
