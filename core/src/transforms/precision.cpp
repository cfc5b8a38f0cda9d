#include "estuary/transforms/precision.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "estuary/ir/float16.h"
#include "estuary/ops/schema.h"
#include "estuary/pass/pipeline.h"
#include "estuary/support/error.h"
#include "estuary/support/mapped_file.h"
#include "estuary/transforms/dce.h"

namespace estuary {

namespace {

struct Spelling {
  const char* text;
  PrecisionMode mode;
};

// Estuary's names first (precisionModeName gives these), then ATC's.
constexpr Spelling kSpellings[] = {
    {"origin", PrecisionMode::Origin},
    {"fp32", PrecisionMode::Fp32},
    {"bf16", PrecisionMode::Bf16},
    {"fp16", PrecisionMode::Fp16},
    {"mixed-bf16", PrecisionMode::MixedBf16},
    {"mixed-fp16", PrecisionMode::MixedFp16},
    {"fp64", PrecisionMode::Fp64},
    {"must_keep_origin_dtype", PrecisionMode::Origin},
    {"force_fp32", PrecisionMode::Fp32},
    {"allow_fp32_to_bf16", PrecisionMode::Bf16},
    {"allow_fp32_to_fp16", PrecisionMode::Fp16},
    {"force_fp16", PrecisionMode::Fp16},
    {"allow_mix_precision_bf16", PrecisionMode::MixedBf16},
    {"allow_mix_precision", PrecisionMode::MixedFp16},
    {"allow_mix_precision_fp16", PrecisionMode::MixedFp16},
};

}  // namespace

std::optional<PrecisionMode> parsePrecisionMode(std::string_view text) {
  for (const Spelling& spelling : kSpellings) {
    if (text == spelling.text) return spelling.mode;
  }
  return std::nullopt;
}

const char* precisionModeName(PrecisionMode mode) {
  for (const Spelling& spelling : kSpellings) {
    if (spelling.mode == mode) return spelling.text;
  }
  return "?";
}

const char* precisionModeSpellings() {
  return "origin, fp32, bf16, fp16, mixed-bf16, mixed-fp16, fp64 (ATC's must_keep_origin_dtype, force_fp32, "
         "allow_fp32_to_bf16, allow_fp32_to_fp16, force_fp16, allow_mix_precision_bf16, allow_mix_precision, "
         "allow_mix_precision_fp16)";
}

std::vector<std::string_view> precisionModeSpellingList() {
  std::vector<std::string_view> spellings;
  for (const Spelling& spelling : kSpellings) spellings.push_back(spelling.text);
  return spellings;
}

DType lowDType(PrecisionMode mode) {
  switch (mode) {
    case PrecisionMode::Bf16:
    case PrecisionMode::MixedBf16: return DType::BF16;
    case PrecisionMode::Fp16:
    case PrecisionMode::MixedFp16: return DType::F16;
    default: return DType::Undefined;
  }
}

// --- Lists --------------------------------------------------------------------------------------

namespace {

[[noreturn]] void failAt(const std::string& path, const YAML::Node& node, const std::string& message) {
  raise(path, ":", node.Mark().line + 1, ": ", message);
}

YAML::Node loadYaml(const std::string& path) {
  std::ifstream file(path);
  if (!file) raise(path, ": cannot read the file");
  try {
    return YAML::Load(file);
  } catch (const YAML::Exception& error) {
    raise(path, ":", error.mark.line + 1, ":", error.mark.column + 1, ": ", error.msg);
  }
}

std::set<std::string> namesOf(const std::string& path, const YAML::Node& list, const std::string& what) {
  if (!list.IsSequence()) failAt(path, list, "'" + what + "' must be a list of names");
  std::set<std::string> names;
  for (const YAML::Node& item : list) {
    if (!item.IsScalar() || item.Scalar().empty()) failAt(path, item, "'" + what + "' holds something not a name");
    names.insert(item.Scalar());
  }
  return names;
}

template <typename Handler>
void forEachKey(const std::string& path, const YAML::Node& map, const std::vector<std::string>& known,
                const Handler& handle) {
  if (!map.IsMap()) failAt(path, map, "expected a mapping of " + [&] {
    std::string list;
    for (const std::string& key : known) list += (list.empty() ? "" : ", ") + key;
    return list;
  }());
  for (const auto& entry : map) {
    const std::string key = entry.first.Scalar();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (const std::string& name : known) list += (list.empty() ? "" : ", ") + name;
      failAt(path, entry.first, "unknown key '" + key + "' (known: " + list + ")");
    }
    handle(key, entry.second);
  }
}

}  // namespace

PrecisionLists PrecisionLists::load(const std::string& path) {
  PrecisionLists lists;
  forEachKey(path, loadYaml(path), {"low", "f32", "nodes"}, [&](const std::string& key, const YAML::Node& value) {
    if (key == "low") lists.low_ops = namesOf(path, value, key);
    if (key == "f32") lists.f32_ops = namesOf(path, value, key);
    if (key != "nodes") return;
    forEachKey(path, value, {"low", "f32", "keep"}, [&](const std::string& which, const YAML::Node& names) {
      std::set<std::string>& target = which == "low" ? lists.low_nodes : which == "f32" ? lists.f32_nodes : lists.keep_nodes;
      target = namesOf(path, names, "nodes." + which);
    });
  });
  for (const std::string& op : lists.low_ops) {
    if (lists.f32_ops.count(op)) raise(path, ": op '", op, "' is in both 'low' and 'f32'");
  }
  return lists;
}

void PrecisionLists::modify(const std::string& path) {
  forEachKey(path, loadYaml(path), {"white-list", "black-list", "gray-list"},
             [&](const std::string& list, const YAML::Node& edits) {
               forEachKey(path, edits, {"to-add", "to-remove"}, [&](const std::string& edit, const YAML::Node& ops) {
                 for (const std::string& op : namesOf(path, ops, list + "." + edit)) {
                   std::set<std::string>* own = list == "white-list" ? &low_ops : list == "black-list" ? &f32_ops : nullptr;
                   if (edit == "to-remove") {
                     if (own) own->erase(op);
                     continue;
                   }
                   low_ops.erase(op);
                   f32_ops.erase(op);
                   if (own) own->insert(op);  // the gray list is every op in neither
                 }
               });
             });
}

void PrecisionLists::keepFromFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) raise(path, ": cannot read the file");
  std::string line;
  while (std::getline(file, line)) {
    line = line.substr(0, line.find('#'));
    const size_t begin = line.find_first_not_of(" \t\r");
    if (begin == std::string::npos) continue;
    keep_nodes.insert(line.substr(begin, line.find_last_not_of(" \t\r") - begin + 1));
  }
}

std::string shippedPrecisionLists() {
  const std::string dir = shippedPipelineDir();
  if (dir.empty()) return "";
  const std::string path = dir + "/precision/mixed.yaml";
  return std::ifstream(path).good() ? path : "";
}

// --- The rewrite --------------------------------------------------------------------------------

namespace {

bool isComputeFloat(DType dtype) { return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16; }

float loadFloat(DType dtype, const void* data, int64_t i) {
  switch (dtype) {
    case DType::F32: return static_cast<const float*>(data)[i];
    case DType::F16: return toFloat(static_cast<const Float16*>(data)[i]);
    case DType::BF16: return toFloat(static_cast<const BFloat16*>(data)[i]);
    default: raise("not a 32- or 16-bit float: ", dtypeName(dtype));
  }
}

void storeFloat(DType dtype, void* data, int64_t i, float value) {
  switch (dtype) {
    case DType::F32: static_cast<float*>(data)[i] = value; return;
    case DType::F16: static_cast<Float16*>(data)[i] = toFloat16(value); return;
    case DType::BF16: static_cast<BFloat16*>(data)[i] = toBFloat16(value); return;
    case DType::F64: static_cast<double*>(data)[i] = value; return;  // exact: every float is a double
    default: raise("not a float: ", dtypeName(dtype));
  }
}

// Whether every value of `from` is exactly a value of `to`: a cast from -> to -> from is the
// identity.
bool widens(DType from, DType to) {
  if (from == to) return true;
  if (to == DType::F32 || to == DType::F64) return from == DType::F16 || from == DType::BF16 || (to == DType::F64 && from == DType::F32);
  return false;
}

class PrecisionRewrite {
 public:
  PrecisionRewrite(Graph& graph, PrecisionMode mode, const PrecisionLists& lists)
      : graph_(graph), mode_(mode), low_(lowDType(mode)), lists_(lists) {}

  PrecisionStats run() {
    std::vector<Node*> nodes;
    for (Node* node : graph_.nodes()) nodes.push_back(node);
    for (Node* node : nodes) {
      if (!node->is("Constant")) rewrite(*node);
    }
    restoreInterface();
    cancelCasts();
    eliminateDeadCode(graph_);
    for (const Node* node : graph_.nodes()) stats_.casts_inserted += node->is("Cast") && inserted_.count(node);
    return stats_;
  }

 private:
  // The dtype `value` had before the pass.
  DType originalOf(const Value* value) const {
    auto found = original_.find(value);
    return found == original_.end() ? value->dtype() : found->second;
  }

  bool listed(const std::set<std::string>& names, const Node& node) const {
    return names.count(node.name()) || names.count("OpType::" + node.qualifiedOpType());
  }

  // The type variables through which `node` computes on floats: shared by an input and an
  // output, and bound to a 32- or 16-bit float in the model (an input this pass already moved
  // to f64 counts as what it was).
  std::vector<std::string> computeVars(const Node& node, const OpSchema& schema) const {
    std::vector<std::string> vars;
    for (size_t i = 0; i < node.numInputs(); ++i) {
      const OperandSpec* spec = schema.inputSpec(i);
      const Value* input = node.input(i);
      if (!spec || !input || !isComputeFloat(originalOf(input)) || !schema.findTypeConstraint(spec->type_var)) continue;
      bool in_output = false;
      for (size_t o = 0; o < node.numOutputs(); ++o) {
        const OperandSpec* out = schema.outputSpec(o);
        in_output |= out && out->type_var == spec->type_var;
      }
      if (in_output && std::find(vars.begin(), vars.end(), spec->type_var) == vars.end()) vars.push_back(spec->type_var);
    }
    return vars;
  }

  // The dtype the node computes in; Undefined keeps its model's dtypes.
  DType choose(const Node& node, const OpSchema& schema, const std::vector<std::string>& vars) const {
    if (mode_ == PrecisionMode::Origin || listed(lists_.keep_nodes, node)) return DType::Undefined;
    DType wanted = DType::F32;
    if (mode_ == PrecisionMode::Fp64) {
      wanted = DType::F64;
    } else if (mode_ == PrecisionMode::Bf16 || mode_ == PrecisionMode::Fp16) {
      wanted = low_;
    } else if (mode_ == PrecisionMode::MixedBf16 || mode_ == PrecisionMode::MixedFp16) {
      const std::string op = node.qualifiedOpType();
      if (listed(lists_.low_nodes, node)) {
        wanted = low_;
      } else if (listed(lists_.f32_nodes, node) || lists_.f32_ops.count(op)) {
        wanted = DType::F32;
      } else if (lists_.low_ops.count(op)) {
        wanted = low_;
      } else if (readsOnlyConstants(node, schema, vars)) {
        return DType::Undefined;  // a view of weights (a tied embedding's Transpose): its readers decide
      } else {
        wanted = followsInputs(node, schema, vars) ? low_ : DType::F32;
      }
    }
    for (const std::string& var : vars) {
      const std::vector<DType>& allowed = schema.findTypeConstraint(var)->allowed;
      if (std::find(allowed.begin(), allowed.end(), wanted) == allowed.end()) return DType::Undefined;
    }
    return wanted;
  }

  // Whether every float input through which `node` computes is a constant.
  static bool readsOnlyConstants(const Node& node, const OpSchema& schema, const std::vector<std::string>& vars) {
    for (size_t i = 0; i < node.numInputs(); ++i) {
      const OperandSpec* spec = schema.inputSpec(i);
      const Value* input = node.input(i);
      if (!spec || !input || std::find(vars.begin(), vars.end(), spec->type_var) == vars.end()) continue;
      if (!input->producer() || !input->producer()->is("Constant")) return false;
    }
    return true;
  }

  // The gray list: 16 bits when every computed (not constant) float input is 16-bit.
  bool followsInputs(const Node& node, const OpSchema& schema, const std::vector<std::string>& vars) const {
    bool any = false;
    for (size_t i = 0; i < node.numInputs(); ++i) {
      const OperandSpec* spec = schema.inputSpec(i);
      const Value* input = node.input(i);
      if (!spec || !input || std::find(vars.begin(), vars.end(), spec->type_var) == vars.end()) continue;
      if (input->producer() && input->producer()->is("Constant")) continue;
      if (input->dtype() != low_) return false;
      any = true;
    }
    return any;
  }

  void rewrite(Node& node) {
    const OpSchema* schema = OpRegistry::global().find(node);
    std::vector<std::string> vars;
    // Casts keep their `to`, and If/Loop their subgraphs' dtypes: they read values as the
    // model made them.
    if (schema && node.subgraphs().empty() && !node.is("Cast")) vars = computeVars(node, *schema);
    const DType target = vars.empty() ? DType::Undefined : choose(node, *schema, vars);
    auto computes = [&](const OperandSpec* spec) {
      return spec && std::find(vars.begin(), vars.end(), spec->type_var) != vars.end();
    };
    for (size_t i = 0; i < node.numInputs(); ++i) {
      Value* input = node.input(i);
      if (!input) continue;
      DType wanted = originalOf(input);
      if (target != DType::Undefined && computes(schema->inputSpec(i)) && isComputeFloat(originalOf(input))) wanted = target;
      if (node.is("Cast")) wanted = input->dtype();
      if (input->dtype() != wanted) node.setInput(i, as(input, wanted));
    }
    if (target == DType::Undefined) return;
    for (size_t o = 0; o < node.numOutputs(); ++o) {
      Value* output = node.output(o);
      if (!computes(schema->outputSpec(o)) || !isComputeFloat(output->dtype()) || output->dtype() == target) continue;
      const DType had = output->dtype();
      original_[output] = had;
      output->setType(TensorType(target, output->shape()));
      ++stats_.values_retyped;
      // Subgraphs that read the value from outside (If/Loop bodies) keep reading it as it was.
      auto inSubgraph = [this](const Use& use) { return use.user->graph() != &graph_; };
      const std::vector<Use>& uses = output->uses();
      if (std::any_of(uses.begin(), uses.end(), inSubgraph)) output->replaceUsesWithIf(as(output, had), inSubgraph);
    }
    ++(target == DType::F64 ? stats_.f64_nodes : target == DType::F32 ? stats_.f32_nodes : stats_.low_nodes);
  }

  // `value` in `dtype`: a constant converted once, else a Cast placed right after the value is
  // made (one per value and dtype, shared by every reader).
  Value* as(Value* value, DType dtype) {
    auto key = std::make_pair(value, dtype);
    if (auto found = converted_.find(key); found != converted_.end()) return found->second;
    Node* producer = value->producer();
    Node* position = producer ? producer->next() : graph_.firstNode();
    Node* node = nullptr;
    const bool float_to_float = isComputeFloat(value->dtype()) && (isComputeFloat(dtype) || dtype == DType::F64);
    if (producer && producer->is("Constant") && float_to_float) {
      const Tensor& source = producer->attr("value")->asTensor();
      node = graph_.createNodeBefore(position, "Constant", {});
      node->setAttr("value", convert(source, dtype));
      // A weight read from a mapped model file is resident in full once converted; its pages
      // go now rather than when the graph drops the constant, so that a model's f32 weights
      // and their 16-bit copies are never resident side by side (GPT-2 in bf16: a peak of
      // 762 MiB against 537 in f32). A later reader faults them in again from the file.
      releaseMappedPages(source.data(), source.byteSize());
      ++stats_.weights_converted;
    } else if (producer && float_to_float && isWeightView(value)) {
      // A weight seen through Transpose/Reshape (a tied embedding read transposed by the output
      // layer): the weight is converted once and the view repeated on it, so no Cast runs on
      // every call and the backend can still read the Transpose as a transposed operand.
      std::vector<Value*> inputs = producer->inputs();
      inputs[0] = as(inputs[0], dtype);
      node = graph_.createNodeBefore(position, producer->opType(), inputs, 1, producer->domain());
      for (const auto& [name, attr] : producer->attributes()) node->setAttr(name, attr);
      node->setName(producer->name());
    } else {
      node = graph_.createNodeBefore(position, "Cast", {value});
      node->setAttr("to", dtype);
      inserted_.insert(node);
    }
    node->output()->setType(TensorType(dtype, value->shape()));
    node->output()->setName(value->name() + "_" + std::string(dtypeName(dtype)));
    converted_[key] = node->output();
    return node->output();
  }

  // Whether `value` is a constant, or a constant's elements rearranged by ops that only move
  // data, with constant shape operands.
  static bool isWeightView(const Value* value) {
    const Node* producer = value->producer();
    if (!producer) return false;
    if (producer->is("Constant")) return true;
    static const char* const kViews[] = {"Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity"};
    const bool view = std::any_of(std::begin(kViews), std::end(kViews), [&](const char* op) { return producer->is(op); });
    if (!view || producer->numInputs() == 0 || !producer->input(0) || producer->numOutputs() != 1) return false;
    for (size_t i = 1; i < producer->numInputs(); ++i) {
      const Value* operand = producer->input(i);
      if (operand && !(operand->producer() && operand->producer()->is("Constant"))) return false;
    }
    return isWeightView(producer->input(0));
  }

  static Tensor convert(const Tensor& tensor, DType dtype) {
    Tensor result = Tensor::allocate(dtype, tensor.shape());
    const int64_t count = tensor.numElements();
    for (int64_t i = 0; i < count; ++i) storeFloat(dtype, result.mutableData(), i, loadFloat(tensor.dtype(), tensor.data(), i));
    return result;
  }

  // Graph outputs and in-place updates leave in the dtype the model gave them, under the
  // names they had.
  void restoreInterface() {
    for (size_t i = 0; i < graph_.numOutputs(); ++i) {
      Value* output = graph_.output(i);
      if (output->dtype() == originalOf(output)) continue;
      const std::string name = output->name();
      Value* restored = as(output, originalOf(output));
      output->setName(name + "_" + std::string(dtypeName(output->dtype())));
      restored->setName(name);
      graph_.setOutput(i, restored);
    }
    for (const auto& update : graph_.inputUpdates()) {
      if (update.new_value->dtype() != update.input->dtype()) {
        graph_.setInputUpdate(update.input, as(update.new_value, update.input->dtype()));
      }
    }
  }

  // Cast(Cast(x, to: wider), to: x's dtype) is x, and a Cast to the dtype it reads is its input.
  void cancelCasts() {
    for (Node* node : graph_.nodes()) {
      if (!node->is("Cast") || node->output()->isGraphOutput()) continue;
      Value* input = node->input(0);
      const DType to = node->output()->dtype();
      Value* same = nullptr;
      if (input->dtype() == to) {
        same = input;
      } else if (Node* inner = input->producer(); inner && inner->is("Cast") &&
                 inner->input(0)->dtype() == to && widens(to, input->dtype())) {
        same = inner->input(0);
      }
      if (!same) continue;
      node->output()->replaceAllUsesWith(same);
      ++stats_.casts_cancelled;
    }
  }

  Graph& graph_;
  PrecisionMode mode_;
  DType low_;
  const PrecisionLists& lists_;
  PrecisionStats stats_;
  std::unordered_map<const Value*, DType> original_;
  std::map<std::pair<Value*, DType>, Value*> converted_;
  std::set<const Node*> inserted_;
};

class PrecisionPass final : public Pass {
 public:
  PrecisionPass(PrecisionMode mode, PrecisionLists lists) : mode_(mode), lists_(std::move(lists)) {}
  PassResult run(Graph& graph, PassContext&) override {
    PrecisionStats stats = applyPrecision(graph, mode_, lists_);
    return {static_cast<int64_t>(stats.values_retyped + stats.casts_inserted + stats.casts_cancelled +
                                 stats.weights_converted)};
  }

 private:
  PrecisionMode mode_;
  PrecisionLists lists_;
};

}  // namespace

PrecisionStats applyPrecision(Graph& graph, PrecisionMode mode, const PrecisionLists& lists) {
  if (mode == PrecisionMode::Origin && lists.keep_nodes.empty()) return {};
  return PrecisionRewrite(graph, mode, lists).run();
}

PassInfo precisionPass() {
  PassInfo info;
  info.name = "set_precision";
  info.description =
      "Runs float computations in the dtype a precision mode gives them (ATC's --precision_mode): casts where "
      "dtypes meet, weights converted once, graph outputs in their own dtype.";
  info.options = {
      {"mode", OptionSpec::Kind::String, std::string("origin"), std::string("one of: ") + precisionModeSpellings()},
      {"lists", OptionSpec::Kind::String, std::string(""), "the mixed modes' lists file (default: the shipped one)", true},
      {"modify_mixlist", OptionSpec::Kind::String, std::string(""), "ATC's list edits (JSON or YAML)", true},
      {"keep_dtype", OptionSpec::Kind::String, std::string(""), "ATC's file of node names that keep their dtypes", true},
  };
  info.factory = [](const PassOptions& options) -> std::unique_ptr<Pass> {
    const std::string& spelling = options.getString("mode");
    std::optional<PrecisionMode> mode = parsePrecisionMode(spelling);
    if (!mode) raise("set_precision: unknown mode '", spelling, "' (known: ", precisionModeSpellings(), ")");
    return std::make_unique<PrecisionPass>(*mode, precisionListsFor(*mode, options.getString("lists"),
                                                                    options.getString("modify_mixlist"),
                                                                    options.getString("keep_dtype")));
  };
  return info;
}

PrecisionLists precisionListsFor(PrecisionMode mode, const std::string& lists, const std::string& modify_mixlist,
                                 const std::string& keep_dtype) {
  const bool mixed = mode == PrecisionMode::MixedBf16 || mode == PrecisionMode::MixedFp16;
  PrecisionLists result;
  const std::string path = lists.empty() ? shippedPrecisionLists() : lists;
  if (mixed || !lists.empty()) {
    if (path.empty()) raise("no precision lists file: configs/precision/mixed.yaml is not installed");
    result = PrecisionLists::load(path);
  }
  if (!modify_mixlist.empty()) result.modify(modify_mixlist);
  if (!keep_dtype.empty()) result.keepFromFile(keep_dtype);
  return result;
}

}  // namespace estuary
