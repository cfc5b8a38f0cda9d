// Per-op throughput: Estuary's CPU kernels (through a compiled model and a run context, as a
// user calls them) against the same oneDNN primitive called directly.
//
//   ge_ops_bench [THREADS] [SECONDS_PER_CASE]
//
// Prints one row per case: median time per call and GFLOP/s for both, and their ratio.
#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

std::vector<float> randomData(size_t count) {
  std::mt19937 random(5);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> values(count);
  for (float& v : values) v = uniform(random);
  return values;
}

std::string weightLiteral(const std::vector<int64_t>& dims) {
  // Weights are constants in a real model: pass them as inputs here would disable pre-packing,
  // so the text embeds them as hex bytes.
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  std::vector<float> values = randomData(static_cast<size_t>(count));
  static const char* hex = "0123456789abcdef";
  std::string text = "0x";
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (size_t i = 0; i < values.size() * sizeof(float); ++i) {
    text += hex[bytes[i] >> 4];
    text += hex[bytes[i] & 15];
  }
  return text;
}

double estuarySeconds(const std::string& text, const std::vector<int64_t>& input_dims, int threads, double seconds) {
  auto graph = parseGraph(text);
  ge::BuildOptions options;
  options.num_threads = threads;
  auto model = ge::CompiledModel::build(*graph, options);
  auto context = model->createContext();
  int64_t count = 1;
  for (int64_t d : input_dims) count *= d;
  std::vector<float> input = randomData(static_cast<size_t>(count));
  std::vector<ge::HostTensor> inputs{ge::HostTensor::of(ge::TensorDesc::of(DType::F32, input_dims), input.data())};
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

void report(const char* name, double flops, double estuary, double onednn) {
  std::printf("| %s | %.3f | %.1f | %.3f | %.1f | %.2f |\n", name, estuary * 1e3, flops / estuary * 1e-9,
              onednn * 1e3, flops / onednn * 1e-9, estuary / onednn);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  double seconds = argc > 2 ? std::atof(argv[2]) : 2.0;
  omp_set_num_threads(threads);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  std::printf("threads=%d\n\n| case | Estuary (ms) | Estuary GFLOP/s | oneDNN direct (ms) | oneDNN GFLOP/s | time ratio |\n"
              "|---|---:|---:|---:|---:|---:|\n", threads);

  {  // 3x3 convolution, 1x64x56x56 -> 64, pad 1: oneDNN picks its layouts, as a tuned user would.
    const int64_t n = 1, c = 64, h = 56, w = 56, k = 64;
    double flops = 2.0 * n * k * h * w * c * 9;
    std::string text = "graph @conv(%x: f32[1,64,56,56]) {\n  %w = Constant() {value = tensor<f32[64,64,3,3]> " +
                       weightLiteral({k, c, 3, 3}) +
                       "} : f32[64,64,3,3]\n  %y = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,64,56,56]\n  return %y\n}\n";
    double estuary = estuarySeconds(text, {n, c, h, w}, threads, seconds);
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
  {  // 1024^3 matrix product.
    const int64_t m = 1024;
    double flops = 2.0 * m * m * m;
    std::string text = "graph @matmul(%a: f32[1024,1024]) {\n  %b = Constant() {value = tensor<f32[1024,1024]> " +
                       weightLiteral({m, m}) + "} : f32[1024,1024]\n  %y = MatMul(%a, %b) : f32[1024,1024]\n  return %y\n}\n";
    double estuary = estuarySeconds(text, {m, m}, threads, seconds);
    dnnl::memory::desc a({m, m}, dt::f32, tag::ab), b({m, m}, dt::f32, tag::any), c({m, m}, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine);
    DirectPrimitive direct{dnnl::matmul(pd),
                           {{DNNL_ARG_SRC, dnnl::memory(pd.src_desc(), engine)},
                            {DNNL_ARG_WEIGHTS, dnnl::memory(pd.weights_desc(), engine)},
                            {DNNL_ARG_DST, dnnl::memory(pd.dst_desc(), engine)}}};
    report("MatMul 1024x1024x1024 (f32)", flops, estuary, onednnSeconds(direct, stream, seconds));
  }
  return 0;
}
