// The frontend layer's protobuf reading (declarative field tables over one wire reader) and
// weight sources, on bytes written by hand so that every field, offset and wire type is
// controlled.
#include "estuary/frontend/protobuf.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "estuary/frontend/weights.h"
#include "error_of.h"
#include "proto_writer.h"

namespace estuary {

namespace {

enum class Color : int32_t { Red = 0, Green = 1, Blue = 2 };

struct Leaf {
  std::string_view label;
  std::optional<int64_t> count;
};

struct Tree {
  int32_t small = 0;
  int64_t big = 0;
  uint64_t unsigned_value = 0;
  bool flag = false;
  Color color = Color::Red;
  float single = 0;
  double wide = 0;
  int64_t zigzag = 0;
  uint32_t fixed = 0;
  std::string_view name;
  std::vector<int64_t> numbers;
  std::vector<float> floats;
  std::vector<std::string_view> names;
  std::optional<Leaf> leaf;
  std::vector<Leaf> leaves;
  std::shared_ptr<Tree> child;
  int custom_calls = 0;
};

}  // namespace

namespace proto {

template <>
const MessageTable<Leaf>& tableOf<Leaf>() {
  static const MessageTable<Leaf> table{"Leaf", {field<&Leaf::label>(1, "label"), field<&Leaf::count>(2, "count")}};
  return table;
}

template <>
const MessageTable<Tree>& tableOf<Tree>() {
  static const MessageTable<Tree> table{"Tree", {
      field<&Tree::small>(1, "small"),
      field<&Tree::big>(2, "big"),
      field<&Tree::unsigned_value>(3, "unsigned_value"),
      field<&Tree::flag>(4, "flag"),
      field<&Tree::color>(5, "color"),
      field<&Tree::single>(6, "single"),
      field<&Tree::wide>(7, "wide"),
      field<&Tree::zigzag, Encoding::ZigZag>(8, "zigzag"),
      field<&Tree::fixed, Encoding::Fixed>(9, "fixed"),
      field<&Tree::name>(10, "name"),
      field<&Tree::numbers>(11, "numbers"),
      field<&Tree::floats>(12, "floats"),
      field<&Tree::names>(13, "names"),
      field<&Tree::leaf>(14, "leaf"),
      field<&Tree::leaves>(15, "leaves"),
      field<&Tree::child>(16, "child"),
      custom<Tree>(17, "custom", [](Tree& tree, const WireField&, const WireReader&, Decoder&, std::string_view) {
        ++tree.custom_calls;
      }),
  }};
  return table;
}

}  // namespace proto

namespace {

using Writer = test::ProtoWriter;

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

Tree decodeTree(const std::string& bytes) {
  proto::Source source{"tree.bin", bytes.data(), "a tree file", "tree.proto"};
  return proto::decode<Tree>(source, bytes);
}

TEST(ProtobufTables, DecodeEveryKindOfField) {
  double wide = 2.5;
  uint64_t wide_bits;
  std::memcpy(&wide_bits, &wide, sizeof wide_bits);
  std::string packed_numbers;
  for (uint8_t number : {3, 4}) packed_numbers += static_cast<char>(number);
  std::string packed_floats;
  for (float value : {1.5f, -2.0f}) packed_floats.append(reinterpret_cast<const char*>(&value), 4);
  Writer leaf;
  leaf.bytes(1, "leaf").varint(2, 7);
  Writer child;
  child.varint(2, 99);
  Writer bytes;
  bytes.varint(1, static_cast<uint64_t>(-5))  // int32 written sign-extended
      .varint(2, uint64_t{1} << 40)
      .varint(3, ~uint64_t{0})
      .varint(4, 1)
      .varint(5, 2)
      .fixed32(6, bitsOf(0.25f))
      .fixed64(7, wide_bits)
      .varint(8, 5)  // ZigZag 5 is -3
      .fixed32(9, 0xdeadbeef)
      .bytes(10, "tree")
      .varint(11, 1)
      .varint(11, 2)
      .bytes(11, packed_numbers)
      .bytes(12, packed_floats)
      .bytes(13, "a")
      .bytes(13, "b")
      .message(14, leaf)
      .message(15, leaf)
      .message(15, Writer().bytes(1, "second"))
      .message(16, child)
      .varint(17, 0)
      .varint(99, 1);  // unknown: skipped
  Tree tree = decodeTree(bytes.str());
  EXPECT_EQ(tree.small, -5);
  EXPECT_EQ(tree.big, int64_t{1} << 40);
  EXPECT_EQ(tree.unsigned_value, ~uint64_t{0});
  EXPECT_TRUE(tree.flag);
  EXPECT_EQ(tree.color, Color::Blue);
  EXPECT_EQ(tree.single, 0.25f);
  EXPECT_EQ(tree.wide, 2.5);
  EXPECT_EQ(tree.zigzag, -3);
  EXPECT_EQ(tree.fixed, 0xdeadbeefu);
  EXPECT_EQ(tree.name, "tree");
  EXPECT_EQ(tree.numbers, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(tree.floats, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(tree.names, (std::vector<std::string_view>{"a", "b"}));
  ASSERT_TRUE(tree.leaf);
  EXPECT_EQ(tree.leaf->label, "leaf");
  EXPECT_EQ(tree.leaf->count, 7);
  ASSERT_EQ(tree.leaves.size(), 2u);
  EXPECT_EQ(tree.leaves[1].count, std::nullopt);
  ASSERT_TRUE(tree.child);
  EXPECT_EQ(tree.child->big, 99);
  EXPECT_EQ(tree.custom_calls, 1);
  // Strings are views of the bytes, not copies.
  EXPECT_GE(tree.name.data(), bytes.str().data());
  EXPECT_LT(tree.name.data(), bytes.str().data() + bytes.str().size());
}

TEST(ProtobufTables, MalformedBytesAreNamedWithTheirOffset) {
  std::string truncated = Writer().bytes(10, "tree").str();
  truncated.pop_back();
  EXPECT_EQ(errorOf([&] { decodeTree(truncated); }),
            "tree.bin: Tree at byte 2: field 10 claims 4 bytes, only 3 are left (the file is truncated or not a "
            "tree file)");
  EXPECT_EQ(errorOf([&] { decodeTree(Writer().varint(14, 3).str()); }),
            "tree.bin: Tree: field leaf (number 14) has wire type varint, which does not match its declaration in "
            "tree.proto (corrupt file)");
  // A scalar written as bytes is refused (not read as a packed list).
  EXPECT_NE(errorOf([&] { decodeTree(Writer().bytes(2, "x").str()); }).find("field big (number 2) has wire type"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { decodeTree(Writer().bytes(12, "abc").str()); })
                .find("packed field floats has 3 bytes, not a multiple of 4"),
            std::string::npos);
  // Nesting is bounded.
  Writer nested;
  for (int i = 0; i < proto::Decoder::kMaxDepth + 1; ++i) nested = Writer().message(16, nested);
  EXPECT_NE(errorOf([&] { decodeTree(nested.str()); }).find("messages nest deeper than 100 levels"), std::string::npos);
}

TEST(WeightSource, WrapsAlignedBytesCopiesOthersAndChecksSizes) {
  auto buffer = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5});
  std::string_view all(reinterpret_cast<const char*>(buffer->data()), 4 * sizeof(float));
  WeightSource weights("m.bin");
  Tensor wrapped = weights.fromBytes(DType::F32, {4}, all, buffer, "w");
  EXPECT_EQ(wrapped.data(), buffer->data());
  Tensor copied = weights.fromBytes(DType::F32, {2}, all.substr(1, 8), buffer, "v");
  EXPECT_NE(copied.data(), static_cast<const void*>(all.data() + 1));
  EXPECT_EQ(weights.wrapped(), 1u);
  EXPECT_EQ(weights.copied(), 1u);
  EXPECT_EQ(errorOf([&] { weights.fromBytes(DType::F32, {3}, all, buffer, "initializer 'w'"); }),
            "m.bin: initializer 'w' has 16 bytes of data, its type f32[3] needs 12");
  EXPECT_EQ(errorOf([&] { weights.elementCount({2, -1}, "w"); }), "m.bin: w has a negative dimension (-1)");
}

TEST(WeightSource, FilesBesideTheModelStayInsideItsDirectory) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(::testing::TempDir()) / "weights_beside";
  fs::create_directories(dir);
  std::ofstream(dir / "a..b.bin") << "1234";
  WeightSource weights("m.onnx", dir.string());
  EXPECT_EQ(weights.fileBeside("a..b.bin", "external data").size, 4u);
  EXPECT_EQ(&weights.fileBeside("a..b.bin", "external data"), &weights.fileBeside("a..b.bin", "again"));
  for (const char* outside : {"../x.bin", "/etc/passwd", "sub/../../x.bin", ""}) {
    EXPECT_NE(errorOf([&] { weights.fileBeside(outside, "external data"); })
                  .find("which is not a path inside the model's directory"),
              std::string::npos)
        << outside;
  }
  EXPECT_NE(errorOf([&] { weights.fileBeside("missing.bin", "the external data of 'w'"); })
                .find("m.onnx: the external data of 'w' cannot be read: "),
            std::string::npos);
}

TEST(WeightSource, FoldersTheUserAllowsMayHoldFilesTheModelNames) {
  namespace fs = std::filesystem;
  fs::path root = fs::path(::testing::TempDir()) / "weights_allowed";
  fs::remove_all(root);
  fs::create_directories(root / "model");
  fs::create_directories(root / "shared");
  fs::create_directories(root / "private");
  std::ofstream(root / "shared" / "w.bin") << "1234";
  std::ofstream(root / "private" / "secret.bin") << "abcd";
  fs::create_symlink(root / "shared" / "w.bin", root / "model" / "linked.bin");
  fs::create_symlink(root / "private" / "secret.bin", root / "model" / "secret.bin");

  WeightSource confined("m.onnx", (root / "model").string());
  EXPECT_NE(errorOf([&] { confined.fileBeside("../shared/w.bin", "external data"); })
                .find("not a path inside the model's directory (allow another folder explicitly to read it)"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { confined.fileBeside("linked.bin", "external data"); }).find("(through a symbolic link)"),
            std::string::npos);

  WeightSource allowed("m.onnx", (root / "model").string(), {(root / "shared").string()});
  EXPECT_EQ(allowed.fileBeside("../shared/w.bin", "external data").size, 4u);
  EXPECT_EQ(allowed.fileBeside((root / "shared" / "w.bin").string(), "external data").size, 4u);
  EXPECT_EQ(allowed.fileBeside("linked.bin", "external data").size, 4u);
  // Another folder stays closed, by any path.
  for (const std::string& location : {std::string("../private/secret.bin"), std::string("secret.bin")}) {
    std::string message = errorOf([&] { allowed.fileBeside(location, "external data"); });
    EXPECT_NE(message.find("outside the model's directory '" + fs::canonical(root / "model").string() +
                           "' and the folders allowed ('" + fs::canonical(root / "shared").string() + "')"),
              std::string::npos)
        << message;
  }
  WeightSource missing_folder("m.onnx", (root / "model").string(), {(root / "gone").string()});
  EXPECT_NE(errorOf([&] { missing_folder.fileBeside("../private/secret.bin", "external data"); })
                .find("the allowed folder '" + (root / "gone").string() + "' cannot be resolved"),
            std::string::npos);
}

}  // namespace
}  // namespace estuary
