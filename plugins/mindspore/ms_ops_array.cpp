// Shapes, layouts, slicing, joining and gathering; and the tuples of scalars a graph builds
// its shapes from (Shape, TupleGetItem and MakeTuple on them), as 1-D i64 values.
#include "ms_translators.h"

namespace estuary::mindspore_frontend {
namespace {

// A shape argument: known (a constant tuple, or folded) or a 1-D i64 value built in the graph.
Value* shapeArg(NodeContext& node, size_t k, std::string_view name) {
  if (std::optional<std::vector<int64_t>> known = optionalInts(node, k, name)) return node.constantInts(*known);
  node.fail("needs argument ", k, " (", name, ")");
}

// Reshape (input, shape): -1 infers a dim; MindSpore has no "0 copies the dim" rule.
Results reshape(NodeContext& node) {
  Value* x = requiredArg(node, 0, "input");
  Value* shape = nullptr;
  if (std::optional<AttrValue> constant = node.attribute("1")) {
    shape = shapeArg(node, 1, "shape");
  } else {
    shape = node.cast(requiredArg(node, 1, "shape"), DType::I64);
  }
  return {node.emitValue("Reshape", {x, shape}, {{"allowzero", int64_t{1}}})};
}

Results transpose(NodeContext& node) {
  return {permute(node, requiredArg(node, 0, "input"), intsArg(node, 1, "input_perm"))};
}

// ExpandDims (input, axis).
Results expandDims(NodeContext& node) {
  return {node.emitValue("Unsqueeze", {requiredArg(node, 0, "input"), node.constantInts({intArg(node, 1, "axis")})})};
}

// Squeeze (input, axis): the dims of size 1 named, or every one for an empty tuple.
Results squeeze(NodeContext& node) {
  Value* x = requiredArg(node, 0, "input");
  std::vector<int64_t> axes = optionalInts(node, 1, "axis").value_or(std::vector<int64_t>{});
  if (axes.empty()) return {node.emitValue("Squeeze", {x})};
  return {node.emitValue("Squeeze", {x, node.constantInts(axes)})};
}

// Concat (tensors, axis): the tensors are the tuple's elements.
Results concat(NodeContext& node) {
  return {node.emitValue("Concat", tupleArg(node, 0, "tensors"), {{"axis", intArg(node, 1, "axis")}})};
}

// Stack (tensors, axis).
Results stack(NodeContext& node) {
  std::vector<Value*> tensors = tupleArg(node, 0, "tensors");
  const int64_t axis = normalizedAxis(node, intArg(node, 1, "axis"), rankOf(node, tensors.at(0)) + 1);
  std::vector<Value*> expanded;
  for (Value* tensor : tensors) expanded.push_back(node.emitValue("Unsqueeze", {tensor, node.constantInts({axis})}));
  return {node.emitValue("Concat", expanded, {{"axis", axis}})};
}

// Split (input, axis, output_num): equal parts.
Results split(NodeContext& node) {
  Value* x = requiredArg(node, 0, "input");
  const int64_t parts = intArg(node, 2, "output_num");
  Node* made = node.emit("Split", {x}, {{"axis", intArg(node, 1, "axis")}, {"num_outputs", parts}},
                         static_cast<size_t>(parts));
  return made->outputs();
}

// StridedSlice (input, begin, end, strides, begin_mask, end_mask, ellipsis_mask,
// new_axis_mask, shrink_axis_mask): TensorFlow's meaning.
Results stridedSliceOp(NodeContext& node) {
  auto bounds = [&](size_t k, const char* name) -> Value* {
    if (node.attribute(std::to_string(k))) return shapeArg(node, k, name);
    return node.cast(requiredArg(node, k, name), DType::I64);
  };
  StridedSliceMasks masks{intArg(node, 4, "begin_mask"), intArg(node, 5, "end_mask"), intArg(node, 6, "ellipsis_mask"),
                          intArg(node, 7, "new_axis_mask"), intArg(node, 8, "shrink_axis_mask")};
  return {stridedSlice(node, requiredArg(node, 0, "input"), bounds(1, "begin"), bounds(2, "end"),
                       intsArg(node, 3, "strides"), masks)};
}

// Slice (input, begin, size): a size of -1 takes the rest.
Results slice(NodeContext& node) {
  Value* x = requiredArg(node, 0, "input");
  std::vector<int64_t> begin = intsArg(node, 1, "begin");
  std::vector<int64_t> size = intsArg(node, 2, "size");
  if (begin.size() != size.size()) node.fail("begin and size have ", begin.size(), " and ", size.size(), " entries");
  std::vector<int64_t> end, axes;
  for (size_t d = 0; d < begin.size(); ++d) {
    end.push_back(size[d] == -1 ? std::numeric_limits<int64_t>::max() : begin[d] + size[d]);
    axes.push_back(static_cast<int64_t>(d));
  }
  return {node.emitValue("Slice", {x, node.constantInts(begin), node.constantInts(end), node.constantInts(axes)})};
}

// Gather (input_params, input_indices, axis, batch_dims).
Results gather(NodeContext& node) {
  if (node.hasAttr("3") && intArg(node, 3, "batch_dims") != 0) node.fail("Gather with batch_dims is not translated");
  return {node.emitValue("Gather", {requiredArg(node, 0, "input_params"), requiredArg(node, 1, "input_indices")},
                         {{"axis", intArg(node, 2, "axis")}})};
}

// Tile (input, dims) and BroadcastTo (input, shape).
Results tile(NodeContext& node) {
  return {node.emitValue("Tile", {requiredArg(node, 0, "input"), shapeArg(node, 1, "dims")})};
}

Results broadcastTo(NodeContext& node) {
  Value* x = requiredArg(node, 0, "input");
  std::vector<int64_t> shape = intsArg(node, 1, "shape");
  // -1 keeps the input's dim there.
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != -1) continue;
    const size_t offset = shape.size() - rankOf(node, x);
    if (d < offset || !x->shape()[d - offset].isStatic()) node.fail("shape dim ", d, " is -1 where the input has no static dim");
    shape[d] = x->shape()[d - offset].value();
  }
  return {node.emitValue("Expand", {x, node.constantInts(shape)})};
}

// Shape (input): a tuple of its dims, here a 1-D i64 value.
Results shape(NodeContext& node) { return {node.emitValue("Shape", {requiredArg(node, 0, "input")})}; }

// TupleGetItem on a tuple of scalars (a shape): one element, a 0-d value.
Results tupleGetItem(NodeContext& node) {
  Value* tuple = requiredArg(node, 0, "input");
  return {node.emitValue("Gather", {tuple, node.constant(Tensor::scalar<int64_t>(DType::I64, intArg(node, 1, "index")))},
                         {{"axis", int64_t{0}}})};
}

// MakeTuple of scalars: the 1-D i64 value a shape argument reads.
Results makeTuple(NodeContext& node) {
  std::vector<Value*> elements;
  for (Value* element : node.inputs()) {
    elements.push_back(node.emitValue("Reshape", {node.cast(element, DType::I64), node.constantInts({1})}));
  }
  if (elements.empty()) return {node.constant(Tensor::fromVector<int64_t>(DType::I64, {0}, {}))};
  return {node.emitValue("Concat", elements, {{"axis", int64_t{0}}})};
}

// OnesLike and ZerosLike (input).
template <int kValue>
Results filledLike(NodeContext& node) {
  Value* x = requiredArg(node, 0, "input");
  Value* value = node.cast(node.constant(Tensor::scalar<float>(DType::F32, static_cast<float>(kValue))), x->dtype());
  return {node.emitValue("Expand", {value, node.emitValue("Shape", {x})})};
}

}  // namespace

void addArrayTranslators(TranslatorTable& table) {
  table.add("Reshape", reshape).add("Transpose", transpose).add("ExpandDims", expandDims).add("Squeeze", squeeze)
      .add("Concat", concat).add("Stack", stack).add("Split", split).add("StridedSlice", stridedSliceOp)
      .add("Slice", slice).add("Gather", gather).add("Tile", tile).add("BroadcastTo", broadcastTo)
      .add("Shape", shape).add("TupleGetItem", tupleGetItem).add("MakeTuple", makeTuple)
      .add("OnesLike", filledLike<1>).add("ZerosLike", filledLike<0>);
}

}  // namespace estuary::mindspore_frontend
