// Normalizations (batch, instance, group, layer, RMS), the softmax family and Dropout.
#include "ops/common.h"
#include "ops/register.h"

namespace estuary {
namespace {

// Input `input` must be a vector of `channels` elements.
void checkPerChannel(InferenceContext& context, size_t input, const Dim& channels) {
  if (!context.hasInput(input)) return;
  checkRank(context, input, 1, 1);
  const Shape& shape = context.inputShape(input);
  if (shape.isRanked()) {
    unifyDims(context, shape[0], channels,
              "size of input " + std::to_string(input) + " '" + context.schema().inputs()[input].name +
                  "' and the channels of X");
  }
}

Dim channelsOf(const InferenceContext& context) {
  const Shape& x = context.inputShape(0);
  return x.isRanked() && x.rank() >= 2 ? x[1] : Dim();
}

void inferBatchNormalization(InferenceContext& context) {
  checkRank(context, 0, 2, SIZE_MAX);
  Dim channels = channelsOf(context);
  for (size_t i = 1; i < 5; ++i) checkPerChannel(context, i, channels);
  sameShapeAsFirstInput(context);
  context.setOutputShape(1, Shape({channels}));
  context.setOutputShape(2, Shape({channels}));
}

void inferPerChannelNormalization(InferenceContext& context) {
  checkRank(context, 0, 2, SIZE_MAX);
  Dim channels = channelsOf(context);
  for (size_t i = 1; i < context.numInputs(); ++i) checkPerChannel(context, i, channels);
  sameShapeAsFirstInput(context);
}

void inferLayerNormalization(InferenceContext& context) {
  sameShapeAsFirstInput(context);
  const Shape& x = context.inputShape(0);
  if (!x.isRanked()) return;
  size_t axis = normalizeAxis(context, context.intAttr("axis"), x.rank(), "attribute 'axis'");
  std::vector<Dim> stats = x.dims();
  for (size_t d = axis; d < stats.size(); ++d) stats[d] = Dim(1);
  DType stash = context.typeAttr("stash_type");
  context.setOutputType(1, TensorType(stash, Shape(stats)));
  context.setOutputType(2, TensorType(stash, Shape(std::move(stats))));
}

void inferRmsNormalization(InferenceContext& context) {
  const Shape& x = context.inputShape(0);
  if (x.isRanked()) normalizeAxis(context, context.intAttr("axis"), x.rank(), "attribute 'axis'");
  context.setOutputShape(0, x);
}

void inferSoftmax(InferenceContext& context) {
  const Shape& x = context.inputShape(0);
  if (x.isRanked()) normalizeAxis(context, context.intAttr("axis"), x.rank(), "attribute 'axis'");
  sameShapeAsFirstInput(context);
}

void inferDropout(InferenceContext& context) {
  checkRank(context, 1, 0, 0);
  checkRank(context, 2, 0, 0);
  sameShapeAsFirstInput(context);
  context.setOutputShape(1, context.inputShape(0));
}

}  // namespace

void registerNormalizationOps(OpRegistry& registry) {
  registry.add(OpSchema("BatchNormalization")
                   .input("X", "T")
                   .input("scale", "T1")
                   .input("B", "T1")
                   .input("input_mean", "T2")
                   .input("input_var", "T2")
                   .output("Y", "T")
                   .output("running_mean", "T2", Arity::Optional)
                   .output("running_var", "T2", Arity::Optional)
                   .attr("epsilon", AttrKind::Float, 1e-5)
                   .attr("momentum", AttrKind::Float, 0.9)
                   .attr("training_mode", AttrKind::Int, 0)
                   .typeConstraint("T", floatTypes())
                   .typeConstraint("T1", floatTypes())
                   .typeConstraint("T2", floatTypes())
                   .inference(inferBatchNormalization));
  registry.add(OpSchema("InstanceNormalization")
                   .input("input", "T")
                   .input("scale", "T")
                   .input("B", "T")
                   .output("output", "T")
                   .attr("epsilon", AttrKind::Float, 1e-5)
                   .typeConstraint("T", floatTypes())
                   .inference(inferPerChannelNormalization));
  registry.add(OpSchema("GroupNormalization")
                   .input("X", "T")
                   .input("scale", "T")
                   .input("bias", "T")
                   .output("Y", "T")
                   .attr("epsilon", AttrKind::Float, 1e-5)
                   .requiredAttr("num_groups", AttrKind::Int)
                   .attr("stash_type", AttrKind::Type, DType::F32)
                   .typeConstraint("T", floatTypes())
                   .inference([](InferenceContext& context) {
                     int64_t groups = context.intAttr("num_groups");
                     Dim channels = channelsOf(context);
                     if (groups < 1 || (channels.isStatic() && channels.value() % groups != 0)) {
                       context.fail("attribute 'num_groups' is ", groups, ", it must divide the ",
                                    channels.str(), " channels of X");
                     }
                     inferPerChannelNormalization(context);
                   }));
  registry.add(OpSchema("LayerNormalization")
                   .input("X", "T")
                   .input("Scale", "T")
                   .input("B", "T", Arity::Optional)
                   .output("Y", "T")
                   .output("Mean", "U", Arity::Optional)
                   .output("InvStdDev", "U", Arity::Optional)
                   .attr("axis", AttrKind::Int, -1)
                   .attr("epsilon", AttrKind::Float, 1e-5)
                   .attr("stash_type", AttrKind::Type, DType::F32)
                   .typeConstraint("T", floatTypes())
                   .typeConstraint("U", {DType::F32, DType::BF16})
                   .inference(inferLayerNormalization));
  registry.add(OpSchema("RMSNormalization")
                   .input("X", "T")
                   .input("scale", "V")
                   .output("Y", "V")
                   .attr("axis", AttrKind::Int, -1)
                   .attr("epsilon", AttrKind::Float, 1e-5)
                   .attr("stash_type", AttrKind::Type, DType::F32)
                   .typeConstraint("T", floatTypes())
                   .typeConstraint("V", floatTypes())
                   .inference(inferRmsNormalization));
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    registry.add(OpSchema(op)
                     .input("input", "T")
                     .output("output", "T")
                     .attr("axis", AttrKind::Int, -1)
                     .typeConstraint("T", floatTypes())
                     .inference(inferSoftmax));
  }
  registry.add(OpSchema("Dropout")
                   .input("data", "T")
                   .input("ratio", "T1", Arity::Optional)
                   .input("training_mode", "T2", Arity::Optional)
                   .output("output", "T")
                   .output("mask", "T2", Arity::Optional)
                   .attr("seed", AttrKind::Int)
                   .typeConstraint("T", floatTypes())
                   .typeConstraint("T1", floatTypes())
                   .typeConstraint("T2", {DType::Bool})
                   .inference(inferDropout));
}

}  // namespace estuary
