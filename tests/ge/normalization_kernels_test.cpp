// BatchNormalization (inference and training), LayerNormalization (with Mean/InvStdDev),
// RMSNormalization, GroupNormalization and InstanceNormalization against closed forms in
// double.
#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

// The result of normalizing values that were rounded to a 16-bit type is then rounded
// again: outputs are O(1..4) after normalization, so an absolute term covers it.
double normTolerance(DType dtype) { return dtype == DType::F32 ? 1e-4 : dtypeTolerance(dtype); }

TEST(NormalizationKernels, BatchNormInference) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2, 5, 4, 3}, std::vector<int64_t>{3, 4},
                                             std::vector<int64_t>{1, 3, 2, 3, 4}}) {
      const int64_t channels = dims[1];
      TestTensor x = randomTensor(dtype, dims, 1, -2, 2);
      TestTensor scale = randomTensor(dtype, {channels}, 2), bias = randomTensor(dtype, {channels}, 3);
      TestTensor mean = randomTensor(dtype, {channels}, 4), var = randomTensor(dtype, {channels}, 5, 0.1, 2.0);
      for (bool constants : {false, true}) {
        std::string text = "graph @g(%x: " + x.type() +
                           (constants ? "" : ", %s: " + scale.type() + ", %b: " + bias.type() + ", %m: " +
                                                 mean.type() + ", %v: " + var.type()) +
                           ") {\n";
        if (constants) {
          text += constantLine("s", scale) + constantLine("b", bias) + constantLine("m", mean) + constantLine("v", var);
        }
        text += "  %y = BatchNormalization(%x, %s, %b, %m, %v) {epsilon = 0.001} : " + x.type() + "\n  return %y\n}";
        std::vector<TestTensor> inputs{x};
        if (!constants) inputs.insert(inputs.end(), {scale, bias, mean, var});
        RunResult result = runGraph(text, inputs);
        const int64_t spatial = x.count() / (dims[0] * channels);
        std::vector<double> expected(x.values.size());
        for (size_t i = 0; i < expected.size(); ++i) {
          const int64_t c = (static_cast<int64_t>(i) / spatial) % channels;
          expected[i] = (x.values[i] - mean.values[c]) / std::sqrt(var.values[c] + 0.001) * scale.values[c] + bias.values[c];
        }
        expectNear(result.outputs[0], expected, normTolerance(dtype), normTolerance(dtype),
                   "BatchNormalization " + x.type() + (constants ? " constant parameters" : "") + " via " +
                       result.kernels[0]);
      }
    }
  }
}

TEST(NormalizationKernels, BatchNormTrainingWritesRunningStatistics) {
  TestTensor x = randomTensor(DType::F32, {3, 2, 4}, 1, -2, 2);
  TestTensor scale = randomTensor(DType::F32, {2}, 2), bias = randomTensor(DType::F32, {2}, 3);
  TestTensor mean = randomTensor(DType::F32, {2}, 4), var = randomTensor(DType::F32, {2}, 5, 0.1, 2.0);
  RunResult result = runGraph(
      "graph @g(%x: f32[3,2,4], %s: f32[2], %b: f32[2], %m: f32[2], %v: f32[2]) {\n"
      "  %y, %rm, %rv = BatchNormalization(%x, %s, %b, %m, %v) {momentum = 0.8, training_mode = 1} : f32[3,2,4], "
      "f32[2], f32[2]\n  return %y, %rm, %rv\n}",
      {x, scale, bias, mean, var});
  std::vector<double> y(24), running_mean(2), running_var(2);
  for (int c = 0; c < 2; ++c) {
    double sum = 0, squares = 0;
    for (int n = 0; n < 3; ++n) {
      for (int i = 0; i < 4; ++i) sum += x.values[(n * 2 + c) * 4 + i];
    }
    const double batch_mean = sum / 12;
    for (int n = 0; n < 3; ++n) {
      for (int i = 0; i < 4; ++i) squares += std::pow(x.values[(n * 2 + c) * 4 + i] - batch_mean, 2);
    }
    const double batch_var = squares / 12;
    for (int n = 0; n < 3; ++n) {
      for (int i = 0; i < 4; ++i) {
        const int at = (n * 2 + c) * 4 + i;
        y[at] = (x.values[at] - batch_mean) / std::sqrt(batch_var + 1e-5) * scale.values[c] + bias.values[c];
      }
    }
    running_mean[c] = mean.values[c] * 0.8 + batch_mean * 0.2;
    running_var[c] = var.values[c] * 0.8 + batch_var * 0.2;
  }
  expectNear(result.outputs[0], y, 1e-5, 1e-5, "BatchNormalization training Y");
  expectNear(result.outputs[1], running_mean, 1e-5, 1e-6, "running_mean");
  expectNear(result.outputs[2], running_var, 1e-5, 1e-6, "running_var");
}

// Rows of X normalized over axes [axis, rank).
void checkRowNorm(DType dtype, const std::vector<int64_t>& dims, int64_t axis, bool rms, bool with_bias, bool stats,
                  bool constants) {
  int64_t rows = 1, inner = 1;
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t positive = axis < 0 ? axis + rank : axis;
  for (int64_t d = 0; d < rank; ++d) (d < positive ? rows : inner) *= dims[d];
  std::vector<int64_t> param_dims(dims.begin() + positive, dims.end());
  TestTensor x = randomTensor(dtype, dims, 7, -3, 3);
  TestTensor scale = randomTensor(dtype, param_dims, 8), bias = randomTensor(dtype, param_dims, 9);
  std::vector<int64_t> stat_dims = dims;
  for (int64_t d = positive; d < rank; ++d) stat_dims[d] = 1;
  TestTensor stat_type{DType::F32, stat_dims, {}};
  const std::string op = rms ? "RMSNormalization" : "LayerNormalization";
  std::string operands = "%x, %s" + std::string(with_bias ? ", %b" : "");
  std::string outputs = stats ? "%y, %mean, %inv" : "%y";
  std::string types = x.type() + (stats ? ", " + stat_type.type() + ", " + stat_type.type() : "");
  std::string text = "graph @g(%x: " + x.type() +
                     (constants ? "" : ", %s: " + scale.type() + (with_bias ? ", %b: " + bias.type() : "")) + ") {\n";
  if (constants) text += constantLine("s", scale) + (with_bias ? constantLine("b", bias) : "");
  text += "  " + outputs + " = " + op + "(" + operands + ") {axis = " + std::to_string(axis) +
          ", epsilon = 0.01} : " + types + "\n  return " + outputs + "\n}";
  std::vector<TestTensor> inputs{x};
  if (!constants) {
    inputs.push_back(scale);
    if (with_bias) inputs.push_back(bias);
  }
  RunResult result = runGraph(text, inputs);
  std::vector<double> y(x.values.size()), means(rows), invs(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, squares = 0;
    for (int64_t i = 0; i < inner; ++i) mean += x.values[r * inner + i] / static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i) {
      double v = x.values[r * inner + i] - (rms ? 0.0 : mean);
      squares += v * v / static_cast<double>(inner);
    }
    const double inv = 1.0 / std::sqrt(squares + 0.01);
    means[r] = mean;
    invs[r] = inv;
    for (int64_t i = 0; i < inner; ++i) {
      y[r * inner + i] = (x.values[r * inner + i] - (rms ? 0.0 : mean)) * inv * scale.values[i] +
                         (with_bias ? bias.values[i] : 0.0);
    }
  }
  const std::string what = op + " " + x.type() + " axis " + std::to_string(axis) + (with_bias ? " +bias" : "") +
                           (stats ? " +stats" : "") + (constants ? " constant parameters" : "") + " via " +
                           result.kernels[0];
  expectNear(result.outputs[0], y, normTolerance(dtype), normTolerance(dtype), what);
  if (stats) {
    expectNear(result.outputs[1], means, 1e-5, 1e-6, what + " Mean");
    expectNear(result.outputs[2], invs, 1e-5, 1e-6, what + " InvStdDev");
  }
}

TEST(NormalizationKernels, LayerNormalization) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    checkRowNorm(dtype, {4, 7, 32}, -1, false, true, false, false);
    checkRowNorm(dtype, {4, 7, 32}, -1, false, true, false, true);
    checkRowNorm(dtype, {3, 5, 6}, 1, false, false, false, false);
    checkRowNorm(dtype, {3, 5, 6}, -2, false, true, true, false);
    checkRowNorm(dtype, {2, 1000}, 1, false, true, true, true);
  }
}

TEST(NormalizationKernels, RMSNormalization) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    checkRowNorm(dtype, {4, 7, 64}, -1, true, false, false, false);
    checkRowNorm(dtype, {3, 5, 6}, 1, true, false, false, true);
    checkRowNorm(dtype, {2, 4097}, -1, true, false, false, false);
  }
}

TEST(NormalizationKernels, GroupAndInstanceNormalization) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    for (const auto& [dims, groups] : {std::pair{std::vector<int64_t>{2, 6, 5, 4}, int64_t{3}},
                                       std::pair{std::vector<int64_t>{1, 8, 17}, int64_t{2}},
                                       std::pair{std::vector<int64_t>{2, 4, 3, 2, 2}, int64_t{4}}}) {
      const int64_t channels = dims[1];
      TestTensor x = randomTensor(dtype, dims, 11, -2, 2);
      TestTensor scale = randomTensor(dtype, {channels}, 12), bias = randomTensor(dtype, {channels}, 13);
      for (bool instance : {false, true}) {
        const int64_t g = instance ? channels : groups;
        std::string text = "graph @g(%x: " + x.type() + ", %s: " + scale.type() + ", %b: " + bias.type() +
                           ") {\n  %y = " +
                           (instance ? std::string("InstanceNormalization(%x, %s, %b) {epsilon = 0.001}")
                                     : "GroupNormalization(%x, %s, %b) {epsilon = 0.001, num_groups = " +
                                           std::to_string(groups) + "}") +
                           " : " + x.type() + "\n  return %y\n}";
        RunResult result = runGraph(text, {x, scale, bias});
        const int64_t spatial = x.count() / (dims[0] * channels), span = channels / g * spatial;
        std::vector<double> expected(x.values.size());
        for (int64_t block = 0; block < dims[0] * g; ++block) {
          double mean = 0, var = 0;
          for (int64_t i = 0; i < span; ++i) mean += x.values[block * span + i] / static_cast<double>(span);
          for (int64_t i = 0; i < span; ++i) var += std::pow(x.values[block * span + i] - mean, 2) / static_cast<double>(span);
          for (int64_t i = 0; i < span; ++i) {
            const int64_t c = (block % g) * (channels / g) + i / spatial;
            expected[block * span + i] =
                (x.values[block * span + i] - mean) / std::sqrt(var + 0.001) * scale.values[c] + bias.values[c];
          }
        }
        expectNear(result.outputs[0], expected, normTolerance(dtype), normTolerance(dtype),
                   (instance ? "InstanceNormalization " : "GroupNormalization ") + x.type());
      }
    }
  }
}

// On Estuary's threads, like the products around it in a transformer (normalization.cpp).
TEST(NormalizationKernels, LayerNormRunsOnTheOwnKernel) {
  TestTensor x = randomTensor(DType::F32, {4, 64}, 1), s = randomTensor(DType::F32, {64}, 2);
  RunResult result = runGraph("graph @g(%x: f32[4,64], %s: f32[64]) {\n  %y = LayerNormalization(%x, %s) : "
                              "f32[4,64]\n  return %y\n}",
                              {x, s});
  EXPECT_TRUE(usesKernel(result, "cpu:layer_norm")) << result.kernels[0];
}

}  // namespace
}  // namespace estuary::ge::tensor_test
