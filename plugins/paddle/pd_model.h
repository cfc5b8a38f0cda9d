#pragma once
// A Paddle inference model opened for the frontend: a program (PIR inference.json, or a
// legacy ProgramDesc inference.pdmodel) and its parameters (the .pdiparams beside it, or
// named with --weights). It answers the frontend's questions: the model's facts and its
// core IR graph.
#include <memory>
#include <string>
#include <vector>

#include "estuary/frontend/frontend.h"
#include "estuary/frontend/weights.h"
#include "estuary/ir/graph.h"
#include "estuary/support/mapped_file.h"

namespace estuary::paddle_frontend {

class PirProgram;
class LegacyProgram;

// Whether the first bytes look like a PIR program ({"base_code": ...} or {"program": ...}
// with the keys sorted) or a ProgramDesc (field 1, a BlockDesc, first).
bool looksLikePir(std::string_view head);
bool looksLikeProgramDesc(std::string_view head);

class PdModel {
 public:
  // Opens the program and finds its parameter file. Raises naming the file when the program
  // is unreadable or the parameters are missing.
  PdModel(const ModelInput& input, const FrontendOptions& options);
  ~PdModel();

  std::unique_ptr<Graph> toGraph(const FrontendOptions& options);
  ModelInfo describe();

 private:
  std::string program_path_;
  std::string params_path_;  // empty: the program has no parameters
  bool params_found_beside_ = false;  // not named by the user: must lie beside the program
  MappedFile program_file_;
  WeightSource weights_;
  std::unique_ptr<PirProgram> pir_;
  std::unique_ptr<LegacyProgram> legacy_;
};

}  // namespace estuary::paddle_frontend
