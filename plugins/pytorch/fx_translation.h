#pragma once
// Translating one FX node into core IR. Each ATen op has a small free function (op_table.cpp)
// that receives an FxTranslation: the node's arguments looked up by position or schema name
// (FX drops trailing defaults and may pass any argument by keyword), helpers that turn
// Python constants and symbolic sizes into IR values, and emit(), which appends a node and
// infers its types at once so that later translators see ranks and dtypes.
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/ops/schema.h"
#include "estuary/pytorch/fx_graph.h"

namespace estuary::pytorch {

class FxImporter;

class FxTranslation {
 public:
  FxTranslation(FxImporter& importer, const FxNode& node) : importer_(importer), node_(node) {}

  const FxNode& node() const { return node_; }
  Graph& graph();

  // The argument at `position` or passed as keyword `name`; nullptr when absent or None.
  const FxArg* arg(size_t position, std::string_view name) const;
  // The same, an error naming the argument when absent.
  const FxArg& requiredArg(size_t position, std::string_view name) const;
  // A tensor argument (its first result); required unless optionalTensor() is used.
  Value* tensor(size_t position, std::string_view name) const;
  Value* optionalTensor(size_t position, std::string_view name) const;
  // The IR value of a node reference (result 0), or every result of a multi-result node.
  Value* valueOf(const FxArg& reference) const;
  const std::vector<Value*>& resultsOf(const FxArg& reference) const;
  // Python constants; `fallback` when the argument is absent.
  int64_t intArg(size_t position, std::string_view name, std::optional<int64_t> fallback = {}) const;
  double floatArg(size_t position, std::string_view name, std::optional<double> fallback = {}) const;
  bool boolArg(size_t position, std::string_view name, std::optional<bool> fallback = {}) const;
  std::string stringArg(size_t position, std::string_view name, std::optional<std::string> fallback = {}) const;
  std::vector<int64_t> intsArg(size_t position, std::string_view name,
                               std::optional<std::vector<int64_t>> fallback = {}) const;
  // A list of sizes whose entries are integers or symbolic sizes (SymInt nodes): a 1-D i64
  // value, a constant when every entry is an integer.
  Value* sizesArg(size_t position, std::string_view name);
  Value* sizesValue(const FxArg& sizes);
  // A size (integer or SymInt node) as a 1-element i64 value.
  Value* sizeValue(const FxArg& size);
  // A tensor argument, or a Python number as a scalar constant of `dtype`.
  Value* tensorOrScalar(size_t position, std::string_view name, DType dtype);

  // The dtype of result i as the FX node's fake value says.
  DType resultDType(size_t i = 0) const;
  // `dim` (possibly negative) as an axis of a tensor of rank `rank`; an error if outside.
  int64_t axis(int64_t dim, size_t rank) const;
  // The rank of a value whose shape is known by now.
  size_t rankOf(const Value* value) const;

  using Attributes = std::vector<std::pair<std::string, Attribute>>;
  // Appends a node named after the FX node, with these attributes, and infers its types.
  Node* emit(std::string_view op_type, const std::vector<Value*>& inputs, Attributes attributes = {},
             size_t num_outputs = 1);
  Value* emitValue(std::string_view op_type, const std::vector<Value*>& inputs, Attributes attributes = {}) {
    return emit(op_type, inputs, std::move(attributes))->output();
  }
  Value* constant(Tensor tensor);
  Value* constantInts(const std::vector<int64_t>& values);  // 1-D i64
  Value* scalar(DType dtype, double value);                // 0-D
  Value* cast(Value* value, DType dtype);                  // no node when already `dtype`

  // Raises "FX node 'name' (target): <message>".
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    std::ostringstream message;
    (message << ... << parts);
    failWith(message.str());
  }

 private:
  [[noreturn]] void failWith(const std::string& message) const;

  FxImporter& importer_;
  const FxNode& node_;
};

// An op translator returns the node's results: one value per tensor it returns (a
// multi-result op may return fewer when the rest are never used; getitem on them fails).
using FxOpTranslator = std::vector<Value*> (*)(FxTranslation& node);

// The translators, by FX target ("aten.relu.default").
const FxOpTranslator* findTranslator(std::string_view target);
std::vector<std::string> translatedTargets();

}  // namespace estuary::pytorch
