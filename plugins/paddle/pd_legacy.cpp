#include "pd_legacy.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "estuary/frontend/node_context.h"
#include "estuary/support/error.h"
#include "pd_translators.h"

namespace estuary::paddle_frontend {

LegacyProgram::LegacyProgram(const MappedFile& file, std::string path) : path_(std::move(path)) {
  program_ = proto::decode<ProgramDesc>(proto::Source{path_, file.data, "a Paddle ProgramDesc", "framework.proto"},
                                        file.bytes());
  if (program_.blocks.empty()) raise(path_, ": the program has no blocks");
  for (size_t i = 0; i < program_.blocks.size(); ++i) {
    const BlockDesc& block = program_.blocks[i];
    if (block.idx != static_cast<int32_t>(i) || block.parent_idx >= static_cast<int32_t>(i) || (i > 0 && block.parent_idx < 0)) {
      raise(path_, ": block ", i, " says it is block ", block.idx, " under block ", block.parent_idx);
    }
  }
}

namespace {

bool isFeedOrFetch(const VarDesc& var) {
  return var.type && (var.type->type == kPdFeedMinibatch || var.type->type == kPdFetchList);
}

std::optional<TensorDesc> tensorOf(const VarDesc& var) {
  if (!var.type || var.type->type != kPdDenseTensor || !var.type->dense_tensor || !var.type->dense_tensor->tensor) {
    return std::nullopt;
  }
  return var.type->dense_tensor->tensor;
}

// Attributes holding an element type (VarType.Type values) read as DTypes.
bool isDtypeAttribute(std::string_view name) {
  return name == "dtype" || name == "out_dtype" || name == "in_dtype";
}

struct LegacyContext {
  const LegacyProgram& program;
  std::map<std::string, Tensor> tensors;

  // The VarDesc of `name` seen from block `block` (its own, else its ancestors').
  const VarDesc* var(int32_t block, std::string_view name) const {
    const std::vector<BlockDesc>& blocks = program.program().blocks;
    for (int32_t b = block; b >= 0; b = blocks[static_cast<size_t>(b)].parent_idx) {
      for (const VarDesc& desc : blocks[static_cast<size_t>(b)].vars) {
        if (desc.name == name) return &desc;
      }
    }
    return nullptr;
  }
};

// An op's inputs and outputs as value names: a variable written again gets a new version
// ("x@1"), so that the view is in SSA form (a legacy program reassigns variables: batch_norm
// writes its running statistics back into the ones it reads).
struct LegacyOpValues {
  std::vector<std::pair<std::string_view, size_t>> input_slots, output_slots;  // slot, first position
  std::vector<std::string> inputs, outputs;
};

class LegacyNodeDecoder final : public NodeDecoder {
 public:
  LegacyNodeDecoder(const OpDesc& op, LegacyOpValues values) : op_(op), values_(std::move(values)) {
    name_ = op.type;
    for (const std::string& output : values_.outputs) {
      if (!output.empty()) {
        name_ = output;
        break;
      }
    }
  }

  std::string_view opType() const override { return op_.type; }
  std::string_view name() const override { return name_; }
  size_t numInputs() const override { return values_.inputs.size(); }
  std::string_view inputName(size_t i) const override { return values_.inputs[i]; }
  std::optional<size_t> inputIndex(std::string_view slot) const override { return find(values_.input_slots, slot); }
  size_t numOutputs() const override { return values_.outputs.size(); }
  std::string_view outputName(size_t i) const override { return values_.outputs[i]; }
  std::optional<size_t> outputIndex(std::string_view slot) const { return find(values_.output_slots, slot); }
  std::vector<std::string_view> attributeNames() const override {
    std::vector<std::string_view> names;
    for (const OpAttr& attr : op_.attrs) names.push_back(attr.name);
    return names;
  }
  std::optional<AttrValue> attribute(std::string_view name) const override {
    for (const OpAttr& attr : op_.attrs) {
      if (attr.name == name) return decode(attr);
    }
    return std::nullopt;
  }

 private:
  static std::optional<size_t> find(const std::vector<std::pair<std::string_view, size_t>>& slots, std::string_view slot) {
    for (const auto& [name, position] : slots) {
      if (name == slot) return position;
    }
    return std::nullopt;
  }

  AttrValue decode(const OpAttr& attr) const {
    switch (attr.type) {
      case kAttrInt:
        if (isDtypeAttribute(attr.name)) return {dtypeFromPd(attr.i).value_or(DType::Undefined), "dtype"};
        return {int64_t{attr.i}, "INT"};
      case kAttrLong: return {attr.l, "LONG"};
      case kAttrFloat: return {static_cast<double>(attr.f), "FLOAT"};
      case kAttrFloat64: return {attr.float64, "FLOAT64"};
      case kAttrString: return {std::string(attr.s), "STRING"};
      case kAttrBoolean: return {attr.b, "BOOLEAN"};
      case kAttrInts: return {std::vector<int64_t>(attr.ints.begin(), attr.ints.end()), "INTS"};
      case kAttrLongs: return {attr.longs, "LONGS"};
      case kAttrFloats: return {std::vector<double>(attr.floats.begin(), attr.floats.end()), "FLOATS"};
      case kAttrFloat64s: return {attr.float64s, "FLOAT64S"};
      case kAttrStrings: return {std::vector<std::string>(attr.strings.begin(), attr.strings.end()), "STRINGS"};
      case kAttrBooleans: return {attr.bools, "BOOLEANS"};
      case kAttrScalar:
        if (attr.scalar) return {attr.scalar->type == 2 ? static_cast<double>(attr.scalar->i) : attr.scalar->r, "SCALAR"};
        return {std::monostate{}, "SCALAR"};
      case kAttrVar: return {std::string(attr.var_name), "VAR"};
      default: return {std::monostate{}, "BLOCK"};
    }
  }

  const OpDesc& op_;
  LegacyOpValues values_;
  std::string name_;
};

// The variable a feed op writes or a fetch op reads, with its col.
std::pair<int64_t, std::string_view> columnOf(const OpDesc& op, bool feed) {
  int64_t col = 0;
  for (const OpAttr& attr : op.attrs) {
    if (attr.name == "col") col = attr.i;
  }
  for (const OpSlot& slot : feed ? op.outputs : op.inputs) {
    if (slot.parameter == (feed ? "Out" : "X") && !slot.arguments.empty()) return {col, slot.arguments.front()};
  }
  return {col, {}};
}

class LegacyBlockDecoder final : public GraphDecoder {
 public:
  LegacyBlockDecoder(const std::shared_ptr<const LegacyContext>& context, std::string name)
      : context_(context), name_(std::move(name)) {
    const LegacyProgram& program = context->program;
    const BlockDesc& block = program.program().blocks.front();
    std::vector<std::pair<int64_t, std::string_view>> feeds, fetches;
    std::vector<const OpDesc*> ops;
    for (const OpDesc& op : block.ops) {
      if (op.type == "feed") {
        feeds.push_back(columnOf(op, true));
      } else if (op.type == "fetch") {
        fetches.push_back(columnOf(op, false));
      } else {
        ops.push_back(&op);
      }
    }
    std::sort(feeds.begin(), feeds.end());
    std::sort(fetches.begin(), fetches.end());
    for (const auto& [col, var] : feeds) inputs_.emplace_back(var);
    for (const VarDesc& var : block.vars) {
      if (var.persistable && !isFeedOrFetch(var)) weights_.push_back(&var);
    }
    // SSA: the current version of each variable; inputs and weights are defined first.
    std::map<std::string_view, std::string> current;
    std::map<std::string_view, int> versions;
    for (const std::string& input : inputs_) current[input] = input;
    for (const VarDesc* var : weights_) current[var->name] = std::string(var->name);
    auto read = [&](std::string_view var) {
      auto found = current.find(var);
      return found != current.end() ? found->second : std::string(var);
    };
    std::vector<LegacyOpValues> values(ops.size());
    for (size_t n = 0; n < ops.size(); ++n) {
      for (const OpSlot& slot : ops[n]->inputs) {
        if (!slot.arguments.empty()) values[n].input_slots.emplace_back(slot.parameter, values[n].inputs.size());
        for (std::string_view argument : slot.arguments) values[n].inputs.push_back(read(argument));
      }
      for (const OpSlot& slot : ops[n]->outputs) {
        if (!slot.arguments.empty()) values[n].output_slots.emplace_back(slot.parameter, values[n].outputs.size());
        for (std::string_view argument : slot.arguments) {
          auto found = current.find(argument);
          std::string name = found == current.end() ? std::string(argument)
                                                    : std::string(argument) + "@" + std::to_string(++versions[argument]);
          current[argument] = name;
          values[n].outputs.push_back(std::move(name));
        }
      }
    }
    for (const auto& [col, var] : fetches) outputs_.push_back(read(var));
    if (outputs_.empty()) raise(program.path(), ": the program fetches nothing (no fetch op)");
    // Outputs nothing reads are unnamed: translators may leave them out (batch_norm's
    // statistics, reshape2's XShape).
    std::set<std::string_view> used(outputs_.begin(), outputs_.end());
    for (const LegacyOpValues& op : values) used.insert(op.inputs.begin(), op.inputs.end());
    for (size_t n = 0; n < ops.size(); ++n) {
      for (std::string& output : values[n].outputs) {
        if (!used.count(output)) output.clear();
      }
      nodes_.push_back(std::make_unique<LegacyNodeDecoder>(*ops[n], std::move(values[n])));
    }
  }

  std::string name() const override { return name_; }
  size_t numInputs() const override { return inputs_.size(); }
  std::string_view inputName(size_t i) const override { return inputs_[i]; }
  TensorType inputType(size_t i, SymbolTable& symbols) const override {
    const VarDesc* var = context_->var(0, inputs_[i]);
    std::optional<TensorDesc> tensor = var ? tensorOf(*var) : std::nullopt;
    if (!tensor) raise(context_->program.path(), ": input '", inputs_[i], "' is not a dense tensor variable");
    std::optional<DType> dtype = dtypeFromPd(tensor->data_type);
    if (!dtype) raise(context_->program.path(), ": input '", inputs_[i], "' holds ", pdTypeName(tensor->data_type), " elements");
    std::vector<Dim> dims;
    for (size_t d = 0; d < tensor->dims.size(); ++d) {
      dims.push_back(tensor->dims[d] < 0 ? symbols.fresh(std::string(inputs_[i]) + "_dim" + std::to_string(d))
                                         : Dim(tensor->dims[d]));
    }
    return TensorType(*dtype, Shape(std::move(dims)));
  }
  size_t numWeights() const override { return weights_.size(); }
  std::string_view weightName(size_t i) const override { return weights_[i]->name; }
  TensorType weightType(size_t i) const override {
    std::optional<TensorDesc> tensor = tensorOf(*weights_[i]);
    std::optional<DType> dtype = tensor ? dtypeFromPd(tensor->data_type) : std::nullopt;
    if (!dtype) return {};
    return TensorType(*dtype, Shape::ofStatic(tensor->dims));
  }
  Tensor weight(size_t i) const override {
    auto found = context_->tensors.find(std::string(weights_[i]->name));
    if (found == context_->tensors.end()) {
      raise(context_->program.path(), ": parameter '", weights_[i]->name, "' was not read");
    }
    return found->second;
  }
  size_t numNodes() const override { return nodes_.size(); }
  const NodeDecoder& node(size_t i) const override { return *nodes_[i]; }
  size_t numOutputs() const override { return outputs_.size(); }
  std::string_view outputName(size_t i) const override { return outputs_[i]; }

 private:
  std::shared_ptr<const LegacyContext> context_;
  std::string name_;
  std::vector<std::string> inputs_;
  std::vector<const VarDesc*> weights_;
  std::vector<std::unique_ptr<LegacyNodeDecoder>> nodes_;
  std::vector<std::string> outputs_;
};

}  // namespace

std::vector<ParameterSpec> LegacyProgram::parameterSpecs() const {
  std::vector<ParameterSpec> specs;
  for (const VarDesc& var : program_.blocks.front().vars) {
    if (!var.persistable || isFeedOrFetch(var)) continue;
    std::optional<TensorDesc> tensor = tensorOf(var);
    std::optional<DType> dtype = tensor ? dtypeFromPd(tensor->data_type) : std::nullopt;
    if (!dtype) raise(path_, ": parameter '", var.name, "' is not a dense tensor of an element type Estuary has");
    specs.push_back({std::string(var.name), *dtype, tensor->dims});
  }
  return specs;
}

std::shared_ptr<GraphDecoder> LegacyProgram::mainGraph(std::map<std::string, Tensor> tensors, std::string name) const {
  auto context = std::make_shared<LegacyContext>(LegacyContext{*this, std::move(tensors)});
  return std::make_shared<LegacyBlockDecoder>(context, std::move(name));
}

std::vector<std::string> LegacyProgram::outputNames() const {
  std::vector<std::pair<int64_t, std::string_view>> fetches;
  for (const OpDesc& op : program_.blocks.front().ops) {
    if (op.type == "fetch") fetches.push_back(columnOf(op, false));
  }
  std::sort(fetches.begin(), fetches.end());
  std::vector<std::string> names;
  for (const auto& [col, var] : fetches) names.emplace_back(var);
  return names;
}

std::optional<size_t> legacyOutputIndex(const NodeDecoder& node, std::string_view slot) {
  return static_cast<const LegacyNodeDecoder&>(node).outputIndex(slot);
}

Results bySlot(NodeContext& node, const std::vector<std::pair<std::string_view, Value*>>& results) {
  Results ordered;
  if (isPir(node)) {
    for (const auto& [slot, value] : results) ordered.push_back(value);
    return ordered;
  }
  ordered.resize(node.numOutputs(), nullptr);
  for (const auto& [slot, value] : results) {
    std::optional<size_t> position = legacyOutputIndex(node.decoder(), slot);
    if (!position) node.fail("has no output slot '", slot, "'");
    ordered[*position] = value;
  }
  return ordered;
}

}  // namespace estuary::paddle_frontend
