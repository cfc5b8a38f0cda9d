// Constants, shapes, slicing, joining, padding and gathering. TensorFlow passes index and
// shape operands as i32 or i64 tensors; the core ops take i64, so they are converted (at
// translation when constant).
#include <algorithm>
#include <limits>

#include "estuary/frontend/translation_helpers.h"
#include "tf_translators.h"

namespace estuary::tensorflow_frontend {
namespace {

constexpr int64_t kToEnd = std::numeric_limits<int64_t>::max();

Results constant(NodeContext& node) { return {node.constant(node.attr<Tensor>("value"))}; }

Results identityN(NodeContext& node) {
  Results results;
  for (Value* input : node.inputs()) results.push_back(node.emitValue("Identity", {input}));
  return results;
}

Results placeholderWithDefault(NodeContext& node) { return {node.emitValue("Identity", {node.requiredInput(0)})}; }

Results reshape(NodeContext& node) {
  return {node.emitValue("Reshape", {node.requiredInput(0), asInt64(node, node.requiredInput(1))})};
}

Results transpose(NodeContext& node) {
  return {permute(node, node.requiredInput(0), knownInput(node, 1, "perm"))};
}

// ConcatV2 takes the axis last, Concat first.
Results concat(NodeContext& node) {
  std::vector<Value*> inputs = node.inputs();
  const bool axis_first = node.opType() == "Concat";
  const size_t axis_index = axis_first ? 0 : inputs.size() - 1;
  int64_t axis = knownInput(node, axis_index, "axis").at(0);
  inputs.erase(inputs.begin() + static_cast<std::ptrdiff_t>(axis_index));
  return {node.emitValue("Concat", inputs, {{"axis", normalizedAxis(node, axis, rankOf(node, inputs.at(0)))}})};
}

Results pack(NodeContext& node) {
  std::vector<Value*> inputs = node.inputs();
  const int64_t axis = normalizedAxis(node, node.attr<int64_t>("axis", 0), rankOf(node, inputs.at(0)) + 1);
  std::vector<Value*> pieces;
  for (Value* input : inputs) pieces.push_back(node.emitValue("Unsqueeze", {input, node.constantInts({axis})}));
  return {node.emitValue("Concat", pieces, {{"axis", axis}})};
}

Results unpack(NodeContext& node) {
  Value* x = node.requiredInput(0);
  const int64_t axis = normalizedAxis(node, node.attr<int64_t>("axis", 0), rankOf(node, x));
  const int64_t count = node.attr<int64_t>("num");
  Node* split = node.emit("Split", {x}, {{"axis", axis}, {"num_outputs", count}}, static_cast<size_t>(count));
  Results results;
  for (Value* piece : split->outputs()) results.push_back(node.emitValue("Squeeze", {piece, node.constantInts({axis})}));
  return results;
}

Results shape(NodeContext& node) {
  return {node.cast(node.emitValue("Shape", {node.requiredInput(0)}), node.attr<DType>("out_type", DType::I32))};
}

Results shapeN(NodeContext& node) {
  Results results;
  for (Value* input : node.inputs()) {
    results.push_back(node.cast(node.emitValue("Shape", {input}), node.attr<DType>("out_type", DType::I32)));
  }
  return results;
}

Results size(NodeContext& node) {
  return {node.cast(node.emitValue("Size", {node.requiredInput(0)}), node.attr<DType>("out_type", DType::I32))};
}

Results rank(NodeContext& node) {
  return {node.constant(Tensor::scalar<int32_t>(DType::I32, static_cast<int32_t>(rankOf(node, node.requiredInput(0)))))};
}

// StridedSlice: the layer's strided slice; strides must be known, begin and end may be
// computed at run time.
Results stridedSlice(NodeContext& node) {
  const auto mask = [&](const char* name) { return node.attr<int64_t>(name, 0); };
  StridedSliceMasks masks{mask("begin_mask"), mask("end_mask"), mask("ellipsis_mask"), mask("new_axis_mask"),
                          mask("shrink_axis_mask")};
  return {stridedSlice(node, node.requiredInput(0), asInt64(node, node.requiredInput(1)),
                       asInt64(node, node.requiredInput(2)), knownInput(node, 3, "strides"), masks)};
}

// Slice: begin and size per dim; a size of -1 takes the rest.
Results slice(NodeContext& node) {
  Value* x = node.requiredInput(0);
  Value* begin = asInt64(node, node.requiredInput(1));
  Value* size = asInt64(node, node.requiredInput(2));
  std::optional<std::vector<int64_t>> known_begin = foldedInts(node, begin);
  std::optional<std::vector<int64_t>> known_size = foldedInts(node, size);
  if (known_begin && known_size && known_begin->size() == known_size->size()) {
    std::vector<int64_t> ends;
    for (size_t d = 0; d < known_size->size(); ++d) {
      ends.push_back((*known_size)[d] == -1 ? kToEnd : (*known_begin)[d] + (*known_size)[d]);
    }
    return {node.emitValue("Slice", {x, begin, node.constantInts(ends)})};
  }
  Value* minus_one = node.emitValue("Equal", {size, node.constantInts({-1})});
  Value* end = node.emitValue("Where", {minus_one, node.constantInts({kToEnd}), node.emitValue("Add", {begin, size})});
  return {node.emitValue("Slice", {x, begin, end})};
}

Results squeeze(NodeContext& node) {
  Value* x = node.requiredInput(0);
  std::vector<int64_t> dims = node.attr<std::vector<int64_t>>("squeeze_dims", {});
  if (dims.empty()) return {node.emitValue("Squeeze", {x})};
  for (int64_t& dim : dims) dim = normalizedAxis(node, dim, rankOf(node, x));
  return {node.emitValue("Squeeze", {x, node.constantInts(dims)})};
}

Results expandDims(NodeContext& node) {
  Value* x = node.requiredInput(0);
  int64_t axis = normalizedAxis(node, knownInput(node, 1, "axis").at(0), rankOf(node, x) + 1);
  return {node.emitValue("Unsqueeze", {x, node.constantInts({axis})})};
}

Results fill(NodeContext& node) {
  return {node.emitValue("Expand", {node.requiredInput(1), asInt64(node, node.requiredInput(0))})};
}

Results filledLike(NodeContext& node, double value) {
  Value* x = node.requiredInput(0);
  return {node.emitValue("Expand", {node.scalar(x->dtype(), value), node.emitValue("Shape", {x})})};
}
Results zerosLike(NodeContext& node) { return filledLike(node, 0); }
Results onesLike(NodeContext& node) { return filledLike(node, 1); }

Results broadcastTo(NodeContext& node) {
  return {node.emitValue("Expand", {node.requiredInput(0), asInt64(node, node.requiredInput(1))})};
}

// Pad, PadV2 and MirrorPad: paddings [rank, 2] of (before, after) rows; ONNX wants all
// befores, then all afters.
// TF's paddings are [rank, 2] (begin, end per axis); ONNX's pads all begins, then all ends.
// Known paddings (the usual case) become a constant, which later passes can read.
Results pad(NodeContext& node) {
  Value* x = node.requiredInput(0);
  Value* pads = nullptr;
  if (std::optional<std::vector<int64_t>> known = foldedInts(node, node.requiredInput(1))) {
    std::vector<int64_t> flat(known->size());
    const size_t rank = known->size() / 2;
    for (size_t axis = 0; axis < rank; ++axis) {
      flat[axis] = (*known)[2 * axis];
      flat[rank + axis] = (*known)[2 * axis + 1];
    }
    pads = node.constantInts(flat);
  } else {
    Value* paddings = asInt64(node, node.requiredInput(1));
    pads = node.emitValue("Reshape", {permute(node, paddings, {1, 0}), node.constantInts({-1})});
  }
  std::vector<Value*> inputs = {x, pads};
  NodeContext::Attributes attributes;
  if (node.opType() == "PadV2") inputs.push_back(node.requiredInput(2));
  if (node.opType() == "MirrorPad") {
    std::string mode = node.attr<std::string>("mode");
    if (mode == "REFLECT") {
      attributes.emplace_back("mode", "reflect");
    } else {
      node.fail("MirrorPad mode '", mode, "' is not translated (REFLECT is)");
    }
  }
  return {node.emitValue("Pad", inputs, std::move(attributes))};
}

Results gather(NodeContext& node) {
  Value* params = node.requiredInput(0);
  Value* indices = node.requiredInput(1);
  int64_t axis = node.opType() == "Gather" ? 0 : knownInput(node, 2, "axis").at(0);
  if (node.attr<int64_t>("batch_dims", 0) != 0) node.fail("batch_dims other than 0 is not translated");
  return {node.emitValue("Gather", {params, indices}, {{"axis", normalizedAxis(node, axis, rankOf(node, params))}})};
}

Results gatherNd(NodeContext& node) {
  return {node.emitValue("GatherND", {node.requiredInput(0), asInt64(node, node.requiredInput(1))})};
}

Results range(NodeContext& node) { return {node.emitValue("Range", node.inputs())}; }

Results tile(NodeContext& node) {
  return {node.emitValue("Tile", {node.requiredInput(0), asInt64(node, node.requiredInput(1))})};
}

// Split: axis first, then the value, into num_split equal parts; SplitV: value, sizes, axis.
Results split(NodeContext& node) {
  const bool v = node.opType() == "SplitV";
  Value* x = node.requiredInput(v ? 0 : 1);
  int64_t axis = normalizedAxis(node, knownInput(node, v ? 2 : 0, "axis").at(0), rankOf(node, x));
  const int64_t count = node.attr<int64_t>("num_split");
  if (!v) {
    return node.emit("Split", {x}, {{"axis", axis}, {"num_outputs", count}}, static_cast<size_t>(count))->outputs();
  }
  std::vector<int64_t> sizes = knownInput(node, 1, "size_splits");
  // One size may be -1: what the others leave.
  auto unknown = std::find(sizes.begin(), sizes.end(), -1);
  if (unknown != sizes.end()) {
    const Dim& total = x->shape()[axis];
    if (!total.isStatic()) node.fail("a split size of -1 along a dim of unknown size");
    int64_t rest = total.value();
    for (int64_t size : sizes) rest -= size == -1 ? 0 : size;
    *unknown = rest;
  }
  return node.emit("Split", {x, node.constantInts(sizes)}, {{"axis", axis}}, sizes.size())->outputs();
}

Results oneHot(NodeContext& node) {
  Value* indices = node.requiredInput(0);
  Value* values = node.emitValue("Concat", {node.emitValue("Reshape", {node.requiredInput(3), node.constantInts({1})}),
                                            node.emitValue("Reshape", {node.requiredInput(2), node.constantInts({1})})},
                                  {{"axis", int64_t{0}}});
  return {node.emitValue("OneHot", {indices, asInt64(node, node.requiredInput(1)), values},
                         {{"axis", node.attr<int64_t>("axis", -1)}})};
}

// MatrixBandPart keeps the band num_lower below and num_upper above the diagonal (-1: all),
// which Keras' causal masks use: one Trilu or two.
Results matrixBandPart(NodeContext& node) {
  Value* x = node.requiredInput(0);
  const int64_t lower = knownInput(node, 1, "num_lower").at(0);
  const int64_t upper = knownInput(node, 2, "num_upper").at(0);
  auto diagonal = [&](int64_t k) { return node.constant(Tensor::scalar<int64_t>(DType::I64, k)); };
  Value* y = x;
  if (upper >= 0) y = node.emitValue("Trilu", {y, diagonal(upper)}, {{"upper", int64_t{0}}});
  if (lower >= 0) y = node.emitValue("Trilu", {y, diagonal(-lower)}, {{"upper", int64_t{1}}});
  return {y == x ? node.emitValue("Identity", {x}) : y};
}

Results topK(NodeContext& node) {
  Value* x = node.requiredInput(0);
  Value* k = node.emitValue("Reshape", {asInt64(node, node.requiredInput(1)), node.constantInts({1})});
  Node* top = node.emit("TopK", {x, k}, {{"axis", int64_t{-1}}, {"sorted", int64_t{node.attr<bool>("sorted", true)}}}, 2);
  return {top->output(0), node.cast(top->output(1), node.attr<DType>("index_type", DType::I32))};
}

}  // namespace

void addArrayTranslators(TranslatorTable& table) {
  table.add("Const", constant).add("IdentityN", identityN).add("PlaceholderWithDefault", placeholderWithDefault)
      .add("Reshape", reshape).add("Transpose", transpose).add("ConcatV2", concat).add("Concat", concat)
      .add("Pack", pack).add("Unpack", unpack).add("Shape", shape).add("ShapeN", shapeN).add("Size", size)
      .add("Rank", rank).add("StridedSlice", stridedSlice).add("Slice", slice).add("Squeeze", squeeze)
      .add("ExpandDims", expandDims).add("Fill", fill).add("ZerosLike", zerosLike).add("OnesLike", onesLike)
      .add("BroadcastTo", broadcastTo).add("Pad", pad).add("PadV2", pad).add("MirrorPad", pad)
      .add("GatherV2", gather).add("Gather", gather).add("GatherNd", gatherNd).add("Range", range)
      .add("Tile", tile).add("Split", split).add("SplitV", split).add("OneHot", oneHot)
      .add("MatrixBandPart", matrixBandPart).add("TopKV2", topK);
}

}  // namespace estuary::tensorflow_frontend
