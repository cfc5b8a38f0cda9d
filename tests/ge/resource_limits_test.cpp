// Resource limits (estuary/support/limits.h): huge static shapes refused at build, huge
// shapes that only a run reveals refused before anything is allocated, the context still
// usable afterwards, and the plan cache bounded.
#include <gtest/gtest.h>

#include "estuary/ge/model.h"
#include "estuary/support/limits.h"
#include "estuary/text/parser.h"

namespace estuary::ge {
namespace {

#define EXPECT_RAISES(statement, ErrorType, piece)                                              \
  try {                                                                                         \
    statement;                                                                                  \
    ADD_FAILURE() << "no error, expected one saying '" << (piece) << "'";                       \
  } catch (const ErrorType& error) {                                                            \
    EXPECT_NE(std::string(error.what()).find(piece), std::string::npos) << error.what();        \
  }

std::shared_ptr<CompiledModel> build(const char* text, const ResourceLimits& limits = ResourceLimits::forThisMachine()) {
  BuildOptions options;
  options.num_threads = 1;
  options.limits = limits;
  return CompiledModel::build(*parseGraph(text), options);
}

TEST(ResourceLimits, MachineDefaultsComeFromItsMemory) {
  const size_t memory = availableMemoryBytes();
  EXPECT_GT(memory, size_t{64} << 20);
  ResourceLimits limits = ResourceLimits::forThisMachine();
  EXPECT_EQ(limits.tensor_bytes, memory / 2);
  EXPECT_EQ(limits.run_bytes, memory);
  EXPECT_LE(limits.tensor_bytes, limits.plan_bytes);
  EXPECT_LE(limits.plan_bytes, limits.run_bytes);
}

TEST(ResourceLimits, SizesAreCountedWithoutOverflow) {
  const int64_t fine[] = {1024, 1024};
  EXPECT_EQ(checkedByteSize(fine, 2, 4), std::optional<size_t>(4u << 20));
  const int64_t huge[] = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_EQ(checkedByteSize(huge, 2, 4), std::nullopt);
  const int64_t negative[] = {-1};
  EXPECT_EQ(checkedByteSize(negative, 1, 4), std::nullopt);
  EXPECT_RAISES(checkLimit("value 'v'", std::nullopt, 100, "tensor"), ResourceLimitError,
                "value 'v' needs more than 16 EiB, more than the tensor limit of 100 B");
}

TEST(ResourceLimits, ParsesAndFormatsSizes) {
  EXPECT_EQ(parseByteSize("4096"), 4096u);
  EXPECT_EQ(parseByteSize("512MB"), 512000000u);
  EXPECT_EQ(parseByteSize("12GiB"), size_t{12} << 30);
  EXPECT_EQ(parseByteSize("1.5 KiB"), 1536u);
  EXPECT_EQ(parseByteSize("2t"), size_t{2000000000000});
  for (const char* bad : {"", "GiB", "12 apples", "-5", "1e30"}) {
    EXPECT_THROW(parseByteSize(bad), Error) << bad;
  }
  EXPECT_EQ(formatByteSize(312), "312 B");
  EXPECT_EQ(formatByteSize(1536), "1.5 KiB");
  EXPECT_EQ(formatByteSize(4.0 * (1ull << 40)), "4.0 TiB");
}

TEST(ResourceLimits, AHugeStaticInputIsRefusedAtBuild) {
  EXPECT_RAISES(build("graph @g(%x: f32[1099511627776]) {\n  %y = Relu(%x)\n  return %y\n}"), ResourceLimitError,
                "input 'x' f32[1099511627776] needs 4.0 TiB, more than the tensor limit");
}

TEST(ResourceLimits, AHugeConstantOfShapeOrExpandIsRefusedAtBuild) {
  EXPECT_RAISES(build("graph @g() {\n"
                      "  %s = Constant() {value = tensor<i64[2]> [1048576, 1048576]}\n"
                      "  %y = ConstantOfShape(%s)\n"
                      "  return %y\n}"),
                ResourceLimitError, "value 'y' f32[1048576,1048576] needs 4.0 TiB");
  EXPECT_RAISES(build("graph @g(%x: f32[1]) {\n"
                      "  %s = Constant() {value = tensor<i64[3]> [1048576, 1048576, 1048576]}\n"
                      "  %y = Expand(%x, %s)\n"
                      "  return %y\n}"),
                ResourceLimitError, "(Expand): value 'y' f32[1048576,1048576,1048576] needs 4.0 EiB");
  // Sizes past 64 bits are refused too, not wrapped around.
  EXPECT_RAISES(build("graph @g(%x: f32[1]) {\n"
                      "  %s = Constant() {value = tensor<i64[3]> [4294967296, 4294967296, 4294967296]}\n"
                      "  %y = Expand(%x, %s)\n"
                      "  return %y\n}"),
                ResourceLimitError, "needs more than 16 EiB");
}

// The Expand's shape is an input: only a run says how large the result is.
constexpr const char* kExpandByInput =
    "graph @g(%x: f32[1], %s: i64[2]) {\n  %y = Expand(%x, %s)\n  return %y\n}";

TEST(ResourceLimits, AHugeShapeGivenAtRunIsRefusedBeforeAllocatingAndTheContextRunsOn) {
  auto model = build(kExpandByInput);
  auto context = model->createContext();
  float x = 2.5f;
  std::vector<int64_t> huge{1 << 20, 1 << 20}, small{2, 3};
  auto inputs = [&](std::vector<int64_t>& shape) {
    return std::vector<HostTensor>{HostTensor::of(TensorDesc::of(DType::F32, {1}), &x),
                                   HostTensor::of(TensorDesc::of(DType::I64, {2}), shape.data())};
  };
  EXPECT_RAISES(context->run(inputs(huge)), ResourceLimitError, "f32[1048576,1048576] needs 4.0 TiB");
  const std::vector<HostTensor>& outputs = context->run(inputs(small));
  ASSERT_EQ(outputs[0].desc().dimVector(), (std::vector<int64_t>{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(static_cast<const float*>(outputs[0].data)[i], 2.5f);
  // And again: the refusal left nothing bound that a later run could pick up.
  EXPECT_RAISES(context->run(inputs(huge)), ResourceLimitError, "needs 4.0 TiB");
}

TEST(ResourceLimits, PlanAndRunLimitsAreTheUsers) {
  // 64 x 64 f32 intermediates: 16 KiB each.
  const char* text = "graph @g(%x: f32[64,64]) {\n  %a = Relu(%x)\n  %b = Exp(%a)\n  %c = Add(%a, %b)\n  return %c\n}";
  ResourceLimits limits = ResourceLimits::forThisMachine();
  limits.plan_bytes = 1024;
  EXPECT_RAISES(build(text, limits), ResourceLimitError, "(its activation memory) needs 16.0 KiB, more than the plan limit of 1.0 KiB");
  limits = ResourceLimits::forThisMachine();
  limits.run_bytes = 20 << 10;
  EXPECT_RAISES(build(text, limits), ResourceLimitError, "(activations and outputs of a run) needs 32.0 KiB, more than the run limit");
  limits.tensor_bytes = 8 << 10;
  limits.run_bytes = ResourceLimits::forThisMachine().run_bytes;
  EXPECT_RAISES(build(text, limits), ResourceLimitError, "input 'x' f32[64,64] needs 16.0 KiB, more than the tensor limit of 8.0 KiB");
  limits = ResourceLimits::forThisMachine();
  EXPECT_NO_THROW(build(text, limits));
}

TEST(ResourceLimits, ThePlanCacheKeepsTheMostRecentlyUsedPlans) {
  ResourceLimits limits = ResourceLimits::forThisMachine();
  limits.plans = 2;
  auto model = build("graph @g(%x: f32[n]) {\n  %y = Neg(%x)\n  return %y\n}", limits);
  auto context = model->createContext();
  auto plansBuilt = [&] {
    size_t count = 0;
    for (const BuildReport::Stage& stage : model->report().stages) count += stage.name.rfind("plan ", 0) == 0;
    return count;
  };
  std::vector<float> data(8, 1.0f);
  auto run = [&](int64_t n) {
    const auto& outputs = context->run({HostTensor::of(TensorDesc::of(DType::F32, {n}), data.data())});
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(static_cast<const float*>(outputs[0].data)[i], -1.0f);
  };
  run(2), run(3), run(2), run(4);  // 4 takes the place of 3, the least recently used
  EXPECT_EQ(plansBuilt(), 3u);
  run(2);
  EXPECT_EQ(plansBuilt(), 3u);
  run(3);  // dropped, so planned again
  EXPECT_EQ(plansBuilt(), 4u);
}

TEST(ResourceLimits, ARefusedInputIsRefusedAgainNotRunWithThePlanBefore) {
  auto model = build("graph @g(%x: f32[2,n]) {\n  %y = Neg(%x)\n  return %y\n}");
  auto context = model->createContext();
  std::vector<float> data(64, 1.0f);
  context->run({HostTensor::of(TensorDesc::of(DType::F32, {2, 3}), data.data())});
  for (int attempt = 0; attempt < 2; ++attempt) {
    EXPECT_RAISES(context->run({HostTensor::of(TensorDesc::of(DType::F32, {3, 3}), data.data())}), InputValueError,
                  "expected f32[2,n], got f32[3,3]");
  }
}

}  // namespace
}  // namespace estuary::ge
