#include "pd_pir.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_set>

#include "estuary/support/error.h"

namespace estuary::paddle_frontend {

namespace {

constexpr int kMaxRegionDepth = 64;

std::string_view dialectOf(std::string_view id) {
  if (id == "0") return "builtin";
  if (id == "1") return "pd_op";
  if (id == "2") return "cf";
  if (id == "3") return "custom_op";
  if (id == "4") return "pd_dist";
  return id;
}

const json::Value& member(const json::Value& object, std::string_view key, const std::string& path) {
  const json::Value* value = object.isObject() ? object.find(key) : nullptr;
  if (!value) raise(path, ": line ", object.line(), ": expected a member \"", key, "\" in a PIR ", "object");
  return *value;
}

int64_t integerOf(const json::Value& value, const std::string& path, const char* what) {
  std::optional<int64_t> number = value.integer();
  if (!number) raise(path, ": line ", value.line(), ": ", what, " should be an integer, not ", value.kindName());
  return *number;
}

std::optional<DType> dtypeOfTypeTag(std::string_view tag) {
  if (tag == "0.t_f32") return DType::F32;
  if (tag == "0.t_f16") return DType::F16;
  if (tag == "0.t_bf16") return DType::BF16;
  if (tag == "0.t_f64") return DType::F64;
  if (tag == "0.t_i8") return DType::I8;
  if (tag == "0.t_i16") return DType::I16;
  if (tag == "0.t_i32") return DType::I32;
  if (tag == "0.t_i64") return DType::I64;
  if (tag == "0.t_ui8") return DType::U8;
  if (tag == "0.t_bool") return DType::Bool;
  return std::nullopt;
}

std::optional<DType> dtypeOfName(std::string_view name) {
  if (name == "float32") return DType::F32;
  if (name == "float16") return DType::F16;
  if (name == "bfloat16") return DType::BF16;
  if (name == "float64") return DType::F64;
  if (name == "int8") return DType::I8;
  if (name == "int16") return DType::I16;
  if (name == "int32") return DType::I32;
  if (name == "int64") return DType::I64;
  if (name == "uint8") return DType::U8;
  if (name == "bool") return DType::Bool;
  return std::nullopt;
}

// A dense tensor type's element type and dims ("0.t_dtensor": [dtype, dims, layout, lod, offset]).
struct DenseType {
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
};

std::optional<DenseType> denseType(const json::Value& type) {
  const json::Value* tag = type.isObject() ? type.find("#") : nullptr;
  const json::Value* data = type.isObject() ? type.find("D") : nullptr;
  if (!tag || !tag->isString() || tag->string() != "0.t_dtensor" || !data || !data->isArray() || data->size() < 2) {
    return std::nullopt;
  }
  const json::Value* element = (*data)[0].isObject() ? (*data)[0].find("#") : nullptr;
  std::optional<DType> dtype = element && element->isString() ? dtypeOfTypeTag(element->string()) : std::nullopt;
  DenseType result{dtype.value_or(DType::Undefined), {}};
  for (const json::Value& dim : (*data)[1].elements()) result.dims.push_back(dim.integer().value_or(-1));
  return result;
}

std::string typeTag(const json::Value& type) {
  const json::Value* tag = type.isObject() ? type.find("#") : nullptr;
  return tag && tag->isString() ? std::string(tag->string()) : std::string("?");
}

// An attribute's value ("AT": {"#": tag, "D": data} or {"#": tag, "VD": "NaN"/"INF"/"-INF"}).
std::optional<AttrValue> decodeAttribute(const json::Value& attribute) {
  std::string tag = typeTag(attribute);
  const json::Value* data = attribute.find("D");
  if (const json::Value* special = attribute.find("VD"); special && special->isString()) {
    std::string_view text = special->string();
    double value = text == "INF" ? std::numeric_limits<double>::infinity()
                   : text == "-INF" ? -std::numeric_limits<double>::infinity()
                                    : std::numeric_limits<double>::quiet_NaN();
    return AttrValue{value, "float"};
  }
  if (!data) return AttrValue{std::monostate{}, "null"};
  if (tag == "0.a_bool") return AttrValue{data->isBool() && data->boolean(), "bool"};
  if (tag == "0.a_i32" || tag == "0.a_i64" || tag == "0.a_index") {
    return AttrValue{data->integer().value_or(0), "int"};
  }
  if (tag == "0.a_f32") return AttrValue{static_cast<double>(static_cast<float>(data->number())), "float"};
  if (tag == "0.a_f64") return AttrValue{data->number(), "double"};
  if (tag == "0.a_str" || tag == "0.a_tensorname") return AttrValue{std::string(data->string()), "string"};
  if (tag == "1.a_intarray") {
    std::vector<int64_t> values;
    for (const json::Value& v : data->elements()) values.push_back(v.integer().value_or(0));
    return AttrValue{std::move(values), "int array"};
  }
  if (tag == "1.a_dtype") {
    std::optional<DType> dtype = data->isString() ? dtypeOfName(data->string()) : std::nullopt;
    return AttrValue{dtype.value_or(DType::Undefined), "dtype"};
  }
  if (tag == "1.a_scalar" && data->isArray() && data->size() >= 2) {
    return AttrValue{(*data)[1].isNumber() ? (*data)[1].number() : 0.0, "scalar"};
  }
  if (tag == "0.a_array") {
    // An array of one kind: ints, floats, bools or strings (an empty one reads as ints).
    std::vector<int64_t> ints;
    std::vector<double> floats;
    std::vector<bool> bools;
    std::vector<std::string> strings;
    bool any_float = false;
    for (const json::Value& element : data->elements()) {
      std::optional<AttrValue> value = decodeAttribute(element);
      if (!value) continue;
      if (auto* i = std::get_if<int64_t>(&value->data)) {
        ints.push_back(*i);
        floats.push_back(static_cast<double>(*i));
      } else if (auto* f = std::get_if<double>(&value->data)) {
        any_float = true;
        floats.push_back(*f);
      } else if (auto* b = std::get_if<bool>(&value->data)) {
        bools.push_back(*b);
      } else if (auto* s = std::get_if<std::string>(&value->data)) {
        strings.push_back(*s);
      }
    }
    if (!strings.empty()) return AttrValue{std::move(strings), "array"};
    if (!bools.empty()) return AttrValue{std::move(bools), "array"};
    if (any_float) return AttrValue{std::move(floats), "array"};
    return AttrValue{std::move(ints), "array"};
  }
  return AttrValue{std::monostate{}, "unread attribute"};  // a place, a layout: nothing a translator reads
}

}  // namespace

// --- The program ----------------------------------------------------------------------------

PirProgram::PirProgram(std::string_view text, std::string path)
    : path_(std::move(path)), document_(json::Document::parse(text, path_)) {
  const json::Value& root = document_.root();
  const json::Value& base = member(root, "base_code", path_);
  const json::Value& magic = member(base, "magic", path_);
  if (!magic.isString() || magic.string() != "pir") {
    raise(path_, ": not a Paddle PIR program (base_code.magic is not \"pir\")");
  }
  version_ = integerOf(member(base, "version", path_), path_, "base_code.version");
  const json::Value& regions = member(member(root, "program", path_), "regions", path_);
  if (!regions.isArray() || regions.size() != 1) raise(path_, ": the program should have one region");
  const json::Value& blocks = member(regions[0], "blocks", path_);
  if (!blocks.isArray() || blocks.size() != 1) raise(path_, ": the program's region should have one block");
  readBlock(blocks[0], main_, 0);
}

void PirProgram::readBlock(const json::Value& json, PirBlock& block, int depth) {
  if (depth > kMaxRegionDepth) raise(path_, ": regions nested more than ", kMaxRegionDepth, " deep");
  if (const json::Value* args = json.find("args"); args && args->isArray()) {
    for (const json::Value& arg : args->elements()) {
      block.args.emplace_back(integerOf(member(arg, "#", path_), path_, "a block argument's id"),
                              &member(arg, "TT", path_));
    }
  }
  const json::Value& ops = member(json, "ops", path_);
  if (!ops.isArray()) raise(path_, ": line ", ops.line(), ": a block's ops should be an array");
  for (const json::Value& op : ops.elements()) {
    const json::Value& id = member(op, "#", path_);
    if (id.isString() && id.string() == "p") {
      // builtin.parameter: A = [is_distributed, is_parameter, need_clip, name], O = one value,
      // OA = [persistable, stop_gradient, trainable].
      const json::Value& attributes = member(op, "A", path_);
      const json::Value& result = member(op, "O", path_);
      if (!attributes.isArray() || attributes.size() < 4 || !attributes[3].isString()) {
        raise(path_, ": line ", op.line(), ": a parameter op without its name");
      }
      const json::Value* flags = op.find("OA");
      bool persistable = !flags || !flags->isArray() || flags->size() == 0 || (*flags)[0].integer().value_or(1) != 0;
      parameters_.push_back({integerOf(member(result, "%", path_), path_, "a parameter's value id"),
                             std::string(attributes[3].string()), &member(result, "TT", path_), persistable});
      continue;
    }
    block.ops.push_back(readOp(op, depth));
  }
}

PirOp PirProgram::readOp(const json::Value& json, int depth) {
  const json::Value& id = member(json, "#", path_);
  if (!id.isString()) raise(path_, ": line ", json.line(), ": an op's name should be a string");
  std::string_view full = id.string();
  size_t dot = full.find('.');
  if (dot == std::string_view::npos) raise(path_, ": line ", json.line(), ": op '", full, "' has no dialect");
  PirOp op;
  op.dialect = dialectOf(full.substr(0, dot));
  op.name = full.substr(dot + 1);
  if (const json::Value* operands = json.find("I"); operands && operands->isArray()) {
    for (const json::Value& operand : operands->elements()) {
      op.operands.push_back(integerOf(member(operand, "%", path_), path_, "an operand's value id"));
    }
  }
  if (const json::Value* results = json.find("O"); results && results->isArray()) {
    for (const json::Value& result : results->elements()) {
      op.results.emplace_back(integerOf(member(result, "%", path_), path_, "a result's value id"),
                              &member(result, "TT", path_));
    }
  }
  if (const json::Value* attributes = json.find("A"); attributes && attributes->isArray()) {
    for (const json::Value& attribute : attributes->elements()) {
      const json::Value& name = member(attribute, "N", path_);
      if (name.isString()) op.attributes.emplace_back(name.string(), &member(attribute, "AT", path_));
    }
  }
  if (const json::Value* regions = json.find("regions"); regions && regions->isArray()) {
    for (const json::Value& region : regions->elements()) {
      const json::Value& blocks = member(region, "blocks", path_);
      if (!blocks.isArray() || blocks.size() != 1) raise(path_, ": line ", region.line(), ": a region should hold one block");
      op.regions.emplace_back();
      readBlock(blocks[0], op.regions.back(), depth + 1);
    }
  }
  return op;
}

std::vector<ParameterSpec> PirProgram::parameterSpecs() const {
  std::vector<ParameterSpec> specs;
  for (const PirParameter& parameter : parameters_) {
    if (!parameter.persistable) continue;
    std::optional<DenseType> type = denseType(*parameter.type);
    if (!type || type->dtype == DType::Undefined) {
      raise(path_, ": parameter '", parameter.name, "' has type ", typeTag(*parameter.type),
            ", not a dense tensor of an element type Estuary has");
    }
    specs.push_back({parameter.name, type->dtype, type->dims});
  }
  return specs;
}

TensorType pirTensorType(const json::Value& type, SymbolTable& symbols, const std::string& hint,
                         const std::string& where) {
  std::optional<DenseType> dense = denseType(type);
  if (!dense) raise(where, ": a value of type ", typeTag(type), ", which is not a dense tensor");
  if (dense->dtype == DType::Undefined) raise(where, ": a tensor of an element type Estuary lacks");
  std::vector<Dim> dims;
  for (size_t d = 0; d < dense->dims.size(); ++d) {
    dims.push_back(dense->dims[d] < 0 ? symbols.fresh(hint + "_dim" + std::to_string(d)) : Dim(dense->dims[d]));
  }
  return TensorType(dense->dtype, Shape(std::move(dims)));
}

// --- The node view --------------------------------------------------------------------------

namespace {

std::string valueName(int64_t id) { return "%" + std::to_string(id); }

// What every decoder of one program shares: value names, and what builtin.combine and
// builtin.split stand for.
struct PirContext {
  const PirProgram& program;
  std::unordered_map<int64_t, std::string> names;              // value id -> name ("%7", or an input's name)
  std::unordered_map<int64_t, std::vector<int64_t>> combined;  // a combine's result -> its operands
  std::unordered_map<int64_t, std::vector<int64_t>> split;     // a vector -> the split's results
  std::unordered_set<int64_t> used;                            // every value some op reads

  std::string name(int64_t id) const {
    if (id == 0) return {};
    auto found = names.find(id);
    return found != names.end() ? found->second : valueName(id);
  }

  void index(const PirBlock& block) {
    for (const PirOp& op : block.ops) {
      used.insert(op.operands.begin(), op.operands.end());
      if (op.dialect == "pd_op" && op.name == "data") {
        for (const auto& [name, attribute] : op.attributes) {
          const json::Value* data = attribute->find("D");
          if (name == "name" && data && data->isString() && !op.results.empty()) {
            names[op.results[0].first] = std::string(data->string());
          }
        }
      }
      if (op.dialect == "builtin" && op.name == "combine" && !op.results.empty()) {
        combined[op.results[0].first] = op.operands;
      }
      if (op.dialect == "builtin" && op.name == "split" && !op.operands.empty()) {
        std::vector<int64_t>& results = split[op.operands[0]];
        for (const auto& [id, type] : op.results) results.push_back(id);
      }
      for (const PirBlock& region : op.regions) index(region);
    }
  }
};

bool hidden(const PirOp& op) {
  if (op.dialect == "builtin") return op.name == "combine" || op.name == "split";
  return op.dialect == "pd_op" && (op.name == "data" || op.name == "fetch");
}

class PirBlockDecoder;

class PirNodeDecoder final : public NodeDecoder {
 public:
  PirNodeDecoder(const std::shared_ptr<const PirContext>& context, const PirOp& op);

  std::string_view opType() const override { return op_.name; }
  std::string_view domain() const override { return op_.dialect; }
  std::string_view name() const override { return name_; }
  size_t numInputs() const override { return inputs_.size(); }
  std::string_view inputName(size_t i) const override { return inputs_[i]; }
  size_t numOutputs() const override { return outputs_.size(); }
  std::string_view outputName(size_t i) const override { return outputs_[i]; }
  std::vector<std::string_view> attributeNames() const override {
    std::vector<std::string_view> names;
    for (const auto& [name, value] : op_.attributes) names.push_back(name);
    for (const auto& [name, body] : bodies_) names.push_back(name);
    return names;
  }
  std::optional<AttrValue> attribute(std::string_view name) const override {
    for (const auto& [key, body] : bodies_) {
      if (key == name) return AttrValue{body, "region"};
    }
    for (const auto& [key, value] : op_.attributes) {
      if (key == name) return decodeAttribute(*value);
    }
    return std::nullopt;
  }
  std::vector<AttrValue::GraphRef> subgraphs() const override {
    std::vector<AttrValue::GraphRef> graphs;
    for (const auto& [name, body] : bodies_) graphs.push_back(body);
    return graphs;
  }
  // The type of result i as the program declares it: what a conversion extension's result
  // is checked against.
  TensorType outputType(size_t i) const override;

 private:
  std::shared_ptr<const PirContext> context_;
  const PirOp& op_;
  std::string name_;
  std::vector<std::string> inputs_;
  std::vector<std::string> outputs_;
  std::vector<const json::Value*> output_types_;
  std::vector<std::pair<std::string, AttrValue::GraphRef>> bodies_;
};

// A block as a graph. The main block: the data ops are its inputs, the parameters its
// weights, the fetch ops its outputs. An if branch: no inputs, the yield's operands its
// outputs. A while body: ONNX Loop's body signature (iteration number, condition, then the
// block's arguments) and the yield's operands (the next condition first) as outputs.
class PirBlockDecoder final : public GraphDecoder {
 public:
  enum class Kind { Main, Branch, LoopBody };

  PirBlockDecoder(const std::shared_ptr<const PirContext>& context, const PirBlock& block, Kind kind, std::string name,
                  std::map<std::string, Tensor> tensors = {})
      : context_(context), name_(std::move(name)), tensors_(std::move(tensors)) {
    const std::string& path = context->program.path();
    if (kind == Kind::Main) {
      for (const PirOp& op : block.ops) {
        if (op.dialect == "pd_op" && op.name == "data" && !op.results.empty()) {
          inputs_.push_back(context->name(op.results[0].first));
          input_types_.push_back(op.results[0].second);
        }
      }
      std::vector<std::pair<int64_t, int64_t>> fetched;  // col, value
      for (const PirOp& op : block.ops) {
        if (op.dialect != "pd_op" || op.name != "fetch" || op.operands.empty()) continue;
        int64_t col = static_cast<int64_t>(fetched.size());
        if (std::optional<AttrValue> value = attributeOf(op, "col")) {
          if (auto* number = std::get_if<int64_t>(&value->data)) col = *number;
        }
        fetched.emplace_back(col, op.operands[0]);
      }
      std::sort(fetched.begin(), fetched.end());
      for (const auto& [col, value] : fetched) outputs_.push_back(context->name(value));
      if (outputs_.empty()) raise(path, ": the program fetches nothing (no pd_op.fetch)");
      for (const PirParameter& parameter : context->program.parameters()) {
        weights_.push_back({valueName(parameter.id), &parameter});
      }
    } else {
      if (kind == Kind::LoopBody) {
        inputs_ = {name_ + "/iteration", name_ + "/condition"};
        input_types_ = {nullptr, nullptr};
      }
      for (const auto& [id, type] : block.args) {
        inputs_.push_back(context->name(id));
        input_types_.push_back(type);
      }
      const PirOp* yield = block.ops.empty() ? nullptr : &block.ops.back();
      if (!yield || yield->dialect != "cf" || yield->name != "yield") {
        raise(path, ": region '", name_, "' does not end with cf.yield");
      }
      for (int64_t operand : yield->operands) outputs_.push_back(context->name(operand));
    }
    for (const PirOp& op : block.ops) {
      if (hidden(op) || (kind != Kind::Main && &op == &block.ops.back())) continue;
      nodes_.push_back(std::make_unique<PirNodeDecoder>(context, op));
    }
  }

  std::string name() const override { return name_; }
  size_t numInputs() const override { return inputs_.size(); }
  std::string_view inputName(size_t i) const override { return inputs_[i]; }
  TensorType inputType(size_t i, SymbolTable& symbols) const override {
    if (!input_types_[i]) {
      return i == 0 ? TensorType(DType::I64, Shape(std::vector<Dim>{})) : TensorType(DType::Bool, Shape(std::vector<Dim>{}));
    }
    return pirTensorType(*input_types_[i], symbols, inputs_[i],
                         context_->program.path() + ": input '" + inputs_[i] + "'");
  }
  size_t numWeights() const override { return weights_.size(); }
  std::string_view weightName(size_t i) const override { return weights_[i].first; }
  TensorType weightType(size_t i) const override {
    SymbolTable symbols;
    return pirTensorType(*weights_[i].second->type, symbols, weights_[i].first,
                         context_->program.path() + ": parameter '" + weights_[i].second->name + "'");
  }
  Tensor weight(size_t i) const override {
    const PirParameter& parameter = *weights_[i].second;
    auto found = tensors_.find(parameter.name);
    if (found == tensors_.end()) {
      raise(context_->program.path(), ": parameter '", parameter.name, "' is not persistable, so the .pdiparams does "
            "not hold it");
    }
    return found->second;
  }
  size_t numNodes() const override { return nodes_.size(); }
  const NodeDecoder& node(size_t i) const override { return *nodes_[i]; }
  size_t numOutputs() const override { return outputs_.size(); }
  std::string_view outputName(size_t i) const override { return outputs_[i]; }

  static std::optional<AttrValue> attributeOf(const PirOp& op, std::string_view name) {
    for (const auto& [key, value] : op.attributes) {
      if (key == name) return decodeAttribute(*value);
    }
    return std::nullopt;
  }

 private:
  std::shared_ptr<const PirContext> context_;
  std::string name_;
  std::map<std::string, Tensor> tensors_;
  std::vector<std::string> inputs_;
  std::vector<const json::Value*> input_types_;
  std::vector<std::pair<std::string, const PirParameter*>> weights_;
  std::vector<std::unique_ptr<PirNodeDecoder>> nodes_;
  std::vector<std::string> outputs_;
};

PirNodeDecoder::PirNodeDecoder(const std::shared_ptr<const PirContext>& context, const PirOp& op)
    : context_(context), op_(op) {
  name_ = op.results.empty() ? std::string(op.dialect) + "." + std::string(op.name) : valueName(op.results[0].first);
  for (int64_t operand : op.operands) {
    auto parts = context->combined.find(operand);
    if (parts == context->combined.end()) {
      inputs_.push_back(context->name(operand));
    } else {
      for (int64_t part : parts->second) inputs_.push_back(context->name(part));
    }
  }
  for (const auto& [id, type] : op.results) {
    auto parts = context->split.find(id);
    // Results nothing reads are unnamed: translators may leave them out (batch_norm_'s
    // statistics, dropout's mask).
    if (parts == context->split.end()) {
      outputs_.push_back(context->used.count(id) ? context->name(id) : std::string());
      output_types_.push_back(type);
    } else {
      for (int64_t part : parts->second) {
        outputs_.push_back(context->used.count(part) ? context->name(part) : std::string());
        output_types_.push_back(nullptr);
      }
    }
  }
  if (op.dialect == "pd_op" && op.name == "if" && op.regions.size() == 2) {
    bodies_.emplace_back("then_branch", std::make_shared<PirBlockDecoder>(context, op.regions[0],
                                                                          PirBlockDecoder::Kind::Branch, name_ + "/then"));
    bodies_.emplace_back("else_branch", std::make_shared<PirBlockDecoder>(context, op.regions[1],
                                                                          PirBlockDecoder::Kind::Branch, name_ + "/else"));
  } else if (op.dialect == "pd_op" && op.name == "while" && op.regions.size() == 1) {
    bodies_.emplace_back("body", std::make_shared<PirBlockDecoder>(context, op.regions[0],
                                                                   PirBlockDecoder::Kind::LoopBody, name_ + "/body"));
  } else if (!op.regions.empty()) {
    raise(context->program.path(), ": op ", op.dialect, ".", op.name, " ('", name_, "') has regions Estuary does not "
          "know how to read");
  }
}

TensorType PirNodeDecoder::outputType(size_t i) const {
  if (!output_types_[i]) return {};
  std::optional<DenseType> dense = denseType(*output_types_[i]);
  if (!dense || dense->dtype == DType::Undefined) return {};
  std::vector<Dim> dims;
  for (int64_t dim : dense->dims) dims.push_back(dim < 0 ? Dim() : Dim(dim));
  return TensorType(dense->dtype, Shape(std::move(dims)));
}

}  // namespace

std::shared_ptr<GraphDecoder> pirMainGraph(const PirProgram& program, std::map<std::string, Tensor> tensors,
                                           std::string name) {
  auto context = std::make_shared<PirContext>(PirContext{program, {}, {}, {}, {}});
  context->index(program.main());
  return std::make_shared<PirBlockDecoder>(context, program.main(), PirBlockDecoder::Kind::Main, std::move(name),
                                           std::move(tensors));
}

std::vector<std::string> pirOutputNames(const PirProgram& program) {
  std::vector<std::pair<int64_t, std::string>> fetched;
  for (const PirOp& op : program.main().ops) {
    if (op.dialect != "pd_op" || op.name != "fetch") continue;
    int64_t col = static_cast<int64_t>(fetched.size());
    std::string name = "output_" + std::to_string(fetched.size());
    for (const auto& [key, value] : op.attributes) {
      std::optional<AttrValue> decoded = decodeAttribute(*value);
      if (key == "col" && decoded) {
        if (auto* number = std::get_if<int64_t>(&decoded->data)) col = *number;
      }
      if (key == "name" && decoded) {
        if (auto* text = std::get_if<std::string>(&decoded->data)) name = *text;
      }
    }
    fetched.emplace_back(col, name);
  }
  std::sort(fetched.begin(), fetched.end());
  std::vector<std::string> names;
  for (auto& [col, name] : fetched) names.push_back(std::move(name));
  return names;
}

}  // namespace estuary::paddle_frontend
