#pragma once
// Frontends: translators from a framework's model format into core IR.
//
// Each frontend is a plugin (plugins/<framework>/) that registers a FrontendInfo through
// PluginRegistrar::addFrontend. Frontends know nothing about the backend. They are found by
// name: loadFrontend("onnx") loads the plugin "onnx_frontend" (libestuary_onnx_frontend.so,
// searched like every plugin) the first time it is asked for, and frontendForFile() picks
// the frontend of a model file by its extension and first bytes.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/support/error.h"

namespace estuary {

class Graph;

// What a model file says about itself, read without translating it (ATC's --mode that
// prints a model's information).
struct ModelInfo {
  struct Operand {
    std::string name;
    std::string type;  // "f32[batch,3,224,224]"
  };
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
};

class Frontend {
 public:
  virtual ~Frontend() = default;
  // Whether the file looks like this frontend's format: a cheap check of its name and
  // first bytes, for picking a frontend when none is named.
  virtual bool recognizes(const std::string& path) const = 0;
  // Reads the model's information. Raises an Error naming the file on a malformed model.
  virtual ModelInfo describe(const std::string& path) const = 0;
  // Translates the model into core IR. Weights stay in the file's memory where the format
  // allows (the graph keeps the mapping alive). Raises UnsupportedOpsError when ops have no
  // translation, an Error naming the file and node for anything else.
  virtual std::unique_ptr<Graph> load(const std::string& path) const = 0;
};

struct FrontendInfo {
  std::string name;         // what `estuary convert --framework` takes: "onnx"
  std::string description;  // one line
  std::vector<std::string> extensions;  // file name endings it reads: ".onnx"
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

// The frontend for a model file: of the available frontends, those registered for the
// file's extension are asked first, then the rest; the first that recognizes the file wins.
// Raises an Error naming the file and the frontends tried when none does.
std::shared_ptr<const Frontend> frontendForFile(const std::string& path);

}  // namespace estuary
