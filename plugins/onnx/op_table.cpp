// The translators of the ONNX ops of the default domain, one small function per op whose
// meaning changed within opsets 11..28, and a plain copy for the rest (core ops follow the
// newest opset). A translator sees the node's opset and adapts older forms to the newest.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "estuary/support/error.h"
#include "node_translation.h"

namespace estuary::onnx_frontend {
namespace {

// How many outputs the IR node needs: unused optional outputs at the end are left off.
size_t usedOutputs(const NodeTranslation& node) {
  size_t count = node.numOutputs();
  while (count > 0 && !node.hasOutput(count - 1)) --count;
  return count;
}

// The op as the newest opset defines it: inputs, outputs and attributes carried over.
void translateAsIs(NodeTranslation& node) {
  Node* ir = node.emit(node.opType(), node.inputs(), usedOutputs(node));
  node.copyAttributes(ir);
  node.setOutputs(ir);
}

// An INTS attribute that later opsets turned into an i64 input (Reduce* axes, Squeeze and
// Unsqueeze axes, Split's split): the attribute becomes a constant input at `position`.
void translateWithAttributeAsInput(NodeTranslation& node, std::string_view attribute, size_t position) {
  std::vector<Value*> inputs = node.inputs();
  inputs.resize(std::max(inputs.size(), position), nullptr);
  if (std::optional<std::vector<int64_t>> values = node.intsAttr(attribute)) {
    inputs.resize(position + 1, nullptr);
    inputs[position] = node.constantInts(*values);
  }
  while (!inputs.empty() && inputs.back() == nullptr) inputs.pop_back();
  Node* ir = node.emit(node.opType(), inputs, usedOutputs(node));
  node.copyAttributes(ir, {attribute});
  node.setOutputs(ir);
}

// ReduceSum took axes as an input from opset 13, the other reductions from opset 18.
template <int64_t kAxesInputSince>
void translateReduce(NodeTranslation& node) {
  if (node.opset() >= kAxesInputSince) {
    translateAsIs(node);
  } else {
    translateWithAttributeAsInput(node, "axes", 1);
  }
}

// Squeeze and Unsqueeze took axes as an input from opset 13.
void translateSqueeze(NodeTranslation& node) {
  if (node.opset() >= 13) {
    translateAsIs(node);
  } else {
    translateWithAttributeAsInput(node, "axes", 1);
  }
}

// Split: `split` became an input at opset 13; from opset 18 an equal split states its
// number of outputs (num_outputs), before that the node's output count said it.
void translateSplit(NodeTranslation& node) {
  std::vector<Value*> inputs = node.inputs();
  if (node.opset() < 13) {
    if (std::optional<std::vector<int64_t>> split = node.intsAttr("split")) {
      inputs.resize(1);
      inputs.push_back(node.constantInts(*split));
    }
  }
  Node* ir = node.emit("Split", inputs, node.numOutputs());
  node.copyAttributes(ir, {"split"});
  if (inputs.size() < 2 && !ir->hasAttr("num_outputs")) {
    ir->setAttr("num_outputs", static_cast<int64_t>(node.numOutputs()));
  }
  node.setOutputs(ir);
}

// Softmax, LogSoftmax and Hardmax before opset 13 work on the input coerced to 2-D at `axis`
// (default 1): [d0..d(axis-1)] x [d(axis)..]. That is Flatten, the op on the last axis, and
// a Reshape back to the input's shape.
void translateSoftmaxFamily(NodeTranslation& node) {
  if (node.opset() >= 13) {
    translateAsIs(node);
    return;
  }
  Value* x = node.input(0);
  int64_t axis = node.intAttr("axis", 1);
  const Shape& x_shape = x->shape();
  if (x_shape.isRanked() && (axis == -1 || axis == static_cast<int64_t>(x_shape.rank()) - 1)) {
    // Coerced at the last axis, the 2-D form is the op along that axis.
    Node* op = node.emit(node.opType(), {x});
    op->setAttr("axis", axis);
    node.setOutputs(op);
    return;
  }
  Node* flat = node.emit("Flatten", {x});
  flat->setAttr("axis", axis);
  Node* op = node.emit(node.opType(), {flat->output()});
  op->setAttr("axis", int64_t{1});
  Node* shape = node.emit("Shape", {x});
  Node* back = node.emit("Reshape", {op->output(), shape->output()});
  node.setOutputs(back);
}

// BatchNormalization: before opset 14 there is no training_mode, and outputs 1..4 (running
// and saved statistics) exist in training only; Estuary translates inference.
void translateBatchNormalization(NodeTranslation& node) {
  if (node.opset() >= 14) {
    translateAsIs(node);
    return;
  }
  for (size_t i = 1; i < node.numOutputs(); ++i) {
    if (node.hasOutput(i)) {
      node.fail("output ", i, " '", node.proto().outputs[i],
                "' holds training statistics; Estuary translates inference graphs only (export in eval mode)");
    }
  }
  Node* ir = node.emit("BatchNormalization", node.inputs());
  node.copyAttributes(ir, {"spatial"});
  node.setOutputs(ir);
}

// Dropout: before opset 12 the ratio is an attribute.
void translateDropout(NodeTranslation& node) {
  if (node.opset() >= 12) {
    translateAsIs(node);
    return;
  }
  std::vector<Value*> inputs = {node.input(0)};
  if (const AttributeProto* ratio = node.attr("ratio")) {
    inputs.push_back(node.constant(Tensor::scalar<float>(DType::F32, node.floatAttr("ratio", ratio->f))));
  }
  Node* ir = node.emit("Dropout", inputs, usedOutputs(node));
  node.copyAttributes(ir, {"ratio"});
  node.setOutputs(ir);
}

// GroupNormalization 18 scales and shifts per group ([G] scale and bias); 21 per channel ([C]).
// Each group's value repeats over its C/G channels: [G] -> [G,1] -> [G,C/G] -> [C].
void translateGroupNormalization(NodeTranslation& node) {
  if (node.opset() >= 21) {
    translateAsIs(node);
    return;
  }
  int64_t groups = node.intAttr("num_groups", 0);
  if (groups <= 0) node.fail("attribute 'num_groups' must be positive, found ", groups);
  Value* x = node.input(0);
  Node* channels = node.emit("Shape", {x});
  channels->setAttr("start", int64_t{1});
  channels->setAttr("end", int64_t{2});
  Node* per_group = node.emit("Div", {channels->output(), node.constantInts({groups})});
  Node* expanded_shape = node.emit("Concat", {node.constantInts({groups}), per_group->output()});
  expanded_shape->setAttr("axis", int64_t{0});
  auto perChannel = [&](Value* value) {
    Node* column = node.emit("Unsqueeze", {value, node.constantInts({1})});
    Node* expanded = node.emit("Expand", {column->output(), expanded_shape->output()});
    return node.emit("Reshape", {expanded->output(), node.constantInts({-1})})->output();
  };
  Node* ir = node.emit("GroupNormalization", {x, perChannel(node.input(1)), perChannel(node.input(2))});
  node.copyAttributes(ir);
  node.setOutputs(ir);
}

// Resize: opsets 11 and 13 fill the unused one of scales/sizes (and roi) with an empty
// tensor where later ones leave the input out; an empty constant is an absent input.
void translateResize(NodeTranslation& node) {
  std::string mode = node.stringAttr("coordinate_transformation_mode", "half_pixel");
  if (mode == "tf_half_pixel_for_nn") {
    node.fail("coordinate_transformation_mode 'tf_half_pixel_for_nn' (opset 11 only) is not supported");
  }
  std::vector<Value*> inputs = node.inputs();
  for (size_t i = 1; i < inputs.size(); ++i) {
    const Tensor* tensor = node.constantInput(i);
    if (tensor && tensor->numElements() == 0) inputs[i] = nullptr;
  }
  while (!inputs.empty() && inputs.back() == nullptr) inputs.pop_back();
  Node* ir = node.emit("Resize", inputs);
  node.copyAttributes(ir);
  node.setOutputs(ir);
}

// Constant: the value_* forms of opset 12+ become the one `value` tensor, which is what
// passes and backends read.
void translateConstant(NodeTranslation& node) {
  if (node.proto().attributes.size() != 1) {
    node.fail("has ", node.proto().attributes.size(), " attributes, a Constant has exactly one value attribute");
  }
  const AttributeProto& attr = node.proto().attributes.front();
  Node* ir = node.emit("Constant", {});
  if (attr.name == "value_float") {
    ir->setAttr("value", Tensor::scalar<float>(DType::F32, node.floatAttr("value_float", 0)));
  } else if (attr.name == "value_floats") {
    if (attr.type != OnnxAttrType::Floats) node.fail("attribute 'value_floats' is ", onnxAttrTypeName(attr.type));
    ir->setAttr("value", Tensor::fromVector<float>(DType::F32, {static_cast<int64_t>(attr.floats.size())}, attr.floats));
  } else if (attr.name == "value_int") {
    ir->setAttr("value", Tensor::scalar<int64_t>(DType::I64, node.intAttr("value_int", 0)));
  } else if (attr.name == "value_ints") {
    std::vector<int64_t> values = *node.intsAttr("value_ints");
    ir->setAttr("value", Tensor::fromVector<int64_t>(DType::I64, {static_cast<int64_t>(values.size())}, values));
  } else if (attr.name == "value") {
    node.copyAttributes(ir);
  } else {
    node.fail("attribute '", attr.name, "' is not supported (Estuary has no string or sparse tensors)");
  }
  node.setOutputs(ir);
}

struct Entry {
  const char* op_type;
  OpTranslator translator;
};

const Entry kTable[] = {
    // Element-wise
    {"Abs", {1, translateAsIs}}, {"Acos", {7, translateAsIs}}, {"Add", {7, translateAsIs}},
    {"And", {7, translateAsIs}}, {"Asin", {7, translateAsIs}}, {"Atan", {7, translateAsIs}},
    {"Cast", {6, translateAsIs}}, {"CastLike", {15, translateAsIs}}, {"Ceil", {6, translateAsIs}},
    {"Celu", {12, translateAsIs}}, {"Clip", {11, translateAsIs}}, {"Cos", {7, translateAsIs}},
    {"Cosh", {9, translateAsIs}}, {"Div", {7, translateAsIs}}, {"Elu", {6, translateAsIs}},
    {"Equal", {11, translateAsIs}}, {"Erf", {9, translateAsIs}}, {"Exp", {6, translateAsIs}},
    {"Floor", {6, translateAsIs}}, {"Gelu", {20, translateAsIs}}, {"Greater", {9, translateAsIs}},
    {"GreaterOrEqual", {12, translateAsIs}}, {"HardSigmoid", {6, translateAsIs}},
    {"HardSwish", {14, translateAsIs}}, {"Identity", {1, translateAsIs}}, {"IsInf", {10, translateAsIs}},
    {"IsNaN", {9, translateAsIs}}, {"LeakyRelu", {6, translateAsIs}}, {"Less", {9, translateAsIs}},
    {"LessOrEqual", {12, translateAsIs}}, {"Log", {6, translateAsIs}}, {"Max", {8, translateAsIs}},
    {"Mean", {8, translateAsIs}}, {"Min", {8, translateAsIs}}, {"Mish", {18, translateAsIs}},
    {"Mod", {10, translateAsIs}}, {"Mul", {7, translateAsIs}}, {"Neg", {6, translateAsIs}},
    {"Not", {1, translateAsIs}}, {"Or", {7, translateAsIs}}, {"PRelu", {9, translateAsIs}},
    {"Pow", {7, translateAsIs}}, {"Reciprocal", {6, translateAsIs}}, {"Relu", {6, translateAsIs}},
    {"Round", {11, translateAsIs}}, {"Selu", {6, translateAsIs}}, {"Sigmoid", {6, translateAsIs}},
    {"Sign", {9, translateAsIs}}, {"Sin", {7, translateAsIs}}, {"Sinh", {9, translateAsIs}},
    {"Softplus", {1, translateAsIs}}, {"Softsign", {1, translateAsIs}}, {"Sqrt", {6, translateAsIs}},
    {"Sub", {7, translateAsIs}}, {"Sum", {8, translateAsIs}}, {"SwiGLU", {28, translateAsIs}},
    {"Swish", {24, translateAsIs}}, {"Tan", {7, translateAsIs}}, {"Tanh", {6, translateAsIs}},
    {"ThresholdedRelu", {10, translateAsIs}}, {"Where", {9, translateAsIs}}, {"Xor", {7, translateAsIs}},
    // Generators
    {"Constant", {1, translateConstant}}, {"ConstantOfShape", {9, translateAsIs}},
    {"EyeLike", {9, translateAsIs}}, {"Range", {11, translateAsIs}},
    // Shapes and indexing
    {"Concat", {4, translateAsIs}}, {"CumSum", {11, translateAsIs}}, {"DepthToSpace", {1, translateAsIs}},
    {"Expand", {8, translateAsIs}}, {"Flatten", {1, translateAsIs}}, {"Gather", {1, translateAsIs}},
    {"GatherElements", {11, translateAsIs}}, {"GatherND", {11, translateAsIs}},
    {"NonZero", {9, translateAsIs}}, {"OneHot", {9, translateAsIs}}, {"Pad", {11, translateAsIs}},
    {"Reshape", {5, translateAsIs}}, {"ScatterElements", {11, translateAsIs}},
    {"ScatterND", {11, translateAsIs}}, {"Shape", {1, translateAsIs}}, {"Size", {1, translateAsIs}},
    {"Slice", {10, translateAsIs}}, {"SpaceToDepth", {1, translateAsIs}}, {"Split", {2, translateSplit}},
    {"Squeeze", {1, translateSqueeze}}, {"Tile", {6, translateAsIs}}, {"TopK", {10, translateAsIs}},
    {"Transpose", {1, translateAsIs}}, {"Trilu", {14, translateAsIs}}, {"Unsqueeze", {1, translateSqueeze}},
    // Neural network
    {"Attention", {23, translateAsIs}}, {"AveragePool", {11, translateAsIs}},
    {"BatchNormalization", {9, translateBatchNormalization}}, {"Conv", {11, translateAsIs}},
    {"ConvTranspose", {11, translateAsIs}}, {"Dropout", {10, translateDropout}}, {"Einsum", {12, translateAsIs}},
    {"Gemm", {11, translateAsIs}}, {"GlobalAveragePool", {1, translateAsIs}},
    {"GlobalMaxPool", {1, translateAsIs}}, {"GroupNormalization", {18, translateGroupNormalization}},
    {"Hardmax", {11, translateSoftmaxFamily}}, {"InstanceNormalization", {6, translateAsIs}},
    {"LayerNormalization", {17, translateAsIs}}, {"LogSoftmax", {11, translateSoftmaxFamily}},
    {"MatMul", {9, translateAsIs}}, {"MaxPool", {11, translateAsIs}},
    {"RMSNormalization", {23, translateAsIs}}, {"Resize", {11, translateResize}},
    {"RotaryEmbedding", {23, translateAsIs}}, {"Softmax", {11, translateSoftmaxFamily}},
    // Reductions
    {"ArgMax", {11, translateAsIs}}, {"ArgMin", {11, translateAsIs}},
    {"ReduceL1", {11, translateReduce<18>}}, {"ReduceL2", {11, translateReduce<18>}},
    {"ReduceLogSum", {11, translateReduce<18>}}, {"ReduceLogSumExp", {11, translateReduce<18>}},
    {"ReduceMax", {11, translateReduce<18>}}, {"ReduceMean", {11, translateReduce<18>}},
    {"ReduceMin", {11, translateReduce<18>}}, {"ReduceProd", {11, translateReduce<18>}},
    {"ReduceSum", {11, translateReduce<13>}}, {"ReduceSumSquare", {11, translateReduce<18>}},
    // Control flow
    {"If", {11, translateAsIs}}, {"Loop", {11, translateAsIs}},
};

}  // namespace

const OpTranslator* findTranslator(std::string_view op_type) {
  static const std::unordered_map<std::string_view, const OpTranslator*> table = [] {
    std::unordered_map<std::string_view, const OpTranslator*> map;
    for (const Entry& entry : kTable) map.emplace(entry.op_type, &entry.translator);
    return map;
  }();
  auto found = table.find(op_type);
  return found == table.end() ? nullptr : found->second;
}

}  // namespace estuary::onnx_frontend
