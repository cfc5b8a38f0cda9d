#include "estuary/text/printer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <deque>

#include "estuary/support/atomic_file.h"
#include "estuary/support/error.h"
#include "text/flat_map.h"
#include "text/syntax.h"

namespace estuary {
namespace {

using text::appendQuoted;

void appendInt(std::string& out, int64_t value) {
  char buffer[24];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

void appendName(std::string& out, char sigil, std::string_view name) {
  out += sigil;
  if (text::isBareName(name)) {
    out += name;
  } else {
    appendQuoted(out, name);
  }
}

// Keywords that may follow a node or start a statement are quoted when they name an
// op, so `loc(%x)` is never mistaken for a node's location.
void appendOpIdentifier(std::string& out, std::string_view name) {
  if (text::isBareIdentifier(name) && name != "return" && name != "update" && name != "loc") {
    out += name;
  } else {
    appendQuoted(out, name);
  }
}

template <typename T>
T load(const unsigned char* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

// Whether every element prints as a decimal that reads back to the same bytes: NaNs
// other than the canonical quiet NaN and bools other than 0/1 need the hex form.
bool decimalIsExact(const Tensor& tensor) {
  const auto* bytes = static_cast<const unsigned char*>(tensor.data());
  const size_t count = static_cast<size_t>(tensor.numElements());
  for (size_t i = 0; i < count; ++i) {
    switch (tensor.dtype()) {
      case DType::F32: {
        uint32_t bits = load<uint32_t>(bytes + 4 * i);
        if ((bits & 0x7fffffffu) > 0x7f800000u && bits != 0x7fc00000u) return false;
        break;
      }
      case DType::F64: {
        uint64_t bits = load<uint64_t>(bytes + 8 * i);
        if ((bits & 0x7fffffffffffffffull) > 0x7ff0000000000000ull && bits != 0x7ff8000000000000ull) {
          return false;
        }
        break;
      }
      case DType::F16: {
        uint16_t bits = load<uint16_t>(bytes + 2 * i);
        if ((bits & 0x7fffu) > 0x7c00u && bits != 0x7e00u) return false;
        break;
      }
      case DType::BF16: {
        uint16_t bits = load<uint16_t>(bytes + 2 * i);
        if ((bits & 0x7fffu) > 0x7f80u && bits != 0x7fc0u) return false;
        break;
      }
      case DType::Bool:
        if (bytes[i] > 1) return false;
        break;
      default:
        break;
    }
  }
  return true;
}

void appendElement(std::string& out, DType dtype, const unsigned char* p) {
  switch (dtype) {
    case DType::F32: text::appendFloat(out, load<float>(p)); break;
    case DType::F64: text::appendDouble(out, load<double>(p)); break;
    case DType::F16: text::appendHalf(out, load<uint16_t>(p)); break;
    case DType::BF16: text::appendBFloat16(out, load<uint16_t>(p)); break;
    case DType::I8: appendInt(out, load<int8_t>(p)); break;
    case DType::I16: appendInt(out, load<int16_t>(p)); break;
    case DType::I32: appendInt(out, load<int32_t>(p)); break;
    case DType::I64: appendInt(out, load<int64_t>(p)); break;
    case DType::U8: appendInt(out, *p); break;
    case DType::Bool: out += *p ? "true" : "false"; break;
    case DType::Undefined: break;
  }
}

class Printer {
 public:
  explicit Printer(const PrintOptions& options) : options_(options) {}

  std::string print(const Graph& graph) {
    nameValues(graph);
    renameDuplicates();
    printGraphText(graph, 0);
    out_ += '\n';
    return std::move(out_);
  }

 private:
  struct PrintedName {
    std::string_view text;  // empty for an unnamed value
    uint64_t number = 0;
  };

  // Names every value defined in the printed text, in textual order, so that uses may
  // precede definitions (a graph that is not in topological order still prints).
  void nameValues(const Graph& graph) {
    for (const Value* input : graph.inputs()) nameValue(input);
    for (const Node* node : graph.nodes()) {
      for (size_t i = 0; i < node->numOutputs(); ++i) nameValue(node->output(i));
      for (const auto& [attr_name, attr] : node->attributes()) {
        if (attr.kind() == AttrKind::Graph && attr.asGraph()) nameValues(*attr.asGraph());
      }
    }
  }

  void nameValue(const Value* value) {
    auto [index, inserted] = indices_.tryEmplace(value, static_cast<uint32_t>(names_.size()));
    if (!inserted) return;
    names_.emplace_back();
    PrintedName& name = names_.back();
    const std::string& wanted = value->name();
    if (wanted.empty()) {
      name.number = next_number_++;
    } else if (taken_.tryEmplace(wanted, true).second) {
      name.text = wanted;
    } else {
      duplicates_.push_back(value);
    }
  }

  // A later value with an already printed name becomes "name.1", "name.2", ...: the first
  // free suffix among every name in the text. The search for a name goes on from where the
  // last one for that name stopped, so many values of one name take linear time.
  void renameDuplicates() {
    for (const Value* value : duplicates_) {
      std::string candidate;
      uint64_t& suffix = next_suffix_[value->name()];
      for (suffix = std::max<uint64_t>(suffix, 1);; ++suffix) {
        candidate = value->name();
        candidate += '.';
        appendInt(candidate, static_cast<int64_t>(suffix));
        if (!taken_.find(candidate)) break;
      }
      ++suffix;
      invented_.push_back(std::move(candidate));
      taken_.tryEmplace(invented_.back(), true);
      names_[*indices_.find(value)].text = invented_.back();
    }
    duplicates_.clear();
  }

  void appendValue(const Value* value) {
    const uint32_t* index = indices_.find(value);
    if (!index) {
      // A value defined outside the printed graph (printing a subgraph on its own).
      nameValue(value);
      renameDuplicates();
      index = indices_.find(value);
    }
    const PrintedName& name = names_[*index];
    if (name.text.empty()) {
      out_ += '%';
      appendInt(out_, static_cast<int64_t>(name.number));
    } else {
      appendName(out_, '%', name.text);
    }
  }

  // TensorType::str() without a temporary string per value.
  void appendType(const TensorType& type) {
    out_ += dtypeName(type.dtype);
    if (!type.shape.isRanked()) {
      out_ += "[*]";
      return;
    }
    out_ += '[';
    for (size_t i = 0; i < type.shape.rank(); ++i) {
      if (i) out_ += ',';
      const Dim& dim = type.shape[i];
      if (dim.isStatic()) {
        appendInt(out_, dim.value());
      } else if (dim.isUnknown()) {
        out_ += '?';
      } else {
        out_ += dim.str();
      }
    }
    out_ += ']';
  }

  void indent(int depth) { out_.append(static_cast<size_t>(depth), ' '); }

  void printGraphText(const Graph& graph, int depth) {
    out_ += "graph ";
    appendName(out_, '@', graph.name());
    out_ += '(';
    bool first = true;
    for (const Value* input : graph.inputs()) {
      if (!first) out_ += ", ";
      first = false;
      appendValue(input);
      out_ += ": ";
      appendType(input->type());
      if (input->isMutableInput()) out_ += " mutable";
    }
    out_ += ") {\n";
    for (const Node* node : graph.nodes()) {
      indent(depth + 2);
      printNode(*node, depth + 2);
      out_ += '\n';
    }
    indent(depth + 2);
    out_ += "return";
    for (size_t i = 0; i < graph.numOutputs(); ++i) {
      out_ += i == 0 ? " " : ", ";
      appendOperand(graph.output(i));
    }
    out_ += '\n';
    for (const Graph::InputUpdate& update : graph.inputUpdates()) {
      indent(depth + 2);
      out_ += "update ";
      appendValue(update.input);
      out_ += " = ";
      appendOperand(update.new_value);
      out_ += '\n';
    }
    indent(depth);
    out_ += '}';
  }

  void appendOperand(const Value* value) {
    if (value) {
      appendValue(value);
    } else {
      out_ += '_';
    }
  }

  void printNode(const Node& node, int depth) {
    for (size_t i = 0; i < node.numOutputs(); ++i) {
      if (i) out_ += ", ";
      appendValue(node.output(i));
    }
    if (node.numOutputs()) out_ += " = ";
    if (!node.domain().empty()) {
      appendOpIdentifier(out_, node.domain());
      out_ += "::";
      appendOpIdentifier(out_, node.opType());
    } else {
      appendOpIdentifier(out_, node.opType());
    }
    out_ += '(';
    for (size_t i = 0; i < node.numInputs(); ++i) {
      if (i) out_ += ", ";
      appendOperand(node.input(i));
    }
    out_ += ')';
    if (!node.attributes().empty()) {
      out_ += " {";
      bool first = true;
      for (const auto& [name, attr] : node.attributes()) {
        if (!first) out_ += ", ";
        first = false;
        appendOpIdentifier(out_, name);
        out_ += " = ";
        printAttribute(node, name, attr, depth);
      }
      out_ += '}';
    }
    for (size_t i = 0; i < node.numOutputs(); ++i) {
      out_ += i ? ", " : " : ";
      appendType(node.output(i)->type());
    }
    if (!node.name().empty()) {
      out_ += " loc(";
      appendQuoted(out_, node.name());
      out_ += ')';
    }
  }

  template <typename T, typename AppendOne>
  void printList(const std::vector<T>& items, const char* empty_spelling, AppendOne append_one) {
    if (items.empty()) {
      out_ += empty_spelling;
      return;
    }
    out_ += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out_ += ", ";
      append_one(items[i]);
    }
    out_ += ']';
  }

  void printAttribute(const Node& node, const std::string& name, const Attribute& attr,
                      int depth) {
    switch (attr.kind()) {
      case AttrKind::Int: appendInt(out_, attr.asInt()); break;
      case AttrKind::Float: text::appendDouble(out_, attr.asFloat()); break;
      case AttrKind::String: appendQuoted(out_, attr.asString()); break;
      case AttrKind::Type: out_ += dtypeName(attr.asType()); break;
      case AttrKind::Tensor: printTensor(node, name, attr.asTensor()); break;
      case AttrKind::Graph:
        if (!attr.asGraph()) raise(node.describe(), ": attribute '", name, "' holds no graph");
        printGraphText(*attr.asGraph(), depth);
        break;
      case AttrKind::Ints:
        printList(attr.asInts(), "ints[]", [this](int64_t v) { appendInt(out_, v); });
        break;
      case AttrKind::Floats:
        printList(attr.asFloats(), "floats[]", [this](double v) { text::appendDouble(out_, v); });
        break;
      case AttrKind::Strings:
        printList(attr.asStrings(), "strings[]",
                  [this](const std::string& v) { appendQuoted(out_, v); });
        break;
    }
  }

  void printTensor(const Node& node, const std::string& name, const Tensor& tensor) {
    if (tensor.dtype() == DType::Undefined) {
      raise(node.describe(), ": attribute '", name,
            "' holds a tensor without an element type, which has no text form");
    }
    out_ += "tensor<";
    out_ += dtypeName(tensor.dtype());
    out_ += '[';
    for (size_t i = 0; i < tensor.shape().size(); ++i) {
      if (i) out_ += ',';
      appendInt(out_, tensor.shape()[i]);
    }
    out_ += "]> ";
    const size_t byte_size = tensor.byteSize();
    if (byte_size > options_.elide_tensors_above_bytes) {
      out_ += "elided";
      return;
    }
    const auto* bytes = static_cast<const unsigned char*>(tensor.data());
    const size_t count = static_cast<size_t>(tensor.numElements());
    if (count <= options_.max_decimal_elements && decimalIsExact(tensor)) {
      const size_t element_size = dtypeSize(tensor.dtype());
      out_ += '[';
      for (size_t i = 0; i < count; ++i) {
        if (i) out_ += ", ";
        appendElement(out_, tensor.dtype(), bytes + i * element_size);
      }
      out_ += ']';
      return;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    out_ += "0x";
    const size_t start = out_.size();
    out_.resize(start + 2 * byte_size);
    char* hex = out_.data() + start;
    for (size_t i = 0; i < byte_size; ++i) {
      hex[2 * i] = kHex[bytes[i] >> 4];
      hex[2 * i + 1] = kHex[bytes[i] & 15];
    }
  }

  const PrintOptions& options_;
  std::string out_;
  // Printed names in definition order, and each value's position in that list; small map
  // slots keep the lookup for every operand cheap.
  std::vector<PrintedName> names_;
  text::FlatMap<const Value*, uint32_t, text::PointerHash> indices_;
  text::FlatMap<std::string_view, bool, std::hash<std::string_view>> taken_;
  std::vector<const Value*> duplicates_;
  std::deque<std::string> invented_;  // storage for names made by renameDuplicates()
  // Per duplicated name, the suffix to try next (keys view the values' names).
  text::FlatMap<std::string_view, uint64_t, std::hash<std::string_view>> next_suffix_;
  uint64_t next_number_ = 0;
};

}  // namespace

std::string printGraph(const Graph& graph, const PrintOptions& options) {
  return Printer(options).print(graph);
}

void printGraphToFile(const Graph& graph, const std::string& path, const PrintOptions& options) {
  writeFileAtomically(path, printGraph(graph, options));
}

}  // namespace estuary
