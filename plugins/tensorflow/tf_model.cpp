#include "tf_model.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <unordered_set>

#include "estuary/frontend/graph_translator.h"
#include "estuary/support/error.h"
#include "tf_decoder.h"
#include "tf_op_outputs.h"
#include "tf_tensor.h"
#include "tf_translators.h"

namespace fs = std::filesystem;

namespace estuary::tensorflow_frontend {

bool isSavedModel(const ModelInput& input) {
  std::error_code error;
  if (input.kind() == ModelInput::Kind::Directory) return fs::is_regular_file(fs::path(input.path()) / "saved_model.pb", error);
  return input.kind() == ModelInput::Kind::File && fs::path(input.path()).filename() == "saved_model.pb";
}

bool looksLikeGraphDef(std::string_view head) {
  // Field 1 (node), length-delimited: 0x0a, a varint length, then the NodeDef's name field.
  if (head.size() < 3 || head[0] != '\x0a') return false;
  size_t at = 1;
  while (at < head.size() && (static_cast<uint8_t>(head[at]) & 0x80)) ++at;
  return at + 1 < head.size() && head[at + 1] == '\x0a';
}

namespace {

// Producers of references in a node list: GraphDef syntax ("node", "node:1") or, in a
// function body, "node:output_arg:index" (a plain name is then one of the function's
// arguments).
class References {
 public:
  References(const std::vector<NodeDef>& nodes, bool function_body) : function_body_(function_body) {
    for (const NodeDef& node : nodes) by_name_.emplace(node.name, &node);
  }

  // The node a reference names and the flat index of its output; nullptr for an argument.
  std::pair<const NodeDef*, size_t> producer(std::string_view ref) const {
    size_t first = ref.find(':');
    if (first == std::string_view::npos) {
      if (function_body_) return {nullptr, 0};
      return {find(ref), 0};
    }
    const NodeDef* node = find(ref.substr(0, first));
    size_t second = ref.find(':', first + 1);
    if (second == std::string_view::npos || !node) return {node, number(ref.substr(first + 1))};
    std::optional<size_t> flat =
        flatOutputIndex(*node, ref.substr(first + 1, second - first - 1), number(ref.substr(second + 1)));
    return {node, flat.value_or(0)};
  }

  // The reference with Identity nodes skipped.
  std::pair<const NodeDef*, size_t> throughIdentities(std::string_view ref) const {
    auto found = producer(ref);
    for (int hops = 0; found.first && found.first->op == "Identity" && !found.first->input.empty() && hops < 64; ++hops) {
      ref = found.first->input[0];
      found = producer(ref);
    }
    last_ref_ = ref;
    return found;
  }
  // The last reference throughIdentities() arrived at (a function argument's name).
  std::string_view lastRef() const { return last_ref_; }

 private:
  const NodeDef* find(std::string_view name) const {
    auto found = by_name_.find(name);
    return found == by_name_.end() ? nullptr : found->second;
  }
  static size_t number(std::string_view digits) {
    size_t value = 0;
    for (char c : digits) value = c >= '0' && c <= '9' ? value * 10 + static_cast<size_t>(c - '0') : value;
    return value;
  }

  bool function_body_;
  std::map<std::string_view, const NodeDef*> by_name_;
  mutable std::string_view last_ref_;
};

const AttrValueProto* attrOf(const NodeDef& node, std::string_view name) {
  for (const AttrEntry& entry : node.attr) {
    if (entry.key == name) return &entry.value;
  }
  return nullptr;
}

// A variable's name as its restore op refers to it: a VarHandleOp's shared name, a
// VariableV2's node name.
std::optional<std::string> variableName(const NodeDef& node) {
  if (node.op == "VarHandleOp") {
    const AttrValueProto* shared = attrOf(node, "shared_name");
    return shared && shared->s && !shared->s->empty() ? std::string(*shared->s) : std::string(node.name);
  }
  if (node.op == "VariableV2" || node.op == "Variable") return std::string(node.name);
  return std::nullopt;
}

// The checkpoint keys a SavedModel's restore ops assign to its variables: AssignVariableOp
// (or Assign) of RestoreV2's output k into a variable reads tensor_names[k]. In TF 2 the
// restore ops live in a function the graph calls with the variables' handles; in TF 1 in the
// graph itself. `outer` names the variable a function argument stands for.
void collectRestores(const std::vector<NodeDef>& nodes, bool function_body,
                     const std::function<std::optional<std::string>(std::string_view)>& outer,
                     std::map<std::string, std::string, std::less<>>& keys) {
  References refs(nodes, function_body);
  for (const NodeDef& node : nodes) {
    if ((node.op != "AssignVariableOp" && node.op != "Assign") || node.input.size() < 2) continue;
    auto [restore, index] = refs.throughIdentities(node.input[1]);
    if (!restore || (restore->op != "RestoreV2" && restore->op != "Restore") || restore->input.size() < 2) continue;
    auto [names, name_index] = refs.throughIdentities(restore->input[1]);
    const AttrValueProto* value = names && names->op == "Const" ? attrOf(*names, "value") : nullptr;
    if (!value || !value->tensor || index >= value->tensor->string_val.size()) continue;
    std::string key(value->tensor->string_val[index]);
    auto [variable, variable_index] = refs.throughIdentities(node.input[0]);
    std::optional<std::string> name = variable ? variableName(*variable) : outer(refs.lastRef());
    if (name) keys.emplace(*name, key);
  }
}

std::string stem(const std::string& path) { return fs::path(path).stem().string(); }

}  // namespace

// --- Opening ---------------------------------------------------------------------------------

TfModel::TfModel(const ModelInput& input, const FrontendOptions& options) : name_(input.name()), weights_(input.name()) {
  if (const void* object = input.object(tensorflow::kConcreteFunctionObjectType)) {
    openFunction(*static_cast<const tensorflow::ConcreteFunction*>(object), options);
    return;
  }
  if (input.kind() != ModelInput::Kind::File && input.kind() != ModelInput::Kind::Directory) {
    raise(name_, ": the TensorFlow frontend reads a frozen GraphDef file, a SavedModel directory or a ",
          tensorflow::kConcreteFunctionObjectType, ", not ", input.describe());
  }
  if (isSavedModel(input)) {
    directory_ = input.kind() == ModelInput::Kind::Directory ? input.path() : fs::path(input.path()).parent_path().string();
    weights_ = WeightSource(name_, directory_, options.allowed_dirs);
    openSavedModel(options);
    return;
  }
  file_ = mapFile(input.path(), "TensorFlow GraphDef");
  owner_ = file_.owner;
  if (!looksLikeGraphDef(file_.bytes())) raise(name_, ": not a TensorFlow GraphDef (it does not begin with a NodeDef)");
  frozen_ = proto::decode<GraphDef>(proto::Source{name_, file_.data, "a TensorFlow GraphDef", "graph.proto"},
                                    file_.bytes());
  if (!options.variant.empty()) {
    raise(name_, ": a frozen GraphDef has no signatures; --signature '", options.variant, "' applies to SavedModels");
  }
}

void TfModel::openFunction(const tensorflow::ConcreteFunction& function, const FrontendOptions& options) {
  function_ = &function;
  auto bytes = std::make_shared<const std::string>(function.graph_def);
  owner_ = bytes;
  frozen_ = proto::decode<GraphDef>(proto::Source{name_, bytes->data(), "a TensorFlow GraphDef", "graph.proto"}, *bytes);
  if (!options.variant.empty()) {
    raise(name_, ": a concrete function has no signatures; --signature '", options.variant, "' applies to SavedModels");
  }
}

void TfModel::openSavedModel(const FrontendOptions& options) {
  const std::string path = (fs::path(directory_) / "saved_model.pb").string();
  file_ = mapFile(path, "SavedModel");
  owner_ = file_.owner;
  saved_ = proto::decode<SavedModel>(proto::Source{path, file_.data, "a TensorFlow SavedModel", "saved_model.proto"},
                                     file_.bytes());
  if (saved_.meta_graphs.empty()) raise(path, ": the SavedModel holds no MetaGraphDef");
  // The graph tagged for serving, else the first.
  meta_graph_ = &saved_.meta_graphs.front();
  for (const MetaGraphDef& meta : saved_.meta_graphs) {
    if (!meta.meta_info_def) continue;
    const auto& tags = meta.meta_info_def->tags;
    if (std::find(tags.begin(), tags.end(), "serve") != tags.end()) meta_graph_ = &meta;
  }
  if (!meta_graph_->graph_def) raise(path, ": the SavedModel's MetaGraphDef holds no graph");
  for (const SignatureEntry& entry : meta_graph_->signature_def) {
    if (entry.key == "__saved_model_init_op") continue;
    Signature signature{std::string(entry.key), {}, {}};
    for (const TensorInfoEntry& input : entry.value.inputs) signature.inputs.emplace_back(input.key, input.value);
    for (const TensorInfoEntry& output : entry.value.outputs) signature.outputs.emplace_back(output.key, output.value);
    signatures_.push_back(std::move(signature));
  }
  const std::string wanted = options.variant.empty() ? "serving_default" : options.variant;
  for (const Signature& signature : signatures_) {
    if (signature.name == wanted) signature_ = signature;
  }
  if (!signature_) {
    std::string names;
    for (const Signature& signature : signatures_) names += (names.empty() ? "" : ", ") + signature.name;
    raise(name_, ": the SavedModel has no signature '", wanted, "'; its signatures: ", names.empty() ? "none" : names,
          " (choose one with --signature)");
  }
  openVariables(options);
}

void TfModel::openVariables(const FrontendOptions& options) {
  std::string prefix = (fs::path(directory_) / "variables" / "variables").string();
  if (!options.weights.empty()) {
    // A variables directory, or a bundle's prefix.
    prefix = fs::is_directory(options.weights) ? (fs::path(options.weights) / "variables").string() : options.weights;
  }
  if (!fs::exists(prefix + ".index")) {
    bundle_problem_ = "the SavedModel has no " + prefix + ".index (the values of its variables; --weights names "
                      "another place)";
    return;
  }
  bundle_.emplace(prefix, weights_);
  mapVariablesByObjectGraph();
  const GraphDef& graph = *meta_graph_->graph_def;
  std::map<std::string_view, const FunctionDef*> functions;
  if (graph.library) {
    for (const FunctionDef& function : graph.library->function) functions.emplace(function.signature.name, &function);
  }
  // Where the object graphs do not say (TF 1 SavedModels), the restore ops do.
  References main(graph.node, false);
  collectRestores(graph.node, false, [](std::string_view) { return std::nullopt; }, variable_keys_);
  for (const NodeDef& call : graph.node) {
    if (call.op != "StatefulPartitionedCall" && call.op != "PartitionedCall") continue;
    const AttrValueProto* f = attrOf(call, "f");
    auto function = f && f->func ? functions.find(f->func->name) : functions.end();
    if (function == functions.end()) continue;
    const FunctionDef& body = *function->second;
    // A function argument stands for the variable the call passes in its place.
    auto outer = [&](std::string_view argument) -> std::optional<std::string> {
      const auto& args = body.signature.input_arg;
      for (size_t i = 0; i < args.size() && i < call.input.size(); ++i) {
        if (args[i].name != argument) continue;
        const NodeDef* variable = main.throughIdentities(call.input[i]).first;
        return variable ? variableName(*variable) : std::nullopt;
      }
      return std::nullopt;
    };
    collectRestores(body.node_def, true, outer, variable_keys_);
  }
}

void TfModel::mapVariablesByObjectGraph() {
  constexpr std::string_view kObjectGraphKey = "_CHECKPOINTABLE_OBJECT_GRAPH";
  if (!meta_graph_->object_graph_def || !bundle_->contains(kObjectGraphKey)) return;
  const SavedObjectGraph& saved = *meta_graph_->object_graph_def;
  std::string_view text = bundle_->string(kObjectGraphKey);
  checkpoint_graph_ = proto::decode<TrackableObjectGraph>(
      proto::Source{bundle_->prefix() + ".index", text.data(), "a checkpoint object graph",
                    "trackable_object_graph.proto"},
      text);
  // The same objects in both graphs: walk them together from their roots, matching children
  // by name (as TensorFlow's loader does), not trusting the ids to agree.
  std::vector<int32_t> in_checkpoint(saved.nodes.size(), -1);
  std::vector<std::pair<int32_t, int32_t>> pending;
  if (!saved.nodes.empty() && !checkpoint_graph_.nodes.empty()) pending.emplace_back(0, 0);
  while (!pending.empty()) {
    auto [saved_id, checkpoint_id] = pending.back();
    pending.pop_back();
    if (in_checkpoint[static_cast<size_t>(saved_id)] >= 0) continue;
    in_checkpoint[static_cast<size_t>(saved_id)] = checkpoint_id;
    for (const ObjectReference& child : saved.nodes[static_cast<size_t>(saved_id)].children) {
      for (const ObjectReference& other : checkpoint_graph_.nodes[static_cast<size_t>(checkpoint_id)].children) {
        if (other.local_name != child.local_name) continue;
        bool valid = child.node_id >= 0 && static_cast<size_t>(child.node_id) < saved.nodes.size() &&
                     other.node_id >= 0 && static_cast<size_t>(other.node_id) < checkpoint_graph_.nodes.size();
        if (valid) pending.emplace_back(child.node_id, other.node_id);
      }
    }
  }
  // A call's inputs after the caller's are the concrete function's bound inputs: saved
  // objects, whose checkpoint objects name the key of their value.
  const GraphDef& graph = *meta_graph_->graph_def;
  References refs(graph.node, false);
  for (const NodeDef& call : graph.node) {
    const AttrValueProto* f = attrOf(call, "f");
    if (!f || !f->func) continue;
    auto entry = std::find_if(saved.concrete_functions.begin(), saved.concrete_functions.end(),
                              [&](const ConcreteFunctionEntry& candidate) { return candidate.key == f->func->name; });
    if (entry == saved.concrete_functions.end()) continue;
    std::vector<std::string_view> data;
    for (std::string_view input : call.input) {
      if (!input.empty() && input.front() != '^') data.push_back(input);
    }
    const std::vector<int32_t>& bound = entry->value.bound_inputs;
    if (bound.size() > data.size()) continue;
    for (size_t j = 0; j < bound.size(); ++j) {
      const NodeDef* handle = refs.throughIdentities(data[data.size() - bound.size() + j]).first;
      std::optional<std::string> name = handle ? variableName(*handle) : std::nullopt;
      if (!name || bound[j] < 0 || static_cast<size_t>(bound[j]) >= in_checkpoint.size()) continue;
      int32_t checkpoint_id = in_checkpoint[static_cast<size_t>(bound[j])];
      if (checkpoint_id < 0) continue;
      for (const SerializedTensor& attribute : checkpoint_graph_.nodes[static_cast<size_t>(checkpoint_id)].attributes) {
        if (attribute.name == "VARIABLE_VALUE") variable_keys_.emplace(*name, attribute.checkpoint_key);
      }
    }
  }
}

Tensor TfModel::variable(std::string_view shared_name, const std::string& node) {
  if (!bundle_) raise(bundle_problem_);
  auto key = variable_keys_.find(shared_name);
  if (key != variable_keys_.end()) return bundle_->tensor(key->second);
  if (bundle_->contains(shared_name)) return bundle_->tensor(shared_name);
  raise("variable '", shared_name, "' of node '", node, "': no restore op of the SavedModel names its checkpoint key, "
        "and ", bundle_->prefix(), ".index has no tensor of that name");
}

// --- Inputs and outputs ----------------------------------------------------------------------

std::vector<std::pair<std::string, std::string>> TfModel::inputs() const {
  if (function_) return function_->inputs;
  std::vector<std::pair<std::string, std::string>> inputs;
  if (signature_) {
    for (const auto& [key, info] : signature_->inputs) inputs.emplace_back(std::string(info.name), key);
  }
  return inputs;
}

namespace {

// The results of a frozen graph: the first output of each node no input names, by data or
// by control (a node only a control edge reads, such as the pivot of a lowered loop, is
// not a result either).
std::vector<std::string> sinkOutputs(const GraphDef& graph) {
  static const std::unordered_set<std::string_view> kNotResults = {
      "Const", "Placeholder", "NoOp", "Assert", "SaveV2", "RestoreV2", "AssignVariableOp", "VarHandleOp"};
  std::unordered_set<std::string_view> read;
  for (const NodeDef& node : graph.node) {
    for (std::string_view input : node.input) {
      if (!input.empty() && input.front() == '^') input.remove_prefix(1);
      read.insert(input.substr(0, input.find(':')));
    }
  }
  std::vector<std::string> outputs;
  for (const NodeDef& node : graph.node) {
    if (!kNotResults.count(node.op) && !read.count(node.name)) outputs.push_back(std::string(node.name) + ":0");
  }
  return outputs;
}

}  // namespace

std::vector<std::string> TfModel::outputs(const FrontendOptions& options) const {
  std::vector<std::string> outputs;
  if (!options.outputs.empty()) {
    for (const std::string& output : options.outputs) {
      bool is_key = false;
      if (signature_) {
        for (const auto& [key, info] : signature_->outputs) {
          if (key == output) {
            outputs.emplace_back(info.name);
            is_key = true;
          }
        }
      }
      if (!is_key) outputs.push_back(output);
    }
    return outputs;
  }
  if (signature_) {
    for (const auto& [key, info] : signature_->outputs) outputs.emplace_back(info.name);
    return outputs;
  }
  if (function_) {
    for (const auto& [tensor, name] : function_->outputs) outputs.push_back(tensor);
    return outputs;
  }
  outputs = sinkOutputs(frozen_);
  if (outputs.empty()) {
    raise(name_, ": every node of the graph feeds another, so none is its output (a cycle?); name the outputs "
          "with --out-nodes");
  }
  return outputs;
}

std::vector<std::string> TfModel::outputNames(const FrontendOptions& options) const {
  if (!options.outputs.empty()) return options.outputs;
  std::vector<std::string> names;
  if (signature_) {
    for (const auto& [key, info] : signature_->outputs) names.push_back(key);
    return names;
  }
  if (function_) {
    for (const auto& [tensor, name] : function_->outputs) names.push_back(name);
    return names;
  }
  for (const std::string& output : outputs(options)) {
    names.push_back(output.size() > 2 && output.compare(output.size() - 2, 2, ":0") == 0
                        ? output.substr(0, output.size() - 2)
                        : output);
  }
  return names;
}

// --- Translation -----------------------------------------------------------------------------

std::unique_ptr<Graph> TfModel::toGraph(const FrontendOptions& options) {
  const GraphDef& graph = meta_graph_ ? *meta_graph_->graph_def : frozen_;
  TfModelContext context(name_, graph.library ? &*graph.library : nullptr, owner_, weights_);
  context.variables = [this](std::string_view shared_name, const std::string& node) {
    return variable(shared_name, node);
  };
  if (function_) {
    for (const auto& [placeholder, value] : function_->captures) context.captures.emplace(placeholder, value);
  }
  std::string graph_name = signature_ ? signature_->name : stem(name_);
  TfGraphDecoder decoder(context, graph, graph_name, inputs(), outputs(options));
  TranslationSession session("tensorflow", name_, tfTranslators(), options);
  std::unique_ptr<Graph> result = session.translate(decoder);
  // The outputs take the model's names: the signature's keys, or the nodes'.
  std::vector<std::string> names = outputNames(options);
  for (size_t i = 0; i < result->numOutputs() && i < names.size(); ++i) {
    if (!result->output(i)->isGraphInput()) result->output(i)->setName(names[i]);
  }
  return result;
}

// --- Information -----------------------------------------------------------------------------

namespace {

std::string typeText(const TensorInfo& info) {
  std::optional<DType> dtype = dtypeFromTf(info.dtype);
  std::string text = dtype ? std::string(dtypeName(*dtype)) : tfDataTypeName(info.dtype);
  if (!info.shape || info.shape->unknown_rank) return text + "[*]";
  text += "[";
  for (size_t d = 0; d < info.shape->dims.size(); ++d) {
    int64_t size = info.shape->dims[d].size;
    text += (d ? "," : "") + (size < 0 ? std::string("?") : std::to_string(size));
  }
  return text + "]";
}

// Elements and bytes of the Const nodes of a graph, its subgraphs and the functions it calls,
// each NodeDef once (a rebuilt TF 1 loop's body may hold a Const the graph holds too).
void countConstants(const GraphDecoder& graph, ModelInfo& info, std::unordered_set<const void*>& seen) {
  if (!seen.insert(&graph).second) return;
  for (size_t i = 0; i < graph.numNodes(); ++i) {
    const auto& node = static_cast<const TfNode&>(graph.node(i));
    for (const AttrValue::GraphRef& body : node.subgraphs()) countConstants(*body, info, seen);
    const NodeDef* def = node.def();
    if (node.opType() != "Const" || !def || !seen.insert(def).second) continue;
    const AttrValueProto* value = attrOf(*def, "value");
    std::optional<DType> dtype = value && value->tensor ? dtypeFromTf(value->tensor->dtype) : std::nullopt;
    if (!dtype || !value->tensor->shape || value->tensor->shape->dims.empty()) continue;
    int64_t elements = 1;
    for (const ShapeDim& dim : value->tensor->shape->dims) elements *= std::max<int64_t>(dim.size, 0);
    info.parameter_count += elements;
    info.parameter_bytes += elements * static_cast<int64_t>(dtypeSize(*dtype));
  }
}

}  // namespace

ModelInfo TfModel::describe() {
  const GraphDef& graph = meta_graph_ ? *meta_graph_->graph_def : frozen_;
  TfModelContext context(name_, graph.library ? &*graph.library : nullptr, owner_, weights_);
  FrontendOptions none;
  TfGraphDecoder decoder(context, graph, signature_ ? signature_->name : stem(name_), inputs(), outputs(none));
  ModelInfo info = describeGraph(decoder, name_);
  std::unordered_set<const void*> seen;
  countConstants(decoder, info, seen);
  if (meta_graph_) {
    info.format = "TensorFlow SavedModel";
    if (meta_graph_->meta_info_def) {
      info.producer = "TensorFlow " + std::string(meta_graph_->meta_info_def->tensorflow_version);
      std::string tags;
      for (std::string_view tag : meta_graph_->meta_info_def->tags) tags += (tags.empty() ? "" : ",") + std::string(tag);
      info.properties.emplace_back("tags", tags);
    }
    info.properties.emplace_back("signature", signature_->name);
    info.outputs.clear();
    for (const auto& [key, tensor] : signature_->outputs) info.outputs.push_back({key, typeText(tensor)});
    for (const Signature& signature : signatures_) {
      ModelInfo::Variant variant{signature.name, {}, {}};
      for (const auto& [key, tensor] : signature.inputs) variant.inputs.push_back({key, typeText(tensor)});
      for (const auto& [key, tensor] : signature.outputs) variant.outputs.push_back({key, typeText(tensor)});
      info.variants.push_back(std::move(variant));
    }
    if (bundle_) {
      // The variables the signature reads.
      for (size_t i = 0; i < decoder.numNodes(); ++i) {
        const NodeDef* node = static_cast<const TfNode&>(decoder.node(i)).def();
        std::optional<std::string> name = node ? variableName(*node) : std::nullopt;
        if (!name) continue;
        auto key = variable_keys_.find(*name);
        std::string_view checkpoint_key = key != variable_keys_.end() ? std::string_view(key->second) : *name;
        if (!bundle_->contains(checkpoint_key)) continue;
        const BundleEntry& entry = bundle_->entry(checkpoint_key);
        std::optional<DType> dtype = dtypeFromTf(entry.dtype);
        if (!dtype) continue;
        int64_t elements = 1;
        for (int64_t dim : shapeDims(entry.shape, "variable", name_)) elements *= dim;
        info.parameter_count += elements;
        info.parameter_bytes += elements * static_cast<int64_t>(dtypeSize(*dtype));
      }
    }
  } else if (function_) {
    info.format = "TensorFlow concrete function";
  } else {
    info.format = "TensorFlow GraphDef";
    if (frozen_.versions) info.producer = "GraphDef version " + std::to_string(frozen_.versions->producer);
  }
  if (graph.library) info.properties.emplace_back("functions", std::to_string(graph.library->function.size()));
  return info;
}

}  // namespace estuary::tensorflow_frontend
