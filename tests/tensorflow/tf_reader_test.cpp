// The TensorFlow reader on hand-written bytes: CRC32C as bundles use it, and TensorProto in
// each of its encodings.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>

#include "crc32c.h"
#include "estuary/support/error.h"
#include "proto_writer.h"
#include "tf_tensor.h"

namespace estuary::tensorflow_frontend {
namespace {

using test::ProtoWriter;

TEST(Crc32c, MatchesTheKnownValuesAndChains) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720, B.4
  std::string text = "the quick brown fox jumps over the lazy dog, twice over";
  EXPECT_EQ(crc32c(text.substr(20), crc32c(text.substr(0, 20))), crc32c(text));
  uint32_t crc = crc32c(text);
  uint32_t masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;  // as LevelDB and TensorFlow store it
  EXPECT_EQ(unmaskCrc(masked), crc);
}

// A TensorProto of `dtype` and `dims` with `fill` adding the values.
std::string tensorBytes(int32_t dtype, const std::vector<int64_t>& dims,
                        const std::function<void(ProtoWriter&)>& fill) {
  ProtoWriter shape;
  for (int64_t dim : dims) shape.message(2, ProtoWriter().varint(1, static_cast<uint64_t>(dim)));
  ProtoWriter tensor;
  tensor.varint(1, static_cast<uint64_t>(dtype)).message(2, shape);
  fill(tensor);
  return tensor.str();
}

std::string packedFloats(const std::vector<float>& values) {
  std::string bytes(values.size() * 4, '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

class TensorProtoTest : public ::testing::Test {
 protected:
  Tensor decode(const std::string& bytes) {
    held_.push_back(std::make_shared<std::string>(bytes));
    const std::string& stored = *held_.back();
    TensorProto proto = proto::decode<TensorProto>(
        proto::Source{"test", stored.data(), "a TensorProto", "tensor.proto"}, stored);
    return tensorFromProto(proto, weights_, held_.back(), "tensor 't'");
  }
  template <typename T>
  static std::vector<T> values(const Tensor& tensor) {
    return std::vector<T>(tensor.data<T>(), tensor.data<T>() + tensor.numElements());
  }

  WeightSource weights_{"test"};
  std::vector<std::shared_ptr<std::string>> held_;
};

TEST_F(TensorProtoTest, TensorContentHoldsTheBytes) {
  Tensor tensor = decode(tensorBytes(kDtFloat, {2, 3}, [](ProtoWriter& t) {
    t.bytes(4, packedFloats({1, 2, 3, 4, 5, 6}));
  }));
  EXPECT_EQ(tensor.dtype(), DType::F32);
  EXPECT_EQ(tensor.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<float>(tensor), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST_F(TensorProtoTest, TypedListsPackedOrNot) {
  Tensor floats = decode(tensorBytes(kDtFloat, {3}, [](ProtoWriter& t) { t.bytes(5, packedFloats({0.5f, -1, 8})); }));
  EXPECT_EQ(values<float>(floats), (std::vector<float>{0.5f, -1, 8}));
  // Unpacked: one key per value, as older writers emit.
  Tensor ints = decode(tensorBytes(kDtInt32, {3}, [](ProtoWriter& t) {
    t.varint(7, 4).varint(7, static_cast<uint64_t>(int64_t{-2})).varint(7, 9);
  }));
  EXPECT_EQ(values<int32_t>(ints), (std::vector<int32_t>{4, -2, 9}));
  Tensor int8s = decode(tensorBytes(kDtInt8, {2}, [](ProtoWriter& t) {
    t.bytes(7, ProtoWriter::packedVarints({static_cast<uint64_t>(int64_t{-128}), 127}));
  }));
  EXPECT_EQ(values<int8_t>(int8s), (std::vector<int8_t>{-128, 127}));
  Tensor longs = decode(tensorBytes(kDtInt64, {2}, [](ProtoWriter& t) {
    t.bytes(10, ProtoWriter::packedVarints({uint64_t{1} << 40, 3}));
  }));
  EXPECT_EQ(values<int64_t>(longs), (std::vector<int64_t>{int64_t{1} << 40, 3}));
  Tensor bools = decode(tensorBytes(kDtBool, {3}, [](ProtoWriter& t) { t.bytes(11, ProtoWriter::packedVarints({1, 0, 1})); }));
  EXPECT_EQ(values<uint8_t>(bools), (std::vector<uint8_t>{1, 0, 1}));
}

TEST_F(TensorProtoTest, AShortListIsASplatOfItsLastValue) {
  Tensor splat = decode(tensorBytes(kDtFloat, {2, 2}, [](ProtoWriter& t) { t.bytes(5, packedFloats({7.5f})); }));
  EXPECT_EQ(values<float>(splat), (std::vector<float>(4, 7.5f)));
  Tensor tail = decode(tensorBytes(kDtInt32, {4}, [](ProtoWriter& t) { t.bytes(7, ProtoWriter::packedVarints({1, 2})); }));
  EXPECT_EQ(values<int32_t>(tail), (std::vector<int32_t>{1, 2, 2, 2}));
  Tensor empty = decode(tensorBytes(kDtFloat, {3}, [](ProtoWriter&) {}));
  EXPECT_EQ(values<float>(empty), (std::vector<float>(3, 0.f)));
}

TEST_F(TensorProtoTest, HalfAndBfloat16ComeAsBitPatternsInHalfVal) {
  Tensor half = decode(tensorBytes(kDtHalf, {2}, [](ProtoWriter& t) { t.bytes(13, ProtoWriter::packedVarints({0x3C00, 0xC000})); }));
  EXPECT_EQ(half.dtype(), DType::F16);
  EXPECT_EQ(values<uint16_t>(half), (std::vector<uint16_t>{0x3C00, 0xC000}));  // 1.0, -2.0
  Tensor bf16 = decode(tensorBytes(kDtBfloat16, {2}, [](ProtoWriter& t) { t.bytes(13, ProtoWriter::packedVarints({0x3F80, 0x4040})); }));
  EXPECT_EQ(bf16.dtype(), DType::BF16);
  EXPECT_EQ(values<uint16_t>(bf16), (std::vector<uint16_t>{0x3F80, 0x4040}));  // 1.0, 3.0
}

TEST_F(TensorProtoTest, WrongSizesAndTypesAreNamed) {
  try {
    decode(tensorBytes(kDtFloat, {2, 2}, [](ProtoWriter& t) { t.bytes(5, packedFloats({1, 2, 3, 4, 5})); }));
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("tensor 't'"), std::string::npos) << error.what();
  }
  try {
    decode(tensorBytes(kDtFloat, {2}, [](ProtoWriter& t) { t.bytes(4, std::string(5, '\0')); }));
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("tensor 't'"), std::string::npos) << error.what();
  }
  EXPECT_THROW(decode(tensorBytes(kDtComplex64, {1}, [](ProtoWriter&) {})), Error);
}

}  // namespace
}  // namespace estuary::tensorflow_frontend
