#pragma once
// The FX side of translating one node, over the frontend layer's NodeContext. Each ATen op
// has a small free function (op_table.cpp) that receives an FxTranslation: the node's
// arguments looked up by position or schema name (FX drops trailing defaults and may pass
// any argument by keyword), helpers that turn Python constants and symbolic sizes into IR
// values, and the context's emit(), which appends a node and infers its types at once so
// that later translators see ranks and dtypes.
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/frontend/node_context.h"
#include "estuary/frontend/translator_table.h"
#include "estuary/pytorch/fx_graph.h"
#include "fx_decoder.h"

namespace estuary::pytorch {

class FxTranslation {
 public:
  // `context` is of a node the FX node view (fx_decoder.h) decodes.
  explicit FxTranslation(NodeContext& context);

  const FxNode& node() const { return decoder_.node(); }
  Graph& graph() { return context_.graph(); }
  NodeContext& context() { return context_; }

  // The argument at `position` or passed as keyword `name`; nullptr when absent or None.
  const FxArg* arg(size_t position, std::string_view name) const;
  // The same, an error naming the argument when absent.
  const FxArg& requiredArg(size_t position, std::string_view name) const;
  // A tensor argument (its first result); required unless optionalTensor() is used.
  Value* tensor(size_t position, std::string_view name) const;
  Value* optionalTensor(size_t position, std::string_view name) const;
  // The IR value of a node reference (its first result), or of result i of a node that
  // returns several.
  Value* valueOf(const FxArg& reference) const { return resultOf(reference, 0); }
  Value* resultOf(const FxArg& reference, size_t i) const;
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

  using Attributes = NodeContext::Attributes;
  // The context's: a node named after the FX node, its types inferred at once.
  Node* emit(std::string_view op_type, const std::vector<Value*>& inputs, Attributes attributes = {},
             size_t num_outputs = 1) {
    return context_.emit(op_type, inputs, std::move(attributes), num_outputs);
  }
  Value* emitValue(std::string_view op_type, const std::vector<Value*>& inputs, Attributes attributes = {}) {
    return context_.emitValue(op_type, inputs, std::move(attributes));
  }
  Value* constant(Tensor tensor) { return context_.constant(std::move(tensor)); }
  Value* constantInts(const std::vector<int64_t>& values) { return context_.constantInts(values); }
  Value* scalar(DType dtype, double value) { return context_.scalar(dtype, value); }
  Value* cast(Value* value, DType dtype) { return context_.cast(value, dtype); }

  // Raises "<model>: node 'name' (target): <message>".
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    context_.fail(parts...);
  }

 private:
  // The value of a symbolic size expression ("s27") as a 1-element i64 tensor: the Shape of
  // a tensor input that has it as a dim, made once per graph.
  Value* symbolValue(const std::string& expression);

  NodeContext& context_;
  const FxNodeDecoder& decoder_;
};

// An op translator returns the node's results: one value per tensor it returns (a
// multi-result op may leave off results the graph never reads).
using FxOpTranslator = std::vector<Value*> (*)(FxTranslation& node);

// The translators, by FX target ("aten.relu.default").
const TranslatorTable& fxTranslators();

}  // namespace estuary::pytorch
