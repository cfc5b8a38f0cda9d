#include "tf_decoder.h"

#include <algorithm>
#include <deque>
#include <unordered_set>

#include "estuary/frontend/frontend.h"
#include "estuary/support/error.h"
#include "tf_control_flow.h"
#include "tf_op_outputs.h"
#include "tf_tensor.h"

namespace estuary::tensorflow_frontend {

std::string valueName(std::string_view input) {
  return input.find(':') == std::string_view::npos ? std::string(input) + ":0" : std::string(input);
}

namespace {

std::string_view nodeOf(std::string_view value) { return value.substr(0, value.find(':')); }

// The output index after the last ':' ("node:2" -> 2); raises for one that is not a number.
size_t indexOf(std::string_view value) {
  size_t colon = value.rfind(':');
  if (colon == std::string_view::npos) return 0;
  std::string_view digits = value.substr(colon + 1);
  size_t index = 0;
  if (digits.empty() || digits.size() > 9) raise("'", value, "' does not end with an output index");
  for (char c : digits) {
    if (c < '0' || c > '9') raise("'", value, "' does not end with an output index");
    index = index * 10 + static_cast<size_t>(c - '0');
  }
  return index;
}

// Output names of each node: "node:k" for every k something reads, "" for the rest.
std::map<std::string_view, std::vector<std::string>> usedOutputs(const std::vector<std::string>& reads) {
  std::map<std::string_view, std::set<size_t>> used;
  std::map<std::string_view, std::vector<std::string>> names;
  for (const std::string& read : reads) {
    size_t colon = read.rfind(':');
    if (colon == std::string::npos) continue;  // a function argument
    used[nodeOf(read)].insert(indexOf(read));
  }
  for (const auto& [node, indices] : used) {
    std::vector<std::string>& outputs = names[node];
    outputs.resize(*indices.rbegin() + 1);
    for (size_t index : indices) outputs[index] = std::string(node) + ":" + std::to_string(index);
  }
  return names;
}

AttrShape attrShape(const ShapeProto& shape) {
  AttrShape result;
  result.ranked = !shape.unknown_rank;
  for (const ShapeDim& dim : shape.dims) result.dims.push_back(dim.size);
  return result;
}

DType dtypeOrUndefined(int32_t dtype) { return dtypeFromTf(dtype).value_or(DType::Undefined); }

}  // namespace

// --- Model -----------------------------------------------------------------------------------

TfModelContext::TfModelContext(std::string model, const FunctionDefLibrary* library, std::shared_ptr<const void> owner,
                               WeightSource& weights)
    : model_(std::move(model)), owner_(std::move(owner)), weights_(weights) {
  if (!library) return;
  for (const FunctionDef& function : library->function) functions_.emplace(function.signature.name, &function);
}

std::shared_ptr<const TfFunctionDecoder> TfModelContext::function(std::string_view name) const {
  auto decoded = decoded_.find(name);
  if (decoded != decoded_.end()) return decoded->second;
  auto found = functions_.find(name);
  if (found == functions_.end()) return nullptr;
  auto decoder = std::make_shared<TfFunctionDecoder>(*this, *found->second);
  decoded_.emplace(found->first, decoder);
  return decoder;
}

// --- Nodes -----------------------------------------------------------------------------------

const TfModelContext& modelOf(const NodeDecoder& node) { return static_cast<const TfNode&>(node).model(); }

TfNodeDecoder::TfNodeDecoder(const TfModelContext& model, const NodeDef& node, std::vector<std::string> input_names,
                             std::vector<std::string> controls, std::vector<std::string> outputs)
    : model_(model),
      node_(node),
      inputs_(std::move(input_names)),
      controls_(std::move(controls)),
      outputs_(std::move(outputs)) {}

const AttrValueProto* TfNodeDecoder::find(std::string_view name) const {
  for (const AttrEntry& entry : node_.attr) {
    if (entry.key == name) return &entry.value;
  }
  return nullptr;
}

std::vector<std::string_view> TfNodeDecoder::attributeNames() const {
  std::vector<std::string_view> names;
  for (const AttrEntry& entry : node_.attr) names.push_back(entry.key);
  return names;
}

std::optional<AttrValue> TfNodeDecoder::attribute(std::string_view name) const {
  const AttrValueProto* value = find(name);
  if (!value) return std::nullopt;
  const std::string what = "attribute '" + std::string(name) + "' of node '" + std::string(node_.name) + "'";
  auto function = [&](const NameAttrList& call) -> AttrValue::GraphRef {
    AttrValue::GraphRef body = model_.function(call.name);
    if (!body) raise(model_.model(), ": ", what, " calls function '", call.name, "', which the library does not hold");
    return body;
  };
  AttrValue out;
  if (value->list) {
    const AttrList& list = *value->list;
    out.type_name = "list";
    if (!list.s.empty()) {
      out.data = std::vector<std::string>(list.s.begin(), list.s.end());
    } else if (!list.f.empty()) {
      out.data = std::vector<double>(list.f.begin(), list.f.end());
    } else if (!list.b.empty()) {
      out.data = list.b;
    } else if (!list.type.empty()) {
      std::vector<DType> types;
      for (int32_t type : list.type) types.push_back(dtypeOrUndefined(type));
      out.data = std::move(types);
    } else if (!list.shape.empty()) {
      std::vector<AttrShape> shapes;
      for (const ShapeProto& shape : list.shape) shapes.push_back(attrShape(shape));
      out.data = std::move(shapes);
    } else if (!list.tensor.empty()) {
      std::vector<Tensor> tensors;
      for (const TensorProto& tensor : list.tensor) {
        tensors.push_back(tensorFromProto(tensor, model_.weights(), model_.owner(), what));
      }
      out.data = std::move(tensors);
    } else if (!list.func.empty()) {
      std::vector<AttrValue::GraphRef> graphs;
      for (const NameAttrList& call : list.func) graphs.push_back(function(call));
      out.data = std::move(graphs);
    } else {
      out.data = list.i;  // ints, or an empty list of anything
    }
  } else if (value->s) {
    out = {std::string(*value->s), "string"};
  } else if (value->i) {
    out = {*value->i, "int"};
  } else if (value->f) {
    out = {static_cast<double>(*value->f), "float"};
  } else if (value->b) {
    out = {*value->b, "bool"};
  } else if (value->type) {
    std::optional<DType> dtype = dtypeFromTf(*value->type);
    out.type_name = "type";
    if (dtype) out.data = *dtype;
  } else if (value->shape) {
    out = {attrShape(*value->shape), "shape"};
  } else if (value->tensor) {
    out = {tensorFromProto(*value->tensor, model_.weights(), model_.owner(), what), "tensor"};
  } else if (value->func) {
    out = {function(*value->func), "func"};
  } else {
    out.type_name = value->placeholder ? "placeholder" : "empty";
  }
  return out;
}

std::vector<AttrValue::GraphRef> TfNodeDecoder::subgraphs() const {
  std::vector<AttrValue::GraphRef> graphs;
  for (const AttrEntry& entry : node_.attr) {
    if (entry.value.func) graphs.push_back(model_.function(entry.value.func->name));
    if (entry.value.list) {
      for (const NameAttrList& call : entry.value.list->func) graphs.push_back(model_.function(call.name));
    }
  }
  graphs.erase(std::remove(graphs.begin(), graphs.end(), nullptr), graphs.end());
  return graphs;
}

// --- GraphDefs -------------------------------------------------------------------------------

TfGraphDecoder::TfGraphDecoder(const TfModelContext& model, const GraphDef& graph, std::string name,
                               std::vector<std::pair<std::string, std::string>> inputs,
                               std::vector<std::string> outputs)
    : model_(model), name_(std::move(name)) {
  std::map<std::string_view, const NodeDef*> by_name;
  for (const NodeDef& node : graph.node) {
    if (!by_name.emplace(node.name, &node).second) {
      raise(model_.model(), ": the graph has two nodes named '", node.name, "'");
    }
  }
  if (outputs.empty()) raise(model_.model(), ": graph '", name_, "' has no outputs");
  for (std::string& output : outputs) {
    output = valueName(output);
    if (!by_name.count(nodeOf(output))) {
      raise(model_.model(), ": the graph has no node '", nodeOf(output), "' (asked for as output ", output, ")");
    }
  }
  // The nodes the outputs need, found backwards through data inputs.
  std::unordered_set<std::string_view> needed;
  std::deque<std::string_view> pending;
  for (const std::string& output : outputs) pending.push_back(nodeOf(output));
  while (!pending.empty()) {
    std::string_view name_of = pending.front();
    pending.pop_front();
    auto found = by_name.find(name_of);
    if (found == by_name.end()) {
      raise(model_.model(), ": a node reads '", name_of, "', which no node of the graph is (a dangling input)");
    }
    if (!needed.insert(found->first).second) continue;
    for (std::string_view input : found->second->input) {
      if (!input.empty() && input.front() != '^') pending.push_back(nodeOf(input));
    }
  }
  // Inputs: the Placeholders named, or every one needed.
  std::map<std::string, std::string> alias;  // placeholder value -> input name
  if (inputs.empty()) {
    for (const NodeDef& node : graph.node) {
      if (node.op == "Placeholder" && needed.count(node.name)) inputs.emplace_back(node.name, node.name);
    }
  }
  for (const auto& [input, shown] : inputs) {
    std::string value = valueName(input);
    auto found = by_name.find(nodeOf(value));
    if (found == by_name.end() || found->second->op != "Placeholder") {
      raise(model_.model(), ": the graph has no Placeholder '", nodeOf(value), "' (asked for as an input)");
    }
    alias.emplace(value, shown);
    inputs_.emplace_back(found->second, shown);
  }
  // Reads of Placeholders that are not inputs stay reads of an undefined name, which the
  // translation reports.
  std::vector<std::string> reads;
  for (const NodeDef& node : graph.node) {
    if (!needed.count(node.name) || alias.count(std::string(node.name) + ":0")) continue;
    for (std::string_view input : node.input) {
      if (!input.empty() && input.front() != '^') reads.push_back(valueName(input));
    }
  }
  reads.insert(reads.end(), outputs.begin(), outputs.end());
  std::map<std::string_view, std::vector<std::string>> used = usedOutputs(reads);
  nodes_.reserve(needed.size());
  for (const NodeDef& node : graph.node) {
    if (!needed.count(node.name) || alias.count(std::string(node.name) + ":0")) continue;
    std::vector<std::string> data, controls;
    for (std::string_view input : node.input) {
      if (input.empty()) continue;
      if (input.front() == '^') {
        controls.push_back(valueName(input.substr(1)));
        continue;
      }
      std::string value = valueName(input);
      auto aliased = alias.find(value);
      data.push_back(aliased == alias.end() ? value : aliased->second);
    }
    auto outputs_of = used.find(node.name);
    std::vector<std::string> names = outputs_of == used.end() ? std::vector<std::string>{} : outputs_of->second;
    nodes_.emplace_back(model_, node, std::move(data), std::move(controls), std::move(names));
  }
  for (const std::string& output : outputs) {
    auto aliased = alias.find(output);
    outputs_.push_back(aliased == alias.end() ? output : aliased->second);
  }
  bool control_flow = false;
  for (const TfNodeDecoder& node : nodes_) {
    top_.push_back(&node);
    control_flow = control_flow || isControlFlowPrimitive(node.opType());
  }
  if (control_flow) {
    auto find = [&by_name](std::string_view node) -> const NodeDef* {
      auto found = by_name.find(node);
      return found == by_name.end() ? nullptr : found->second;
    };
    top_ = rebuildControlFlow(model_, name_, std::move(top_), find, made_);
  }
}

TensorType TfGraphDecoder::inputType(size_t i, SymbolTable& symbols) const {
  const NodeDef& node = *inputs_[i].first;
  int32_t dtype_code = kDtInvalid;
  std::optional<ShapeProto> shape;
  for (const AttrEntry& entry : node.attr) {
    if (entry.key == "dtype" && entry.value.type) dtype_code = *entry.value.type;
    if (entry.key == "shape" && entry.value.shape) shape = entry.value.shape;
  }
  std::optional<DType> dtype = dtypeFromTf(dtype_code);
  if (!dtype) {
    throw UnsupportedOpsError(model_.model(), {UnsupportedOp{"element type " + tfDataTypeName(dtype_code), "", 0,
                                                             {std::string(node.name)}}});
  }
  if (!shape) return TensorType(*dtype, Shape::unranked());
  return TensorType(*dtype, irShape(*shape, symbols, inputs_[i].second));
}

// --- Functions -------------------------------------------------------------------------------

TfFunctionDecoder::TfFunctionDecoder(const TfModelContext& model, const FunctionDef& function) : function_(function) {
  const std::string where = model.model() + ": function '" + std::string(function.signature.name) + "'";
  std::unordered_set<std::string_view> arguments;
  for (const ArgDef& arg : function.signature.input_arg) arguments.insert(arg.name);
  std::map<std::string_view, const NodeDef*> by_name;
  for (const NodeDef& node : function.node_def) by_name.emplace(node.name, &node);
  // "node:output_arg:index" -> "node:k"; an argument's name stays as it is.
  auto normalize = [&](std::string_view ref) -> std::string {
    size_t first = ref.find(':');
    if (first == std::string_view::npos) return arguments.count(ref) ? std::string(ref) : std::string(ref) + ":0";
    size_t second = ref.find(':', first + 1);
    if (second == std::string_view::npos) return std::string(ref);
    std::string_view node = ref.substr(0, first);
    auto found = by_name.find(node);
    if (found == by_name.end()) raise(where, ": a node reads '", ref, "', but no node is named '", node, "'");
    std::string_view arg = ref.substr(first + 1, second - first - 1);
    std::optional<size_t> flat = flatOutputIndex(*found->second, arg, indexOf(ref));
    if (!flat) raise(where, ": '", ref, "' names output '", arg, "', which op ", found->second->op, " does not have");
    return std::string(node) + ":" + std::to_string(*flat);
  };
  std::vector<std::vector<std::string>> data(function.node_def.size()), controls(function.node_def.size());
  std::vector<std::string> reads;
  for (size_t n = 0; n < function.node_def.size(); ++n) {
    for (std::string_view input : function.node_def[n].input) {
      if (input.empty()) continue;
      if (input.front() == '^') {
        controls[n].push_back(normalize(input.substr(1)));
      } else {
        data[n].push_back(normalize(input));
        reads.push_back(data[n].back());
      }
    }
  }
  for (const ArgDef& output : function.signature.output_arg) {
    auto ret = std::find_if(function.ret.begin(), function.ret.end(),
                            [&](const StringEntry& entry) { return entry.key == output.name; });
    if (ret == function.ret.end()) raise(where, ": output '", output.name, "' is not returned by any node");
    outputs_.push_back(normalize(ret->value));
    reads.push_back(outputs_.back());
  }
  std::map<std::string_view, std::vector<std::string>> used = usedOutputs(reads);
  nodes_.reserve(function.node_def.size());
  for (size_t n = 0; n < function.node_def.size(); ++n) {
    const NodeDef& node = function.node_def[n];
    auto outputs_of = used.find(node.name);
    std::vector<std::string> names = outputs_of == used.end() ? std::vector<std::string>{} : outputs_of->second;
    nodes_.emplace_back(model, node, std::move(data[n]), std::move(controls[n]), std::move(names));
  }
}

}  // namespace estuary::tensorflow_frontend
