#pragma once
// Tensor shapes whose dimensions are static, symbolic or unknown.
//
// A symbolic dimension is a polynomial over named symbols with integer coefficients
// ("batch", "batch*seq", "past+1", "2*seq"), so that reshapes, concatenations and
// flattening keep dynamic sizes exact instead of degrading them to "unknown".
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/ir/dtype.h"

namespace estuary {

class Dim {
 public:
  // An unknown dimension: nothing is known about its size.
  Dim() = default;
  // A static dimension (value >= 0).
  Dim(int64_t value);  // NOLINT(google-explicit-constructor): dims read naturally as integers
  // A symbol; the name must be an identifier ([A-Za-z_][A-Za-z0-9_]*), else an Error.
  static Dim symbol(std::string_view name);
  static Dim unknown() { return Dim(); }
  // Parses "3", "?", "batch", "batch*seq", "past+1", "2*seq+1". Returns nullopt on bad text.
  static std::optional<Dim> parse(std::string_view text);

  bool isStatic() const { return !expr_ && value_ >= 0; }
  bool isUnknown() const { return !expr_ && value_ < 0; }
  bool isSymbolic() const { return expr_ != nullptr; }
  // The static value; only meaningful when isStatic().
  int64_t value() const { return value_; }

  // Exact arithmetic where possible; an unknown operand makes an unknown result.
  friend Dim operator+(const Dim& a, const Dim& b);
  friend Dim operator-(const Dim& a, const Dim& b);
  friend Dim operator*(const Dim& a, const Dim& b);
  // Exact division: the result is unknown unless every term divides evenly.
  Dim divideExactly(const Dim& divisor) const;

  // Canonical text: "3", "?", "batch", "batch*seq", "past+1".
  std::string str() const;
  // The distinct symbol names the dim is built from, sorted ("batch*seq+seq": batch, seq).
  std::vector<std::string> symbols() const;

  // Structural equality: same static value, or the same canonical polynomial.
  // Two unknown dims are equal as values of this class but not provably the same size:
  // use provablyEqual() for semantic checks.
  friend bool operator==(const Dim& a, const Dim& b);
  friend bool operator!=(const Dim& a, const Dim& b) { return !(a == b); }
  bool provablyEqual(const Dim& other) const { return !isUnknown() && *this == other; }

  struct Expr;  // polynomial; defined in shape.cpp

 private:
  explicit Dim(std::shared_ptr<const Expr> expr);
  static Dim fromExpr(std::shared_ptr<const Expr> expr);
  int64_t value_ = -1;
  std::shared_ptr<const Expr> expr_;
};

// A ranked or unranked shape. A rank-0 ranked shape is a scalar.
//
// Copies share their dims until one of them is modified through a non-const accessor
// (copy on write), so copying a type from value to value allocates nothing. A reference
// from a non-const accessor stays valid only until the shape is next copied.
class Shape {
 public:
  Shape() = default;  // rank 0, a scalar
  Shape(std::vector<Dim> dims);  // NOLINT
  Shape(std::initializer_list<Dim> dims) : Shape(std::vector<Dim>(dims)) {}
  static Shape unranked();
  static Shape ofStatic(const std::vector<int64_t>& dims);

  Shape(const Shape& other) : block_(other.block_), ranked_(other.ranked_) {
    if (block_) block_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  Shape(Shape&& other) noexcept : block_(other.block_), ranked_(other.ranked_) {
    other.block_ = nullptr;
  }
  Shape& operator=(Shape other) noexcept {
    std::swap(block_, other.block_);
    ranked_ = other.ranked_;
    return *this;
  }
  ~Shape() { release(); }

  bool isRanked() const { return ranked_; }
  size_t rank() const { return block_ ? block_->dims.size() : 0; }
  const Dim& operator[](size_t i) const { return block_->dims[i]; }
  Dim& operator[](size_t i) { return mutableDims()[i]; }
  const std::vector<Dim>& dims() const { return block_ ? block_->dims : kNoDims; }
  std::vector<Dim>& dims() { return mutableDims(); }

  bool isStatic() const;  // ranked and every dim static
  // Static dims as integers; only valid when isStatic().
  std::vector<int64_t> staticDims() const;
  // Product of all dims (static, symbolic or unknown).
  Dim numElements() const;

  // "[batch,3,224,224]", "[]" for a scalar, "[*]" for unranked.
  std::string str() const;

  friend bool operator==(const Shape& a, const Shape& b) {
    return a.ranked_ == b.ranked_ && (a.block_ == b.block_ || a.dims() == b.dims());
  }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  // The dims, shared by copies of a shape.
  struct Block {
    std::atomic<uint32_t> refs{1};
    std::vector<Dim> dims;
  };
  inline static const std::vector<Dim> kNoDims;

  std::vector<Dim>& mutableDims();
  void release() {
    if (block_ && block_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete block_;
  }

  Block* block_ = nullptr;  // nullptr: no dims
  bool ranked_ = true;
};

// Element type plus shape. A value whose type is not yet inferred has
// DType::Undefined and an unranked shape.
struct TensorType {
  DType dtype = DType::Undefined;
  Shape shape = Shape::unranked();

  TensorType() = default;
  TensorType(DType dtype, Shape shape) : dtype(dtype), shape(std::move(shape)) {}

  bool isKnown() const { return dtype != DType::Undefined && shape.isRanked(); }
  // "f32[batch,16]", "?[*]" when nothing is known.
  std::string str() const;
  // Parses the str() form; nullopt on bad text.
  static std::optional<TensorType> parse(std::string_view text);

  friend bool operator==(const TensorType& a, const TensorType& b) {
    return a.dtype == b.dtype && a.shape == b.shape;
  }
  friend bool operator!=(const TensorType& a, const TensorType& b) { return !(a == b); }
};

}  // namespace estuary
