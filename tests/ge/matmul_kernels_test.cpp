// MatMul, Gemm and Einsum kernels against reference loops in double, and the epilogue
// (post-op) API of the MatMul and Gemm kernels.
#include <map>
#include <random>

#include "../../ge_backend/src/cpu/nn_support.h"
#include "../../ge_backend/src/cpu/post_ops.h"
#include "estuary/ge/device.h"
#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

std::string dtypeText(DType dtype) { return std::string(dtypeName(dtype)); }

// numpy matmul in double.
TestTensor referenceMatMul(const TestTensor& a_in, const TestTensor& b_in, DType out_type) {
  std::vector<int64_t> a = a_in.dims, b = b_in.dims;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  size_t rank = std::max(a.size(), b.size());
  a.insert(a.begin(), rank - a.size(), 1);
  b.insert(b.begin(), rank - b.size(), 1);
  const int64_t m = a[rank - 2], k = a[rank - 1], n = b[rank - 1];
  std::vector<int64_t> batch(rank - 2);
  int64_t batches = 1;
  for (size_t d = 0; d + 2 < rank; ++d) {
    batch[d] = std::max(a[d], b[d]);
    batches *= batch[d];
  }
  TestTensor out{out_type, {}, {}};
  out.dims = batch;
  if (a_in.dims.size() > 1) out.dims.push_back(m);
  if (b_in.dims.size() > 1) out.dims.push_back(n);
  out.values.assign(static_cast<size_t>(batches * m * n), 0.0);
  for (int64_t index = 0; index < batches; ++index) {
    int64_t rest = index, a_batch = 0, b_batch = 0, a_scale = 1, b_scale = 1;
    for (size_t d = rank - 2; d-- > 0;) {
      int64_t c = rest % batch[d];
      rest /= batch[d];
      a_batch += (a[d] == 1 ? 0 : c) * a_scale;
      b_batch += (b[d] == 1 ? 0 : c) * b_scale;
      a_scale *= a[d];
      b_scale *= b[d];
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          sum += a_in.values[a_batch * m * k + i * k + p] * b_in.values[b_batch * k * n + p * n + j];
        }
        out.values[index * m * n + i * n + j] = sum;
      }
    }
  }
  return out;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

// Integer inputs are small whole numbers so that every product is exact.
TestTensor inputFor(DType dtype, std::vector<int64_t> dims, uint32_t seed) {
  return isInteger(dtype) ? randomTensor(dtype, std::move(dims), seed, -5, 5) : randomTensor(dtype, std::move(dims), seed);
}

double toleranceFor(DType dtype, int64_t k) {
  // Values are in [-1, 1]: a sum of k products stays within k; f32 accumulation adds
  // about k * 2^-24 relative error, the output rounding the dtype's half ulp.
  return isInteger(dtype) ? 0.0 : dtypeTolerance(dtype) * std::max<double>(1.0, std::sqrt(static_cast<double>(k)));
}

void checkMatMul(DType dtype, const std::vector<int64_t>& a_dims, const std::vector<int64_t>& b_dims,
                 bool constant_b, uint32_t seed) {
  TestTensor a = inputFor(dtype, a_dims, seed), b = inputFor(dtype, b_dims, seed + 1);
  TestTensor expected = referenceMatMul(a, b, dtype);
  TestTensor out_type = expected;
  std::string text = "graph @g(%a: " + a.type() + (constant_b ? "" : ", %b: " + b.type()) + ") {\n";
  if (constant_b) text += constantLine("b", b);
  text += "  %y = MatMul(%a, %b) : " + out_type.type() + "\n  return %y\n}";
  std::vector<TestTensor> inputs{a};
  if (!constant_b) inputs.push_back(b);
  RunResult result = runGraph(text, inputs);
  ASSERT_EQ(result.outputs[0].dims, expected.dims);
  const int64_t k = a_dims.back();
  std::string what = "MatMul " + dtypeText(dtype) + " " + dimsText(a_dims) + " x " + dimsText(b_dims) +
                     (constant_b ? " (constant B)" : "");
  expectNear(result.outputs[0], expected.values, toleranceFor(dtype, k), isInteger(dtype) ? 0.0 : 1e-6, what);
}

const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> kMatMulShapes = {
    {{3, 4}, {4, 5}},          {{17, 33}, {33, 19}},      {{2, 3, 4}, {4, 5}},       {{2, 1, 3, 4}, {5, 4, 6}},
    {{4}, {4, 5}},             {{2, 3, 4}, {4}},          {{7}, {7}},                {{1, 5, 8}, {3, 8, 2}},
    {{3, 0}, {0, 4}},          {{0, 4}, {4, 3}},          {{64, 128}, {128, 96}},
};

TEST(MatMulKernels, FloatTypesAgainstReference) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    for (const auto& [a, b] : kMatMulShapes) {
      checkMatMul(dtype, a, b, false, 11);
      checkMatMul(dtype, a, b, true, 12);
    }
  }
}

TEST(MatMulKernels, IntegerTypesWrapLikeTheirWidth) {
  for (DType dtype : {DType::I32, DType::I64}) {
    for (const auto& [a, b] : kMatMulShapes) checkMatMul(dtype, a, b, false, 21);
  }
  // i32 products that overflow wrap around modulo 2^32.
  TestTensor a{DType::I32, {1, 2}, {65536, 65536}}, b{DType::I32, {2, 1}, {65536, 3}};
  RunResult result = runGraph("graph @g(%a: i32[1,2], %b: i32[2,1]) {\n  %y = MatMul(%a, %b) : i32[1,1]\n  return %y\n}",
                              {a, b});
  EXPECT_EQ(result.outputs[0].values[0], 196608.0);  // 2^32 + 3 * 2^16 wraps to 3 * 2^16
}

TEST(MatMulKernels, FloatTypesUseOnednnWithPackedConstantWeights) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    TestTensor a = inputFor(dtype, {8, 32}, 1), b = inputFor(dtype, {32, 16}, 2);
    std::string text = "graph @g(%a: " + a.type() + ") {\n" + constantLine("b", b) +
                       "  %y = MatMul(%a, %b) : " + dtypeText(dtype) + "[8,16]\n  return %y\n}";
    RunResult result = runGraph(text, {a});
    EXPECT_TRUE(usesKernel(result, "onednn:matmul")) << result.kernels[0];
    // f32 prefers oneDNN's gemm:jit over brgemm (preferJitGemm in matmul.cpp).
    if (dtype == DType::F32) {
      EXPECT_TRUE(usesKernel(result, "onednn:matmul gemm:jit")) << result.kernels[0];
    }
  }
}

// Products with at most four rows on the left run on the own GEMV kernel (cpu/gemv.h), which
// reads B where it is stored: K x N, or N x K behind a folded Transpose or Gemm's transB.
// Sizes make many shards (several per thread), with K and N multiples of neither the rows a
// pass reads nor the vector width. In bf16 and f16 the kernel reads the weights as they are
// (8 rows a pass stored K x N, the next pass's rows prefetched, as are the columns stored
// N x K) and computes in f32; f16 products take it instead of a conversion to f32.
TEST(MatMulKernels, FewRowsRunOnTheGemvKernelInEitherLayout) {
  struct Case {
    std::vector<int64_t> a;
    int64_t n;
    bool transposed;
  };
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    for (const Case& c : {Case{{1, 1001}, 300, false}, Case{{3, 1, 77}, 130, false}, Case{{4, 257}, 33, false},
                          Case{{2, 203}, 2100, false}, Case{{2, 1, 1000}, 301, true}, Case{{1, 37}, 5, true},
                          Case{{1003}, 17, false}}) {
      const int64_t k = c.a.back();
      TestTensor a = inputFor(dtype, c.a, 1);
      TestTensor b = inputFor(dtype, {k, c.n}, 2);
      TestTensor stored = b;  // B as the graph holds it
      if (c.transposed) {
        stored.dims = {c.n, k};
        for (int64_t i = 0; i < k; ++i) {
          for (int64_t j = 0; j < c.n; ++j) stored.values[j * k + i] = b.values[i * c.n + j];
        }
      }
      TestTensor expected = referenceMatMul(a, b, dtype);
      // A Transpose of a constant would be folded into a plain constant: the transposed B is
      // an input.
      std::string text = "graph @g(%a: " + a.type() + (c.transposed ? ", %w: " + stored.type() + ") {\n"
                                                                     : ") {\n" + constantLine("w", stored));
      if (c.transposed) text += "  %b = Transpose(%w) {perm = [1, 0]} : " + b.type() + "\n";
      text += std::string("  %y = MatMul(%a, ") + (c.transposed ? "%b" : "%w") + ") : " + expected.type() +
              "\n  return %y\n}";
      const std::string what = "MatMul " + dtypeText(dtype) + " " + dimsText(c.a) + " x " + dimsText(b.dims) +
                               (c.transposed ? " (transB)" : "");
      std::vector<TestTensor> inputs{a};
      if (c.transposed) inputs.push_back(stored);
      RunResult two = runGraph(text, inputs, 2);
      const std::string kernel = std::string(c.transposed ? "cpu:gemv(transB)" : "cpu:gemv") +
                                 (dtype == DType::F32 ? "" : " " + dtypeText(dtype) + " weights");
      EXPECT_TRUE(usesKernel(two, kernel)) << what << ": " << two.kernels[0];
      expectNear(two.outputs[0], expected.values, toleranceFor(dtype, k), 1e-6, what);
      // The split into shards depends on the shape only: one thread gives the same bits.
      RunResult one = runGraph(text, inputs, 1);
      EXPECT_EQ(one.outputs[0].values, two.outputs[0].values) << what;
    }
  }
}

// alpha A B^T + C with C one value per column: in bf16 and f16, C is widened on each run.
TEST(GemmKernels, FewRowsRunOnTheGemvKernelWithAlphaAndC) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    TestTensor a = inputFor(dtype, {2, 300}, 1), b = inputFor(dtype, {50, 300}, 2);
    TestTensor c = inputFor(dtype, {50}, 3);
    const std::string t = dtypeText(dtype);
    RunResult result = runGraph(
        "graph @g(%a: " + t + "[2,300], %b: " + t + "[50,300], %c: " + t + "[50]) {\n"
        "  %y = Gemm(%a, %b, %c) {alpha = 0.5, transB = 1} : " + t + "[2,50]\n  return %y\n}",
        {a, b, c});
    EXPECT_TRUE(usesKernel(result, "cpu:gemv(transB)")) << result.kernels[0];
    std::vector<double> expected(100);
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 50; ++j) {
        double sum = 0;
        for (int p = 0; p < 300; ++p) sum += a.values[i * 300 + p] * b.values[j * 300 + p];
        expected[i * 50 + j] = 0.5 * sum + c.values[j];
      }
    }
    expectNear(result.outputs[0], expected, toleranceFor(dtype, 300), 1e-6, "Gemm " + t + " alpha = 0.5, transB, C");
  }
}

// Column blocks (cpu/column_blocks.h) on B as an input, as an input read transposed (a
// Transpose folded into the product), as a constant, and as a transposed constant (Gemm's
// transB, with C as the bias): the same results as one primitive on one thread.
TEST(MatMulKernels, ColumnBlocksMatchOnePrimitive) {
  TestTensor a = inputFor(DType::F32, {32, 256}, 1), b = inputFor(DType::F32, {256, 200}, 2);
  TestTensor bt = inputFor(DType::F32, {200, 256}, 3), c = inputFor(DType::F32, {200}, 4);
  const std::string input_b = "graph @g(%a: f32[32,256], %b: f32[256,200]) {\n"
                              "  %y = MatMul(%a, %b) : f32[32,200]\n  return %y\n}";
  const std::string transposed_b = "graph @g(%a: f32[32,256], %w: f32[200,256]) {\n"
                                   "  %b = Transpose(%w) {perm = [1, 0]} : f32[256,200]\n"
                                   "  %y = MatMul(%a, %b) : f32[32,200]\n  return %y\n}";
  const std::string constant_b = "graph @g(%a: f32[32,256]) {\n" + constantLine("b", b) +
                                 "  %y = MatMul(%a, %b) : f32[32,200]\n  return %y\n}";
  const std::string gemm = "graph @g(%a: f32[32,256]) {\n" + constantLine("b", bt) + constantLine("c", c) +
                           "  %y = Gemm(%a, %b, %c) {transB = 1} : f32[32,200]\n  return %y\n}";
  for (const auto& [text, inputs] : {std::pair{input_b, std::vector<TestTensor>{a, b}},
                                     std::pair{transposed_b, std::vector<TestTensor>{a, bt}},
                                     std::pair{constant_b, std::vector<TestTensor>{a}},
                                     std::pair{gemm, std::vector<TestTensor>{a}}}) {
    auto inBlocks = [](const RunResult& result) {
      return std::any_of(result.kernels.begin(), result.kernels.end(),
                         [](const std::string& line) { return line.find(" in 2 column blocks") != std::string::npos; });
    };
    RunResult blocks = runGraph(text, inputs, 2), whole = runGraph(text, inputs, 1);
    EXPECT_TRUE(inBlocks(blocks)) << blocks.kernels[0];
    EXPECT_FALSE(inBlocks(whole)) << whole.kernels[0];
    expectNear(blocks.outputs[0], whole.outputs[0].values, 1e-5, 1e-6, text);
  }
}

// bf16 products run on AMX tiles where the CPU has them; f16, which
// oneDNN 2.6 cannot compute here, is converted to f32 around the f32 primitive.
TEST(MatMulKernels, SixteenBitTypesUseTheBestOnednnPath) {
  const bool amx = cpuDevice().isa().find("amx") != std::string::npos;
  TestTensor a = inputFor(DType::BF16, {64, 64}, 1), b = inputFor(DType::BF16, {64, 64}, 2);
  RunResult bf16 = runGraph("graph @g(%a: bf16[64,64]) {\n" + constantLine("b", b) +
                                "  %y = MatMul(%a, %b) : bf16[64,64]\n  return %y\n}",
                            {a});
  EXPECT_TRUE(usesKernel(bf16, "onednn:matmul")) << bf16.kernels[0];
  if (amx) {
    EXPECT_NE(bf16.kernels[0].find("amx"), std::string::npos) << bf16.kernels[0];
  }
  TestTensor x = randomTensor(DType::BF16, {1, 32, 8, 8}, 3), w = randomTensor(DType::BF16, {32, 32, 3, 3}, 4);
  RunResult conv = runGraph("graph @g(%x: bf16[1,32,8,8]) {\n" + constantLine("w", w) +
                                "  %y = Conv(%x, %w) {pads = [1, 1, 1, 1]} : bf16[1,32,8,8]\n  return %y\n}",
                            {x});
  // oneDNN 2.6 has bf16 convolutions from AVX-512 on; elsewhere Estuary's own kernel takes them.
  const bool avx512 = cpuDevice().isa().rfind("avx512", 0) == 0;
  EXPECT_TRUE(usesKernel(conv, avx512 ? "onednn:conv" : "cpu:conv")) << conv.kernels[0];
  if (amx) {
    EXPECT_NE(conv.kernels[0].find("amx"), std::string::npos) << conv.kernels[0];
  }
  TestTensor h = inputFor(DType::F16, {8, 8}, 5);
  RunResult f16 = runGraph("graph @g(%a: f16[8,8], %b: f16[8,8]) {\n  %y = MatMul(%a, %b) : f16[8,8]\n  return %y\n}",
                           {h, h});
  EXPECT_NE(f16.kernels[0].find("onednn:matmul gemm:jit"), std::string::npos) << f16.kernels[0];
  EXPECT_NE(f16.kernels[0].find("via f32"), std::string::npos) << f16.kernels[0];
}

// Sizes around the own GEMM's blocks (GemmBlocking in nn_support.h: 6-row tiles of 16 f64 or
// 32 i32 columns, blocks of 96 rows, 128 of depth and 512 columns), each larger than a block
// and a multiple of none.
TEST(MatMulKernels, OwnGemmAcrossBlockEdges) {
  for (DType dtype : {DType::F64, DType::I32, DType::I64}) {
    checkMatMul(dtype, {100, 130}, {130, 530}, false, 13);
    checkMatMul(dtype, {2, 97, 129}, {129, 33}, true, 14);  // a broadcast B
    checkMatMul(dtype, {3, 1, 5, 7}, {1, 2, 7, 9}, false, 15);
  }
}

// ownBatchedGemm itself, against the same sums in the same wrap-around arithmetic: every
// block edge, transposed operands, broadcast batches, K = 0 and an empty batch, on one and
// two threads.
template <typename T>
void checkOwnBatchedGemm(int64_t batch, int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, int threads) {
  using Acc = typename cpu::WrappingType<T>::type;
  std::mt19937 random(static_cast<uint32_t>(m * 131 + n * 17 + k));
  auto values = [&](int64_t count) {
    std::vector<T> out(static_cast<size_t>(count));
    for (T& value : out) {
      // Integers span their type's range, so that products overflow and wrap.
      value = std::is_integral_v<T> ? static_cast<T>(random()) : static_cast<T>(random() % 2001) / 1000 - 1;
    }
    return out;
  };
  // A has one matrix, broadcast to every product; B one per product.
  std::vector<T> a = values(m * k), b = values(batch * k * n);
  std::vector<int64_t> a_offsets(static_cast<size_t>(batch), 0), b_offsets;
  for (int64_t p = 0; p < batch; ++p) b_offsets.push_back(p * k * n);
  const int64_t a_row = trans_a ? 1 : k, a_col = trans_a ? m : 1, b_row = trans_b ? 1 : n, b_col = trans_b ? k : 1;
  std::vector<T> c(static_cast<size_t>(batch * m * n), T(7));
  cpu::ownBatchedGemm<T>(batch, a_offsets.data(), b_offsets.data(), m, n, k, a.data(), a_row, a_col, b.data(), b_row,
                         b_col, c.data(), threads);
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        Acc sum = 0;
        for (int64_t q = 0; q < k; ++q) {
          sum += static_cast<Acc>(a[i * a_row + q * a_col]) * static_cast<Acc>(b[p * k * n + q * b_row + j * b_col]);
        }
        const T expected = static_cast<T>(sum), got = c[(p * m + i) * n + j];
        if constexpr (std::is_integral_v<T>) {
          ASSERT_EQ(got, expected) << "product " << p << " (" << i << ", " << j << ") of " << m << "x" << n << "x" << k;
        } else {
          ASSERT_NEAR(got, expected, 1e-12 * (k + 1)) << "product " << p << " (" << i << ", " << j << ")";
        }
      }
    }
  }
}

TEST(MatMulKernels, OwnBlockedGemmEdgesTransposesAndEmptyOperands) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    for (bool trans_a : {false, true}) {
      for (bool trans_b : {false, true}) {
        checkOwnBatchedGemm<double>(2, 103, 521, 133, trans_a, trans_b, threads);
        checkOwnBatchedGemm<int32_t>(2, 97, 545, 129, trans_a, trans_b, threads);
      }
    }
    checkOwnBatchedGemm<int64_t>(3, 5, 17, 300, false, false, threads);
    checkOwnBatchedGemm<double>(2, 6, 16, 0, false, false, threads);  // K = 0: zeros
    checkOwnBatchedGemm<int32_t>(0, 4, 5, 6, false, false, threads);  // no products
    checkOwnBatchedGemm<double>(1, 1, 1, 1, false, false, threads);
  }
}

// ---------------------------------------------------------------------------- Gemm

struct GemmCase {
  bool trans_a, trans_b;
  double alpha, beta;
  std::vector<int64_t> c_dims;  // empty vector with has_c false: no C
  bool has_c;
};

void checkGemm(DType dtype, int64_t m, int64_t n, int64_t k, const GemmCase& config, bool constant_b, uint32_t seed) {
  TestTensor a = inputFor(dtype, config.trans_a ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, seed);
  TestTensor b = inputFor(dtype, config.trans_b ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, seed + 1);
  TestTensor c = inputFor(dtype, config.c_dims, seed + 2);
  std::vector<double> expected(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        double x = config.trans_a ? a.values[p * m + i] : a.values[i * k + p];
        double y = config.trans_b ? b.values[j * k + p] : b.values[p * n + j];
        sum += x * y;
      }
      double c_value = 0;
      if (config.has_c) {
        int64_t rows = c.dims.size() == 2 ? c.dims[0] : 1;
        int64_t cols = c.dims.empty() ? 1 : c.dims.back();
        c_value = c.values[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)];
      }
      expected[i * n + j] = config.alpha * sum + config.beta * c_value;
    }
  }
  std::ostringstream text;
  text << "graph @g(%a: " << a.type() << (constant_b ? "" : ", %b: " + b.type())
       << (config.has_c ? ", %c: " + c.type() : "") << ") {\n";
  if (constant_b) text << constantLine("b", b);
  text << "  %y = Gemm(%a, %b" << (config.has_c ? ", %c" : "") << ") {alpha = " << std::showpoint << config.alpha
       << ", beta = " << config.beta << ", transA = " << config.trans_a << ", transB = " << config.trans_b << "} : "
       << dtypeText(dtype) << "[" << m << "," << n << "]\n  return %y\n}";
  std::vector<TestTensor> inputs{a};
  if (!constant_b) inputs.push_back(b);
  if (config.has_c) inputs.push_back(c);
  RunResult result = runGraph(text.str(), inputs);
  std::ostringstream what;
  what << "Gemm " << dtypeText(dtype) << " transA=" << config.trans_a << " transB=" << config.trans_b
       << " alpha=" << config.alpha << " beta=" << config.beta << " C=" << (config.has_c ? dimsText(c.dims) : "none")
       << (constant_b ? " constant B" : "");
  double scale = std::max({1.0, std::fabs(config.alpha), std::fabs(config.beta)});
  expectNear(result.outputs[0], expected, toleranceFor(dtype, k) * scale, isInteger(dtype) ? 0.0 : 1e-5 * scale,
             what.str());
}

TEST(GemmKernels, FlagsScalesAndBroadcastC) {
  const int64_t m = 13, n = 9, k = 21;
  const std::vector<GemmCase> cases = {
      {false, false, 1.0, 1.0, {}, false},    {true, false, 1.0, 1.0, {n}, true},
      {false, true, 1.0, 1.0, {1, n}, true},  {true, true, 0.5, 2.0, {m, n}, true},
      {false, false, 2.0, 0.5, {m, 1}, true}, {false, true, -1.5, 1.0, {}, true},
      {true, false, 1.0, 0.0, {m, n}, true},  {false, false, 3.0, 3.0, {n}, true},
  };
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    for (const GemmCase& config : cases) {
      checkGemm(dtype, m, n, k, config, false, 5);
      checkGemm(dtype, m, n, k, config, true, 6);
    }
  }
  for (DType dtype : {DType::I32, DType::I64}) {
    checkGemm(dtype, m, n, k, {true, false, 1.0, 1.0, {n}, true}, false, 7);
    checkGemm(dtype, m, n, k, {false, true, 2.0, 3.0, {m, 1}, true}, false, 7);
  }
}

TEST(GemmKernels, OwnGemmAcrossBlockEdgesAndWithoutDepth) {
  checkGemm(DType::F64, 101, 515, 131, {true, true, 1.5, 0.5, {515}, true}, false, 16);
  checkGemm(DType::I64, 101, 515, 131, {true, true, 2.0, 3.0, {515}, true}, false, 16);
  for (DType dtype : {DType::F64, DType::I32}) {
    checkGemm(dtype, 7, 9, 0, {false, false, 1.0, 2.0, {7, 9}, true}, false, 17);  // K = 0: Y = beta * C
  }
}

// ---------------------------------------------------------------------------- Einsum

// Reference einsum over explicit equations (no ellipsis in the reference: tests with
// "..." spell out the equivalent letters for it).
TestTensor referenceEinsum(const std::string& equation, const std::vector<TestTensor>& inputs, DType dtype) {
  size_t arrow = equation.find("->");
  std::vector<std::string> terms;
  std::string lhs = equation.substr(0, arrow);
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::string output = equation.substr(arrow + 2);
  std::map<char, int64_t> sizes;
  for (size_t i = 0; i < terms.size(); ++i) {
    for (size_t d = 0; d < terms[i].size(); ++d) sizes[terms[i][d]] = std::max(sizes[terms[i][d]], inputs[i].dims[d]);
  }
  std::vector<char> labels;
  for (const auto& [label, size] : sizes) labels.push_back(label);
  TestTensor out{dtype, {}, {}};
  for (char label : output) out.dims.push_back(sizes[label]);
  out.values.assign(static_cast<size_t>(out.count()), 0.0);
  int64_t total = 1;
  for (char label : labels) total *= sizes[label];
  std::map<char, int64_t> at;
  for (int64_t index = 0; index < total; ++index) {
    int64_t rest = index;
    for (size_t l = labels.size(); l-- > 0;) {
      at[labels[l]] = rest % sizes[labels[l]];
      rest /= sizes[labels[l]];
    }
    double product = 1;
    for (size_t i = 0; i < terms.size(); ++i) {
      int64_t offset = 0;
      for (size_t d = 0; d < terms[i].size(); ++d) {
        offset = offset * inputs[i].dims[d] + (inputs[i].dims[d] == 1 ? 0 : at[terms[i][d]]);
      }
      product *= inputs[i].values[offset];
    }
    int64_t out_offset = 0;
    for (char label : output) out_offset = out_offset * sizes[label] + at[label];
    out.values[out_offset] += product;
  }
  return out;
}

void checkEinsum(DType dtype, const std::string& equation, const std::string& reference_equation,
                 const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<TestTensor> inputs;
  std::string signature, operands;
  for (size_t i = 0; i < shapes.size(); ++i) {
    inputs.push_back(inputFor(dtype, shapes[i], 31 + static_cast<uint32_t>(i)));
    signature += (i ? ", %x" : "%x") + std::to_string(i) + ": " + inputs.back().type();
    operands += (i ? ", %x" : "%x") + std::to_string(i);
  }
  TestTensor expected = referenceEinsum(reference_equation, inputs, dtype);
  std::string text = "graph @g(" + signature + ") {\n  %y = Einsum(" + operands + ") {equation = \"" + equation +
                     "\"} : " + expected.type() + "\n  return %y\n}";
  RunResult result = runGraph(text, inputs);
  ASSERT_EQ(result.outputs[0].dims, expected.dims) << equation;
  int64_t k = 1;
  for (const auto& shape : shapes) {
    for (int64_t d : shape) k = std::max(k, d);
  }
  expectNear(result.outputs[0], expected.values, toleranceFor(dtype, k * k), isInteger(dtype) ? 0.0 : 1e-5,
             "Einsum " + dtypeText(dtype) + " '" + equation + "'");
}

TEST(EinsumKernels, ContractionsTracesTransposesAndBroadcasts) {
  struct Case {
    std::string equation, reference;
    std::vector<std::vector<int64_t>> shapes;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", "ij,jk->ik", {{5, 7}, {7, 3}}},
      {"bij,bjk->bik", "bij,bjk->bik", {{2, 5, 7}, {2, 7, 3}}},
      {"bhqd,bhkd->bhqk", "bhqd,bhkd->bhqk", {{2, 3, 4, 8}, {2, 3, 5, 8}}},
      {"ii->i", "ii->i", {{6, 6}}},
      {"ii", "ii->", {{6, 6}}},
      {"ij->ji", "ij->ji", {{4, 9}}},
      {"ij->", "ij->", {{4, 9}}},
      {"i,i", "i,i->", {{11}, {11}}},
      {"i,j->ij", "i,j->ij", {{4}, {5}}},
      {"ijk,jil->kl", "ijk,jil->kl", {{3, 4, 5}, {4, 3, 2}}},
      {"ij,jk,kl->il", "ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}},
      {"...ij,...jk->...ik", "abij,abjk->abik", {{2, 1, 3, 4}, {5, 4, 2}}},
      {"ij,kj", "ij,kj->ik", {{3, 4}, {5, 4}}},
      {"bij,jk->bk", "bij,jk->bk", {{2, 3, 4}, {4, 5}}},
      {"ij,ij->ij", "ij,ij->ij", {{3, 4}, {3, 4}}},
  };
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::I32, DType::I64}) {
    for (const Case& c : cases) {
      std::vector<std::vector<int64_t>> shapes = c.shapes;
      // The reference spells the ellipsis as letters over operands of equal rank.
      if (c.equation.find("...") != std::string::npos) shapes = {{2, 1, 3, 4}, {1, 5, 4, 2}};
      checkEinsum(dtype, c.equation, c.reference, shapes);
    }
  }
  // Broadcasting between ellipses of different ranks.
  checkEinsum(DType::F32, "...ij,...jk->...ik", "abij,abjk->abik", {{2, 1, 3, 4}, {1, 5, 4, 2}});
  TestTensor a = inputFor(DType::F32, {2, 1, 3, 4}, 1), b = inputFor(DType::F32, {5, 4, 2}, 2);
  TestTensor b4 = b;
  b4.dims = {1, 5, 4, 2};
  TestTensor expected = referenceEinsum("abij,abjk->abik", {a, b4}, DType::F32);
  RunResult result = runGraph(
      "graph @g(%a: f32[2,1,3,4], %b: f32[5,4,2]) {\n  %y = Einsum(%a, %b) {equation = \"...ij,...jk->...ik\"} : "
      "f32[2,5,3,2]\n  return %y\n}",
      {a, b});
  expectNear(result.outputs[0], expected.values, 1e-5, 1e-6, "Einsum with ellipses of ranks 2 and 1");
}

// ---------------------------------------------------------------------------- epilogues

// Builds the kernel for `node_text`'s single node with make*Kernel and the epilogue, runs
// it on `inputs` and returns output 0 as doubles.
std::vector<double> runWithEpilogue(const std::string& graph_text, const std::vector<TestTensor>& inputs,
                                    const cpu::Epilogue& epilogue, bool gemm, std::string* name = nullptr) {
  auto graph = parseGraph(graph_text);
  Node* node = nullptr;
  for (Node* candidate : graph->nodes()) node = candidate;
  std::vector<TensorDesc> input_descs, output_descs;
  for (const TestTensor& input : inputs) input_descs.push_back(TensorDesc::of(input.dtype, input.dims));
  output_descs.push_back(TensorDesc::of(node->output()->type()));
  KernelBuildContext context(*node, input_descs, output_descs, std::vector<const Tensor*>(inputs.size(), nullptr),
                             cpuDevice(), 2);
  std::unique_ptr<Kernel> kernel = gemm ? cpu::makeGemmKernel(context, epilogue) : cpu::makeMatMulKernel(context, epilogue);
  if (!kernel) {
    ADD_FAILURE() << "no kernel for the epilogue";
    return {};
  }
  if (name) *name = kernel->name();
  std::vector<std::vector<std::byte>> storage;
  std::vector<const void*> pointers;
  for (const TestTensor& input : inputs) {
    storage.push_back(encode(input));
    pointers.push_back(storage.back().data());
  }
  const TensorDesc& out = output_descs[0];
  std::vector<std::byte> output(out.byteSize());
  void* outputs[] = {output.data()};
  std::vector<std::byte> scratch(kernel->scratchBytes() + 64);
  auto device = cpuDevice().createRunState();
  auto state = kernel->createState();
  KernelArgs args{pointers.data(), outputs, scratch.data(), 2, device.get()};
  kernel->run(args, state.get());
  std::vector<double> values(static_cast<size_t>(out.numElements()));
  for (size_t i = 0; i < values.size(); ++i) values[i] = decodeOne(out.dtype, output.data(), i);
  return values;
}

// On oneDNN (six rows of A), on the own GEMV kernel (one row, f32), and on oneDNN in blocks
// of output columns on Estuary's threads (cpu/column_blocks.h) for a product worth several
// threads: 200 columns make blocks of 112 and 88, so the bias, the residual and B are each
// read at an offset.
TEST(MatMulEpilogues, BiasActivationResidualAndScale) {
  struct Case {
    DType dtype;
    int64_t rows, k, n;
    const char* kernel;
  };
  for (const Case& c : {Case{DType::F32, 6, 16, 10, "onednn:matmul"}, Case{DType::BF16, 6, 16, 10, "onednn:matmul"},
                        Case{DType::F32, 1, 16, 10, "cpu:gemv"},
                        Case{DType::F32, 24, 256, 200, "onednn:matmul gemm:jit in 2 column blocks"}}) {
    const std::string t = dtypeText(c.dtype);
    const std::vector<int64_t> out_dims{2, c.rows, c.n};
    TestTensor a = inputFor(c.dtype, {2, c.rows, c.k}, 1), b = inputFor(c.dtype, {c.k, c.n}, 2);
    TestTensor bias = inputFor(c.dtype, {c.n}, 3), residual = inputFor(c.dtype, out_dims, 4);
    TestTensor product = referenceMatMul(a, b, c.dtype);
    std::string text = "graph @g(%a: " + a.type() + ", %b: " + b.type() + ") {\n  %y = MatMul(%a, %b) : " + t +
                       dimsText(out_dims) + "\n  return %y\n}";
    cpu::Epilogue epilogue;
    epilogue.steps = {cpu::EpilogueStep::bias(2),
                      cpu::EpilogueStep::eltwise(dnnl::algorithm::eltwise_relu, 0.1f),
                      cpu::EpilogueStep::residual(3), cpu::EpilogueStep::scale(0.5f)};
    std::vector<double> expected(product.values.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      double v = product.values[i] + bias.values[i % c.n];
      v = v > 0 ? v : 0.1 * v;
      expected[i] = 0.5 * (v + residual.values[i]);
    }
    std::string name;
    std::vector<double> actual = runWithEpilogue(text, {a, b, bias, residual}, epilogue, false, &name);
    EXPECT_EQ(name.rfind(c.kernel, 0), 0u) << name;
    expectNear(TestTensor{c.dtype, out_dims, actual}, expected, toleranceFor(c.dtype, c.k), 1e-5,
               "MatMul " + t + " " + dimsText(a.dims) + " + bias + leaky relu + residual + scale");
  }
}

// A batched product whose B is one matrix runs as one 2-D product with the batch as rows
// (matmul.cpp's batchAsRows: oneDNN packs weights only for 2-D products). A residual of the
// output's shape, or broadcast along its rows alone, folds along; one that differs per batch
// but not per row, or per row but not per batch, keeps the product batched. All agree.
TEST(MatMulEpilogues, ResidualsOfEveryBroadcastWithTheBatchTakenAsRows) {
  const int64_t batch = 3, rows = 5, k = 24, n = 20;
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (const std::vector<int64_t>& residual_dims :
         std::vector<std::vector<int64_t>>{{batch, rows, n}, {1, 1, n}, {batch, 1, n}, {1, rows, n}, {rows, n}}) {
      const std::string t = dtypeText(dtype);
      const std::vector<int64_t> out_dims{batch, rows, n};
      TestTensor a = inputFor(dtype, {batch, rows, k}, 1), b = inputFor(dtype, {k, n}, 2);
      TestTensor residual = inputFor(dtype, residual_dims, 3);
      TestTensor product = referenceMatMul(a, b, dtype);
      std::string text = "graph @g(%a: " + a.type() + ", %b: " + b.type() + ") {\n  %y = MatMul(%a, %b) : " + t +
                         dimsText(out_dims) + "\n  return %y\n}";
      cpu::Epilogue epilogue;
      epilogue.steps = {cpu::EpilogueStep::residual(2)};
      std::vector<double> expected(product.values.size());
      for (int64_t i = 0; i < batch; ++i) {
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t j = 0; j < n; ++j) {
            const size_t out = static_cast<size_t>((i * rows + r) * n + j);
            int64_t at = j;
            const size_t rank = residual_dims.size();
            if (residual_dims[rank - 2] != 1) at += r * n;
            if (rank == 3 && residual_dims[0] != 1) at += i * residual_dims[1] * n;
            expected[out] = product.values[out] + residual.values[static_cast<size_t>(at)];
          }
        }
      }
      std::vector<double> actual = runWithEpilogue(text, {a, b, residual}, epilogue, false);
      expectNear(TestTensor{dtype, out_dims, actual}, expected, toleranceFor(dtype, k), 1e-5,
                 "MatMul " + t + " " + dimsText(a.dims) + " + residual " + dimsText(residual_dims));
    }
  }
}

// Gelu as a post-op fuses in 16 bits (epilogue_fusion.cpp's fusesAccurately): within the
// output's rounding of the exact gelu, its flushed tail included, on oneDNN (16 rows) and on
// the own GEMV (one row: a decoder step), which applies its own exact gelu.
TEST(MatMulEpilogues, GeluPostOpInSixteenBitsIsWithinTheOutputsRounding) {
  for (DType dtype : {DType::BF16, DType::F16}) {
    for (const auto& [rows, kernel] : {std::pair<int64_t, const char*>{16, "onednn:matmul"}, {1, "cpu:gemv"}}) {
      const int64_t k = 32, n = 48;
      TestTensor a = inputFor(dtype, {rows, k}, 7), b = inputFor(dtype, {k, n}, 8);
      for (double& value : a.values) value *= 4;  // products out to the gelu's flat tail
      TestTensor product = referenceMatMul(a, b, dtype);
      const std::string t = dtypeText(dtype);
      std::string text = "graph @g(%a: " + a.type() + ", %b: " + b.type() + ") {\n  %y = MatMul(%a, %b) : " + t +
                         dimsText({rows, n}) + "\n  return %y\n}";
      for (dnnl::algorithm gelu : {dnnl::algorithm::eltwise_gelu_erf, dnnl::algorithm::eltwise_gelu_tanh}) {
        cpu::Epilogue epilogue;
        epilogue.steps = {cpu::EpilogueStep::eltwise(gelu)};
        std::vector<double> expected(product.values.size());
        for (size_t i = 0; i < expected.size(); ++i) {
          const double x = product.values[i];
          expected[i] = gelu == dnnl::algorithm::eltwise_gelu_erf
                            ? 0.5 * x * std::erfc(-x / std::sqrt(2.0))
                            : 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        }
        std::string name;
        std::vector<double> actual = runWithEpilogue(text, {a, b}, epilogue, false, &name);
        EXPECT_EQ(name.rfind(kernel, 0), 0u) << name;
        expectNear(TestTensor{dtype, {rows, n}, actual}, expected, toleranceFor(dtype, k), 1e-6,
                   "MatMul " + t + " " + dimsText(a.dims) + " + " + name);
      }
    }
  }
}

TEST(MatMulEpilogues, GemmWithCAndActivationsFromOnnxNodes) {
  TestTensor a = inputFor(DType::F32, {5, 8}, 1), b = inputFor(DType::F32, {8, 7}, 2), c = inputFor(DType::F32, {7}, 3);
  std::string text =
      "graph @g(%a: f32[5,8], %b: f32[8,7], %c: f32[7]) {\n"
      "  %y = Gemm(%a, %b, %c) {alpha = 2.0, beta = 0.5} : f32[5,7]\n"
      "  %lo = Constant() {value = tensor<f32[]> [-0.25]} : f32[]\n"
      "  %hi = Constant() {value = tensor<f32[]> [0.75]} : f32[]\n"
      "  %z = Clip(%y, %lo, %hi) : f32[5,7]\n"
      "  %s = Tanh(%z) : f32[5,7]\n"
      "  return %s\n}";
  auto graph = parseGraph(text);
  cpu::Epilogue epilogue;
  for (Node* node : graph->nodes()) {
    if (node->is("Clip") || node->is("Tanh")) {
      std::vector<cpu::EpilogueStep> steps = cpu::activationSteps(*node);
      ASSERT_FALSE(steps.empty()) << node->opType();
      epilogue.steps.insert(epilogue.steps.end(), steps.begin(), steps.end());
    }
  }
  std::string gemm_only =
      "graph @g(%a: f32[5,8], %b: f32[8,7], %c: f32[7]) {\n"
      "  %y = Gemm(%a, %b, %c) {alpha = 2.0, beta = 0.5} : f32[5,7]\n  return %y\n}";
  std::vector<double> actual = runWithEpilogue(gemm_only, {a, b, c}, epilogue, true);
  std::vector<double> expected(35);
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 7; ++j) {
      double sum = 0;
      for (int p = 0; p < 8; ++p) sum += a.values[i * 8 + p] * b.values[p * 7 + j];
      double v = 2.0 * sum + 0.5 * c.values[j];
      expected[i * 7 + j] = std::tanh(std::min(0.75, std::max(-0.25, v)));
    }
  }
  expectNear(TestTensor{DType::F32, {5, 7}, actual}, expected, 1e-5, 1e-6, "Gemm + Clip + Tanh epilogue");
  // Not an activation, or a Clip bound computed at run time: nothing to fuse.
  auto other = parseGraph(
      "graph @g(%x: f32[3], %lo: f32[]) {\n  %y = Clip(%x, %lo) : f32[3]\n  %z = Neg(%y) : f32[3]\n  return %z\n}");
  for (Node* node : other->nodes()) EXPECT_TRUE(cpu::activationSteps(*node).empty()) << node->opType();
}

TEST(MatMulEpilogues, UnsupportedOperandsAreDeclined) {
  TestTensor a = inputFor(DType::F32, {4, 8}, 1), b = inputFor(DType::F32, {8, 6}, 2);
  TestTensor wrong_bias = inputFor(DType::F32, {5}, 3), wrong_residual = inputFor(DType::F32, {3, 6}, 4);
  std::string text = "graph @g(%a: f32[4,8], %b: f32[8,6]) {\n  %y = MatMul(%a, %b) : f32[4,6]\n  return %y\n}";
  auto graph = parseGraph(text);
  Node* node = nullptr;
  for (Node* candidate : graph->nodes()) node = candidate;
  for (const TestTensor& operand : {wrong_bias, wrong_residual}) {
    KernelBuildContext context(*node,
                               {TensorDesc::of(DType::F32, {4, 8}), TensorDesc::of(DType::F32, {8, 6}),
                                TensorDesc::of(operand.dtype, operand.dims)},
                               {TensorDesc::of(DType::F32, {4, 6})}, {nullptr, nullptr, nullptr}, cpuDevice(), 1);
    cpu::Epilogue epilogue;
    epilogue.steps = {operand.dims.size() == 1 ? cpu::EpilogueStep::bias(2) : cpu::EpilogueStep::residual(2)};
    EXPECT_EQ(cpu::makeMatMulKernel(context, epilogue), nullptr) << operand.type();
  }
}

}  // namespace
}  // namespace estuary::ge::tensor_test
