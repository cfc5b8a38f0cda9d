#pragma once
// Paddle's legacy program (a ProgramDesc .pdmodel) and its node view.
//
// Block 0 is the program: feed ops give the inputs (in `col` order, each a variable whose
// VarDesc holds its type), fetch ops the outputs, persistable variables the parameters. An
// op names its inputs and outputs by slot ("Input", "Filter" -> "Output"), each slot listing
// variables; the view lists them slot by slot and answers which position a slot starts at.
// Variables are named by their names, which are unique within a program; sub-blocks (while,
// conditional_block) read their parents' variables by name.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/frontend/decoder.h"
#include "estuary/support/mapped_file.h"
#include "pd_messages.h"
#include "pd_params.h"

namespace estuary::paddle_frontend {

class LegacyProgram {
 public:
  LegacyProgram(const MappedFile& file, std::string path);

  const std::string& path() const { return path_; }
  const ProgramDesc& program() const { return program_; }
  // The persistable tensors the .pdiparams must hold.
  std::vector<ParameterSpec> parameterSpecs() const;
  // Block 0 as a graph, its parameters `tensors` by name.
  std::shared_ptr<GraphDecoder> mainGraph(std::map<std::string, Tensor> tensors, std::string name) const;
  // The fetched variables' names, in col order.
  std::vector<std::string> outputNames() const;

 private:
  std::string path_;
  ProgramDesc program_;
};

// The position of a legacy op's output slot `slot` (its first variable), or nullopt.
std::optional<size_t> legacyOutputIndex(const NodeDecoder& node, std::string_view slot);

}  // namespace estuary::paddle_frontend
