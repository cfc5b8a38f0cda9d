#include "pd_legacy.h"

#include <algorithm>
#include <deque>
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
  // Unnames the outputs not in `used`.
  void keepOutputs(const std::set<std::string>& used) {
    for (std::string& output : values_.outputs) {
      if (!used.count(output)) output.clear();
    }
  }
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

const std::vector<std::string_view>* slotOf(const std::vector<OpSlot>& slots, std::string_view name) {
  for (const OpSlot& slot : slots) {
    if (slot.parameter == name) return &slot.arguments;
  }
  return nullptr;
}

int32_t subBlockOf(const OpDesc& op) {
  for (const OpAttr& attr : op.attrs) {
    if (attr.name == "sub_block") return attr.block_idx;
  }
  return -1;
}

// The current version of each variable: SSA names for a block's reads and writes. Versions
// are numbered across the program, so a name is never made twice.
class Versions {
 public:
  explicit Versions(std::shared_ptr<std::map<std::string, int>> counters) : counters_(std::move(counters)) {}

  std::string read(std::string_view var) const {
    auto found = current_.find(std::string(var));
    return found != current_.end() ? found->second : std::string(var);
  }
  bool defined(std::string_view var) const { return current_.count(std::string(var)) > 0; }
  void define(std::string_view var, std::string name) { current_[std::string(var)] = std::move(name); }
  // A write: the variable's name the first time, a new version after.
  std::string write(std::string_view var) {
    std::string name(var);
    if (defined(var) || counters_->count(name)) name += "@" + std::to_string(++(*counters_)[name]);
    else (*counters_)[name] = 0;
    current_[std::string(var)] = name;
    return name;
  }

 private:
  std::shared_ptr<std::map<std::string, int>> counters_;
  std::map<std::string, std::string> current_;
};

class LegacyBlockDecoder;

// A node Estuary makes from legacy control flow: a while as a Loop (its sub-block the
// body), an if/else (two conditional_blocks and the select_input joining them) as an If.
class LegacyControlNode final : public NodeDecoder {
 public:
  LegacyControlNode(std::string op, std::string name, std::vector<std::string> inputs, std::vector<std::string> outputs,
                    std::vector<std::pair<std::string, AttrValue::GraphRef>> bodies)
      : op_(std::move(op)), name_(std::move(name)), inputs_(std::move(inputs)), outputs_(std::move(outputs)),
        bodies_(std::move(bodies)) {}

  std::string_view opType() const override { return op_; }
  std::string_view name() const override { return name_; }
  size_t numInputs() const override { return inputs_.size(); }
  std::string_view inputName(size_t i) const override { return inputs_[i]; }
  size_t numOutputs() const override { return outputs_.size(); }
  std::string_view outputName(size_t i) const override { return outputs_[i]; }
  std::vector<std::string_view> attributeNames() const override {
    std::vector<std::string_view> names;
    for (const auto& [name, body] : bodies_) names.push_back(name);
    return names;
  }
  std::optional<AttrValue> attribute(std::string_view name) const override {
    for (const auto& [key, body] : bodies_) {
      if (key == name) return AttrValue{body, "BLOCK"};
    }
    return std::nullopt;
  }
  std::vector<AttrValue::GraphRef> subgraphs() const override {
    std::vector<AttrValue::GraphRef> graphs;
    for (const auto& [name, body] : bodies_) graphs.push_back(body);
    return graphs;
  }
  std::vector<std::string>& outputs() { return outputs_; }

 private:
  std::string op_;
  std::string name_;
  std::vector<std::string> inputs_;
  std::vector<std::string> outputs_;
  std::vector<std::pair<std::string, AttrValue::GraphRef>> bodies_;
};

// A block as a graph. The main block (0): feeds are the inputs, persistable variables the
// weights, fetches the outputs. A sub-block: the inputs given (a loop body's iteration,
// condition and loop variables) and the final versions of the variables given as outputs;
// it reads the rest of its parents' variables by the versions current where it runs.
class LegacyBlockDecoder final : public GraphDecoder {
 public:
  // The main block.
  LegacyBlockDecoder(const std::shared_ptr<const LegacyContext>& context, std::string name)
      : context_(context), name_(std::move(name)) {
    const BlockDesc& block = context->program.program().blocks.front();
    std::vector<std::pair<int64_t, std::string_view>> feeds, fetches;
    for (const OpDesc& op : block.ops) {
      if (op.type == "feed") feeds.push_back(columnOf(op, true));
      if (op.type == "fetch") fetches.push_back(columnOf(op, false));
    }
    std::sort(feeds.begin(), feeds.end());
    std::sort(fetches.begin(), fetches.end());
    Versions versions(std::make_shared<std::map<std::string, int>>());
    for (const auto& [col, var] : feeds) inputs_.push_back(versions.write(var));
    for (const VarDesc& var : block.vars) {
      if (var.persistable && !isFeedOrFetch(var)) {
        weights_.push_back(&var);
        versions.write(var.name);
      }
    }
    build(block, versions);
    for (const auto& [col, var] : fetches) outputs_.push_back(versions.read(var));
    if (outputs_.empty()) raise(context->program.path(), ": the program fetches nothing (no fetch op)");
    nameUsedOutputs();
  }

  // A sub-block: `inputs` (already value names) and `defined` (variable -> name inside),
  // returning the final versions of `results` (variables).
  LegacyBlockDecoder(const std::shared_ptr<const LegacyContext>& context, const BlockDesc& block, std::string name,
                     std::vector<std::string> inputs, const Versions& outer, const std::vector<std::string>& results)
      : context_(context), name_(std::move(name)), inputs_(std::move(inputs)) {
    Versions versions = outer;
    build(block, versions);
    for (const std::string& var : results) outputs_.push_back(versions.read(var));
    nameUsedOutputs();
  }

  std::string name() const override { return name_; }
  size_t numInputs() const override { return inputs_.size(); }
  std::string_view inputName(size_t i) const override { return inputs_[i]; }
  TensorType inputType(size_t i, SymbolTable& symbols) const override {
    if (!input_types_.empty()) return input_types_[i];
    const VarDesc* var = context_->var(0, inputs_[i]);
    std::optional<TensorDesc> tensor = var ? tensorOf(*var) : std::nullopt;
    if (!tensor) raise(context_->program.path(), ": input '", inputs_[i], "' is not a dense tensor variable");
    std::optional<DType> dtype = dtypeFromPd(tensor->data_type);
    if (!dtype) raise(context_->program.path(), ": input '", inputs_[i], "' holds ", pdTypeName(tensor->data_type), " elements");
    std::vector<Dim> dims;
    for (size_t d = 0; d < tensor->dims.size(); ++d) {
      dims.push_back(tensor->dims[d] < 0 ? symbols.fresh(inputs_[i] + "_dim" + std::to_string(d)) : Dim(tensor->dims[d]));
    }
    return TensorType(*dtype, Shape(std::move(dims)));
  }
  // A loop body's inputs: the iteration number and condition, then the loop variables,
  // whose types the Loop gives them (left undeclared here).
  void declareLoopInputs() {
    input_types_.assign(inputs_.size(), TensorType());
    input_types_[0] = TensorType(DType::I64, Shape(std::vector<Dim>{}));
    input_types_[1] = TensorType(DType::Bool, Shape(std::vector<Dim>{}));
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
    if (found == context_->tensors.end()) raise(context_->program.path(), ": parameter '", weights_[i]->name, "' was not read");
    return found->second;
  }
  size_t numNodes() const override { return nodes_.size(); }
  const NodeDecoder& node(size_t i) const override { return *nodes_[i]; }
  size_t numOutputs() const override { return outputs_.size(); }
  std::string_view outputName(size_t i) const override { return outputs_[i]; }

 private:
  // A conditional_block seen but not yet joined: its condition, block and variables.
  struct Branch {
    const OpDesc* op;
    std::string condition;
    Versions before;
    std::vector<std::string> outputs;  // variables
  };

  void build(const BlockDesc& block, Versions& versions) {
    std::map<std::string, const Branch*> branch_of;  // an output version -> its conditional_block
    std::deque<Branch> branches;
    for (const OpDesc& op : block.ops) {
      if (op.type == "feed" || op.type == "fetch") continue;
      if (op.type == "while") {
        addWhile(op, versions);
        continue;
      }
      if (op.type == "conditional_block") {
        const std::vector<std::string_view>* condition = slotOf(op.inputs, "Cond");
        const std::vector<std::string_view>* outputs = slotOf(op.outputs, "Out");
        if (!condition || condition->size() != 1) fail(op, "has no single Cond input");
        Branch& branch = branches.emplace_back(Branch{&op, versions.read(condition->front()), versions, {}});
        for (std::string_view var : outputs ? *outputs : std::vector<std::string_view>{}) {
          branch.outputs.emplace_back(var);
          branch_of[versions.write(var)] = &branch;
        }
        continue;
      }
      if (op.type == "select_input") {
        addSelect(op, versions, branch_of);
        continue;
      }
      LegacyOpValues values;
      for (const OpSlot& slot : op.inputs) {
        if (!slot.arguments.empty()) values.input_slots.emplace_back(slot.parameter, values.inputs.size());
        for (std::string_view argument : slot.arguments) values.inputs.push_back(versions.read(argument));
      }
      for (const OpSlot& slot : op.outputs) {
        if (!slot.arguments.empty()) values.output_slots.emplace_back(slot.parameter, values.outputs.size());
        for (std::string_view argument : slot.arguments) values.outputs.push_back(versions.write(argument));
      }
      for (const std::string& input : values.inputs) {
        if (branch_of.count(input)) fail(op, "reads '", input, "', which a conditional_block writes without a select_input");
      }
      legacy_nodes_.push_back(std::make_unique<LegacyNodeDecoder>(op, std::move(values)));
      nodes_.push_back(legacy_nodes_.back().get());
    }
  }

  // while(Condition, X) -> Out: a Loop over the sub-block, its loop variables the Out
  // variables other than the condition, which the body computes again.
  void addWhile(const OpDesc& op, Versions& versions) {
    const std::vector<std::string_view>* condition = slotOf(op.inputs, "Condition");
    const std::vector<std::string_view>* written = slotOf(op.outputs, "Out");
    int32_t body_block = subBlockOf(op);
    const std::vector<BlockDesc>& blocks = context_->program.program().blocks;
    if (!condition || condition->size() != 1 || body_block <= 0 || static_cast<size_t>(body_block) >= blocks.size()) {
      fail(op, "has no condition or no sub-block");
    }
    std::string loop_name = "while_" + std::to_string(body_block);
    std::vector<std::string> carried;
    for (std::string_view var : written ? *written : std::vector<std::string_view>{}) {
      if (var != condition->front()) carried.emplace_back(var);
    }
    std::vector<std::string> inputs = {versions.read(condition->front())};
    std::vector<std::string> body_inputs = {loop_name + "/iteration", loop_name + "/condition"};
    Versions inside = versions;
    for (const std::string& var : carried) {
      if (!versions.defined(var)) fail(op, "carries '", var, "' into the loop before anything writes it");
      inputs.push_back(versions.read(var));
      body_inputs.push_back(inside.write(var));
    }
    std::vector<std::string> results = {std::string(condition->front())};
    results.insert(results.end(), carried.begin(), carried.end());
    auto body = std::make_shared<LegacyBlockDecoder>(context_, blocks[static_cast<size_t>(body_block)], loop_name,
                                                     body_inputs, inside, results);
    body->declareLoopInputs();
    std::vector<std::string> outputs;
    for (const std::string& var : carried) outputs.push_back(versions.write(var));
    control_nodes_.push_back(std::make_unique<LegacyControlNode>(
        "while", loop_name, inputs, outputs, std::vector<std::pair<std::string, AttrValue::GraphRef>>{{"body", body}}));
    nodes_.push_back(control_nodes_.back().get());
  }

  // select_input(X = [value if false, value if true], Mask) joining the outputs of two
  // conditional_blocks: an If on the mask whose branches are their sub-blocks.
  void addSelect(const OpDesc& op, Versions& versions, const std::map<std::string, const Branch*>& branch_of) {
    const std::vector<std::string_view>* choices = slotOf(op.inputs, "X");
    const std::vector<std::string_view>* mask = slotOf(op.inputs, "Mask");
    const std::vector<std::string_view>* out = slotOf(op.outputs, "Out");
    if (!choices || choices->size() != 2 || !mask || mask->size() != 1 || !out || out->size() != 1) {
      fail(op, "is not a select between two values on one mask");
    }
    const std::vector<BlockDesc>& blocks = context_->program.program().blocks;
    AttrValue::GraphRef sides[2];
    for (int side = 0; side < 2; ++side) {
      std::string value = versions.read((*choices)[static_cast<size_t>(side)]);
      auto found = branch_of.find(value);
      if (found == branch_of.end()) fail(op, "selects '", value, "', which no conditional_block writes");
      const Branch& branch = *found->second;
      int32_t sub_block = subBlockOf(*branch.op);
      if (sub_block <= 0 || static_cast<size_t>(sub_block) >= blocks.size()) fail(*branch.op, "has no sub-block");
      sides[side] = std::make_shared<LegacyBlockDecoder>(
          context_, blocks[static_cast<size_t>(sub_block)], "cond_" + std::to_string(sub_block), std::vector<std::string>{},
          branch.before, std::vector<std::string>{std::string((*choices)[static_cast<size_t>(side)])});
    }
    std::string result = versions.write(out->front());
    control_nodes_.push_back(std::make_unique<LegacyControlNode>(
        "select_input", result, std::vector<std::string>{versions.read(mask->front())}, std::vector<std::string>{result},
        std::vector<std::pair<std::string, AttrValue::GraphRef>>{{"then_branch", sides[1]}, {"else_branch", sides[0]}}));
    nodes_.push_back(control_nodes_.back().get());
  }

  // Outputs nothing reads are unnamed: translators may leave them out (batch_norm's
  // statistics, reshape2's XShape).
  void nameUsedOutputs() {
    std::set<std::string> used(outputs_.begin(), outputs_.end());
    for (const NodeDecoder* node : nodes_) {
      for (size_t i = 0; i < node->numInputs(); ++i) used.emplace(node->inputName(i));
      for (const AttrValue::GraphRef& body : node->subgraphs()) collectReads(*body, used);
    }
    for (auto& node : legacy_nodes_) node->keepOutputs(used);
  }

  static void collectReads(const GraphDecoder& graph, std::set<std::string>& used) {
    for (size_t i = 0; i < graph.numOutputs(); ++i) used.emplace(graph.outputName(i));
    for (size_t n = 0; n < graph.numNodes(); ++n) {
      const NodeDecoder& node = graph.node(n);
      for (size_t i = 0; i < node.numInputs(); ++i) used.emplace(node.inputName(i));
      for (const AttrValue::GraphRef& body : node.subgraphs()) collectReads(*body, used);
    }
  }

  template <typename... Parts>
  [[noreturn]] void fail(const OpDesc& op, const Parts&... parts) const {
    raise(context_->program.path(), ": block '", name_, "': op ", op.type, " ", parts...);
  }

  std::shared_ptr<const LegacyContext> context_;
  std::string name_;
  std::vector<std::string> inputs_;
  std::vector<TensorType> input_types_;
  std::vector<const VarDesc*> weights_;
  std::vector<std::unique_ptr<LegacyNodeDecoder>> legacy_nodes_;
  std::vector<std::unique_ptr<LegacyControlNode>> control_nodes_;
  std::vector<const NodeDecoder*> nodes_;
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
