#include "estuary/frontend/protobuf.h"

#include "estuary/support/error.h"

namespace estuary::proto {

std::string_view wireTypeName(WireType type) {
  switch (type) {
    case WireType::Varint: return "varint";
    case WireType::Fixed64: return "fixed64";
    case WireType::Bytes: return "length-delimited";
    case WireType::StartGroup: return "start-group";
    case WireType::EndGroup: return "end-group";
    case WireType::Fixed32: return "fixed32";
  }
  return "invalid";
}

void WireReader::fail(const char* at, const std::string& what) const {
  raise(source_.path, ": ", message_, " at byte ", offsetOf(at), ": ", what, " (the file is truncated or not ",
        source_.format.empty() ? "what it claims to be" : source_.format, ")");
}

void WireReader::failWireType(const WireField& field, std::string_view field_name) const {
  raise(source_.path, ": ", message_, ": field ", field_name, " (number ", field.number, ") has wire type ",
        wireTypeName(field.type), ", which does not match its declaration in ",
        source_.schema.empty() ? "the schema" : source_.schema, " (corrupt file)");
}

uint64_t WireReader::readVarint(std::string_view& bytes, std::string_view what) const {
  const char* start = bytes.data();
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (bytes.empty()) fail(start, "the varint of " + std::string(what) + " runs past the end");
    auto byte = static_cast<uint8_t>(bytes.front());
    bytes.remove_prefix(1);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  fail(start, "the varint of " + std::string(what) + " is longer than 10 bytes");
}

bool WireReader::next(WireField& field) {
  if (data_.empty()) return false;
  const char* start = data_.data();
  uint64_t key = readVarint(data_, "a field key");
  field.number = static_cast<uint32_t>(key >> 3);
  auto type = static_cast<uint8_t>(key & 7);
  if (field.number == 0 || key >> 3 > 0x1fffffff) fail(start, "invalid field number " + std::to_string(key >> 3));
  if (type > 5) fail(start, "invalid wire type " + std::to_string(type));
  field.type = static_cast<WireType>(type);
  field.bytes = {};
  field.scalar = 0;
  auto fixed = [&](size_t size) {
    if (data_.size() < size) {
      fail(data_.data(), "field " + std::to_string(field.number) + " needs " + std::to_string(size) + " bytes, " +
                             std::to_string(data_.size()) + " are left");
    }
    for (size_t b = size; b-- > 0;) field.scalar = field.scalar << 8 | static_cast<uint8_t>(data_[b]);
    data_.remove_prefix(size);
  };
  switch (field.type) {
    case WireType::Varint: field.scalar = readVarint(data_, "field " + std::to_string(field.number)); break;
    case WireType::Fixed64: fixed(8); break;
    case WireType::Fixed32: fixed(4); break;
    case WireType::Bytes: {
      uint64_t length = readVarint(data_, "a length");
      if (length > data_.size()) {
        fail(data_.data(), "field " + std::to_string(field.number) + " claims " + std::to_string(length) +
                               " bytes, only " + std::to_string(data_.size()) + " are left");
      }
      field.bytes = data_.substr(0, length);
      data_.remove_prefix(length);
      break;
    }
    case WireType::StartGroup:
    case WireType::EndGroup:
      // Groups are deprecated since proto2 and none of the frameworks' schemas use them.
      fail(start, "field " + std::to_string(field.number) + " is a protobuf group, which " +
                      (source_.schema.empty() ? "the schema" : source_.schema) + " never uses");
  }
  return true;
}

uint64_t WireReader::asVarint(const WireField& field, std::string_view field_name) const {
  requireType(field, WireType::Varint, field_name);
  return field.scalar;
}

uint32_t WireReader::asFixed32(const WireField& field, std::string_view field_name) const {
  requireType(field, WireType::Fixed32, field_name);
  return static_cast<uint32_t>(field.scalar);
}

uint64_t WireReader::asFixed64(const WireField& field, std::string_view field_name) const {
  requireType(field, WireType::Fixed64, field_name);
  return field.scalar;
}

std::string_view WireReader::asBytes(const WireField& field, std::string_view field_name) const {
  requireType(field, WireType::Bytes, field_name);
  return field.bytes;
}

}  // namespace estuary::proto
