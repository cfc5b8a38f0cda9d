// Per-op throughput: Estuary's CPU kernels (through a compiled model and a run context, as a
// user calls them) against the same oneDNN primitive called directly where there is one,
// and Estuary's own kernels (f64, integers, attention) alone.
//
//   ge_ops_bench [THREADS] [SECONDS_PER_CASE] [FILTER]
//
// Prints one row per case whose key contains FILTER (keys: conv-f32, matmul-f32, matmul-f64,
// matmul-batched-f64, matmul-i32, matmul-batched-i32, conv-f64, convtranspose-f64,
// attention-128, attention-causal-128, ... for 128, 512 and 2048): median time per call and
// GFLOP/s for both, and their ratio.
#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "estuary/ge/model.h"
#include "timing.h"
#include "estuary/text/parser.h"

using namespace estuary;
using estuary::bench::medianSeconds;

namespace {

int64_t product(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  return count;
}

// Uniform values in [-1, 1] as `dtype` (f32, f64 or an integer type, whose values are then
// -1, 0 or 1), as raw bytes.
std::vector<std::byte> randomData(DType dtype, int64_t count) {
  std::mt19937 random(5);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<std::byte> bytes(static_cast<size_t>(count) * dtypeSize(dtype));
  for (int64_t i = 0; i < count; ++i) {
    const double value = uniform(random);
    auto put = [&](auto typed) { std::memcpy(bytes.data() + i * sizeof typed, &typed, sizeof typed); };
    switch (dtype) {
      case DType::F32: put(static_cast<float>(value)); break;
      case DType::F64: put(value); break;
      case DType::I32: put(static_cast<int32_t>(std::lround(value))); break;
      default: std::fprintf(stderr, "no random data for %s\n", std::string(dtypeName(dtype)).c_str()); std::exit(1);
    }
  }
  return bytes;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

std::string typeText(DType dtype, const std::vector<int64_t>& dims) { return std::string(dtypeName(dtype)) + dimsText(dims); }

// `  %name = Constant() {...} : type` with random values. Weights are constants in a real
// model: passing them as inputs here would disable pre-packing, so the text embeds them as
// hex bytes.
std::string constantLine(const std::string& name, DType dtype, const std::vector<int64_t>& dims) {
  std::vector<std::byte> values = randomData(dtype, product(dims));
  static const char* hex = "0123456789abcdef";
  std::string text = "  %" + name + " = Constant() {value = tensor<" + typeText(dtype, dims) + "> 0x";
  for (std::byte value : values) {
    const auto byte = static_cast<unsigned char>(value);
    text += hex[byte >> 4];
    text += hex[byte & 15];
  }
  return text + "} : " + typeText(dtype, dims) + "\n";
}

// Median seconds per run of the graph `text` on random inputs of `input_dims`, all `dtype`.
double estuarySeconds(const std::string& text, DType dtype, const std::vector<std::vector<int64_t>>& input_dims,
                      int threads, double seconds) {
  auto graph = parseGraph(text);
  ge::BuildOptions options;
  options.num_threads = threads;
  auto model = ge::CompiledModel::build(*graph, options);
  auto context = model->createContext();
  std::vector<std::vector<std::byte>> data;
  std::vector<ge::HostTensor> inputs;
  for (const std::vector<int64_t>& dims : input_dims) {
    data.push_back(randomData(dtype, product(dims)));
    inputs.push_back(ge::HostTensor::of(ge::TensorDesc::of(dtype, dims), data.back().data()));
  }
  context->run(inputs);
  return medianSeconds([&] { context->run(inputs); }, seconds);
}

struct DirectPrimitive {
  dnnl::primitive primitive;
  std::unordered_map<int, dnnl::memory> args;
};

double onednnSeconds(DirectPrimitive& direct, dnnl::stream& stream, double seconds) {
  return medianSeconds([&] { direct.primitive.execute(stream, direct.args); stream.wait(); }, seconds);
}

void report(const std::string& name, double flops, double estuary, double onednn) {
  std::printf("| %s | %.3f | %.1f | %.3f | %.1f | %.2f |\n", name.c_str(), estuary * 1e3, flops / estuary * 1e-9,
              onednn * 1e3, flops / onednn * 1e-9, estuary / onednn);
}

// A case run by Estuary's own kernels: nothing to compare with.
void reportOwn(const std::string& name, double flops, double estuary) {
  std::printf("| %s | %.3f | %.2f | - | - | - |\n", name.c_str(), estuary * 1e3, flops / estuary * 1e-9);
}

// y = a x b with a [.., M, K] an input and b [.., K, N] a constant.
void matmulCase(DType dtype, const std::vector<int64_t>& a, const std::vector<int64_t>& b, int threads,
                double seconds) {
  std::vector<int64_t> y = a;
  y.back() = b.back();
  const std::string text = "graph @matmul(%a: " + typeText(dtype, a) + ") {\n" + constantLine("b", dtype, b) +
                           "  %y = MatMul(%a, %b) : " + typeText(dtype, y) + "\n  return %y\n}\n";
  const double flops = 2.0 * product(y) * a.back();
  reportOwn("MatMul " + dimsText(a) + " x " + dimsText(b) + " (" + std::string(dtypeName(dtype)) + ")", flops,
            estuarySeconds(text, dtype, {a}, threads, seconds));
}

// Conv or ConvTranspose of x by a constant w [.., k, k] with `attrs`, output dims `y`.
void convCase(const char* op, DType dtype, const std::vector<int64_t>& x, const std::vector<int64_t>& w,
              const std::vector<int64_t>& y, const std::string& attrs, int64_t macs_per_output, int threads,
              double seconds) {
  const std::string text = "graph @conv(%x: " + typeText(dtype, x) + ") {\n" + constantLine("w", dtype, w) + "  %y = " +
                           op + "(%x, %w) {" + attrs + "} : " + typeText(dtype, y) + "\n  return %y\n}\n";
  reportOwn(std::string(op) + " " + dimsText(x) + " * " + dimsText(w) + " {" + attrs + "} (" +
                std::string(dtypeName(dtype)) + ")",
            2.0 * product(y) * macs_per_output, estuarySeconds(text, dtype, {x}, threads, seconds));
}

// Self-attention of one sequence: Q, K, V [1, heads, seq, 64].
void attentionCase(int64_t seq, bool causal, int threads, double seconds) {
  const int64_t heads = 12, head = 64;
  const std::string type = typeText(DType::F32, {1, heads, seq, head});
  const std::string text = "graph @attention(%q: " + type + ", %k: " + type + ", %v: " + type +
                           ") {\n  %y = Attention(%q, %k, %v) {is_causal = " + (causal ? "1" : "0") + "} : " + type +
                           "\n  return %y\n}\n";
  const double flops = 4.0 * heads * seq * seq * head;  // Q K^T and P V; causal counts the whole square
  reportOwn("Attention 1x" + std::to_string(heads) + "x" + std::to_string(seq) + "x" + std::to_string(head) +
                (causal ? " causal" : "") + " (f32)",
            flops, estuarySeconds(text, DType::F32, {{1, heads, seq, head}, {1, heads, seq, head}, {1, heads, seq, head}},
                                  threads, seconds));
}

}  // namespace

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  double seconds = argc > 2 ? std::atof(argv[2]) : 2.0;
  const std::string filter = argc > 3 ? argv[3] : "";
  auto selected = [&](const std::string& name) { return name.find(filter) != std::string::npos; };
  omp_set_num_threads(threads);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  std::printf("threads=%d\n\n| case | Estuary (ms) | Estuary GFLOP/s | oneDNN direct (ms) | oneDNN GFLOP/s | time ratio |\n"
              "|---|---:|---:|---:|---:|---:|\n", threads);

  if (selected("conv-f32")) {
    // 3x3 convolution, 1x64x56x56 -> 64, pad 1: oneDNN picks its layouts, as a tuned user would.
    const int64_t n = 1, c = 64, h = 56, w = 56, k = 64;
    double flops = 2.0 * n * k * h * w * c * 9;
    std::string text = "graph @conv(%x: f32[1,64,56,56]) {\n" + constantLine("w", DType::F32, {k, c, 3, 3}) +
                       "  %y = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,64,56,56]\n  return %y\n}\n";
    double estuary = estuarySeconds(text, DType::F32, {{n, c, h, w}}, threads, seconds);
    dnnl::memory::desc src({n, c, h, w}, dt::f32, tag::any), weights({k, c, 3, 3}, dt::f32, tag::any),
        dst({n, k, h, w}, dt::f32, tag::any);
    dnnl::convolution_forward::primitive_desc pd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                        weights, dst, {1, 1}, {1, 1}, {1, 1}),
        engine);
    DirectPrimitive direct{dnnl::convolution_forward(pd),
                           {{DNNL_ARG_SRC, dnnl::memory(pd.src_desc(), engine)},
                            {DNNL_ARG_WEIGHTS, dnnl::memory(pd.weights_desc(), engine)},
                            {DNNL_ARG_DST, dnnl::memory(pd.dst_desc(), engine)}}};
    report("Conv 3x3 1x64x56x56 -> 64 (f32)", flops, estuary, onednnSeconds(direct, stream, seconds));
  }
  if (selected("matmul-f32")) {  // 1024^3 matrix product.
    const int64_t m = 1024;
    double flops = 2.0 * m * m * m;
    std::string text = "graph @matmul(%a: f32[1024,1024]) {\n" + constantLine("b", DType::F32, {m, m}) +
                       "  %y = MatMul(%a, %b) : f32[1024,1024]\n  return %y\n}\n";
    double estuary = estuarySeconds(text, DType::F32, {{m, m}}, threads, seconds);
    dnnl::memory::desc a({m, m}, dt::f32, tag::ab), b({m, m}, dt::f32, tag::any), c({m, m}, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine);
    DirectPrimitive direct{dnnl::matmul(pd),
                           {{DNNL_ARG_SRC, dnnl::memory(pd.src_desc(), engine)},
                            {DNNL_ARG_WEIGHTS, dnnl::memory(pd.weights_desc(), engine)},
                            {DNNL_ARG_DST, dnnl::memory(pd.dst_desc(), engine)}}};
    report("MatMul 1024x1024x1024 (f32)", flops, estuary, onednnSeconds(direct, stream, seconds));
  }
  // Estuary's own GEMM: f64 and integers, one product and a batch of attention-sized ones.
  for (DType dtype : {DType::F64, DType::I32}) {
    const std::string type(dtypeName(dtype));
    if (selected("matmul-" + type)) matmulCase(dtype, {512, 512}, {512, 512}, threads, seconds);
    if (selected("matmul-batched-" + type)) {
      matmulCase(dtype, {12, 128, 64}, {12, 64, 128}, threads, seconds);
    }
  }
  // Estuary's own convolution (f64): im2col + GEMM, and ConvTranspose's GEMM + col2im.
  if (selected("conv-f64")) {
    convCase("Conv", DType::F64, {1, 64, 56, 56}, {64, 64, 3, 3}, {1, 64, 56, 56}, "pads = [1, 1, 1, 1]", 64 * 9,
             threads, seconds);
  }
  if (selected("convtranspose-f64")) {
    convCase("ConvTranspose", DType::F64, {1, 64, 28, 28}, {64, 32, 4, 4}, {1, 32, 56, 56},
             "pads = [1, 1, 1, 1], strides = [2, 2]", 64 * 4, threads, seconds);
  }
  for (int64_t seq : {128, 512, 2048}) {
    if (selected("attention-" + std::to_string(seq))) attentionCase(seq, false, threads, seconds);
    if (selected("attention-causal-" + std::to_string(seq))) attentionCase(seq, true, threads, seconds);
  }
  return 0;
}
