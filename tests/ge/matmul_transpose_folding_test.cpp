// foldTransposesIntoMatMuls: a MatMul whose right operand is a Transpose of the last two
// axes reads the Transpose's input through swapped strides; checked against a direct
// product with B[k][n] = stored[n][k].
#include <gtest/gtest.h>

#include <random>

#include "estuary/ge/model.h"
#include "estuary/text/parser.h"

namespace estuary::ge {
namespace {

struct Result {
  std::vector<double> values;
  BuildReport report;
};

template <typename T>
Result run(const std::string& text, std::vector<std::vector<T>> inputs) {
  auto graph = parseGraph(text);
  auto model = CompiledModel::build(*graph, BuildOptions{});
  auto context = model->createContext();
  std::vector<HostTensor> tensors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    tensors.push_back(HostTensor::of(TensorDesc::of(model->inputs()[i].type), inputs[i].data()));
  }
  const auto& outputs = context->run(tensors);
  const T* data = static_cast<const T*>(outputs[0].data);
  return {std::vector<double>(data, data + outputs[0].desc().numElements()), model->report()};
}

template <typename T>
std::vector<T> randomValues(size_t count, uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<double> normal;
  std::vector<T> values(count);
  for (T& v : values) v = static_cast<T>(normal(random));
  return values;
}

// y[p][i][j] = sum_k a[p][i][k] * stored[p or 0][j][k] (+ bias[j]); `b_batched` says
// whether the stored operand has the batch dims or broadcasts.
template <typename T>
std::vector<double> expected(const std::vector<T>& a, const std::vector<T>& stored, int64_t batch, int64_t m,
                             int64_t n, int64_t k, bool b_batched, const std::vector<T>* bias = nullptr) {
  std::vector<double> y(batch * m * n);
  for (int64_t p = 0; p < batch; ++p) {
    const T* b = stored.data() + (b_batched ? p * n * k : 0);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = bias ? static_cast<double>((*bias)[j]) : 0.0;
        for (int64_t x = 0; x < k; ++x) sum += static_cast<double>(a[(p * m + i) * k + x]) * b[j * k + x];
        y[(p * m + i) * n + j] = sum;
      }
    }
  }
  return y;
}

void expectClose(const std::vector<double>& actual, const std::vector<double>& reference, double tolerance) {
  ASSERT_EQ(actual.size(), reference.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], reference[i], tolerance * (1 + std::abs(reference[i]))) << "element " << i;
  }
}

TEST(TransposeFolding, AttentionScoresReadKeysTransposed) {
  // q @ k^T as attention exports it: a 4-D Transpose of the last two axes.
  const char* text = R"(graph @g(%q: f32[2,3,5,16], %k: f32[2,3,7,16]) {
  %kt = Transpose(%k) {perm = [0, 1, 3, 2]} : f32[2,3,16,7]
  %s = MatMul(%q, %kt) : f32[2,3,5,7]
  return %s
})";
  auto q = randomValues<float>(2 * 3 * 5 * 16, 1), k = randomValues<float>(2 * 3 * 7 * 16, 2);
  Result result = run<float>(text, {q, k});
  EXPECT_EQ(result.report.folded_transposes, 1u);
  EXPECT_EQ(result.report.ops_after.count("Transpose"), 0u);
  expectClose(result.values, expected(q, k, 6, 5, 7, 16, true), 1e-5);
}

TEST(TransposeFolding, BroadcastWeightWithBiasEpilogue) {
  // x @ W^T + b with a 2-D W shared by the batch (a tied LM head); the bias stays fused.
  const char* text = R"(graph @g(%x: f32[2,4,24], %w: f32[12,24]) {
  %b = Constant() {value = tensor<f32[12]> [0.5, -1.0, 0.25, 2.0, -0.75, 1.5, 0.0, -2.5, 3.0, 0.125, -0.5, 1.0]} : f32[12]
  %wt = Transpose(%w) {perm = [1, 0]} : f32[24,12]
  %p = MatMul(%x, %wt) : f32[2,4,12]
  %y = Add(%p, %b) : f32[2,4,12]
  return %y
})";
  const std::vector<float> b{0.5f, -1.0f, 0.25f, 2.0f, -0.75f, 1.5f, 0.0f, -2.5f, 3.0f, 0.125f, -0.5f, 1.0f};
  auto x = randomValues<float>(2 * 4 * 24, 3), w = randomValues<float>(12 * 24, 4);
  Result result = run<float>(text, {x, w});
  EXPECT_EQ(result.report.folded_transposes, 1u);
  EXPECT_EQ(result.report.fused_epilogues, 1u);
  expectClose(result.values, expected(x, w, 8, 1, 12, 24, false, &b), 1e-5);
}

TEST(TransposeFolding, OwnKernelForF64) {
  const char* text = R"(graph @g(%a: f64[3,6], %s: f64[5,6]) {
  %st = Transpose(%s) {perm = [1, 0]} : f64[6,5]
  %y = MatMul(%a, %st) : f64[3,5]
  return %y
})";
  auto a = randomValues<double>(3 * 6, 6), s = randomValues<double>(5 * 6, 7);
  Result result = run<double>(text, {a, s});
  EXPECT_EQ(result.report.folded_transposes, 1u);
  expectClose(result.values, expected(a, s, 1, 3, 5, 6, false), 1e-12);
}

TEST(TransposeFolding, OtherPermutationsAreNotFolded) {
  // Swapping the first two axes of a 3-D operand is not a transposed matrix.
  const char* text = R"(graph @g(%a: f32[4,2,3], %s: f32[3,4,5]) {
  %st = Transpose(%s) {perm = [1, 0, 2]} : f32[4,3,5]
  %y = MatMul(%a, %st) : f32[4,2,5]
  return %y
})";
  auto a = randomValues<float>(4 * 2 * 3, 8), s = randomValues<float>(4 * 3 * 5, 9);
  Result result = run<float>(text, {a, s});
  EXPECT_EQ(result.report.folded_transposes, 0u);
  // y[p] = a[p] @ st[p], st[p][i][j] = s[i][p][j].
  std::vector<double> reference(4 * 2 * 5);
  for (int p = 0; p < 4; ++p) {
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 5; ++j) {
        double sum = 0;
        for (int x = 0; x < 3; ++x) sum += static_cast<double>(a[(p * 2 + i) * 3 + x]) * s[(x * 4 + p) * 5 + j];
        reference[(p * 2 + i) * 5 + j] = sum;
      }
    }
  }
  expectClose(result.values, reference, 1e-5);
}

}  // namespace
}  // namespace estuary::ge
