// The translators of the ONNX ops of the default domain, one small function per op whose
// meaning changed within opsets 11..28, and a plain copy for the rest (core ops follow the
// newest opset). A translator sees the node's opset and adapts older forms to the newest.
// Each entry's opset is the oldest form it takes (see onnxTranslators()): the op's version
// in force at opset 11, or an older one where the op meant the same (only gaining types,
// negative axes or optional parts since) or where its translator adapts the older form.
#include <algorithm>
#include <initializer_list>
#include <string>

#include "estuary/ops/schema.h"
#include "estuary/support/error.h"
#include "onnx_model.h"
#include "onnx_translators.h"
#include "tensor_data.h"

namespace estuary::onnx_frontend {

NodeContext::Attributes onnxAttributes(NodeContext& node, std::string_view op_type,
                                       const std::vector<std::string_view>& skip) {
  const OpSchema* schema = OpRegistry::global().find(op_type);
  if (!schema) node.fail("no schema for ", op_type);
  NodeContext::Attributes attributes;
  for (std::string_view name : node.decoder().attributeNames()) {
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    const AttrSpec* spec = schema->findAttr(name);
    if (!spec) node.fail("attribute '", name, "' is not an attribute of ", node.opType(), " in the newest opset");
    AttrValue value = *node.attribute(name);
    // ONNX attributes are typed: each must be of the type its schema declares.
    auto require = [&](auto alternative, const char* expected) {
      using Alternative = decltype(alternative);
      if (!std::holds_alternative<Alternative>(value.data)) {
        node.fail("attribute '", name, "' is ", value.type_name, ", expected ", expected);
      }
      return std::get<Alternative>(std::move(value.data));
    };
    std::string key(name);
    switch (spec->kind) {
      case AttrKind::Int: attributes.emplace_back(key, require(int64_t{}, "INT")); break;
      case AttrKind::Float: attributes.emplace_back(key, require(double{}, "FLOAT")); break;
      case AttrKind::String: attributes.emplace_back(key, require(std::string{}, "STRING")); break;
      case AttrKind::Type: {
        int64_t code = require(int64_t{}, "INT");
        std::optional<DType> dtype = dtypeFromOnnx(static_cast<int32_t>(code));
        if (!dtype) {
          node.fail("attribute '", name, "' is element type ", onnxDataTypeName(static_cast<int32_t>(code)),
                    ", which Estuary does not support");
        }
        attributes.emplace_back(key, *dtype);
        break;
      }
      case AttrKind::Tensor: attributes.emplace_back(key, require(Tensor{}, "TENSOR")); break;
      case AttrKind::Graph:
        require(AttrValue::GraphRef{}, "GRAPH");
        attributes.emplace_back(key, node.subgraph(name));
        break;
      case AttrKind::Ints: attributes.emplace_back(key, require(std::vector<int64_t>{}, "INTS")); break;
      case AttrKind::Floats: attributes.emplace_back(key, require(std::vector<double>{}, "FLOATS")); break;
      case AttrKind::Strings: attributes.emplace_back(key, require(std::vector<std::string>{}, "STRINGS")); break;
    }
  }
  return attributes;
}

namespace {

using Results = std::vector<Value*>;

// A 1-D f32 tensor of `values`.
Tensor floatVector(const std::vector<double>& values) {
  std::vector<float> floats(values.begin(), values.end());
  return Tensor::fromVector<float>(DType::F32, {static_cast<int64_t>(floats.size())}, floats);
}

// The op as the newest opset defines it: inputs, outputs and attributes carried over.
Results translateAsIs(NodeContext& node) {
  return node.emit(node.opType(), node.inputs(), onnxAttributes(node, node.opType()), node.usedOutputs())->outputs();
}

// If and Loop: every output stays, named or not, since their count must match what the
// subgraphs return.
Results translateControlFlow(NodeContext& node) {
  return node.emit(node.opType(), node.inputs(), onnxAttributes(node, node.opType()), node.numOutputs())->outputs();
}

// An INTS attribute that later opsets turned into an i64 input (Reduce* axes, Squeeze and
// Unsqueeze axes): the attribute becomes a constant input at `position`.
Results translateWithAttributeAsInput(NodeContext& node, std::string_view attribute, size_t position) {
  std::vector<Value*> inputs = node.inputs();
  inputs.resize(std::max(inputs.size(), position), nullptr);
  if (std::optional<std::vector<int64_t>> values = node.optionalAttr<std::vector<int64_t>>(attribute)) {
    inputs.resize(position + 1, nullptr);
    inputs[position] = node.constantInts(*values);
  }
  while (!inputs.empty() && inputs.back() == nullptr) inputs.pop_back();
  return node.emit(node.opType(), inputs, onnxAttributes(node, node.opType(), {attribute}), node.usedOutputs())
      ->outputs();
}

// ReduceSum took axes as an input from opset 13, the other reductions from opset 18.
template <int64_t kAxesInputSince>
Results translateReduce(NodeContext& node) {
  if (node.version() >= kAxesInputSince) return translateAsIs(node);
  return translateWithAttributeAsInput(node, "axes", 1);
}

// Squeeze and Unsqueeze took axes as an input from opset 13.
Results translateSqueeze(NodeContext& node) {
  if (node.version() >= 13) return translateAsIs(node);
  return translateWithAttributeAsInput(node, "axes", 1);
}

// Split: `split` became an input at opset 13; from opset 18 an equal split states its
// number of outputs (num_outputs), before that the node's output count said it.
Results translateSplit(NodeContext& node) {
  std::vector<Value*> inputs = node.inputs();
  if (node.version() < 13) {
    if (std::optional<std::vector<int64_t>> split = node.optionalAttr<std::vector<int64_t>>("split")) {
      inputs.resize(1);
      inputs.push_back(node.constantInts(*split));
    }
  }
  NodeContext::Attributes attributes = onnxAttributes(node, "Split", {"split"});
  bool states_count = std::any_of(attributes.begin(), attributes.end(),
                                  [](const auto& entry) { return entry.first == "num_outputs"; });
  if (inputs.size() < 2 && !states_count) {
    attributes.emplace_back("num_outputs", static_cast<int64_t>(node.numOutputs()));
  }
  return node.emit("Split", inputs, std::move(attributes), node.numOutputs())->outputs();
}

// Softmax, LogSoftmax and Hardmax before opset 13 work on the input coerced to 2-D at `axis`
// (default 1): [d0..d(axis-1)] x [d(axis)..]. That is Flatten, the op on the last axis, and
// a Reshape back to the input's shape.
Results translateSoftmaxFamily(NodeContext& node) {
  if (node.version() >= 13) return translateAsIs(node);
  Value* x = node.requiredInput(0);
  int64_t axis = node.attr<int64_t>("axis", 1);
  const Shape& x_shape = x->shape();
  if (x_shape.isRanked() && (axis == -1 || axis == static_cast<int64_t>(x_shape.rank()) - 1)) {
    // Coerced at the last axis, the 2-D form is the op along that axis.
    return {node.emitValue(node.opType(), {x}, {{"axis", axis}})};
  }
  Value* flat = node.emitValue("Flatten", {x}, {{"axis", axis}});
  Value* op = node.emitValue(node.opType(), {flat}, {{"axis", int64_t{1}}});
  Value* shape = node.emitValue("Shape", {x});
  return {node.emitValue("Reshape", {op, shape})};
}

// BatchNormalization: before opset 14 there is no training_mode, and outputs 1..4 (running
// and saved statistics) exist in training only; Estuary translates inference.
Results translateBatchNormalization(NodeContext& node) {
  if (node.version() >= 14) return translateAsIs(node);
  for (size_t i = 1; i < node.numOutputs(); ++i) {
    if (node.hasOutput(i)) {
      node.fail("output ", i, " '", node.decoder().outputName(i),
                "' holds training statistics; Estuary translates inference graphs only (export in eval mode)");
    }
  }
  return {node.emitValue("BatchNormalization", node.inputs(), onnxAttributes(node, "BatchNormalization", {"spatial"}))};
}

// Dropout: before opset 12 the ratio is an attribute.
Results translateDropout(NodeContext& node) {
  if (node.version() >= 12) return translateAsIs(node);
  std::vector<Value*> inputs = {node.requiredInput(0)};
  if (node.hasAttr("ratio")) {
    inputs.push_back(node.constant(Tensor::scalar<float>(DType::F32, static_cast<float>(node.attr<double>("ratio")))));
  }
  return node.emit("Dropout", inputs, onnxAttributes(node, "Dropout", {"ratio"}), node.usedOutputs())->outputs();
}

// GroupNormalization 18 scales and shifts per group ([G] scale and bias); 21 per channel ([C]).
// Each group's value repeats over its C/G channels: [G] -> [G,1] -> [G,C/G] -> [C].
Results translateGroupNormalization(NodeContext& node) {
  if (node.version() >= 21) return translateAsIs(node);
  int64_t groups = node.attr<int64_t>("num_groups", 0);
  if (groups <= 0) node.fail("attribute 'num_groups' must be positive, found ", groups);
  Value* x = node.requiredInput(0);
  Value* channels = node.emitValue("Shape", {x}, {{"start", int64_t{1}}, {"end", int64_t{2}}});
  Value* per_group = node.emitValue("Div", {channels, node.constantInts({groups})});
  Value* expanded_shape = node.emitValue("Concat", {node.constantInts({groups}), per_group}, {{"axis", int64_t{0}}});
  auto perChannel = [&](Value* value) {
    Value* column = node.emitValue("Unsqueeze", {value, node.constantInts({1})});
    Value* expanded = node.emitValue("Expand", {column, expanded_shape});
    return node.emitValue("Reshape", {expanded, node.constantInts({-1})});
  };
  Value* scale = perChannel(node.requiredInput(1));
  Value* bias = perChannel(node.requiredInput(2));
  return {node.emitValue("GroupNormalization", {x, scale, bias}, onnxAttributes(node, "GroupNormalization"))};
}

Results translateUpsample(NodeContext& node);

// Resize: opset 10's Resize is Upsample renamed (asymmetric coordinates, scales only).
// Opsets 11 and 13 fill the unused one of scales/sizes (and roi) with an empty
// tensor where later ones leave the input out; an empty constant is an absent input.
Results translateResize(NodeContext& node) {
  if (node.version() < 11) return translateUpsample(node);
  std::string mode = node.attr<std::string>("coordinate_transformation_mode", "half_pixel");
  if (mode == "tf_half_pixel_for_nn") {
    node.fail("coordinate_transformation_mode 'tf_half_pixel_for_nn' (opset 11 only) is not supported");
  }
  std::vector<Value*> inputs = node.inputs();
  for (size_t i = 1; i < inputs.size(); ++i) {
    const Tensor* tensor = node.constantInput(i);
    if (tensor && tensor->numElements() == 0) inputs[i] = nullptr;
  }
  while (!inputs.empty() && inputs.back() == nullptr) inputs.pop_back();
  return {node.emitValue("Resize", inputs, onnxAttributes(node, "Resize"))};
}

// Upsample (opsets 7-9, deprecated at 10) and Resize-10 are Resize with the asymmetric
// coordinate mapping: output index i reads input index i / scale, rounded down for
// "nearest". Opset 7 gives the scales as an attribute, 9 and 10 as an input.
Results translateUpsample(NodeContext& node) {
  Value* scales = node.input(1);
  if (node.version() < 9) {
    if (!node.hasAttr("scales")) node.fail("attribute 'scales' (FLOATS) is required before opset 9");
    scales = node.constant(floatVector(node.attr<std::vector<double>>("scales")));
  }
  if (!scales) node.fail("input 1 'scales' is required");
  std::string mode = node.attr<std::string>("mode", "nearest");
  if (mode != "nearest" && mode != "linear") node.fail("mode '", mode, "' is not nearest or linear");
  NodeContext::Attributes attributes = {{"mode", mode}, {"coordinate_transformation_mode", "asymmetric"}};
  if (mode == "nearest") attributes.emplace_back("nearest_mode", "floor");
  return {node.emitValue("Resize", {node.requiredInput(0), nullptr, scales}, std::move(attributes))};
}

// Attributes that opsets before `since` gave where later ones take inputs (Slice's starts,
// ends and axes before 10; TopK's k before 10): each becomes a constant i64 input at its
// position, the others are taken as they are.
Results translateWithAttributesAsInputs(NodeContext& node, int64_t since,
                                        std::initializer_list<std::pair<std::string_view, size_t>> moved) {
  if (node.version() >= since) return translateAsIs(node);
  std::vector<Value*> inputs = node.inputs();
  for (const auto& [attribute, position] : moved) {
    std::optional<AttrValue> value = node.attribute(attribute);
    if (!value) continue;
    inputs.resize(std::max(inputs.size(), position + 1), nullptr);
    // A list (Slice's starts) or one integer (TopK's k), as a 1-D input either way.
    const auto* one = std::get_if<int64_t>(&value->data);
    inputs[position] = node.constantInts(one ? std::vector<int64_t>{*one} : node.attr<std::vector<int64_t>>(attribute));
  }
  while (!inputs.empty() && inputs.back() == nullptr) inputs.pop_back();
  std::vector<std::string_view> skip;
  for (const auto& entry : moved) skip.push_back(entry.first);
  return node.emit(node.opType(), inputs, onnxAttributes(node, node.opType(), skip), node.usedOutputs())->outputs();
}

Results translateSlice(NodeContext& node) {
  return translateWithAttributesAsInputs(node, 10, {{"starts", 1}, {"ends", 2}, {"axes", 3}});
}

Results translateTopK(NodeContext& node) { return translateWithAttributesAsInputs(node, 10, {{"k", 1}}); }

// A scalar of the input's element type (Clip's bounds, Pad's value before opset 11 were f32
// attributes of an op on float tensors).
Value* floatConstantLike(NodeContext& node, double value, DType dtype) {
  switch (dtype) {
    case DType::F64: return node.constant(Tensor::scalar<double>(DType::F64, static_cast<float>(value)));
    case DType::Undefined:  // not inferred: the op took floats, f32 by far the most
    case DType::F32: return node.constant(Tensor::scalar<float>(DType::F32, static_cast<float>(value)));
    default:
      return node.emitValue("Cast", {node.constant(Tensor::scalar<float>(DType::F32, static_cast<float>(value)))},
                            {{"to", dtype}});
  }
}

// Clip before opset 11: min and max are attributes (absent: no bound).
Results translateClip(NodeContext& node) {
  if (node.version() >= 11) return translateAsIs(node);
  Value* x = node.requiredInput(0);
  std::vector<Value*> inputs = {x, nullptr, nullptr};
  if (node.hasAttr("min")) inputs[1] = floatConstantLike(node, node.attr<double>("min"), x->dtype());
  if (node.hasAttr("max")) inputs[2] = floatConstantLike(node, node.attr<double>("max"), x->dtype());
  while (inputs.back() == nullptr) inputs.pop_back();
  return {node.emitValue("Clip", inputs)};
}

// Pad before opset 11: pads and the constant value are attributes.
Results translatePad(NodeContext& node) {
  if (node.version() >= 11) return translateAsIs(node);
  Value* x = node.requiredInput(0);
  if (!node.hasAttr("pads")) node.fail("attribute 'pads' is required before opset 11");
  std::vector<Value*> inputs = {x, node.constantInts(node.attr<std::vector<int64_t>>("pads"))};
  if (node.hasAttr("value")) inputs.push_back(floatConstantLike(node, node.attr<double>("value"), x->dtype()));
  return {node.emitValue("Pad", inputs, onnxAttributes(node, "Pad", {"pads", "value"}))};
}

// Constant: the value_* forms of opset 12+ become the one `value` tensor, which is what
// passes and backends read.
Results translateConstant(NodeContext& node) {
  std::vector<std::string_view> names = node.decoder().attributeNames();
  if (names.size() != 1) {
    node.fail("has ", names.size(), " attributes, a Constant has exactly one value attribute");
  }
  std::string_view name = names.front();
  Tensor value;
  if (name == "value_float") {
    value = Tensor::scalar<float>(DType::F32, static_cast<float>(node.attr<double>(name)));
  } else if (name == "value_floats") {
    value = floatVector(node.attr<std::vector<double>>(name));
  } else if (name == "value_int") {
    value = Tensor::scalar<int64_t>(DType::I64, node.attr<int64_t>(name));
  } else if (name == "value_ints") {
    std::vector<int64_t> values = node.attr<std::vector<int64_t>>(name);
    value = Tensor::fromVector<int64_t>(DType::I64, {static_cast<int64_t>(values.size())}, values);
  } else if (name == "value" || name == "sparse_value") {
    value = node.attr<Tensor>(name);
  } else {
    node.fail("attribute '", name, "' is not supported (Estuary has no string tensors)");
  }
  return {node.emitValue("Constant", {}, {{"value", std::move(value)}})};
}

struct Entry {
  const char* op_type;
  int64_t since;
  Results (*translate)(NodeContext&);
};

const Entry kTable[] = {
    // Element-wise
    {"Abs", 6, translateAsIs}, {"Acos", 7, translateAsIs}, {"Add", 7, translateAsIs},
    {"And", 7, translateAsIs}, {"Asin", 7, translateAsIs}, {"Atan", 7, translateAsIs},
    {"Cast", 6, translateAsIs}, {"CastLike", 15, translateAsIs}, {"Ceil", 6, translateAsIs},
    {"Celu", 12, translateAsIs}, {"Clip", 6, translateClip}, {"Cos", 7, translateAsIs},
    {"Cosh", 9, translateAsIs}, {"Div", 7, translateAsIs}, {"Elu", 6, translateAsIs},
    {"Equal", 7, translateAsIs}, {"Erf", 9, translateAsIs}, {"Exp", 6, translateAsIs},
    {"Floor", 6, translateAsIs}, {"Gelu", 20, translateAsIs}, {"Greater", 7, translateAsIs},
    {"GreaterOrEqual", 12, translateAsIs}, {"HardSigmoid", 6, translateAsIs},
    {"HardSwish", 14, translateAsIs}, {"Identity", 1, translateAsIs}, {"IsInf", 10, translateAsIs},
    {"IsNaN", 9, translateAsIs}, {"LeakyRelu", 6, translateAsIs}, {"Less", 7, translateAsIs},
    {"LessOrEqual", 12, translateAsIs}, {"Log", 6, translateAsIs}, {"Max", 8, translateAsIs},
    {"Mean", 8, translateAsIs}, {"Min", 8, translateAsIs}, {"Mish", 18, translateAsIs},
    {"Mod", 10, translateAsIs}, {"Mul", 7, translateAsIs}, {"Neg", 6, translateAsIs},
    {"Not", 1, translateAsIs}, {"Or", 7, translateAsIs}, {"PRelu", 7, translateAsIs},
    {"Pow", 7, translateAsIs}, {"Reciprocal", 6, translateAsIs}, {"Relu", 6, translateAsIs},
    {"Round", 11, translateAsIs}, {"Selu", 6, translateAsIs}, {"Sigmoid", 6, translateAsIs},
    {"Sign", 9, translateAsIs}, {"Sin", 7, translateAsIs}, {"Sinh", 9, translateAsIs},
    {"Softplus", 1, translateAsIs}, {"Softsign", 1, translateAsIs}, {"Sqrt", 6, translateAsIs},
    {"Sub", 7, translateAsIs}, {"Sum", 8, translateAsIs}, {"SwiGLU", 28, translateAsIs},
    {"Swish", 24, translateAsIs}, {"Tan", 7, translateAsIs}, {"Tanh", 6, translateAsIs},
    {"ThresholdedRelu", 10, translateAsIs}, {"Where", 9, translateAsIs}, {"Xor", 7, translateAsIs},
    // Generators
    {"Constant", 1, translateConstant}, {"ConstantOfShape", 9, translateAsIs},
    {"EyeLike", 9, translateAsIs}, {"Range", 11, translateAsIs},
    // Shapes and indexing
    {"Concat", 4, translateAsIs}, {"CumSum", 11, translateAsIs}, {"DepthToSpace", 1, translateAsIs},
    {"Expand", 8, translateAsIs}, {"Flatten", 1, translateAsIs}, {"Gather", 1, translateAsIs},
    {"GatherElements", 11, translateAsIs}, {"GatherND", 11, translateAsIs},
    {"NonZero", 9, translateAsIs}, {"OneHot", 9, translateAsIs}, {"Pad", 2, translatePad},
    {"Reshape", 5, translateAsIs}, {"ScatterElements", 11, translateAsIs},
    {"ScatterND", 11, translateAsIs}, {"Shape", 1, translateAsIs}, {"Size", 1, translateAsIs},
    {"Slice", 1, translateSlice}, {"SpaceToDepth", 1, translateAsIs}, {"Split", 2, translateSplit},
    {"Squeeze", 1, translateSqueeze}, {"Tile", 6, translateAsIs}, {"TopK", 1, translateTopK},
    {"Transpose", 1, translateAsIs}, {"Trilu", 14, translateAsIs}, {"Unsqueeze", 1, translateSqueeze},
    // Neural network
    {"Attention", 23, translateAsIs}, {"AveragePool", 1, translateAsIs},
    {"BatchNormalization", 9, translateBatchNormalization}, {"Conv", 1, translateAsIs},
    {"ConvTranspose", 1, translateAsIs}, {"Dropout", 7, translateDropout}, {"Einsum", 12, translateAsIs},
    {"Gemm", 7, translateAsIs}, {"GlobalAveragePool", 1, translateAsIs},
    {"GlobalMaxPool", 1, translateAsIs}, {"GroupNormalization", 18, translateGroupNormalization},
    {"Hardmax", 1, translateSoftmaxFamily}, {"InstanceNormalization", 6, translateAsIs},
    {"LayerNormalization", 17, translateAsIs}, {"LogSoftmax", 1, translateSoftmaxFamily},
    {"MatMul", 1, translateAsIs}, {"MaxPool", 1, translateAsIs},
    {"RMSNormalization", 23, translateAsIs}, {"Resize", 10, translateResize}, {"Upsample", 7, translateUpsample},
    {"RotaryEmbedding", 23, translateAsIs}, {"Softmax", 1, translateSoftmaxFamily},
    // Reductions
    {"ArgMax", 1, translateAsIs}, {"ArgMin", 1, translateAsIs},
    {"ReduceL1", 1, translateReduce<18>}, {"ReduceL2", 1, translateReduce<18>},
    {"ReduceLogSum", 1, translateReduce<18>}, {"ReduceLogSumExp", 1, translateReduce<18>},
    {"ReduceMax", 1, translateReduce<18>}, {"ReduceMean", 1, translateReduce<18>},
    {"ReduceMin", 1, translateReduce<18>}, {"ReduceProd", 1, translateReduce<18>},
    {"ReduceSum", 1, translateReduce<13>}, {"ReduceSumSquare", 1, translateReduce<18>},
    // Control flow
    {"If", 11, translateControlFlow}, {"Loop", 11, translateControlFlow},
};

}  // namespace

const TranslatorTable& onnxTranslators() {
  static const TranslatorTable* table = [] {
    auto* translators = new TranslatorTable;
    for (const Entry& entry : kTable) translators->add(entry.op_type, entry.translate, entry.since, kNewestOpset);
    return translators;
  }();
  return *table;
}

}  // namespace estuary::onnx_frontend
