#pragma once
// A TensorFlow model opened for the frontend: a frozen GraphDef (.pb), a SavedModel
// directory (saved_model.pb + variables/), or a concrete function handed over in memory
// (estuary/tensorflow/concrete_function.h). It answers what the frontend is asked: the
// model's facts (signatures included) and the core IR graph of one signature.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "estuary/frontend/frontend.h"
#include "estuary/frontend/weights.h"
#include "estuary/ir/graph.h"
#include "estuary/support/mapped_file.h"
#include "estuary/tensorflow/concrete_function.h"
#include "tensor_bundle.h"
#include "tf_messages.h"

namespace estuary::tensorflow_frontend {

// Whether `input` is a SavedModel: a directory holding saved_model.pb, or that file.
bool isSavedModel(const ModelInput& input);
// Whether the first bytes look like a GraphDef: its first field is a NodeDef (field 1)
// whose own first field is its name.
bool looksLikeGraphDef(std::string_view head);

class TfModel {
 public:
  // Opens and decodes the model. Raises an Error naming the file when it is not a readable
  // GraphDef or SavedModel, or lacks what it needs.
  TfModel(const ModelInput& input, const FrontendOptions& options);

  std::unique_ptr<Graph> toGraph(const FrontendOptions& options);
  ModelInfo describe();

 private:
  struct Signature {
    std::string name;
    std::vector<std::pair<std::string, TensorInfo>> inputs;   // key, tensor
    std::vector<std::pair<std::string, TensorInfo>> outputs;
  };
  void openSavedModel(const FrontendOptions& options);
  void openFunction(const tensorflow::ConcreteFunction& function, const FrontendOptions& options);
  void openVariables(const FrontendOptions& options);
  // The checkpoint keys of the variables calls capture, through the SavedModel's and the
  // checkpoint's object graphs (TF 2).
  void mapVariablesByObjectGraph();
  // The inputs (Placeholder value, input name) and outputs (value names) to translate, and
  // the names the outputs take in the graph.
  std::vector<std::pair<std::string, std::string>> inputs() const;
  std::vector<std::string> outputs(const FrontendOptions& options) const;
  std::vector<std::string> outputNames(const FrontendOptions& options) const;
  Tensor variable(std::string_view shared_name, const std::string& node);

  std::string name_;       // the model, as errors name it
  std::string directory_;  // a SavedModel's
  MappedFile file_;
  std::shared_ptr<const void> owner_;  // keeps the bytes the decoded messages point into
  const tensorflow::ConcreteFunction* function_ = nullptr;
  WeightSource weights_;
  GraphDef frozen_;
  SavedModel saved_;
  const MetaGraphDef* meta_graph_ = nullptr;
  std::optional<Signature> signature_;
  std::vector<Signature> signatures_;
  std::optional<TensorBundle> bundle_;
  std::string bundle_problem_;  // why there is no bundle, for the error a variable read gives
  TrackableObjectGraph checkpoint_graph_;
  std::map<std::string, std::string, std::less<>> variable_keys_;  // shared name -> checkpoint key
};

}  // namespace estuary::tensorflow_frontend
