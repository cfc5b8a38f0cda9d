#pragma once
// What a frontend is given: the model (a file, a directory, a set of files, or a framework
// object in memory) and the options of one load.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/frontend/translator_table.h"
#include "estuary/transforms/input_shapes.h"

namespace estuary {

class ModelInput {
 public:
  enum class Kind {
    File,       // model.onnx, frozen.pb, inference.json
    Directory,  // a SavedModel
    Files,      // inference.pdmodel + inference.pdiparams, x_graph.mindir + x_variables/
    Object,     // a framework object handed over from Python (an FX graph, a tf.function)
  };

  // A file or a directory, whichever `path` is. Raises an Error when it is neither.
  static ModelInput path(std::string path);
  // Several paths making up one model, each a file or a directory. Raises an Error naming the
  // first that does not exist.
  static ModelInput files(std::vector<std::string> paths);
  // An object in memory. `type` says what `object` points to ("pytorch.fx_graph"), which the
  // frontend that takes it documents; `owner` keeps it (and the framework objects it refers
  // to) alive for as long as the input and anything made from it; `name` names it in errors.
  static ModelInput object(std::string type, const void* object, std::shared_ptr<const void> owner,
                           std::string name);

  Kind kind() const { return kind_; }
  // File and Directory: the path; Files: the first path.
  const std::string& path() const { return paths_.front(); }
  const std::vector<std::string>& paths() const { return paths_; }
  // The path among paths() whose name ends with `suffix` (".pdiparams"), or nullopt.
  std::optional<std::string> pathEndingWith(std::string_view suffix) const;

  // Object: its type and the object, or nullptr when the input is not an object of `type`.
  const std::string& objectType() const { return object_type_; }
  const void* object(std::string_view type) const { return type == object_type_ ? object_ : nullptr; }
  const std::shared_ptr<const void>& owner() const { return owner_; }

  // How errors name the model: the path, "a.pdmodel + a.pdiparams", or the object's name.
  const std::string& name() const { return name_; }
  // The same with its kind: "file m.onnx", "directory saved/", "in-memory pytorch.fx_graph 'forward'".
  std::string describe() const;
  // The lower-case extensions of the paths (".onnx"); empty for objects and directories
  // without one.
  std::vector<std::string> extensions() const;
  // The first `count` bytes of the file (File; Files: the first path), fewer when shorter;
  // empty when unreadable.
  std::string head(size_t count) const;

 private:
  Kind kind_ = Kind::File;
  std::vector<std::string> paths_;
  std::string object_type_;
  const void* object_ = nullptr;
  std::shared_ptr<const void> owner_;
  std::string name_;
};

struct FrontendOptions {
  // The variant of the model to load: a SavedModel's signature; empty for the frontend's
  // default.
  std::string variant;
  // Where the weights are when not where the frontend looks by default (a Paddle
  // .pdiparams elsewhere, a MindIR variables folder).
  std::string weights;
  // Folders besides the model's own in which files the model names (external data, weight
  // shards, parameters) may lie, real paths compared. Empty: the model's folder only.
  std::vector<std::string> allowed_dirs;
  // Names the graph's inputs and outputs must have. Inputs given are checked and put in
  // this order; outputs given become the graph's outputs, any value of the model by name
  // (ATC's --out_nodes). Empty: the model's own.
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  // Input dims fixed before translation, so that translators see them (-1 keeps a dim as
  // the model has it), and the ranges symbolic dims may take (checked by loadModel against
  // the translated inputs; the build enforces them).
  InputShapes input_shapes;
  InputDimRanges input_ranges;
  // Frontend-specific keys; each frontend declares the keys it takes, and any other is an
  // error naming it.
  std::map<std::string, std::string> keys;
  // Translations of this load, asked before the registered extensions and the frontend's
  // own table (a Python function for a custom op).
  std::vector<ConversionExtension> extensions;
};

}  // namespace estuary
