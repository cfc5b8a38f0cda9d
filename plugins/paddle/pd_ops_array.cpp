// Shapes and layouts: reshape, transpose, flatten, squeeze, concat, split, slice, gather,
// expand, triangles, ranges and embeddings.
#include "pd_translators.h"

namespace estuary::paddle_frontend {

Results bySlot(NodeContext& node, const std::vector<std::pair<std::string_view, Value*>>& results);

namespace {

// reshape (PIR: the shape is operand 1) and reshape2 (attribute shape, or the Shape input);
// 0 copies the input's dim and -1 is inferred, as in the core's Reshape.
Results reshape(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  Value* shape = nullptr;
  if (std::optional<std::vector<int64_t>> known = intsOf(node, 1, "shape", "Shape")) {
    shape = node.constantInts(*known);
  } else if (isPir(node)) {
    shape = int64s(node, requiredIn(node, 1, ""));
  } else {
    node.fail("has no shape");
  }
  return bySlot(node, {{"Out", node.emitValue("Reshape", {x, shape})}});
}

Results transpose(NodeContext& node) {
  std::vector<int64_t> perm = node.attr<std::vector<int64_t>>(isPir(node) ? "perm" : "axis");
  return bySlot(node, {{"Out", permute(node, requiredIn(node, 0, "X"), perm)}});
}

// flatten (flatten_contiguous_range): dims start_axis..stop_axis merged into one.
Results flatten(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  const size_t rank = rankOf(node, x);
  if (rank == 0) return bySlot(node, {{"Out", node.emitValue("Reshape", {x, node.constantInts({1})})}});
  const int64_t start = normalizedAxis(node, node.attr<int64_t>("start_axis", 1), rank);
  const int64_t stop = normalizedAxis(node, node.attr<int64_t>("stop_axis", -1), rank);
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d) {
    if (d < start || d > stop) {
      shape.push_back(0);
    } else if (d == start) {
      shape.push_back(-1);
    }
  }
  // 0 copies the dim at the same index of the input, which holds only before the merged dims.
  for (size_t i = static_cast<size_t>(start) + 1; i < shape.size(); ++i) {
    const Dim& dim = x->shape()[static_cast<size_t>(stop) + (i - static_cast<size_t>(start))];
    if (!dim.isStatic()) node.fail("a dim after the flattened ones must be static, the input is ", x->shape().str());
    shape[i] = dim.value();
  }
  return bySlot(node, {{"Out", node.emitValue("Reshape", {x, node.constantInts(shape)})}});
}

Results squeeze(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  std::vector<int64_t> axes = intsOf(node, 1, "axes").value_or(std::vector<int64_t>{});
  std::vector<Value*> inputs = {x};
  if (!axes.empty()) inputs.push_back(node.constantInts(axes));
  return bySlot(node, {{"Out", node.emitValue("Squeeze", inputs)}});
}

Results unsqueeze(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  std::vector<int64_t> axes = intsOf(node, 1, "axes", "AxesTensor").value_or(std::vector<int64_t>{});
  return bySlot(node, {{"Out", node.emitValue("Unsqueeze", {x, node.constantInts(axes)})}});
}

// concat: PIR reads its tensors through a builtin.combine (the view flattens it) and the
// axis last; legacy: the X slot and attribute axis.
Results concat(NodeContext& node) {
  std::vector<Value*> parts = node.inputs();
  int64_t axis = 0;
  if (isPir(node)) {
    std::optional<std::vector<int64_t>> known = foldedInts(node, parts.back());
    if (!known || known->size() != 1) node.fail("the axis must be a known scalar");
    axis = known->front();
    parts.pop_back();
  } else {
    axis = node.attr<int64_t>("axis", 0);
  }
  if (parts.empty()) node.fail("concatenates nothing");
  return bySlot(node, {{"Out", node.emitValue("Concat", parts, {{"axis", normalizedAxis(node, axis, rankOf(node, parts[0]))}})}});
}

Results stack(NodeContext& node) {
  std::vector<Value*> parts = node.inputs();
  if (parts.empty()) node.fail("stacks nothing");
  const int64_t axis = normalizedAxis(node, node.attr<int64_t>("axis", 0), rankOf(node, parts[0]) + 1);
  std::vector<Value*> expanded;
  for (Value* part : parts) expanded.push_back(node.emitValue("Unsqueeze", {part, node.constantInts({axis})}));
  return bySlot(node, {{"Y", node.emitValue("Concat", expanded, {{"axis", axis}})}});
}

// split_with_num (num equal parts) and split (sections), along an axis operand.
Results split(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  const size_t rank = rankOf(node, x);
  int64_t axis = 0;
  std::vector<int64_t> sections;
  if (isPir(node)) {
    const bool with_num = node.opType() == "split_with_num";
    axis = foldedInts(node, node.requiredInput(with_num ? 1 : 2)).value_or(std::vector<int64_t>{0}).at(0);
    if (!with_num) sections = foldedInts(node, node.requiredInput(1)).value_or(std::vector<int64_t>{});
  } else {
    axis = node.attr<int64_t>("axis", 0);
    sections = node.attr<std::vector<int64_t>>("sections", {});
  }
  axis = normalizedAxis(node, axis, rank);
  const size_t count = node.numOutputs();
  NodeContext::Attributes attributes = {{"axis", axis}};
  std::vector<Value*> inputs = {x};
  if (!sections.empty()) {
    const Dim& dim = x->shape()[static_cast<size_t>(axis)];
    int64_t known = 0, unknown = -1;
    for (size_t i = 0; i < sections.size(); ++i) {
      if (sections[i] < 0) unknown = static_cast<int64_t>(i);
      else known += sections[i];
    }
    if (unknown >= 0) {
      if (!dim.isStatic()) node.fail("a -1 section needs a static dim to split");
      sections[static_cast<size_t>(unknown)] = dim.value() - known;
    }
    inputs.push_back(node.constantInts(sections));
  } else {
    attributes.emplace_back("num_outputs", static_cast<int64_t>(count));
  }
  Node* parts = node.emit("Split", inputs, std::move(attributes), count);
  return parts->outputs();
}

// slice (PIR: starts and ends operands; legacy: attributes or tensors), then the
// decrease_axis dims dropped.
Results slice(NodeContext& node) {
  Value* x = requiredIn(node, 0, "Input");
  std::vector<int64_t> axes = node.attr<std::vector<int64_t>>("axes");
  std::vector<int64_t> starts = intsOf(node, 1, "starts", "StartsTensor").value_or(std::vector<int64_t>{});
  std::vector<int64_t> ends = intsOf(node, 2, "ends", "EndsTensor").value_or(std::vector<int64_t>{});
  if (starts.size() != axes.size() || ends.size() != axes.size()) node.fail("starts, ends and axes differ in length");
  Value* y = node.emitValue("Slice", {x, node.constantInts(starts), node.constantInts(ends), node.constantInts(axes)});
  std::vector<int64_t> decrease = node.attr<std::vector<int64_t>>("decrease_axis", {});
  if (!decrease.empty() && rankOf(node, y) > decrease.size()) {
    y = node.emitValue("Squeeze", {y, node.constantInts(decrease)});
  }
  return bySlot(node, {{"Out", y}});
}

// gather (axis) and index_select: rows of x by index.
Results gather(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  Value* index = requiredIn(node, 1, "Index");
  int64_t axis = node.hasAttr("axis") ? node.attr<int64_t>("axis") : node.attr<int64_t>("dim", 0);
  if (isPir(node) && node.opType() == "gather" && node.numInputs() > 2) axis = scalarOf(node, 2, "").value_or(0);
  return bySlot(node, {{"Out", node.emitValue("Gather", {x, index}, {{"axis", normalizedAxis(node, axis, rankOf(node, x))}})}});
}

// expand (PIR: the shape operand) and expand_v2 (attribute shape): -1 keeps a dim.
Results expand(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  std::vector<int64_t> shape = intsOf(node, 1, "shape", "Shape").value_or(std::vector<int64_t>{});
  for (int64_t& dim : shape) {
    if (dim == -1) dim = 1;  // Expand broadcasts, so 1 keeps x's dim
  }
  return bySlot(node, {{"Out", node.emitValue("Expand", {x, node.constantInts(shape)})}});
}

Results tile(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  std::vector<int64_t> repeats = intsOf(node, 1, "repeat_times").value_or(std::vector<int64_t>{});
  const size_t rank = rankOf(node, x);
  while (repeats.size() < rank) repeats.insert(repeats.begin(), 1);
  return bySlot(node, {{"Out", node.emitValue("Tile", {x, node.constantInts(repeats)})}});
}

Results shape(NodeContext& node) {
  Value* shape = node.emitValue("Shape", {requiredIn(node, 0, "Input")});
  return bySlot(node, {{"Out", node.opType() == "shape64" ? shape : node.cast(shape, DType::I32)}});
}

// triu / tril: the upper or lower triangle from a diagonal.
template <bool kUpper>
Results triangle(NodeContext& node) {
  Value* k = node.constant(Tensor::scalar<int64_t>(DType::I64, node.attr<int64_t>("diagonal", 0)));
  return bySlot(node, {{"Out", node.emitValue("Trilu", {requiredIn(node, 0, "X"), k}, {{"upper", int64_t{kUpper}}})}});
}

// tril_triu (legacy): the attribute `lower` says which.
Results trilTriu(NodeContext& node) {
  return node.attr<bool>("lower", false) ? triangle<false>(node) : triangle<true>(node);
}

// arange(start, end, step) of `dtype`.
Results arange(NodeContext& node) {
  DType dtype = node.attr<DType>("dtype", DType::I64);
  auto operand = [&](size_t i, const char* slot) { return node.cast(node.emitValue("Reshape", {requiredIn(node, i, slot), node.constantInts({})}), dtype); };
  return bySlot(node, {{"Out", node.emitValue("Range", {operand(0, "Start"), operand(1, "End"), operand(2, "Step")})}});
}

Results assign(NodeContext& node) { return bySlot(node, {{"Out", node.emitValue("Identity", {requiredIn(node, 0, "X")})}}); }

// embedding (lookup_table_v2): rows of the weight by id.
Results embedding(NodeContext& node) {
  Value* ids = requiredIn(node, 0, "Ids");
  Value* weight = requiredIn(node, 1, "W");
  return bySlot(node, {{"Out", node.emitValue("Gather", {weight, int64s(node, ids)}, {{"axis", int64_t{0}}})}});
}

}  // namespace

void addArrayTranslators(TranslatorTable& table) {
  const std::pair<const char*, TranslateFn> pir[] = {
      {"reshape", reshape}, {"reshape_", reshape}, {"transpose", transpose}, {"flatten", flatten},
      {"squeeze", squeeze}, {"unsqueeze", unsqueeze}, {"concat", concat}, {"stack", stack},
      {"split_with_num", split}, {"split", split}, {"slice", slice}, {"gather", gather},
      {"index_select", gather}, {"expand", expand}, {"tile", tile}, {"shape", shape}, {"shape64", shape},
      {"triu", triangle<true>}, {"tril", triangle<false>}, {"arange", arange}, {"assign", assign},
      {"embedding", embedding}};
  for (const auto& [name, translate] : pir) table.add("pd_op", name, translate);
  const std::pair<const char*, TranslateFn> legacy[] = {
      {"reshape2", reshape}, {"transpose2", transpose}, {"flatten_contiguous_range", flatten},
      {"squeeze2", squeeze}, {"unsqueeze2", unsqueeze}, {"concat", concat}, {"stack", stack}, {"split", split},
      {"slice", slice}, {"gather", gather}, {"index_select", gather}, {"expand_v2", expand}, {"tile", tile},
      {"shape", shape}, {"tril_triu", trilTriu}, {"range", arange}, {"assign", assign},
      {"lookup_table_v2", embedding}};
  for (const auto& [name, translate] : legacy) table.add(name, translate);
}

}  // namespace estuary::paddle_frontend
