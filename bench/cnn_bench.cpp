// CNN inference latency: Estuary with activations kept plain (NCHW everywhere) against
// Estuary with layout assignment (convolution chains in oneDNN's preferred layout), and for
// the bottleneck chain against the same network written with oneDNN directly.
//
//   cnn_bench [--model resnet50|mobilenetv2|bottleneck|FILE.eom] [--batch N] [--threads T]
//             [--seconds S] [--rounds R] [--layouts-only 1]
//
// The synthetic models (cnn_graphs.h) are built with random weights; a .eom file (from
// `estuary build`) runs with its inputs' symbolic dims set to the batch. Prints one
// markdown row per configuration (layout assignment, then each layout forced throughout):
// median latency over the rounds, and the median of each round's ratio to the
// layout-assigned run.
#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cnn_graphs.h"
#include "estuary/ge/model.h"
#include "timing.h"

using namespace estuary;
using estuary::bench::medianSeconds;

namespace {

std::vector<float> randomData(int64_t count) {
  std::mt19937 random(5);
  std::normal_distribution<float> normal;
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = normal(random);
  return values;
}

struct EstuaryRun {
  double seconds = 0;
  std::string summary;  // reorders, folded normalizations, arena
};

// Runs `model` on random inputs whose symbolic dims are `batch`.
EstuaryRun timeModel(const std::shared_ptr<ge::CompiledModel>& model, int64_t batch, double seconds) {
  std::vector<std::vector<float>> data;
  std::vector<ge::HostTensor> inputs;
  for (const ge::IoInfo& input : model->inputs()) {
    std::vector<int64_t> dims;
    for (size_t d = 0; d < input.type.shape.rank(); ++d) {
      const Dim& dim = input.type.shape[d];
      dims.push_back(dim.isStatic() ? dim.value() : batch);
    }
    ge::TensorDesc desc = ge::TensorDesc::of(input.type.dtype, dims);
    if (desc.dtype != DType::F32) {
      std::fprintf(stderr, "input '%s' is %s; this benchmark feeds f32 only\n", input.name.c_str(),
                   desc.str().c_str());
      std::exit(2);
    }
    data.push_back(randomData(desc.numElements()));
    inputs.push_back(ge::HostTensor::of(desc, data.back().data()));
  }
  auto context = model->createContext();
  EstuaryRun run;
  run.seconds = medianSeconds([&] { context->run(inputs); }, seconds);
  const ge::BuildReport& report = model->report();
  size_t winograd = 0;
  for (const std::string& kernel : report.kernels) winograd += kernel.find("wino") != std::string::npos;
  run.summary = std::to_string(report.kernels.size()) + " steps, " + std::to_string(winograd) + " Winograd, " +
                std::to_string(report.layout_reorders) +
                " reorders, " + std::to_string(report.folded_batch_norms) + " BN folded, arena " +
                std::to_string(report.planned_activation_bytes >> 20) + " MiB";
  return run;
}

// The bottleneck chain of cnn::bottleneckChain written against oneDNN directly, as a tuned
// user would: layouts and weight formats chosen by oneDNN (format_tag::any), BatchNormalization
// folded (so not computed), ReLU and the residual sum as post-ops, the block's input
// updated in place by the last 1x1 convolution, reorders from and to NCHW at the ends.
double onednnBottleneckSeconds(int64_t batch, int64_t channels, int64_t size, int blocks, double seconds,
                               std::string& implementations) {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const int64_t inner = channels / 4;
  auto any = [&](int64_t c) { return dnnl::memory::desc({batch, c, size, size}, dt::f32, tag::any); };
  auto conv = [&](int64_t in, int64_t out, int64_t kernel, bool sum) {
    dnnl::post_ops post_ops;
    if (sum) post_ops.append_sum(1.f);
    post_ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(post_ops);
    const int64_t pad = kernel / 2;
    dnnl::memory::desc weights({out, in, kernel, kernel}, dt::f32, tag::any), bias({out}, dt::f32, tag::a);
    return dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                        any(in), weights, bias, any(out), {1, 1}, {pad, pad}, {pad, pad}),
        attr, engine);
  };
  auto reduce = conv(channels, inner, 1, false), spatial = conv(inner, inner, 3, false),
       expand = conv(inner, channels, 1, true);
  implementations = std::string(reduce.impl_info_str()) + ", " + spatial.impl_info_str() + ", " +
                    expand.impl_info_str();
  struct Layer {
    dnnl::convolution_forward primitive;
    dnnl::memory weights, bias;
  };
  // He-scaled random weights (their blocked order does not matter for random values): real
  // magnitudes keep the activations away from denormals, which would time something else.
  std::mt19937 random(7);
  auto fill = [&](const dnnl::memory& memory, float stddev) {
    std::normal_distribution<float> normal(0.f, stddev);
    auto* data = static_cast<float*>(memory.get_data_handle());
    for (size_t i = 0; i < memory.get_desc().get_size() / sizeof(float); ++i) data[i] = normal(random);
  };
  std::vector<Layer> layers;
  for (int b = 0; b < blocks; ++b) {
    for (const auto* pd : {&reduce, &spatial, &expand}) {
      layers.push_back({dnnl::convolution_forward(*pd), dnnl::memory(pd->weights_desc(), engine),
                        dnnl::memory(pd->bias_desc(), engine)});
      const dnnl::memory::dims dims = pd->weights_desc().dims();
      fill(layers.back().weights, std::sqrt(2.f / static_cast<float>(dims[1] * dims[2] * dims[3])));
      fill(layers.back().bias, 0.1f);
    }
  }
  dnnl::memory plain_in({{batch, channels, size, size}, dt::f32, tag::nchw}, engine),
      plain_out({{batch, channels, size, size}, dt::f32, tag::nchw}, engine);
  dnnl::memory x(reduce.src_desc(), engine), y(reduce.dst_desc(), engine), z(spatial.dst_desc(), engine);
  std::vector<float> input = randomData(batch * channels * size * size);
  std::copy(input.begin(), input.end(), static_cast<float*>(plain_in.get_data_handle()));
  dnnl::reorder to_chain(plain_in, x), from_chain(x, plain_out);
  return medianSeconds(
      [&] {
        to_chain.execute(stream, plain_in, x);
        for (size_t l = 0; l < layers.size(); l += 3) {
          const dnnl::memory* sources[] = {&x, &y, &z};
          const dnnl::memory* targets[] = {&y, &z, &x};
          for (size_t k = 0; k < 3; ++k) {
            layers[l + k].primitive.execute(stream, {{DNNL_ARG_SRC, *sources[k]},
                                                     {DNNL_ARG_WEIGHTS, layers[l + k].weights},
                                                     {DNNL_ARG_BIAS, layers[l + k].bias},
                                                     {DNNL_ARG_DST, *targets[k]}});
          }
        }
        from_chain.execute(stream, x, plain_out);
        stream.wait();
      },
      seconds);
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_name = "resnet50";
  int64_t batch = 1;
  int threads = 1;
  double seconds = 3.0;
  bool layouts_only = false;
  int rounds = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--model") model_name = argv[i + 1];
    else if (flag == "--batch") batch = std::atoll(argv[i + 1]);
    else if (flag == "--threads") threads = std::atoi(argv[i + 1]);
    else if (flag == "--seconds") seconds = std::atof(argv[i + 1]);
    else if (flag == "--layouts-only") layouts_only = std::atoi(argv[i + 1]) != 0;
    else if (flag == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "unknown option %s\nusage: cnn_bench [--model resnet50|mobilenetv2|bottleneck|FILE.eom] "
                           "[--batch N] [--threads T] [--seconds S] [--rounds R] [--layouts-only 1]\n", argv[i]);
      return 2;
    }
  }
  omp_set_num_threads(threads);
  const int64_t chain_channels = 256, chain_size = 56;
  const int chain_blocks = 3;
  std::unique_ptr<Graph> graph;
  if (model_name == "resnet50") graph = cnn::resnet50(batch);
  else if (model_name == "mobilenetv2") graph = cnn::mobilenetV2(batch);
  else if (model_name == "bottleneck") graph = cnn::bottleneckChain(batch, chain_channels, chain_size, chain_blocks);

  std::printf("model=%s batch=%lld threads=%d, median of %d round(s)\n\n| configuration | median (ms) | "
              "ratio to layouts | plan |\n|---|---:|---:|---|\n",
              model_name.c_str(), static_cast<long long>(batch), threads, rounds);
  auto build = [&](std::optional<ge::Layout> layout) {
    ge::BuildOptions options;
    options.num_threads = threads;
    options.activation_layout = layout;
    return graph ? ge::CompiledModel::build(*graph, options) : ge::CompiledModel::load(model_name, options);
  };
  struct Configuration {
    std::string name;
    std::shared_ptr<ge::CompiledModel> model;
    std::vector<double> seconds, ratios;
    std::string summary;
  };
  std::vector<Configuration> configurations;
  configurations.push_back({"Estuary, layout assignment", build(std::nullopt), {}, {}, ""});
  if (!layouts_only) {
    for (ge::Layout forced : {ge::Layout::ChannelsLast, ge::Layout::Blocked16, ge::Layout::Plain}) {
      configurations.push_back(
          {std::string("Estuary, ") + ge::layoutName(forced) + " throughout", build(forced), {}, {}, ""});
    }
  }
  // Rounds alternate the configurations, so that drift on a shared machine hits all alike;
  // each ratio is taken within a round.
  for (int round = 0; round < rounds; ++round) {
    for (Configuration& configuration : configurations) {
      EstuaryRun run = timeModel(configuration.model, batch, seconds);
      configuration.seconds.push_back(run.seconds);
      configuration.ratios.push_back(run.seconds / configurations.front().seconds.back());
      configuration.summary = run.summary;
    }
  }
  auto median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  };
  for (const Configuration& configuration : configurations) {
    std::printf("| %s | %.3f | %.2f | %s |\n", configuration.name.c_str(), median(configuration.seconds) * 1e3,
                median(configuration.ratios), configuration.summary.c_str());
  }
  if (model_name == "bottleneck" && !layouts_only) {
    std::string implementations;
    double direct = onednnBottleneckSeconds(batch, chain_channels, chain_size, chain_blocks, seconds, implementations);
    std::printf("| oneDNN direct | %.3f | %.2f | %s |\n", direct * 1e3, direct / median(configurations.front().seconds),
                implementations.c_str());
  }
  return 0;
}
