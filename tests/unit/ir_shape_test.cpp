#include <gtest/gtest.h>

#include "estuary/ir/shape.h"
#include "estuary/support/error.h"

namespace estuary {
namespace {

TEST(Dim, StaticSymbolicAndUnknown) {
  EXPECT_TRUE(Dim(3).isStatic());
  EXPECT_EQ(Dim(3).value(), 3);
  EXPECT_TRUE(Dim::symbol("batch").isSymbolic());
  EXPECT_TRUE(Dim().isUnknown());
  EXPECT_EQ(Dim(3).str(), "3");
  EXPECT_EQ(Dim::unknown().str(), "?");
  EXPECT_EQ(Dim::symbol("batch").str(), "batch");
}

TEST(Dim, ArithmeticStaysExact) {
  Dim batch = Dim::symbol("batch"), seq = Dim::symbol("seq");
  EXPECT_EQ((batch * seq).str(), "batch*seq");
  EXPECT_EQ((seq * batch), (batch * seq));
  EXPECT_EQ((Dim::symbol("past") + Dim(1)).str(), "past+1");
  EXPECT_EQ((Dim(2) * seq + Dim(1)).str(), "2*seq+1");
  EXPECT_EQ((seq - Dim(1)).str(), "seq-1");
  EXPECT_EQ((batch * seq * Dim(768)).divideExactly(Dim(768)), batch * seq);
  EXPECT_EQ((batch * seq).divideExactly(seq), batch);
  EXPECT_TRUE(batch.divideExactly(seq).isUnknown());
  EXPECT_TRUE((Dim(2) * batch + Dim(1)).divideExactly(Dim(2)).isUnknown());
  EXPECT_EQ(batch - batch, Dim(0));
  EXPECT_TRUE((batch + Dim()).isUnknown());
  EXPECT_EQ(Dim() * Dim(0), Dim(0));
  EXPECT_TRUE((Dim(1) - Dim(2)).isUnknown());
}

TEST(Dim, ArithmeticBeyondInt64IsUnknown) {
  const Dim huge(int64_t{1} << 62);
  EXPECT_TRUE((huge * Dim(4)).isUnknown());
  EXPECT_TRUE((huge + huge + huge).isUnknown());
  const Dim n = Dim::symbol("n");
  EXPECT_TRUE((huge * n * Dim(4)).isUnknown());
  EXPECT_TRUE((huge * n + huge * n + huge * n).isUnknown());
  EXPECT_EQ((huge * n).str(), "4611686018427387904*n");
}

TEST(Dim, SymbolNamesMustBeIdentifiers) {
  EXPECT_THROW(Dim::symbol("batch size"), Error);
  EXPECT_THROW(Dim::symbol("2x"), Error);
  EXPECT_THROW(Dim::symbol(""), Error);
  EXPECT_NO_THROW(Dim::symbol("_seq2"));
}

TEST(Dim, ListsItsSymbols) {
  Dim dim = Dim::symbol("seq") * Dim::symbol("batch") + Dim::symbol("seq") + Dim(2);
  EXPECT_EQ(dim.symbols(), (std::vector<std::string>{"batch", "seq"}));
  EXPECT_TRUE(Dim(4).symbols().empty());
}

TEST(Dim, ParsesWhatItPrints) {
  for (const char* text : {"0", "7", "?", "batch", "batch*seq", "past+1", "2*seq+1", "seq-1", "a*a*b"}) {
    auto dim = Dim::parse(text);
    ASSERT_TRUE(dim) << text;
    EXPECT_EQ(dim->str(), text);
  }
  EXPECT_EQ(Dim::parse("seq*batch")->str(), "batch*seq");
  for (const char* bad : {"", "+", "3x", "a**b", "a+", "-3", "a b",
                          // Coefficients beyond int64.
                          "4611686018427387904*4*n", "9223372036854775800*n+9223372036854775800*n"}) {
    EXPECT_FALSE(Dim::parse(bad)) << bad;
  }
}

TEST(Dim, EqualityOfUnknownIsNotProof) {
  EXPECT_EQ(Dim(), Dim());
  EXPECT_FALSE(Dim().provablyEqual(Dim()));
  EXPECT_TRUE(Dim::symbol("n").provablyEqual(Dim::symbol("n")));
}

TEST(Shape, ElementsAndText) {
  Shape shape{Dim::symbol("batch"), 3, 224, 224};
  EXPECT_EQ(shape.str(), "[batch,3,224,224]");
  EXPECT_FALSE(shape.isStatic());
  EXPECT_EQ(shape.numElements().str(), "150528*batch");
  EXPECT_EQ(Shape().str(), "[]");
  EXPECT_EQ(Shape().numElements(), Dim(1));
  EXPECT_EQ(Shape::unranked().str(), "[*]");
  EXPECT_EQ(Shape::ofStatic({2, 3}).staticDims(), (std::vector<int64_t>{2, 3}));
}

TEST(Shape, CopiesAreIndependent) {
  Shape original{2, Dim::symbol("n")};
  Shape copy = original;
  copy[0] = 5;
  EXPECT_EQ(original.str(), "[2,n]");
  EXPECT_EQ(copy.str(), "[5,n]");
  Shape appended = original;
  appended.dims().push_back(7);
  EXPECT_EQ(original.rank(), 2u);
  EXPECT_EQ(appended.str(), "[2,n,7]");
  // Writing through the original leaves earlier copies as they were.
  Shape before = original;
  original[1] = Dim::unknown();
  EXPECT_EQ(before.str(), "[2,n]");
  EXPECT_EQ(original.str(), "[2,?]");
  // Assignment, moves and self-assignment.
  Shape assigned;
  assigned = before;
  EXPECT_EQ(assigned, before);
  Shape moved = std::move(assigned);
  EXPECT_EQ(moved.str(), "[2,n]");
  moved = moved;
  EXPECT_EQ(moved.str(), "[2,n]");
  moved = Shape::unranked();
  EXPECT_FALSE(moved.isRanked());
  EXPECT_EQ(moved.rank(), 0u);
}

TEST(Shape, EqualityComparesDimsNotStorage) {
  Shape a{3, 4};
  Shape b = Shape::ofStatic({3, 4});
  Shape c = a;
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
  c[1] = 5;
  EXPECT_NE(a, c);
  EXPECT_NE(Shape(), Shape::unranked());
  Shape scalar;
  scalar.dims();  // non-const access to a scalar's (empty) dims
  EXPECT_EQ(scalar, Shape());
  EXPECT_EQ(scalar.str(), "[]");
}

TEST(TensorType, RoundTripsThroughText) {
  for (const char* text : {"f32[batch,16]", "?[*]", "bool[]", "bf16[past+1,4]", "i64[?,3]"}) {
    auto type = TensorType::parse(text);
    ASSERT_TRUE(type) << text;
    EXPECT_EQ(type->str(), text);
  }
  for (const char* bad : {"f33[1]", "f32", "f32[1", "f32[1,,2]", "[1]"}) {
    EXPECT_FALSE(TensorType::parse(bad)) << bad;
  }
}

}  // namespace
}  // namespace estuary
