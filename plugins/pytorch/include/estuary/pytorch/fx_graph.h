#pragma once
// The PyTorch frontend's input: an FX graph (ATen level, after AOT functionalization) as
// Python hands it over. Python only walks the FX objects and writes down what each node
// says; translating it into core IR is the frontend's work (plugins/pytorch).
//
// FX graphs live only in a Python process: the frontend "pytorch" takes one as an in-memory
// model, ModelInput::object(kFxGraphObjectType, &graph, owner, name), through loadModel()
// like every other frontend.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "estuary/ir/dtype.h"
#include "estuary/ir/graph.h"
#include "estuary/ir/tensor.h"

namespace estuary::pytorch {

// One argument of an FX node, as in node.args/node.kwargs: another node, a Python constant
// or a list of those. torch.dtype and other enum-like objects arrive as strings.
struct FxArg {
  enum class Kind { None, Node, Int, Float, Bool, String, List };
  Kind kind = Kind::None;
  size_t node = 0;  // Kind::Node: index into FxGraph::nodes
  int64_t int_value = 0;
  double float_value = 0.0;
  bool bool_value = false;
  std::string string_value;
  std::vector<FxArg> list;

  bool isNone() const { return kind == Kind::None; }
  bool isNode() const { return kind == Kind::Node; }
};

struct FxNode {
  enum class Kind {
    Input,   // a tensor the graph takes at run time
    Weight,  // a parameter or buffer: a constant of the graph, wrapping its memory
    SymInt,  // a symbolic size: implied by the tensor inputs' shapes, or given at run time
    Call,    // call_function
  };
  Kind kind = Kind::Call;
  std::string name;  // the FX node name
  // Input and Weight: the tensor's dtype and sizes; a size is "3", or a symbol expression
  // ("s27", "2*s27") for dynamic dims. SymInt: sizes holds the one expression it stands for.
  DType dtype = DType::Undefined;
  std::vector<std::string> sizes;
  // SymInt: the caller passes its value at run time, as a 0-d i64 input (a size no tensor
  // input's dims give: one computed in another region, or a symbol Dynamo passes alone).
  bool runtime = false;
  Tensor weight;  // Kind::Weight
  // Call: the target as str(node.target) prints it ("aten.convolution.default",
  // "operator.getitem"), its positional arguments and keyword arguments, and the dtypes of
  // the tensors it returns (from the node's fake value), in order.
  std::string target;
  std::vector<FxArg> args;
  // The schema's names of the positional arguments (op overloads have a schema; Python
  // operators get "a", "b"): how translators and conversion extensions name arguments.
  std::vector<std::string> arg_names;
  std::vector<std::pair<std::string, FxArg>> kwargs;
  std::vector<DType> result_dtypes;
};

struct FxGraph {
  std::string name;
  std::vector<FxNode> nodes;  // in FX order: placeholders first
  std::vector<FxArg> outputs; // node references
};

// The object type of an FxGraph given as a ModelInput.
inline constexpr const char* kFxGraphObjectType = "pytorch.fx_graph";

}  // namespace estuary::pytorch
