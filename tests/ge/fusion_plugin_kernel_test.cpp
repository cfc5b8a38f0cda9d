#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "estuary/ge/model.h"
#include "estuary/pass/manager.h"
#include "estuary/pass/pipeline.h"
#include "estuary/plugin/loader.h"
#include "estuary/text/parser.h"

namespace estuary::ge {
namespace {

// The fusion plugin brings both the fused op and its CPU kernel: after fuse_add_rms_norm the
// backend runs estuary::AddRMSNorm with the plugin's kernel.
TEST(FusionPluginKernel, FusedGraphRunsAndMatchesTheClosedForm) {
  PluginLoader::global().load("fusion_add_rms_norm");
  auto graph = parseGraph(R"(graph @g(%x: f32[3,8], %r: f32[3,8], %gamma: f32[8]) {
  %s = Add(%x, %r) : f32[3,8]
  %n = RMSNormalization(%s, %gamma) {axis = -1, epsilon = 1e-05} : f32[3,8]
  %next = Add(%s, %n) : f32[3,8]
  return %n, %next
})");
  PassManager manager(parsePassList("fuse_add_rms_norm"));
  manager.run(*graph);
  ASSERT_EQ(graph->firstNode()->qualifiedOpType(), "estuary::AddRMSNorm");

  auto model = CompiledModel::build(*graph);
  ASSERT_NE(model->report().kernels.at(0).find("fusion_add_rms_norm:f32"), std::string::npos)
      << model->report().kernels.at(0);
  std::mt19937 random(3);
  std::normal_distribution<float> normal;
  std::vector<float> x(24), r(24), gamma(8);
  for (float& v : x) v = normal(random);
  for (float& v : r) v = normal(random);
  for (float& v : gamma) v = normal(random);
  auto context = model->createContext();
  const auto& outputs = context->run({HostTensor::of(TensorDesc::of(DType::F32, {3, 8}), x.data()),
                                      HostTensor::of(TensorDesc::of(DType::F32, {3, 8}), r.data()),
                                      HostTensor::of(TensorDesc::of(DType::F32, {8}), gamma.data())});
  const float* norm = static_cast<const float*>(outputs[0].data);
  const float* next = static_cast<const float*>(outputs[1].data);
  for (int row = 0; row < 3; ++row) {
    double squares = 0;
    for (int i = 0; i < 8; ++i) squares += std::pow(x[row * 8 + i] + r[row * 8 + i], 2);
    double scale = 1 / std::sqrt(squares / 8 + 1e-5);
    for (int i = 0; i < 8; ++i) {
      double sum = x[row * 8 + i] + r[row * 8 + i];
      EXPECT_NEAR(norm[row * 8 + i], sum * scale * gamma[i], 1e-5) << row << "," << i;
      EXPECT_NEAR(next[row * 8 + i], sum + sum * scale * gamma[i], 1e-5) << row << "," << i;
    }
  }
}

}  // namespace
}  // namespace estuary::ge
