#pragma once
// The Paddle translators: one small function per op, in tables keyed by (domain, op): PIR
// ops in domain "pd_op" ("pd_op::conv2d"), legacy ProgramDesc ops in the default domain
// ("conv2d", "elementwise_add"). Where the two forms mean the same, one translator serves
// both through the helpers below: PIR passes operands by position and many values that
// legacy programs keep as attributes (a reshape's shape, a reduction's axes, a scale's
// factor) arrive as operands made by pd_op.full / full_int_array; legacy ops name their
// inputs by slot ("Input", "Filter").
#include <optional>
#include <string_view>
#include <vector>

#include "estuary/frontend/node_context.h"
#include "estuary/frontend/translation_helpers.h"
#include "estuary/frontend/translator_table.h"

namespace estuary::paddle_frontend {

using Results = std::vector<Value*>;

// Whether the node is a PIR op (else a legacy one).
bool isPir(const NodeContext& node);

// Input `pir_position` of a PIR op, or the (first) argument of slot `legacy_slot`; nullptr
// when absent.
Value* in(NodeContext& node, size_t pir_position, std::string_view legacy_slot);
Value* requiredIn(NodeContext& node, size_t pir_position, std::string_view legacy_slot);

// Integers a PIR op takes as operand `pir_position` (folded while translating) and a legacy
// op as attribute `legacy_attr`, or from its tensor slot `legacy_tensor_slot` when that is
// given instead; nullopt when neither is there.
std::optional<std::vector<int64_t>> intsOf(NodeContext& node, size_t pir_position, std::string_view legacy_attr,
                                           std::string_view legacy_tensor_slot = {});
// The same for a scalar (a PIR pd_op.full operand, a legacy float attribute).
std::optional<double> scalarOf(NodeContext& node, size_t pir_position, std::string_view legacy_attr);

Value* int64s(NodeContext& node, Value* value);

void addNnTranslators(TranslatorTable& table);
void addMathTranslators(TranslatorTable& table);
void addArrayTranslators(TranslatorTable& table);
void addGraphTranslators(TranslatorTable& table);

// Every translation, built once.
const TranslatorTable& pdTranslators();

}  // namespace estuary::paddle_frontend
