#include "estuary/ir/attribute.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace estuary {

std::string_view attrKindName(AttrKind kind) {
  switch (kind) {
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::String: return "string";
    case AttrKind::Type: return "type";
    case AttrKind::Tensor: return "tensor";
    case AttrKind::Graph: return "graph";
    case AttrKind::Ints: return "ints";
    case AttrKind::Floats: return "floats";
    case AttrKind::Strings: return "strings";
  }
  return "?";
}

namespace {

template <typename T>
const T& expect(const std::variant<int64_t, double, std::string, DType, Tensor, std::shared_ptr<Graph>,
                                   std::vector<int64_t>, std::vector<double>,
                                   std::vector<std::string>>& value,
                AttrKind wanted) {
  if (const T* held = std::get_if<T>(&value)) return *held;
  raise("attribute is ", attrKindName(static_cast<AttrKind>(value.index())), ", expected ",
        attrKindName(wanted));
}

}  // namespace

int64_t Attribute::asInt() const { return expect<int64_t>(value_, AttrKind::Int); }
double Attribute::asFloat() const {
  if (const int64_t* held = std::get_if<int64_t>(&value_)) return static_cast<double>(*held);
  return expect<double>(value_, AttrKind::Float);
}
const std::string& Attribute::asString() const { return expect<std::string>(value_, AttrKind::String); }
DType Attribute::asType() const { return expect<DType>(value_, AttrKind::Type); }
const Tensor& Attribute::asTensor() const { return expect<Tensor>(value_, AttrKind::Tensor); }
const std::shared_ptr<Graph>& Attribute::asGraph() const {
  return expect<std::shared_ptr<Graph>>(value_, AttrKind::Graph);
}
const std::vector<int64_t>& Attribute::asInts() const {
  return expect<std::vector<int64_t>>(value_, AttrKind::Ints);
}
const std::vector<double>& Attribute::asFloats() const {
  return expect<std::vector<double>>(value_, AttrKind::Floats);
}
const std::vector<std::string>& Attribute::asStrings() const {
  return expect<std::vector<std::string>>(value_, AttrKind::Strings);
}

bool operator==(const Attribute& a, const Attribute& b) {
  if (a.value_.index() != b.value_.index()) return false;
  if (a.kind() == AttrKind::Tensor) return a.asTensor().contentEquals(b.asTensor());
  // Floats compare bitwise, so that NaN equals itself and -0.0 differs from 0.0 (as
  // hash() sees them).
  if (a.kind() == AttrKind::Float) {
    double x = a.asFloat(), y = b.asFloat();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  if (a.kind() == AttrKind::Floats) {
    const std::vector<double>& x = a.asFloats();
    const std::vector<double>& y = b.asFloats();
    return x.size() == y.size() &&
           (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0);
  }
  return a.value_ == b.value_;
}

size_t Attribute::hash() const {
  size_t seed = value_.index();
  auto mix = [&seed](size_t h) { seed ^= h + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2); };
  switch (kind()) {
    case AttrKind::Int: mix(std::hash<int64_t>()(asInt())); break;
    case AttrKind::Float: {
      double value = asFloat();
      uint64_t bits;
      std::memcpy(&bits, &value, sizeof bits);
      mix(std::hash<uint64_t>()(bits));
      break;
    }
    case AttrKind::String: mix(std::hash<std::string>()(asString())); break;
    case AttrKind::Type: mix(static_cast<size_t>(asType())); break;
    case AttrKind::Tensor: mix(asTensor().contentHash()); break;
    case AttrKind::Graph: mix(std::hash<const void*>()(asGraph().get())); break;
    case AttrKind::Ints:
      for (int64_t v : asInts()) mix(std::hash<int64_t>()(v));
      break;
    case AttrKind::Floats:
      for (double v : asFloats()) {
        uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        mix(std::hash<uint64_t>()(bits));
      }
      break;
    case AttrKind::Strings:
      for (const std::string& v : asStrings()) mix(std::hash<std::string>()(v));
      break;
  }
  return seed;
}

const Attribute* AttributeMap::find(std::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const Entry& entry, std::string_view key) { return entry.first < key; });
  return it != entries_.end() && it->first == name ? &it->second : nullptr;
}

void AttributeMap::set(std::string name, Attribute value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const Entry& entry, const std::string& key) { return entry.first < key; });
  if (it != entries_.end() && it->first == name) {
    it->second = std::move(value);
  } else {
    entries_.emplace(it, std::move(name), std::move(value));
  }
}

bool AttributeMap::erase(std::string_view name) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const Entry& entry, std::string_view key) { return entry.first < key; });
  if (it == entries_.end() || it->first != name) return false;
  entries_.erase(it);
  return true;
}

}  // namespace estuary
