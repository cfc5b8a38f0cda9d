#pragma once
// One element of a small integer tensor whose contents shape inference tracks ("data
// propagation", as in ONNX): a known integer of any sign, a symbolic size, or unknown.
//
// Dim cannot hold negative integers, yet the tensors that feed Reshape, Slice or Gather
// routinely do (-1 for "infer this dimension", negative axes and indices); SymInt keeps
// both exact.
#include <cstdint>
#include <string>

#include "estuary/ir/shape.h"

namespace estuary {

class SymInt {
 public:
  SymInt() = default;  // unknown
  SymInt(int64_t value) : value_(value), kind_(Kind::Int) {}  // NOLINT: reads naturally
  SymInt(const Dim& dim);  // NOLINT: static dims become integers, unknown dims unknown

  bool isInt() const { return kind_ == Kind::Int; }
  bool isSymbolic() const { return kind_ == Kind::Symbolic; }
  bool isUnknown() const { return kind_ == Kind::Unknown; }
  // The integer; only meaningful when isInt().
  int64_t intValue() const { return value_; }

  // As a dimension: non-negative integers and symbolic sizes keep their value; negative
  // integers (not a size) and unknowns give an unknown dim.
  Dim toDim() const;

  // Exact where possible (integers, symbolic polynomials); unknown otherwise.
  friend SymInt operator+(const SymInt& a, const SymInt& b);
  friend SymInt operator-(const SymInt& a, const SymInt& b);
  friend SymInt operator*(const SymInt& a, const SymInt& b);
  // Integer division truncating toward zero as ONNX's integer Div; a symbolic dividend
  // is divided only when the division is exact. Division by zero gives unknown.
  friend SymInt operator/(const SymInt& a, const SymInt& b);

  // "3", "-1", "batch*seq", "?".
  std::string str() const;

  // Same integer or same symbolic expression; unknowns never compare equal.
  friend bool operator==(const SymInt& a, const SymInt& b);
  friend bool operator!=(const SymInt& a, const SymInt& b) { return !(a == b); }

 private:
  enum class Kind : uint8_t { Unknown, Int, Symbolic };
  Dim dim_;  // set when symbolic
  int64_t value_ = 0;
  Kind kind_ = Kind::Unknown;
};

}  // namespace estuary
