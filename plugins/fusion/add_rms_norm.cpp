// Plugin fusion_add_rms_norm: fuses a residual Add followed by RMSNormalization into one
// estuary::AddRMSNorm with two outputs, the normalized value and the sum, so that other
// users of the sum (the next residual connection) read it from the fused op.
//
// Pass fuse_add_rms_norm, options:
//   last_dims: [4096, 8192]    fuse only where the sum's last dimension is one of these
//   last_dim_multiple_of: 16   fuse only where it is a multiple of this
// Either restriction needs the sum's last dimension to be known statically, as a kernel
// specialised for some hidden sizes would (cf. the register_replacement example of
// npugraph_ex, which checks the input's last dimension before fusing).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "add_rms_norm.h"
#include "estuary/ops/inference_helpers.h"
#include "estuary/ops/schema.h"
#include "estuary/pass/pass.h"
#include "estuary/plugin/plugin.h"
#include "estuary/rewrite/pattern_pass.h"
#include "estuary/support/error.h"

namespace estuary {
namespace {

constexpr const char* kPassName = "fuse_add_rms_norm";
// ONNX RMSNormalization's default epsilon.
constexpr double kDefaultEpsilon = 1e-5;

void inferAddRmsNorm(InferenceContext& context) {
  Shape sum = broadcastShapes(context, {context.inputShape(0), context.inputShape(1)});
  if (sum.isRanked()) {
    size_t axis = normalizeAxis(context, context.intAttr("axis"), sum.rank(), "attribute 'axis'");
    const Shape& gamma = context.inputShape(2);
    size_t normalized = sum.rank() - axis;
    if (gamma.isRanked()) {
      if (gamma.rank() > normalized) {
        context.fail("gamma ", gamma.str(), " has more dimensions than the normalized part of ",
                     sum.str(), " (from axis ", axis, ")");
      }
      for (size_t i = 1; i <= gamma.rank(); ++i) {
        const Dim& g = gamma[gamma.rank() - i];
        const Dim& x = sum[sum.rank() - i];
        if (g.isStatic() && x.isStatic() && g.value() != 1 && g.value() != x.value()) {
          context.fail("gamma ", gamma.str(), " does not broadcast to the normalized part of ",
                       sum.str());
        }
      }
    }
  }
  context.setOutputShape(0, sum);
  context.setOutputShape(1, sum);
}

OpSchema addRmsNormSchema() {
  return OpSchema("AddRMSNorm", "estuary")
      .doc("x_sum = x1 + x2 (ONNX Add broadcasting); y = RMSNormalization(x_sum, gamma) over "
           "the axes [axis, rank), computed in f32 as ONNX RMSNormalization with stash_type 1: "
           "y = x_sum / sqrt(mean(x_sum^2) + epsilon) * gamma.")
      .input("x1", "T")
      .input("x2", "T")
      .input("gamma", "V")
      .output("y", "V")
      .output("x_sum", "T")
      .attr("epsilon", AttrKind::Float, kDefaultEpsilon)
      .attr("axis", AttrKind::Int, -1)
      // f32 only: the fusion makes it from f32 graphs and its one kernel is f32, so a precision
      // mode that moves the graph to 16 bits keeps it in f32 rather than leaving it unrunnable.
      .typeConstraint("T", {DType::F32})
      .typeConstraint("V", {DType::F32})
      .inference(inferAddRmsNorm);
}

// Which last dimensions the pass may fuse.
struct ShapeRestriction {
  std::vector<int64_t> last_dims;  // empty: any
  int64_t multiple_of = 0;         // 0: any

  bool restricts() const { return !last_dims.empty() || multiple_of > 0; }
  bool allows(const Shape& shape) const {
    if (!restricts()) return true;
    if (!shape.isRanked() || shape.rank() == 0 || !shape[shape.rank() - 1].isStatic()) return false;
    int64_t last = shape[shape.rank() - 1].value();
    if (!last_dims.empty() &&
        std::find(last_dims.begin(), last_dims.end(), last) == last_dims.end()) {
      return false;
    }
    return multiple_of <= 0 || last % multiple_of == 0;
  }
};

ShapeRestriction readRestriction(const PassOptions& options) {
  ShapeRestriction restriction;
  for (const std::string& text : options.getStringList("last_dims")) {
    char* end = nullptr;
    long long value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || value <= 0) {
      raise("pass '", kPassName, "': option 'last_dims' takes positive integers, got '", text, "'");
    }
    restriction.last_dims.push_back(value);
  }
  restriction.multiple_of = options.getInt("last_dim_multiple_of");
  if (restriction.multiple_of < 0) {
    raise("pass '", kPassName, "': option 'last_dim_multiple_of' must be 0 (off) or positive, got ",
          restriction.multiple_of);
  }
  return restriction;
}

// What the kernel (add_rms_norm_kernel.cpp) computes: f32 addends of one shape, no
// broadcasting, and an f32 gamma of exactly the normalized dims. Anything else stays an Add and
// an RMSNormalization, which run at any dtype the CPU device has kernels for.
bool kernelTakes(const Value* x1, const Value* x2, const Value* gamma, const Attribute* axis_attr) {
  if (x1->dtype() != DType::F32 || x2->dtype() != DType::F32 || gamma->dtype() != DType::F32) return false;
  const Shape& sum = x1->shape();
  if (!sum.isRanked() || !gamma->shape().isRanked() || !(sum == x2->shape())) return false;
  int64_t rank = static_cast<int64_t>(sum.rank());
  int64_t axis = axis_attr ? axis_attr->asInt() : -1;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || static_cast<int64_t>(gamma->shape().rank()) != rank - axis) return false;
  for (int64_t d = axis; d < rank; ++d) {
    if (!(gamma->shape()[static_cast<size_t>(d - axis)] == sum[static_cast<size_t>(d)])) return false;
  }
  return true;
}

Pattern addRmsNormPattern(ShapeRestriction restriction) {
  Pattern pattern(kPassName);
  PatternValue x1 = pattern.capture("x1");
  PatternValue x2 = pattern.capture("x2");
  PatternValue gamma = pattern.capture("gamma");
  PatternNode add = pattern.node("Add", {x1, x2}).name("add");
  // AddRMSNorm computes in f32, as RMSNormalization does with its default stash_type.
  PatternNode norm = pattern.node("RMSNormalization", {add, gamma}).name("norm").attrWhere(
      "stash_type", [](const Attribute* stash) {
        return !stash || (stash->kind() == AttrKind::Type && stash->asType() == DType::F32) ||
               (stash->kind() == AttrKind::Int && stash->asInt() == 1);
      });
  pattern.results({norm, add});
  pattern.check([restriction, add, norm, x1, x2, gamma](const Match& match) {
    return restriction.allows(match[add]->shape()) && kernelTakes(match[x1], match[x2], match[gamma], match.attr(norm, "axis"));
  });
  pattern.replace([x1, x2, gamma, norm](const Match& match, Rewriter& rewriter) {
    Node* fused = rewriter.create("estuary::AddRMSNorm", {match[x1], match[x2], match[gamma]}, 2);
    const Attribute* epsilon = match.attr(norm, "epsilon");
    fused->setAttr("epsilon", epsilon ? epsilon->asFloat() : kDefaultEpsilon);
    const Attribute* axis = match.attr(norm, "axis");
    fused->setAttr("axis", axis ? axis->asInt() : int64_t{-1});
    fused->setName(match.node(norm)->name());
    return std::vector<Value*>{fused->output(0), fused->output(1)};
  });
  return pattern;
}

void registerFusion(PluginRegistrar& registrar) {
  registrar.addOp(addRmsNormSchema());
  PassInfo info;
  info.name = kPassName;
  info.description =
      "Fuses Add followed by RMSNormalization into estuary::AddRMSNorm (normalized value and "
      "sum); other users of the sum read the fused op's x_sum output.";
  info.options = {
      {"last_dims", OptionSpec::Kind::StringList, std::vector<std::string>{},
       "fuse only where the sum's last dimension is one of these sizes (empty: any)"},
      {"last_dim_multiple_of", OptionSpec::Kind::Int, int64_t{0},
       "fuse only where the sum's last dimension is a multiple of this (0: any)"},
  };
  info.factory = [](const PassOptions& options) -> std::unique_ptr<Pass> {
    PatternSet patterns;
    patterns.add(addRmsNormPattern(readRestriction(options)));
    return std::make_unique<PatternPass>(std::move(patterns));
  };
  registrar.addPass(std::move(info));
  registerAddRmsNormKernel(registrar);
}

}  // namespace
}  // namespace estuary

ESTUARY_PLUGIN("fusion_add_rms_norm", "0.1.0",
               "Fuses Add + RMSNormalization into estuary::AddRMSNorm", estuary::registerFusion)
