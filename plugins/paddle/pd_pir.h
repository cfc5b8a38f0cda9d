#pragma once
// Paddle 3's PIR program (inference.json) and its node view.
//
// The JSON (Paddle's serialize_deserialize/schema.h) nests program -> regions -> blocks ->
// ops; an op is {"#": "<dialect id>.<name>", "I": operands, "O": results, "A": attributes,
// "regions": ...} with dialect ids 0 builtin, 1 pd_op, 2 cf. Values are numbered across the
// whole program (results from 1 up, block arguments from -1 down, 0 an absent operand), so
// ops in an if or while region read enclosing values by number: the region's decoder is a
// subgraph that sees the enclosing graph. Values are named "%<id>", except the inputs
// (pd_op.data), which take their InputSpec names.
//
// The view hides what only carries values: builtin.parameter ops become the graph's weights
// (read from the .pdiparams), pd_op.data its inputs, pd_op.fetch its outputs (in `col`
// order), a builtin.combine's operands are read in its place, and a builtin.split's results
// are the results of the op whose vector it splits.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "estuary/frontend/decoder.h"
#include "estuary/frontend/json.h"
#include "estuary/ir/tensor.h"
#include "pd_params.h"

namespace estuary::paddle_frontend {

struct PirBlock;

struct PirOp {
  std::string_view dialect;  // "pd_op", "builtin", "cf"
  std::string_view name;     // "conv2d"
  std::vector<int64_t> operands;
  std::vector<std::pair<int64_t, const json::Value*>> results;  // id, type ("TT")
  std::vector<std::pair<std::string_view, const json::Value*>> attributes;  // name, attribute ("AT")
  std::vector<PirBlock> regions;  // one block per region
};

struct PirBlock {
  std::vector<std::pair<int64_t, const json::Value*>> args;
  std::vector<PirOp> ops;
};

struct PirParameter {
  int64_t id;
  std::string name;
  const json::Value* type;
  bool persistable;
};

// A parsed program: the document and what the view needs of it.
class PirProgram {
 public:
  // Parses `text` (kept alive by the caller); `path` names it in errors.
  PirProgram(std::string_view text, std::string path);

  const std::string& path() const { return path_; }
  int64_t version() const { return version_; }
  const PirBlock& main() const { return main_; }
  const std::vector<PirParameter>& parameters() const { return parameters_; }
  // The persistable parameters as the .pdiparams must hold them.
  std::vector<ParameterSpec> parameterSpecs() const;

 private:
  void readBlock(const json::Value& json, PirBlock& block, int depth);
  PirOp readOp(const json::Value& json, int depth);

  std::string path_;
  json::Document document_;
  int64_t version_ = 0;
  PirBlock main_;
  std::vector<PirParameter> parameters_;
};

// A value type ("TT") as a tensor type: dims of -1 become fresh symbols named from `hint`.
// Raises naming `where` for a type Estuary has no tensor for.
TensorType pirTensorType(const json::Value& type, SymbolTable& symbols, const std::string& hint,
                         const std::string& where);

// The main block as a graph: its inputs, weights (`tensors` by parameter name), nodes and
// outputs; the fetch names name the outputs.
std::shared_ptr<GraphDecoder> pirMainGraph(const PirProgram& program, std::map<std::string, Tensor> tensors,
                                           std::string name);
// The names of the main graph's outputs (the fetch ops' names, in col order).
std::vector<std::string> pirOutputNames(const PirProgram& program);

}  // namespace estuary::paddle_frontend
