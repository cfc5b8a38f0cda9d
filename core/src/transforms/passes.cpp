#include "estuary/transforms/passes.h"

#include "estuary/rewrite/pattern_pass.h"
#include "estuary/transforms/attention_recognition.h"
#include "estuary/transforms/canonicalize.h"
#include "estuary/transforms/cse.h"
#include "estuary/transforms/dce.h"
#include "estuary/transforms/einsum_lowering.h"
#include "estuary/transforms/precision.h"
#include "estuary/transforms/rms_norm_recognition.h"
#include "estuary/transforms/rotary_recognition.h"
#include "estuary/transforms/shape_inference.h"
#include "estuary/transforms/transpose_sinking.h"

namespace estuary {

void registerCorePasses(PassRegistry& registry) {
  registry.add(canonicalizePass());
  registry.add(commonSubexpressionEliminationPass());
  registry.add(deadCodeEliminationPass());
  registry.add(shapeInferencePass());
  registry.add(transposeSinkingPass());
  registry.add(einsumLoweringPass());
  registry.add(rmsNormRecognitionPass());
  registry.add(attentionRecognitionPass());
  registry.add(rotaryRecognitionPass());
  registry.add(precisionPass());
  registerPatternPasses(registry);
}

}  // namespace estuary
