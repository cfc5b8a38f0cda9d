#pragma once
// The MindSpore translators: one small function per primitive, in a table keyed by the
// primitive's name (Conv2D, MatMulExt, ...), with the view's own ops (mindir::Constant,
// mindir::Call, mindir::If, mindir::While) beside them.
//
// A MindSpore primitive takes its arguments in the order of its definition (op yaml).
// PRIMITIVE_FUNCTION ops take every former attribute as an argument, nearly always a
// constant; the helpers below read argument k as a constant (it is then the node's attribute
// "k" too) or as a value, so a translator reads `intsArg(node, 1, "axis")` whichever the
// file holds.
#include <optional>
#include <string_view>
#include <vector>

#include "estuary/frontend/node_context.h"
#include "estuary/frontend/translation_helpers.h"
#include "estuary/frontend/translator_table.h"

namespace estuary::mindspore_frontend {

using Results = std::vector<Value*>;

// A PRIMITIVE op's attribute read through the argument helpers: no argument has this index,
// so they fall back to the attribute of the name given.
constexpr size_t kAttributeOnly = 1000;

// Argument k as a value (its first, for a tuple), or nullptr when absent (None).
Value* arg(NodeContext& node, size_t k);
Value* requiredArg(NodeContext& node, size_t k, std::string_view name);
// The values of a tuple argument (Concat's tensors).
std::vector<Value*> tupleArg(NodeContext& node, size_t k, std::string_view name);
// Argument k known while translating: a constant, or a value folded from constants and
// static shapes. nullopt when the argument is absent or None.
std::optional<std::vector<int64_t>> optionalInts(NodeContext& node, size_t k, std::string_view name);
std::vector<int64_t> intsArg(NodeContext& node, size_t k, std::string_view name);
int64_t intArg(NodeContext& node, size_t k, std::string_view name);
double floatArg(NodeContext& node, size_t k, std::string_view name);
bool boolArg(NodeContext& node, size_t k, std::string_view name);


void addNnTranslators(TranslatorTable& table);
void addMathTranslators(TranslatorTable& table);
void addArrayTranslators(TranslatorTable& table);
void addGraphTranslators(TranslatorTable& table);

// Every translation, built once.
const TranslatorTable& msTranslators();

}  // namespace estuary::mindspore_frontend
