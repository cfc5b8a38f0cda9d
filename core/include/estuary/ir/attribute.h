#pragma once
// Typed node attributes: scalars, strings, element types, tensors, subgraphs and lists.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "estuary/ir/dtype.h"
#include "estuary/ir/tensor.h"

namespace estuary {

class Graph;

enum class AttrKind : uint8_t {
  Int,
  Float,
  String,
  Type,    // an element type, e.g. Cast's `to`
  Tensor,
  Graph,   // a subgraph (If branches, Loop body)
  Ints,
  Floats,
  Strings,
};

std::string_view attrKindName(AttrKind kind);

class Attribute {
 public:
  Attribute(int64_t v) : value_(v) {}                      // NOLINT
  Attribute(int v) : value_(int64_t{v}) {}                  // NOLINT
  Attribute(double v) : value_(v) {}                        // NOLINT
  Attribute(std::string v) : value_(std::move(v)) {}        // NOLINT
  Attribute(const char* v) : value_(std::string(v)) {}      // NOLINT
  Attribute(DType v) : value_(v) {}                         // NOLINT
  Attribute(Tensor v) : value_(std::move(v)) {}             // NOLINT
  Attribute(std::shared_ptr<Graph> v) : value_(std::move(v)) {}  // NOLINT
  Attribute(std::vector<int64_t> v) : value_(std::move(v)) {}    // NOLINT
  Attribute(std::vector<double> v) : value_(std::move(v)) {}     // NOLINT
  Attribute(std::vector<std::string> v) : value_(std::move(v)) {}  // NOLINT

  AttrKind kind() const { return static_cast<AttrKind>(value_.index()); }

  // Typed access; each raises an Error naming the expected and actual kind on mismatch.
  int64_t asInt() const;
  double asFloat() const;  // also accepts an Int
  const std::string& asString() const;
  DType asType() const;
  const Tensor& asTensor() const;
  const std::shared_ptr<Graph>& asGraph() const;
  const std::vector<int64_t>& asInts() const;
  const std::vector<double>& asFloats() const;
  const std::vector<std::string>& asStrings() const;

  // Tensors compare by content; subgraphs by identity (two nodes never share one).
  friend bool operator==(const Attribute& a, const Attribute& b);
  friend bool operator!=(const Attribute& a, const Attribute& b) { return !(a == b); }
  size_t hash() const;

 private:
  // The order matches AttrKind.
  std::variant<int64_t, double, std::string, DType, Tensor, std::shared_ptr<Graph>,
               std::vector<int64_t>, std::vector<double>, std::vector<std::string>>
      value_;
};

// A node's attributes, kept sorted by name so printing and hashing are deterministic.
class AttributeMap {
 public:
  using Entry = std::pair<std::string, Attribute>;

  const Attribute* find(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  void set(std::string name, Attribute value);
  bool erase(std::string_view name);
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }

  friend bool operator==(const AttributeMap& a, const AttributeMap& b) {
    return a.entries_ == b.entries_;
  }

 private:
  std::vector<Entry> entries_;
};

}  // namespace estuary
