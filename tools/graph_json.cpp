#include "graph_json.h"

#include <cmath>
#include <cstdio>
#include <unordered_map>

namespace estuary::cli {

namespace {

void writeString(std::ostream& out, std::string_view text) {
  out << '"';
  for (char c : text) {
    switch (c) {
      case '"': out << "\\\""; break;
      case '\\': out << "\\\\"; break;
      case '\n': out << "\\n"; break;
      case '\t': out << "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out << escaped;
        } else {
          out << c;
        }
    }
  }
  out << '"';
}

void writeNumber(std::ostream& out, double value) {
  // JSON has no NaN or infinity; they go as strings, as Python's json module reads them back.
  if (std::isnan(value)) {
    out << "\"NaN\"";
  } else if (std::isinf(value)) {
    out << (value > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  } else {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value);
    out << text;
  }
}

template <typename T, typename F>
void writeList(std::ostream& out, const std::vector<T>& items, F&& write_item) {
  out << '[';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out << ", ";
    write_item(items[i]);
  }
  out << ']';
}

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}

  void graph(const Graph& graph, const std::string& indent) {
    const std::string inner = indent + "  ";
    out_ << "{\n" << inner << "\"name\": ";
    writeString(out_, graph.name());
    out_ << ",\n" << inner << "\"inputs\": ";
    writeList(out_, graph.inputs(), [&](const Value* input) {
      out_ << "{\"name\": ";
      writeString(out_, nameOf(input));
      out_ << ", \"type\": ";
      writeString(out_, input->type().str());
      if (input->isMutableInput()) out_ << ", \"mutable\": true";
      out_ << '}';
    });
    out_ << ",\n" << inner << "\"nodes\": [";
    bool first = true;
    for (const Node* node : graph.nodes()) {
      out_ << (first ? "\n" : ",\n") << inner << "  ";
      first = false;
      this->node(*node, inner + "  ");
    }
    out_ << "\n" << inner << "],\n" << inner << "\"outputs\": ";
    writeList(out_, graph.outputs(), [&](const Value* output) { writeString(out_, nameOf(output)); });
    std::vector<Graph::InputUpdate> updates = graph.inputUpdates();
    if (!updates.empty()) {
      out_ << ",\n" << inner << "\"updates\": ";
      writeList(out_, updates, [&](const Graph::InputUpdate& update) {
        out_ << "{\"input\": ";
        writeString(out_, nameOf(update.input));
        out_ << ", \"value\": ";
        writeString(out_, nameOf(update.new_value));
        out_ << '}';
      });
    }
    out_ << "\n" << indent << '}';
  }

 private:
  // Unnamed values get "%<n>" names, unique within the whole dump.
  std::string nameOf(const Value* value) {
    if (!value) return "";
    if (!value->name().empty()) return value->name();
    auto [it, inserted] = unnamed_.emplace(value, "");
    if (inserted) it->second = "%" + std::to_string(unnamed_.size() - 1);
    return it->second;
  }

  void node(const Node& node, const std::string& indent) {
    out_ << "{\"op\": ";
    writeString(out_, node.opType());
    if (!node.domain().empty()) {
      out_ << ", \"domain\": ";
      writeString(out_, node.domain());
    }
    if (!node.name().empty()) {
      out_ << ", \"name\": ";
      writeString(out_, node.name());
    }
    out_ << ", \"inputs\": ";
    writeList(out_, node.inputs(), [&](const Value* input) {
      if (input) {
        writeString(out_, nameOf(input));
      } else {
        out_ << "null";
      }
    });
    out_ << ", \"outputs\": ";
    writeList(out_, node.outputs(), [&](const Value* output) {
      out_ << "{\"name\": ";
      writeString(out_, nameOf(output));
      out_ << ", \"type\": ";
      writeString(out_, output->type().str());
      out_ << '}';
    });
    if (node.attributes().size() > 0) {
      out_ << ", \"attributes\": {";
      bool first = true;
      for (const auto& [name, value] : node.attributes()) {
        out_ << (first ? "" : ", ");
        first = false;
        writeString(out_, name);
        out_ << ": ";
        attribute(value, indent);
      }
      out_ << '}';
    }
    out_ << '}';
  }

  void attribute(const Attribute& value, const std::string& indent) {
    switch (value.kind()) {
      case AttrKind::Int: out_ << value.asInt(); break;
      case AttrKind::Float: writeNumber(out_, value.asFloat()); break;
      case AttrKind::String: writeString(out_, value.asString()); break;
      case AttrKind::Type: writeString(out_, dtypeName(value.asType())); break;
      case AttrKind::Tensor: {
        const Tensor& tensor = value.asTensor();
        out_ << "{\"dtype\": ";
        writeString(out_, dtypeName(tensor.dtype()));
        out_ << ", \"shape\": ";
        writeList(out_, tensor.shape(), [&](int64_t dim) { out_ << dim; });
        out_ << ", \"bytes\": " << tensor.byteSize() << '}';
        break;
      }
      case AttrKind::Graph: graph(*value.asGraph(), indent); break;
      case AttrKind::Ints: writeList(out_, value.asInts(), [&](int64_t v) { out_ << v; }); break;
      case AttrKind::Floats: writeList(out_, value.asFloats(), [&](double v) { writeNumber(out_, v); }); break;
      case AttrKind::Strings:
        writeList(out_, value.asStrings(), [&](const std::string& v) { writeString(out_, v); });
        break;
    }
  }

  std::ostream& out_;
  std::unordered_map<const Value*, std::string> unnamed_;
};

}  // namespace

void writeGraphJson(std::ostream& out, const Graph& graph) {
  JsonWriter(out).graph(graph, "");
  out << "\n";
}

}  // namespace estuary::cli
