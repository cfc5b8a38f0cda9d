#pragma once
// Model-local functions (ModelProto.functions, e.g. written by onnxscript-based exporters
// before optimization): a node calling one is replaced by the function's body, its formal
// inputs and outputs bound to the call's values, its other values given names of their own
// ("<call>/<name>"), and attributes referring to the call's attributes (ref_attr_name)
// resolved. Calls inside bodies expand too.
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_model.h"

namespace estuary::onnx_frontend {

// A node to translate and the default-domain opset it was written against (a function's
// body may import another version than the model).
struct PlacedNode {
  NodeProto node;
  int64_t opset = 0;
};

class FunctionInliner {
 public:
  // Functions may call functions; deeper calls than this are refused (a call cycle).
  static constexpr int kMaxCallDepth = 32;

  FunctionInliner(const ModelProto& model, std::string path);

  // The function a node calls, or nullptr when it calls an op.
  const FunctionProto* find(const NodeProto& node) const;
  // The default-domain opset of a function's body.
  int64_t opsetOf(const FunctionProto& function, int64_t model_opset) const;

  // `nodes` with every function call replaced by the function's body, recursively.
  std::vector<PlacedNode> expand(const std::vector<NodeProto>& nodes, int64_t opset);

 private:
  void expandInto(const NodeProto& node, int64_t opset, int depth, std::vector<PlacedNode>& out);
  std::string_view keep(std::string name);

  std::string path_;
  std::map<std::pair<std::string_view, std::string_view>, const FunctionProto*> functions_;
  std::deque<std::string> names_;  // storage of the names made for inlined values
  std::map<std::string, int, std::less<>> calls_;  // per call name, to keep prefixes distinct
};

}  // namespace estuary::onnx_frontend
