#pragma once
// Frontends: translators from a framework's models into core IR.
//
// Each frontend is a plugin (plugins/<framework>/) that registers a FrontendInfo through
// PluginRegistrar::addFrontend; frontends know nothing about the backend. They are found by
// name: loadFrontend("onnx") loads the plugin "onnx_frontend" (libestuary_onnx_frontend.so,
// searched like every plugin) the first time it is asked for.
//
// A frontend takes a ModelInput (a file, a directory, a set of files or an in-memory object)
// with FrontendOptions. loadModel() is the one way in for the command line, the Python
// package and torch.compile: it picks the frontend (chooseFrontend()), checks the options
// against what the frontend declares, translates, and applies the options' input names,
// shapes and outputs. The frontends build on a shared layer: the node view (decoder.h),
// translation context (node_context.h), translator tables and conversion extensions
// (translator_table.h), the graph translator with census and info (graph_translator.h),
// protobuf reading (protobuf.h) and weight sources (weights.h); docs/frontends.md tells
// how they fit together.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/frontend/model_input.h"
#include "estuary/support/error.h"

namespace estuary {

class Graph;

// What a model says about itself, read without translating it (ATC's --mode that prints a
// model's information).
struct ModelInfo {
  struct Operand {
    std::string name;
    std::string type;  // "f32[batch,3,224,224]"
  };
  // A variant of the model one may load instead (a SavedModel's signatures).
  struct Variant {
    std::string name;
    std::vector<Operand> inputs;
    std::vector<Operand> outputs;
  };
  std::string frontend;  // the frontend that read it: "onnx"
  std::string format;    // "ONNX"
  std::string producer;  // "pytorch 2.13.0"
  // Further facts in the order the frontend finds useful: "ir_version", "graph", ...
  std::vector<std::pair<std::string, std::string>> properties;
  // Operator sets the model imports: domain ("" is the default) -> version.
  std::map<std::string, int64_t> opsets;
  std::vector<Operand> inputs;
  std::vector<Operand> outputs;
  // Nodes per framework op type (the main graph and its subgraphs).
  std::map<std::string, int64_t> op_counts;
  int64_t parameter_count = 0;  // elements of all weights
  int64_t parameter_bytes = 0;
  std::vector<Variant> variants;
};

class Frontend {
 public:
  virtual ~Frontend() = default;
  // Whether `input` is this frontend's: a cheap look at names and first bytes, no parsing.
  virtual bool supports(const ModelInput& input, const FrontendOptions& options) const = 0;
  // Reads the model's information. Raises an Error naming the model when it is malformed.
  virtual ModelInfo describe(const ModelInput& input, const FrontendOptions& options) const = 0;
  // Translates the model into core IR. Weights stay in the file's memory where the format
  // allows (the graph keeps the mapping alive). Raises UnsupportedOpsError listing every op
  // without a translation, an Error naming the model and node for anything else.
  virtual std::unique_ptr<Graph> load(const ModelInput& input, const FrontendOptions& options) const = 0;
  // The ops its own table translates ("Conv", "aten.add.Tensor"), sorted; conversion
  // extensions come on top. torch.compile's partitioner asks it which nodes Estuary takes.
  virtual std::vector<std::string> ops() const { return {}; }
};

// A frontend-specific key of FrontendOptions::keys.
struct FrontendOption {
  std::string name;
  std::string description;
};

struct FrontendInfo {
  std::string name;         // what `estuary convert --framework` takes: "onnx"
  std::string description;  // one line
  std::vector<std::string> extensions;    // file name endings it reads: ".onnx"
  std::vector<std::string> object_types;  // in-memory objects it takes: "pytorch.fx_graph"
  // What supports() looks for, for the error saying that no frontend supports an input:
  // "a file holding a protobuf ModelProto".
  std::string accepts;
  std::vector<FrontendOption> options;  // the keys FrontendOptions::keys may hold
  std::function<std::shared_ptr<const Frontend>()> factory;

  // Raises an Error naming what is missing.
  void check() const;
};

// Ops a frontend cannot translate, all of them, so that a user sees the whole list at once.
struct UnsupportedOp {
  std::string op_type;
  std::string domain;  // "" for the framework's default domain
  int64_t opset = 0;   // the version of `domain` the model imports; 0 when not versioned
  std::vector<std::string> nodes;  // names of the nodes using it
};

class UnsupportedOpsError : public Error {
 public:
  // `model` names the file in the message.
  UnsupportedOpsError(const std::string& model, std::vector<UnsupportedOp> ops);
  const std::vector<UnsupportedOp>& ops() const { return ops_; }

 private:
  std::vector<UnsupportedOp> ops_;
};

class FrontendRegistry {
 public:
  // The process-wide registry; PluginLoader::global() registers into it.
  static FrontendRegistry& global();

  // Raises an Error when `info.name` is taken. `keep_alive` (a loaded plugin) stays alive as
  // long as any frontend made by this entry does.
  void add(FrontendInfo info, std::shared_ptr<const void> keep_alive = nullptr);
  const FrontendInfo* find(std::string_view name) const;
  std::vector<std::string> names() const;  // sorted

  // A new frontend from the entry named `name`; nullptr when there is none. Keeps the
  // plugin that registered it loaded for as long as the frontend lives.
  std::shared_ptr<const Frontend> create(std::string_view name) const;

 private:
  struct Entry {
    std::shared_ptr<const void> keep_alive;  // first, so it is destroyed last
    FrontendInfo info;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Entry, std::less<>> entries_;
};

// Frontend names that can be loaded: those in FrontendRegistry::global() plus "<name>" for
// every libestuary_<name>_frontend.so in the plugin search directories. Sorted.
std::vector<std::string> availableFrontends();

// The frontend named `name`, loading the plugin "<name>_frontend" through
// PluginLoader::global() if FrontendRegistry::global() does not have it yet. An unknown
// name raises an Error listing the available frontends.
std::shared_ptr<const Frontend> loadFrontend(std::string_view name);
// Its registration (what it accepts, its options), loading it like loadFrontend().
const FrontendInfo& frontendInfo(std::string_view name);

// The name of the frontend for `input`. With `framework`, that frontend, which must support
// the input. Otherwise the available frontends are asked in a fixed order, and the first
// that supports the input wins: those declaring one of the input's extensions or its
// object type first, the rest after them, each group in alphabetical order of name. Raises
// an Error listing every frontend asked and what each looks for when none supports it.
std::string chooseFrontend(const ModelInput& input, const FrontendOptions& options, std::string_view framework = {});

// Raises an Error naming a key of `options.keys` that the frontend does not declare, and
// listing the ones it does.
void checkOptions(const FrontendInfo& info, const FrontendOptions& options);

// The one way a model comes in: chooseFrontend(), checkOptions(), the frontend's load(),
// then the options' inputs (checked and ordered), outputs and input shapes applied, and the
// graph verified (an invalid graph is reported as a bug of the frontend that made it).
std::unique_ptr<Graph> loadModel(const ModelInput& input, const FrontendOptions& options = {},
                                 std::string_view framework = {});
// The model's information, through the frontend loadModel() would choose.
ModelInfo describeModel(const ModelInput& input, const FrontendOptions& options = {},
                        std::string_view framework = {});

}  // namespace estuary
