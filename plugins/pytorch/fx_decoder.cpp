#include "fx_decoder.h"

#include <cctype>

#include "estuary/support/error.h"

namespace estuary::pytorch {

namespace {

// A size sympy writes with what a dim expression lacks (floor division, Mod, Max, powers:
// "s77*((s27//2))**2"): one symbol per distinct text, each other character spelled by its
// code, so that equal sizes share a symbol and different ones never do.
Dim symbolFor(const std::string& size) {
  static const char* const hex = "0123456789abcdef";
  std::string name = "e_";
  for (char c : size) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      name.push_back(c);
    } else {
      name += {'_', hex[(static_cast<unsigned char>(c) >> 4) & 15], hex[static_cast<unsigned char>(c) & 15]};
    }
  }
  return Dim::symbol(name);
}

}  // namespace

TensorType placeholderType(const FxNode& node) {
  std::vector<Dim> dims;
  for (const std::string& size : node.sizes) {
    std::optional<Dim> dim = Dim::parse(size);
    dims.push_back(dim ? *dim : symbolFor(size));
  }
  return TensorType(node.dtype, Shape(std::move(dims)));
}

// --- Nodes ---------------------------------------------------------------------------------

namespace {

// Every node a (possibly nested) list argument refers to.
void collectReferences(const FxArg& arg, std::vector<size_t>& nodes) {
  if (arg.isNode()) nodes.push_back(arg.node);
  for (const FxArg& item : arg.list) collectReferences(item, nodes);
}

// A Python constant as an attribute: numbers, bools, strings and flat lists of them.
std::optional<AttrValue> constantValue(const FxArg& arg) {
  AttrValue value;
  switch (arg.kind) {
    case FxArg::Kind::Int: value.data = arg.int_value; value.type_name = "int"; return value;
    case FxArg::Kind::Float: value.data = arg.float_value; value.type_name = "float"; return value;
    case FxArg::Kind::Bool: value.data = arg.bool_value; value.type_name = "bool"; return value;
    case FxArg::Kind::String: value.data = arg.string_value; value.type_name = "str"; return value;
    case FxArg::Kind::List: {
      std::vector<int64_t> ints;
      std::vector<double> floats;
      std::vector<bool> bools;
      for (const FxArg& item : arg.list) {
        if (item.kind == FxArg::Kind::Int) ints.push_back(item.int_value);
        if (item.kind == FxArg::Kind::Float) floats.push_back(item.float_value);
        if (item.kind == FxArg::Kind::Bool) bools.push_back(item.bool_value);
      }
      value.type_name = "list";
      if (ints.size() == arg.list.size()) {
        value.data = std::move(ints);
      } else if (floats.size() + ints.size() == arg.list.size()) {
        floats.insert(floats.end(), ints.begin(), ints.end());
        value.data = std::move(floats);
      } else if (bools.size() == arg.list.size()) {
        value.data = std::move(bools);
      }
      // A list holding tensors or symbolic sizes is not a constant: std::monostate.
      return value;
    }
    case FxArg::Kind::None:
    case FxArg::Kind::Node: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

FxNodeDecoder::FxNodeDecoder(const FxGraphDecoder& graph, size_t index) : graph_(graph), index_(index) {
  const FxGraph& fx = graph_.fx();
  const FxNode& fx_node = node();
  const size_t count = fx_node.args.size() + fx_node.kwargs.size();
  for (size_t i = 0; i < count; ++i) {
    const FxArg& arg = argumentAt(i);
    // A symbolic-size placeholder has no value of its own (FxTranslation::sizeValue makes one).
    bool tensor = arg.isNode() && arg.node < fx.nodes.size() && fx.nodes[arg.node].kind != FxNode::Kind::SymInt;
    input_names_.push_back(tensor ? graph_.resultName(arg.node, 0) : std::string());
    if (arg.kind == FxArg::Kind::List) {
      std::vector<size_t> references;
      collectReferences(arg, references);
      for (size_t reference : references) {
        if (reference < fx.nodes.size() && fx.nodes[reference].kind != FxNode::Kind::SymInt) {
          list_reads_.push_back(graph_.resultName(reference, 0));
        }
      }
    }
  }
  const size_t results = std::max<size_t>(fx_node.result_dtypes.size(), 1);
  for (size_t i = 0; i < results; ++i) {
    output_names_.push_back(graph_.isUsed(index_, i) ? graph_.resultName(index_, i) : std::string());
  }
}

const FxNode& FxNodeDecoder::node() const { return graph_.fx().nodes[index_]; }

size_t FxNodeDecoder::numInputs() const { return input_names_.size(); }

std::string_view FxNodeDecoder::inputName(size_t i) const { return input_names_[i]; }

const FxArg& FxNodeDecoder::argumentAt(size_t i) const {
  const FxNode& fx_node = node();
  return i < fx_node.args.size() ? fx_node.args[i] : fx_node.kwargs[i - fx_node.args.size()].second;
}

std::optional<size_t> FxNodeDecoder::inputIndex(std::string_view slot) const {
  const FxNode& fx_node = node();
  for (size_t i = 0; i < fx_node.args.size() && i < fx_node.arg_names.size(); ++i) {
    if (fx_node.arg_names[i] == slot) return i;
  }
  for (size_t i = 0; i < fx_node.kwargs.size(); ++i) {
    if (fx_node.kwargs[i].first == slot) return fx_node.args.size() + i;
  }
  return std::nullopt;
}

TensorType FxNodeDecoder::outputType(size_t i) const {
  const std::vector<DType>& dtypes = node().result_dtypes;
  return i < dtypes.size() ? TensorType(dtypes[i], Shape::unranked()) : TensorType();
}

std::vector<std::string_view> FxNodeDecoder::attributeNames() const {
  const FxNode& fx_node = node();
  std::vector<std::string_view> names;
  for (size_t i = 0; i < fx_node.args.size() && i < fx_node.arg_names.size(); ++i) {
    if (constantValue(fx_node.args[i])) names.push_back(fx_node.arg_names[i]);
  }
  for (const auto& [name, arg] : fx_node.kwargs) {
    if (constantValue(arg)) names.push_back(name);
  }
  return names;
}

std::optional<AttrValue> FxNodeDecoder::attribute(std::string_view name) const {
  std::optional<size_t> index = inputIndex(name);
  return index ? constantValue(argumentAt(*index)) : std::nullopt;
}

// --- Graph ---------------------------------------------------------------------------------

FxGraphDecoder::FxGraphDecoder(const FxGraph& fx) : fx_(fx), used_(fx.nodes.size()) {
  for (size_t i = 0; i < fx_.nodes.size(); ++i) {
    const FxNode& node = fx_.nodes[i];
    used_[i].assign(std::max<size_t>(node.result_dtypes.size(), 1), false);
    if (node.kind == FxNode::Kind::Input || (node.kind == FxNode::Kind::SymInt && node.runtime)) inputs_.push_back(i);
    if (node.kind == FxNode::Kind::Weight) weights_.push_back(i);
  }
  auto use = [&](size_t node, size_t result) {
    if (node < used_.size() && result < used_[node].size()) used_[node][result] = true;
  };
  for (const FxNode& node : fx_.nodes) {
    if (node.kind != FxNode::Kind::Call) continue;
    // operator.getitem(source, i) reads result i of its source; any other use reads result 0.
    if (node.target == "operator.getitem" && node.args.size() == 2 && node.args[0].isNode() &&
        node.args[1].kind == FxArg::Kind::Int && node.args[1].int_value >= 0) {
      use(node.args[0].node, static_cast<size_t>(node.args[1].int_value));
      continue;
    }
    std::vector<size_t> references;
    for (const FxArg& arg : node.args) collectReferences(arg, references);
    for (const auto& entry : node.kwargs) collectReferences(entry.second, references);
    for (size_t reference : references) use(reference, 0);
  }
  for (const FxArg& output : fx_.outputs) {
    if (!output.isNode() || output.node >= fx_.nodes.size()) {
      raise("FX graph '", name(), "': an output is not a tensor node");
    }
    use(output.node, 0);
    output_names_.push_back(resultName(output.node, 0));
  }
  for (size_t i = 0; i < fx_.nodes.size(); ++i) {
    if (fx_.nodes[i].kind == FxNode::Kind::Call) calls_.emplace_back(*this, i);
  }
}

std::string FxGraphDecoder::resultName(size_t node, size_t result) const {
  const std::string& name = fx_.nodes.at(node).name;
  return result == 0 ? name : name + "#" + std::to_string(result);
}

bool FxGraphDecoder::isUsed(size_t node, size_t result) const {
  return node < used_.size() && result < used_[node].size() && used_[node][result];
}

TensorType FxGraphDecoder::inputType(size_t i, SymbolTable&) const {
  const FxNode& node = fx_.nodes[inputs_[i]];
  if (node.kind == FxNode::Kind::SymInt) return TensorType(DType::I64, Shape(std::vector<Dim>{}));
  return placeholderType(node);
}

TensorType FxGraphDecoder::weightType(size_t i) const { return placeholderType(fx_.nodes[weights_[i]]); }

Tensor FxGraphDecoder::weight(size_t i) const {
  const FxNode& node = fx_.nodes[weights_[i]];
  TensorType type = placeholderType(node);
  if (node.weight.dtype() != node.dtype || Shape::ofStatic(node.weight.shape()) != type.shape) {
    raise("FX placeholder '", node.name, "': its tensor is ", dtypeName(node.weight.dtype()),
          Shape::ofStatic(node.weight.shape()).str(), ", the graph expects ", type.str());
  }
  return node.weight;
}

}  // namespace estuary::pytorch
