#pragma once
// A MindIR model opened for the frontend: the ModelProto (read as views of the mapped file)
// and its parameters, in the file (raw_data) or, for a model over 1 GiB, in the data_N files
// of the `<name>_variables/` folder beside the `<name>_graph.mindir` (external_data).
#include <memory>
#include <string>

#include "estuary/frontend/frontend.h"
#include "estuary/frontend/weights.h"
#include "estuary/support/mapped_file.h"
#include "ms_messages.h"

namespace estuary::mindspore_frontend {

// Whether the first bytes are a MindIR ModelProto (ir_version, then producer "MindSpore").
bool looksLikeMindIr(std::string_view head);

class MsModel {
 public:
  // Opens and parses the model; raises naming the file when it is not a readable MindIR.
  MsModel(const ModelInput& input, const FrontendOptions& options);

  std::unique_ptr<Graph> toGraph(const FrontendOptions& options);
  ModelInfo describe();

 private:
  Tensor readParameter(const MsTensor& parameter, const std::string& what);

  std::string path_;
  MappedFile file_;
  MsModelProto model_;
  WeightSource weights_;
};

}  // namespace estuary::mindspore_frontend
