#include "estuary/ops/sym_int.h"

namespace estuary {

SymInt::SymInt(const Dim& dim) {
  if (dim.isStatic()) {
    value_ = dim.value();
    kind_ = Kind::Int;
  } else if (dim.isSymbolic()) {
    dim_ = dim;
    kind_ = Kind::Symbolic;
  }
}

Dim SymInt::toDim() const {
  if (isSymbolic()) return dim_;
  if (isInt() && value_ >= 0) return Dim(value_);
  return Dim::unknown();
}

namespace {

// A symbolic operand combined with a possibly negative integer: Dim holds no negative
// numbers, so a negative integer turns addition into subtraction and back.
SymInt addSigned(const Dim& dim, int64_t value) {
  return SymInt(value >= 0 ? dim + Dim(value) : dim - Dim(-value));
}

}  // namespace

SymInt operator+(const SymInt& a, const SymInt& b) {
  if (a.isUnknown() || b.isUnknown()) return SymInt();
  if (a.isInt() && b.isInt()) return SymInt(a.value_ + b.value_);
  if (a.isInt()) return addSigned(b.dim_, a.value_);
  if (b.isInt()) return addSigned(a.dim_, b.value_);
  return SymInt(a.dim_ + b.dim_);
}

SymInt operator-(const SymInt& a, const SymInt& b) {
  if (a.isUnknown() || b.isUnknown()) return SymInt();
  if (a.isInt() && b.isInt()) return SymInt(a.value_ - b.value_);
  if (b.isInt()) return addSigned(a.dim_, -b.value_);
  if (a.isInt()) {
    // a - dim: exact only as a polynomial with a non-negative constant.
    return a.value_ >= 0 ? SymInt(Dim(a.value_) - b.dim_) : SymInt();
  }
  return SymInt(a.dim_ - b.dim_);
}

SymInt operator*(const SymInt& a, const SymInt& b) {
  if (a.isInt() && b.isInt()) return SymInt(a.value_ * b.value_);
  if ((a.isInt() && a.value_ == 0) || (b.isInt() && b.value_ == 0)) return SymInt(int64_t{0});
  if (a.isUnknown() || b.isUnknown()) return SymInt();
  // A negative factor would make a negative polynomial, which Dim does not represent.
  if ((a.isInt() && a.value_ < 0) || (b.isInt() && b.value_ < 0)) return SymInt();
  return SymInt(a.toDim() * b.toDim());
}

SymInt operator/(const SymInt& a, const SymInt& b) {
  if (a.isUnknown() || b.isUnknown()) return SymInt();
  if (b.isInt() && b.value_ == 0) return SymInt();
  if (a.isInt() && b.isInt()) return SymInt(a.value_ / b.value_);
  if ((a.isInt() && a.value_ < 0) || (b.isInt() && b.value_ < 0)) return SymInt();
  return SymInt(a.toDim().divideExactly(b.toDim()));
}

std::string SymInt::str() const {
  switch (kind_) {
    case Kind::Int: return std::to_string(value_);
    case Kind::Symbolic: return dim_.str();
    case Kind::Unknown: break;
  }
  return "?";
}

bool operator==(const SymInt& a, const SymInt& b) {
  if (a.kind_ != b.kind_ || a.isUnknown()) return false;
  return a.isInt() ? a.value_ == b.value_ : a.dim_ == b.dim_;
}

}  // namespace estuary
