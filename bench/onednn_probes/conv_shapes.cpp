// ResNet-50's convolutions at batch 1 on oneDNN alone: each distinct shape (weighted by how
// often the network has it), formats chosen by oneDNN, ReLU post-op, inputs filled with small
// values (uninitialized memory may hold denormals). Prints per shape the 12th percentile of
// 60 runs and the implementation, then the weighted total. Compiles against oneDNN 2.x and
// 3.x; `winograd` as argument asks for Winograd on 3x3 stride-1 shapes (2.x only).
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace dnnl;

namespace {

struct ConvShape {
  int ic, oc, in_size, kernel, stride, count;
};

const std::vector<ConvShape> kResNet50 = {
    {3, 64, 224, 7, 2, 1},      {64, 64, 56, 1, 1, 1},     {64, 64, 56, 3, 1, 3},     {64, 256, 56, 1, 1, 4},
    {256, 64, 56, 1, 1, 2},     {256, 128, 56, 1, 1, 1},   {128, 128, 56, 3, 2, 1},   {128, 512, 28, 1, 1, 4},
    {256, 512, 56, 1, 2, 1},    {512, 128, 28, 1, 1, 3},   {128, 128, 28, 3, 1, 3},   {512, 256, 28, 1, 1, 1},
    {256, 256, 28, 3, 2, 1},    {256, 1024, 14, 1, 1, 6},  {512, 1024, 28, 1, 2, 1},  {1024, 256, 14, 1, 1, 5},
    {256, 256, 14, 3, 1, 5},    {1024, 512, 14, 1, 1, 1},  {512, 512, 14, 3, 2, 1},   {512, 2048, 7, 1, 1, 3},
    {1024, 2048, 14, 1, 2, 1},  {2048, 512, 7, 1, 1, 2},   {512, 512, 7, 3, 1, 2}};

void fillSmall(memory& m) {
  auto* p = static_cast<float*>(m.get_data_handle());
  size_t n = m.get_desc().get_size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) p[i] = 0.01f * static_cast<float>(i % 7);
}

}  // namespace

int main(int argc, char** argv) {
  const bool winograd = argc > 1 && std::string(argv[1]) == "winograd";
  engine eng(engine::kind::cpu, 0);
  stream strm(eng);
  double total = 0;
  for (const ConvShape& c : kResNet50) {
    const int pad = c.kernel / 2, out = (c.in_size + 2 * pad - c.kernel) / c.stride + 1;
    const auto f32 = memory::data_type::f32;
    const auto any = memory::format_tag::any;
    memory::desc src({1, c.ic, c.in_size, c.in_size}, f32, any), weights({c.oc, c.ic, c.kernel, c.kernel}, f32, any);
    memory::desc bias({c.oc}, f32, memory::format_tag::a), dst({1, c.oc, out, out}, f32, any);
    post_ops relu;
#if DNNL_VERSION_MAJOR >= 3
    relu.append_eltwise(algorithm::eltwise_relu, 0.f, 0.f);
#else
    relu.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
#endif
    primitive_attr attr;
    attr.set_post_ops(relu);
    attr.set_scratchpad_mode(scratchpad_mode::user);
    const auto algo = winograd && c.kernel == 3 && c.stride == 1 ? algorithm::convolution_winograd
                                                                   : algorithm::convolution_direct;
#if DNNL_VERSION_MAJOR >= 3
    convolution_forward::primitive_desc pd(eng, prop_kind::forward_inference, algo, src, weights, bias, dst,
                                           {c.stride, c.stride}, {pad, pad}, {pad, pad}, attr);
#else
    convolution_forward::primitive_desc pd(
        convolution_forward::desc(prop_kind::forward_inference, algo, src, weights, bias, dst, {c.stride, c.stride},
                                  {pad, pad}, {pad, pad}),
        attr, eng);
#endif
    memory s(pd.src_desc(), eng), w(pd.weights_desc(), eng), b(bias, eng), d(pd.dst_desc(), eng);
    memory scratch(pd.scratchpad_desc(), eng);
    for (memory* m : {&s, &w, &b, &d}) fillSmall(*m);
    convolution_forward conv(pd);
    std::vector<double> times;
    for (int i = 0; i < 60; ++i) {
      auto start = std::chrono::steady_clock::now();
      conv.execute(strm, {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, d},
                          {DNNL_ARG_SCRATCHPAD, scratch}});
      strm.wait();
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    const double ms = times[12];
    total += ms * c.count;
    std::printf("ic %4d oc %4d in %3d k%d s%d x%d  %7.3f ms  %6.1f GFLOP/s  %s\n", c.ic, c.oc, c.in_size, c.kernel,
                c.stride, c.count, ms, 2.0 * c.ic * c.oc * c.kernel * c.kernel * out * out / ms / 1e6,
                pd.impl_info_str());
  }
  std::printf("total %.2f ms (oneDNN %d.%d)\n", total, DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR);
}
