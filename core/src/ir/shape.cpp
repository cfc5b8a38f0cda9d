#include "estuary/ir/shape.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "estuary/support/error.h"

namespace estuary {

// A polynomial with integer coefficients over named symbols. Each monomial is a sorted
// list of symbol names (with repetition for powers); the constant term has no symbols.
struct Dim::Expr {
  std::map<std::vector<std::string>, int64_t> terms;  // monomial -> coefficient, no zeros
  std::string text;                                    // canonical form, filled by finish()
  // A coefficient left the int64 range: the polynomial is not exact (an unknown dim).
  bool overflowed = false;

  void add(const std::vector<std::string>& monomial, int64_t coefficient) {
    if (coefficient == 0) return;
    auto [it, inserted] = terms.emplace(monomial, coefficient);
    if (inserted) return;
    overflowed |= __builtin_add_overflow(it->second, coefficient, &it->second);
    if (it->second == 0) terms.erase(it);
  }

  // Canonical text: symbolic terms in monomial order, then the constant.
  void finish() {
    text.clear();
    auto append_term = [&](const std::vector<std::string>& monomial, int64_t signed_coefficient) {
      // The magnitude as unsigned: negating INT64_MIN would overflow.
      uint64_t coefficient = static_cast<uint64_t>(signed_coefficient);
      if (signed_coefficient < 0) {
        text += '-';
        coefficient = 0 - coefficient;
      } else if (!text.empty()) {
        text += '+';
      }
      bool wrote = false;
      if (coefficient != 1 || monomial.empty()) {
        text += std::to_string(coefficient);
        wrote = true;
      }
      for (const std::string& symbol : monomial) {
        if (wrote) text += '*';
        text += symbol;
        wrote = true;
      }
    };
    for (const auto& [monomial, coefficient] : terms) {
      if (!monomial.empty()) append_term(monomial, coefficient);
    }
    auto constant = terms.find({});
    if (constant != terms.end()) append_term({}, constant->second);
  }

  bool isConstant() const { return terms.empty() || (terms.size() == 1 && terms.begin()->first.empty()); }
  int64_t constant() const {
    auto it = terms.find({});
    return it == terms.end() ? 0 : it->second;
  }
};

namespace {

using ExprPtr = std::shared_ptr<const Dim::Expr>;

Dim::Expr constantExpr(int64_t value) {
  Dim::Expr expr;
  expr.add({}, value);
  return expr;
}

}  // namespace

Dim::Dim(int64_t value) : value_(value) {}

Dim::Dim(std::shared_ptr<const Expr> expr) : expr_(std::move(expr)) {}

Dim Dim::fromExpr(std::shared_ptr<const Expr> expr) {
  if (expr->overflowed) return Dim::unknown();
  if (expr->isConstant()) {
    int64_t value = expr->constant();
    return value >= 0 ? Dim(value) : Dim::unknown();
  }
  return Dim(std::move(expr));
}

Dim Dim::symbol(std::string_view name) {
  // Symbols must read back from the text form: an identifier, as Dim::parse accepts.
  bool identifier = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                    std::all_of(name.begin(), name.end(), [](char c) {
                      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                    });
  if (!identifier) raise("symbolic dimension name '", name, "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  auto expr = std::make_shared<Expr>();
  expr->add({std::string(name)}, 1);
  expr->finish();
  return Dim(ExprPtr(std::move(expr)));
}

namespace {

// The polynomial of a known dim (static or symbolic).
Dim::Expr exprOf(const Dim& dim, const std::shared_ptr<const Dim::Expr>& symbolic) {
  return symbolic ? *symbolic : constantExpr(dim.value());
}

}  // namespace

Dim operator+(const Dim& a, const Dim& b) {
  if (a.isUnknown() || b.isUnknown()) return Dim::unknown();
  if (a.isStatic() && b.isStatic()) {
    int64_t total;
    return __builtin_add_overflow(a.value_, b.value_, &total) ? Dim::unknown() : Dim(total);
  }
  auto sum = std::make_shared<Dim::Expr>(exprOf(a, a.expr_));
  for (const auto& [monomial, coefficient] : exprOf(b, b.expr_).terms) sum->add(monomial, coefficient);
  sum->finish();
  return Dim::fromExpr(std::move(sum));
}

Dim operator-(const Dim& a, const Dim& b) {
  if (a.isUnknown() || b.isUnknown()) return Dim::unknown();
  if (a.isStatic() && b.isStatic()) return Dim(a.value_ - b.value_);
  auto difference = std::make_shared<Dim::Expr>(exprOf(a, a.expr_));
  for (const auto& [monomial, coefficient] : exprOf(b, b.expr_).terms) difference->add(monomial, -coefficient);
  difference->finish();
  return Dim::fromExpr(std::move(difference));
}

Dim operator*(const Dim& a, const Dim& b) {
  if (a.isStatic() && b.isStatic()) {
    int64_t product;
    return __builtin_mul_overflow(a.value_, b.value_, &product) ? Dim::unknown() : Dim(product);
  }
  // Anything times a static zero is zero, even an unknown size.
  if ((a.isStatic() && a.value_ == 0) || (b.isStatic() && b.value_ == 0)) return Dim(0);
  if (a.isUnknown() || b.isUnknown()) return Dim::unknown();
  auto product = std::make_shared<Dim::Expr>();
  for (const auto& [left, left_coefficient] : exprOf(a, a.expr_).terms) {
    for (const auto& [right, right_coefficient] : exprOf(b, b.expr_).terms) {
      std::vector<std::string> monomial = left;
      monomial.insert(monomial.end(), right.begin(), right.end());
      std::sort(monomial.begin(), monomial.end());
      int64_t coefficient;
      product->overflowed |=
          __builtin_mul_overflow(left_coefficient, right_coefficient, &coefficient);
      product->add(monomial, coefficient);
    }
  }
  product->finish();
  return Dim::fromExpr(std::move(product));
}

Dim Dim::divideExactly(const Dim& divisor) const {
  if (isUnknown() || divisor.isUnknown()) return Dim::unknown();
  if (divisor.isStatic() && divisor.value_ == 0) return Dim::unknown();
  if (isStatic() && divisor.isStatic()) {
    return value_ % divisor.value_ == 0 ? Dim(value_ / divisor.value_) : Dim::unknown();
  }
  Expr divisor_expr = exprOf(divisor, divisor.expr_);
  if (divisor_expr.terms.size() != 1) return Dim::unknown();  // only monomial divisors
  const auto& [divisor_symbols, divisor_coefficient] = *divisor_expr.terms.begin();
  auto quotient = std::make_shared<Expr>();
  for (const auto& [monomial, coefficient] : exprOf(*this, expr_).terms) {
    if (coefficient % divisor_coefficient != 0) return Dim::unknown();
    std::vector<std::string> remaining;
    // Both lists are sorted: remove divisor_symbols from monomial as a multiset.
    auto wanted = divisor_symbols.begin();
    for (const std::string& symbol : monomial) {
      if (wanted != divisor_symbols.end() && *wanted == symbol) {
        ++wanted;
      } else {
        remaining.push_back(symbol);
      }
    }
    if (wanted != divisor_symbols.end()) return Dim::unknown();
    quotient->add(remaining, coefficient / divisor_coefficient);
  }
  quotient->finish();
  return Dim::fromExpr(std::move(quotient));
}

std::string Dim::str() const {
  if (expr_) return expr_->text;
  if (value_ < 0) return "?";
  return std::to_string(value_);
}

std::vector<std::string> Dim::symbols() const {
  std::vector<std::string> names;
  if (!expr_) return names;
  for (const auto& [monomial, coefficient] : expr_->terms) names.insert(names.end(), monomial.begin(), monomial.end());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

bool operator==(const Dim& a, const Dim& b) {
  if (a.expr_ || b.expr_) return a.expr_ && b.expr_ && a.expr_->text == b.expr_->text;
  if (a.value_ < 0 || b.value_ < 0) return a.value_ < 0 && b.value_ < 0;
  return a.value_ == b.value_;
}

std::optional<Dim> Dim::parse(std::string_view text) {
  if (text == "?") return Dim::unknown();
  if (text.empty()) return std::nullopt;
  // Grammar: term (('+'|'-') term)*, term: factor ('*' factor)*, factor: integer | identifier.
  auto expr = std::make_shared<Expr>();
  size_t pos = 0;
  int64_t sign = 1;
  if (text[0] == '-') {
    sign = -1;
    pos = 1;
  }
  while (true) {
    int64_t coefficient = sign;
    std::vector<std::string> monomial;
    while (true) {
      if (pos >= text.size()) return std::nullopt;
      char c = text[pos];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        int64_t number = 0;
        while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
          if (number > (INT64_MAX - 9) / 10) return std::nullopt;
          number = number * 10 + (text[pos++] - '0');
        }
        if (__builtin_mul_overflow(coefficient, number, &coefficient)) return std::nullopt;
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t start = pos;
        while (pos < text.size() &&
               (std::isalnum(static_cast<unsigned char>(text[pos])) || text[pos] == '_')) {
          ++pos;
        }
        monomial.emplace_back(text.substr(start, pos - start));
      } else {
        return std::nullopt;
      }
      if (pos < text.size() && text[pos] == '*') {
        ++pos;
        continue;
      }
      break;
    }
    std::sort(monomial.begin(), monomial.end());
    expr->add(monomial, coefficient);
    if (expr->overflowed) return std::nullopt;
    if (pos == text.size()) break;
    if (text[pos] == '+') {
      sign = 1;
    } else if (text[pos] == '-') {
      sign = -1;
    } else {
      return std::nullopt;
    }
    ++pos;
  }
  if (expr->isConstant()) {
    int64_t value = expr->constant();
    if (value < 0) return std::nullopt;
    return Dim(value);
  }
  expr->finish();
  return Dim(ExprPtr(std::move(expr)));
}

Shape::Shape(std::vector<Dim> dims) {
  if (dims.empty()) return;
  block_ = new Block;
  block_->dims = std::move(dims);
}

Shape Shape::unranked() {
  Shape shape;
  shape.ranked_ = false;
  return shape;
}

Shape Shape::ofStatic(const std::vector<int64_t>& dims) {
  return Shape(std::vector<Dim>(dims.begin(), dims.end()));
}

std::vector<Dim>& Shape::mutableDims() {
  if (!block_) {
    block_ = new Block;
  } else if (block_->refs.load(std::memory_order_acquire) != 1) {
    // Shared: this shape takes its own copy. When refs is 1 no other shape holds the
    // block, and none can start to without reading this shape, so no race is possible.
    auto* copy = new Block;
    copy->dims = block_->dims;
    release();
    block_ = copy;
  }
  return block_->dims;
}

bool Shape::isStatic() const {
  const std::vector<Dim>& all = dims();
  return ranked_ && std::all_of(all.begin(), all.end(), [](const Dim& d) { return d.isStatic(); });
}

std::vector<int64_t> Shape::staticDims() const {
  std::vector<int64_t> values;
  values.reserve(rank());
  for (const Dim& dim : dims()) values.push_back(dim.value());
  return values;
}

Dim Shape::numElements() const {
  if (!ranked_) return Dim::unknown();
  Dim product(1);
  for (const Dim& dim : dims()) product = product * dim;
  return product;
}

std::string Shape::str() const {
  if (!ranked_) return "[*]";
  std::string text = "[";
  const std::vector<Dim>& all = dims();
  for (size_t i = 0; i < all.size(); ++i) {
    if (i) text += ',';
    text += all[i].str();
  }
  text += ']';
  return text;
}

std::string TensorType::str() const {
  std::string text(dtypeName(dtype));
  text += shape.str();
  return text;
}

std::optional<TensorType> TensorType::parse(std::string_view text) {
  size_t open = text.find('[');
  if (open == std::string_view::npos || text.back() != ']') return std::nullopt;
  auto dtype = parseDType(text.substr(0, open));
  if (!dtype) return std::nullopt;
  std::string_view inside = text.substr(open + 1, text.size() - open - 2);
  if (inside == "*") return TensorType(*dtype, Shape::unranked());
  std::vector<Dim> dims;
  if (!inside.empty()) {
    size_t start = 0;
    while (true) {
      size_t comma = inside.find(',', start);
      std::string_view piece =
          inside.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      auto dim = Dim::parse(piece);
      if (!dim) return std::nullopt;
      dims.push_back(*dim);
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  }
  return TensorType(*dtype, Shape(std::move(dims)));
}

}  // namespace estuary
