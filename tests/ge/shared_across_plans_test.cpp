// Packed weights made once per model (shared_across_plans.h): the plans a model builds for
// other input shapes get the same buffer, which lives while a plan holds it and computes
// what a plan's own copy computes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "cpu/cpu_device.h"
#include "cpu/nn_support.h"
#include "estuary/ge/model.h"
#include "estuary/text/parser.h"
#include "shared_across_plans.h"

namespace estuary::ge {
namespace {

TEST(SharedAcrossPlans, KeepsAnObjectWhileHeldAndMakesItAgainAfter) {
  SharedAcrossPlans shared;
  int made = 0;
  auto make = [&made] {
    ++made;
    return std::static_pointer_cast<const void>(std::make_shared<const int>(made));
  };
  std::shared_ptr<const void> first = shared.getOrMake("w", make), again = shared.getOrMake("w", make);
  EXPECT_EQ(first, again);
  EXPECT_EQ(made, 1);
  EXPECT_NE(shared.getOrMake("other", make), first);
  EXPECT_EQ(made, 2);
  first.reset();
  again.reset();
  EXPECT_EQ(*std::static_pointer_cast<const int>(shared.getOrMake("w", make)), 3);
}

// x[rows,32] by W[32,1024]: W's rows lie 4 KiB apart, so a plan reads a copy with padded rows.
std::string wideProductText(const std::string& rows) {
  std::ostringstream weights;
  for (int64_t i = 0; i < 32 * 1024; ++i) weights << (i ? ", " : "") << ((i * 29) % 23) * 0.03125 - 0.34;
  return "graph @wide(%x: f32[" + rows + ",32]) {\n"
         "  %w = Constant() {value = tensor<f32[32,1024]> [" + weights.str() + "]} : f32[32,1024]\n"
         "  %y = MatMul(%x, %w) : f32[" + rows + ",1024]\n"
         "  return %y\n"
         "}\n";
}

TEST(SharedAcrossPlans, PlansForOtherShapesGetTheSamePackedWeights) {
  auto graph = parseGraph(wideProductText("8"));
  Node* product = nullptr;
  for (Node* node : graph->nodes()) {
    if (node->opType() == "MatMul") product = node;
  }
  ASSERT_NE(product, nullptr);
  const Tensor& weights = product->input(1)->producer()->attr("value")->asTensor();
  const dnnl::engine& engine = static_cast<const cpu::CpuDevice&>(cpuDevice()).engine();
  const dnnl::memory::desc plain({32, 1024}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
  const dnnl::memory::desc padded({32, 1024}, dnnl::memory::data_type::f32, dnnl::memory::dims{1040, 1});
  const dnnl::memory::desc blocked({32, 1024}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::BA16a64b4a);

  SharedAcrossPlans shared;
  auto contextFor = [&](int64_t rows, SharedAcrossPlans* store) {
    KernelBuildContext context(*product, {TensorDesc::of(DType::F32, {rows, 32}), TensorDesc::of(DType::F32, {32, 1024})},
                               {TensorDesc::of(DType::F32, {rows, 1024})}, {nullptr, &weights}, cpuDevice(), 1);
    context.setSharedAcrossPlans(store);
    return context;
  };
  auto one = cpu::packedConstant(contextFor(1, &shared), engine, weights, plain, padded);
  auto eight = cpu::packedConstant(contextFor(8, &shared), engine, weights, plain, padded);
  EXPECT_EQ(one, eight);
  auto other_layout = cpu::packedConstant(contextFor(8, &shared), engine, weights, plain, blocked);
  EXPECT_NE(other_layout->data(), one->data());
  auto own = cpu::packedConstant(contextFor(8, nullptr), engine, weights, plain, padded);
  EXPECT_NE(own->data(), one->data());
  ASSERT_EQ(own->size(), one->size());
  EXPECT_EQ(std::memcmp(own->data(), one->data(), one->size()), 0);
  // At a cache line, where oneDNN's kernels read packed rows fastest (ConstantBytes).
  for (const auto& packed : {one, other_layout, own}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(packed->data()) % 64, 0u);
  }
}

// Estuary's own channels-last convolutions (direct and Winograd) pack or transform their
// weights once per model too: a Winograd F(4x4) copy is 4x the kernel's weights.
TEST(SharedAcrossPlans, OwnConvolutionsPackTheirWeightsOncePerModel) {
  auto graph = parseGraph(
      "graph @c(%x: f32[8,16,14,14], %w: f32[16,16,3,3]) {\n"
      "  %y = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[8,16,14,14]\n"
      "  return %y\n"
      "}\n");
  Node* conv = *graph->nodes().begin();
  const Tensor weights = Tensor::allocate(DType::F32, {16, 16, 3, 3});
  SharedAcrossPlans shared;
  auto contextFor = [&](int64_t batch, SharedAcrossPlans* store) {
    KernelBuildContext context(*conv,
                               {TensorDesc::of(DType::F32, {batch, 16, 14, 14}), TensorDesc::of(DType::F32, {16, 16, 3, 3})},
                               {TensorDesc::of(DType::F32, {batch, 16, 14, 14})}, {nullptr, &weights}, cpuDevice(), 1);
    context.setSharedAcrossPlans(store);
    return context;
  };
  int packed = 0;
  auto pack = [&packed] { return std::vector<float>(64, static_cast<float>(++packed)); };
  auto one = cpu::packedWeights(contextFor(1, &shared), weights, "winograd", pack);
  auto eight = cpu::packedWeights(contextFor(8, &shared), weights, "winograd", pack);
  EXPECT_EQ(one, eight);
  EXPECT_EQ(packed, 1);
  auto direct = cpu::packedWeights(contextFor(8, &shared), weights, "direct", pack);
  EXPECT_NE(direct, one);
  auto own = cpu::packedWeights(contextFor(8, nullptr), weights, "winograd", pack);
  EXPECT_NE(own, one);
  EXPECT_EQ(packed, 3);
  EXPECT_EQ((*own)[0], 3.f);
}

// A model with a symbolic batch builds a plan per batch size; the plans after the first
// read the first one's padded weights, and every row comes out as it does alone.
TEST(SharedAcrossPlans, APlanReadingAnotherPlansWeightsComputesTheSame) {
  auto model = CompiledModel::build(*parseGraph(wideProductText("batch")), BuildOptions{});
  auto rowsOf = [&](int64_t rows) {
    std::vector<float> x(static_cast<size_t>(rows * 32));
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.07f * static_cast<float>(i % 32));
    auto context = model->createContext();
    const HostTensor& y = context->run({HostTensor::of(TensorDesc::of(DType::F32, {rows, 32}), x.data())})[0];
    return std::vector<float>(static_cast<const float*>(y.data), static_cast<const float*>(y.data) + rows * 1024);
  };
  const std::vector<float> one = rowsOf(1);
  for (int64_t rows : {8, 16}) {
    const std::vector<float> many = rowsOf(rows);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < 1024; ++j) ASSERT_NEAR(many[r * 1024 + j], one[j], 1e-4f) << rows << " rows, " << r << "," << j;
    }
  }
}

}  // namespace
}  // namespace estuary::ge
