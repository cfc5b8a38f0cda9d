#pragma once
// Protobuf reading for every frontend: one wire reader over bytes it does not own (a mapped
// model file), and declarative field tables that decode a framework's messages into plain
// structs whose strings and byte fields are views of those bytes.
//
// Frontends do not use generated protobuf code, for three reasons: no message name is
// registered in the process, so nothing clashes with a framework that bundles its own copy
// of onnx.proto, graph.proto or framework.proto (two registrations of one name abort the
// process); large byte fields (weights) come out as views of the mapped file instead of
// copies; and messages over protobuf's 2 GiB parsing limit read like any other.
//
// A frontend describes each message once, by field number and name, with the struct member
// the field lands in; the member's type says how the field is decoded:
//
//   struct OperatorSetId { std::string_view domain; int64_t version = 0; };
//   template <> const proto::MessageTable<OperatorSetId>& proto::tableOf<OperatorSetId>() {
//     static const MessageTable<OperatorSetId> table{"OperatorSetIdProto", {
//         field<&OperatorSetId::domain>(1, "domain"),
//         field<&OperatorSetId::version>(2, "version"),
//     }};
//     return table;
//   }
//   OperatorSetId id = proto::decode<OperatorSetId>(source, bytes);
//
// Member types: integers and bool (varint; ZigZag or Fixed with an Encoding), enums (varint),
// float (fixed32), double (fixed64), std::string_view (bytes, a view), another table's struct
// (a nested message), std::optional / std::shared_ptr of those (presence, recursion), and
// std::vector of any of them (repeated; scalars packed or not). Fields a table does not
// list are skipped; every malformed input raises an Error naming the file, the message and
// the byte offset.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace estuary::proto {

enum class WireType : uint8_t { Varint = 0, Fixed64 = 1, Bytes = 2, StartGroup = 3, EndGroup = 4, Fixed32 = 5 };

std::string_view wireTypeName(WireType type);

// The bytes being decoded and what errors say about them.
struct Source {
  std::string path;          // the file, first in every message
  const char* begin = nullptr;  // where byte offsets count from
  std::string format;        // "an ONNX model": "... (the file is truncated or not an ONNX model)"
  std::string schema;        // "onnx.proto": "... does not match its declaration in onnx.proto"
};

// One field of a message.
struct WireField {
  uint32_t number = 0;
  WireType type = WireType::Varint;
  uint64_t scalar = 0;     // Varint, Fixed64 and Fixed32 payloads
  std::string_view bytes;  // the Bytes payload (a string, a nested message, a packed list)
};

class WireReader {
 public:
  // Reads the fields of `message_name` (for errors) stored in `bytes`.
  WireReader(const Source& source, std::string_view bytes, std::string_view message_name)
      : source_(source), data_(bytes), message_(message_name) {}

  // Reads the next field; false at the end of the message.
  bool next(WireField& field);

  // Typed views of a field, each checking the wire type; `field_name` is the field's name
  // in the schema, for errors ("field graph (number 7) has wire type varint ...").
  uint64_t asVarint(const WireField& field, std::string_view field_name) const;
  uint32_t asFixed32(const WireField& field, std::string_view field_name) const;
  uint64_t asFixed64(const WireField& field, std::string_view field_name) const;
  std::string_view asBytes(const WireField& field, std::string_view field_name) const;

  // Repeated scalars, accepted packed (one Bytes field) or unpacked (one field per element).
  template <typename Append>
  void forEachVarint(const WireField& field, std::string_view field_name, Append append) const;
  template <typename Append>
  void forEachFixed(const WireField& field, size_t width, std::string_view field_name, Append append) const;

  const Source& source() const { return source_; }
  std::string_view messageName() const { return message_; }
  // The byte offset of `at` in the source.
  uint64_t offsetOf(const char* at) const { return static_cast<uint64_t>(at - source_.begin); }
  // Raises "<file>: <message> at byte N: <what> (the file is truncated or not a <format>)".
  [[noreturn]] void fail(const char* at, const std::string& what) const;
  // Raises "<file>: <message>: field <name> (number N) has wire type T, which does not match
  // its declaration in <schema> (corrupt file)".
  [[noreturn]] void failWireType(const WireField& field, std::string_view field_name) const;

 private:
  uint64_t readVarint(std::string_view& bytes, std::string_view what) const;
  void requireType(const WireField& field, WireType expected, std::string_view field_name) const {
    if (field.type != expected) failWireType(field, field_name);
  }

  const Source& source_;
  std::string_view data_;
  std::string_view message_;
};

// --- Field tables --------------------------------------------------------------------------

// How an integer field is written: a plain varint (int32, int64, uint32, uint64, bool,
// enums), a ZigZag varint (sint32, sint64), or fixed width (fixed32, fixed64, sfixed32, sfixed64).
enum class Encoding : uint8_t { Varint, ZigZag, Fixed };

class Decoder;

template <typename Message>
struct FieldSpec {
  uint32_t number;
  std::string_view name;
  void (*decode)(Message& message, const WireField& field, const WireReader& reader, Decoder& decoder,
                 std::string_view field_name);
};

template <typename Message>
class MessageTable {
 public:
  MessageTable(std::string_view name, std::vector<FieldSpec<Message>> fields) : name_(name), fields_(std::move(fields)) {
    // Field numbers are small in every schema read here; a direct index finds a field's spec
    // without searching the table for each field of each message.
    uint32_t largest = 0;
    for (const FieldSpec<Message>& field : fields_) largest = std::max(largest, field.number);
    by_number_.assign(largest + 1, -1);
    for (size_t i = 0; i < fields_.size(); ++i) by_number_[fields_[i].number] = static_cast<int>(i);
  }

  // The message's name in the schema, for errors.
  std::string_view name() const { return name_; }
  // The spec of field `number`, or nullptr for a field the table does not list.
  const FieldSpec<Message>* find(uint32_t number) const {
    if (number >= by_number_.size() || by_number_[number] < 0) return nullptr;
    return &fields_[static_cast<size_t>(by_number_[number])];
  }

 private:
  std::string_view name_;
  std::vector<FieldSpec<Message>> fields_;
  std::vector<int> by_number_;
};

// The table of a message struct; each frontend specializes it for its structs.
template <typename Message>
const MessageTable<Message>& tableOf();

// Decodes messages, nested ones included, keeping the nesting depth bounded: recursive
// messages (subgraphs inside attributes inside nodes) from a crafted file could otherwise
// exhaust the stack.
class Decoder {
 public:
  static constexpr int kMaxDepth = 100;

  explicit Decoder(const Source& source) : source_(source) {}
  const Source& source() const { return source_; }

  template <typename Message>
  void decodeInto(Message& message, std::string_view bytes) {
    const MessageTable<Message>& table = tableOf<Message>();
    WireReader reader(source_, bytes, table.name());
    if (depth_ >= kMaxDepth) {
      reader.fail(bytes.data(), "messages nest deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    ++depth_;
    WireField field;
    while (reader.next(field)) {
      if (const FieldSpec<Message>* spec = table.find(field.number)) spec->decode(message, field, reader, *this, spec->name);
    }
    --depth_;
  }

 private:
  const Source& source_;
  int depth_ = 0;
};

// Decodes a whole message.
template <typename Message>
Message decode(const Source& source, std::string_view bytes) {
  Message message;
  Decoder decoder(source);
  decoder.decodeInto(message, bytes);
  return message;
}

namespace detail {

template <typename T>
struct MemberOf;
template <typename C, typename T>
struct MemberOf<T C::*> {
  using Class = C;
  using Type = T;
};

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {
  using Element = T;
};
template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {
  using Element = T;
};
template <typename T>
struct IsShared : std::false_type {};
template <typename T>
struct IsShared<std::shared_ptr<T>> : std::true_type {
  using Element = T;
};

template <typename T>
inline constexpr bool kIsScalar = std::is_arithmetic_v<T> || std::is_enum_v<T>;

template <typename T>
T fromBits(uint64_t bits) {
  if constexpr (std::is_same_v<T, float>) {
    auto narrow = static_cast<uint32_t>(bits);
    float value;
    std::memcpy(&value, &narrow, sizeof value);
    return value;
  } else if constexpr (std::is_same_v<T, double>) {
    double value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
  } else if constexpr (std::is_same_v<T, bool>) {
    return bits != 0;
  } else if constexpr (std::is_enum_v<T>) {
    // Enums are int32 on the wire, sign-extended to 64 bits.
    return static_cast<T>(static_cast<int32_t>(static_cast<uint32_t>(bits)));
  } else if constexpr (std::is_signed_v<T> && sizeof(T) == 4) {
    return static_cast<T>(static_cast<int32_t>(static_cast<uint32_t>(bits)));
  } else {
    return static_cast<T>(bits);
  }
}

inline uint64_t unzigzag(uint64_t bits) { return (bits >> 1) ^ (~(bits & 1) + 1); }

// One scalar or each scalar of a packed/unpacked repeated field.
template <typename T, Encoding E, typename Append>
void forEachScalar(const WireField& field, const WireReader& reader, std::string_view name, Append append) {
  if constexpr (std::is_floating_point_v<T>) {
    reader.forEachFixed(field, sizeof(T), name, [&](uint64_t bits) { append(fromBits<T>(bits)); });
  } else if constexpr (E == Encoding::Fixed) {
    reader.forEachFixed(field, sizeof(T) <= 4 ? 4 : 8, name, [&](uint64_t bits) { append(fromBits<T>(bits)); });
  } else if constexpr (E == Encoding::ZigZag) {
    reader.forEachVarint(field, name, [&](uint64_t bits) { append(static_cast<T>(unzigzag(bits))); });
  } else {
    reader.forEachVarint(field, name, [&](uint64_t bits) { append(fromBits<T>(bits)); });
  }
}

// Decodes one occurrence of a field into a member of type T.
template <typename T, Encoding E>
void decodeMember(T& member, const WireField& field, const WireReader& reader, Decoder& decoder,
                  std::string_view name) {
  if constexpr (std::is_same_v<T, std::string_view>) {
    member = reader.asBytes(field, name);
  } else if constexpr (kIsScalar<T>) {
    if (field.type == WireType::Bytes) reader.failWireType(field, name);
    forEachScalar<T, E>(field, reader, name, [&](T value) { member = value; });
  } else if constexpr (IsOptional<T>::value) {
    using Element = typename IsOptional<T>::Element;
    if (!member) member.emplace();
    decodeMember<Element, E>(*member, field, reader, decoder, name);
  } else if constexpr (IsShared<T>::value) {
    using Element = typename IsShared<T>::Element;
    if (!member) member = std::make_shared<Element>();
    decodeMember<Element, E>(*member, field, reader, decoder, name);
  } else if constexpr (IsVector<T>::value) {
    using Element = typename IsVector<T>::Element;
    if constexpr (kIsScalar<Element>) {
      forEachScalar<Element, E>(field, reader, name, [&](Element value) { member.push_back(value); });
    } else {
      decodeMember<Element, E>(member.emplace_back(), field, reader, decoder, name);
    }
  } else {
    // A nested message: fields of a message that occurs twice merge, as protobuf's do.
    decoder.decodeInto(member, reader.asBytes(field, name));
  }
}

}  // namespace detail

// A field decoded into `Member` (a pointer to a data member of the message struct).
template <auto Member, Encoding E = Encoding::Varint>
FieldSpec<typename detail::MemberOf<decltype(Member)>::Class> field(uint32_t number, std::string_view name) {
  using Message = typename detail::MemberOf<decltype(Member)>::Class;
  using Type = typename detail::MemberOf<decltype(Member)>::Type;
  return {number, name,
          [](Message& message, const WireField& wire, const WireReader& reader, Decoder& decoder,
             std::string_view field_name) {
            detail::decodeMember<Type, E>(message.*Member, wire, reader, decoder, field_name);
          }};
}

// A field decoded by a function of the frontend's own (a oneof, a field that sets a flag).
template <typename Message>
FieldSpec<Message> custom(uint32_t number, std::string_view name,
                          void (*decode)(Message&, const WireField&, const WireReader&, Decoder&,
                                         std::string_view field_name)) {
  return {number, name, decode};
}

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
void WireReader::forEachFixed(const WireField& field, size_t width, std::string_view field_name,
                              Append append) const {
  if (field.type == (width == 4 ? WireType::Fixed32 : WireType::Fixed64)) {
    append(field.scalar);
    return;
  }
  requireType(field, WireType::Bytes, field_name);
  if (field.bytes.size() % width != 0) {
    fail(field.bytes.data(), "packed field " + std::string(field_name) + " has " +
                                 std::to_string(field.bytes.size()) + " bytes, not a multiple of " +
                                 std::to_string(width));
  }
  for (size_t i = 0; i < field.bytes.size(); i += width) {
    uint64_t value = 0;
    for (size_t b = width; b-- > 0;) value = value << 8 | static_cast<uint8_t>(field.bytes[i + b]);
    append(value);
  }
}

}  // namespace estuary::proto
