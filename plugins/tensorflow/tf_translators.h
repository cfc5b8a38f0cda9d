#pragma once
// The TensorFlow frontend's translators: one small function per TensorFlow op, into
// Estuary's ONNX-semantics core ops, grouped by kind in tf_ops_*.cpp. Data layouts stay
// logical: an NHWC convolution is a Conv between transposes of its activations (its
// filter is transposed once, at translation), and the backend chooses memory layouts.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "estuary/frontend/node_context.h"
#include "estuary/frontend/translator_table.h"

namespace estuary::tensorflow_frontend {

// Every translator, by TensorFlow op name.
const TranslatorTable& tfTranslators();

void addMathTranslators(TranslatorTable& table);
void addNnTranslators(TranslatorTable& table);
void addArrayTranslators(TranslatorTable& table);
void addGraphTranslators(TranslatorTable& table);

// --- Helpers the op files share -------------------------------------------------------------

using Results = std::vector<Value*>;

// `value` as i64 (TensorFlow's index and shape tensors are often i32): a constant
// converted now, anything else through a Cast.
Value* asInt64(NodeContext& node, Value* value);
// `value` as a 1-D i64 list (an axes input): a constant when it is known while translating,
// so that passes read it; else reshaped and cast at run time.
Value* asInt64List(NodeContext& node, Value* value);
// The integers input i holds, known while translating (a constant, or computed from static
// shapes); an error naming the input when they are not known.
std::vector<int64_t> knownInput(NodeContext& node, size_t i, const char* what);
// Whether the node's data_format attribute (default "NHWC") puts channels last.
bool channelsLast(NodeContext& node);

}  // namespace estuary::tensorflow_frontend
