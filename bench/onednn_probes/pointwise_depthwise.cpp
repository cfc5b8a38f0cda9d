// MobileNetV2's inverted-residual pairs on oneDNN alone: a 1x1 expansion with ReLU6 followed
// by a 3x3 depthwise convolution with ReLU6, run as two primitives and as one convolution
// with oneDNN's depthwise post-op (append_dw). Prints both medians of 200 runs and the
// implementations oneDNN picked; `blocked` as argument uses nChw16c activations, else nhwc.
// oneDNN 2.x API.
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

namespace {

struct Pair {
  int in_channels, expanded, size, stride;
};

void fillSmall(memory& m) {
  auto* p = static_cast<float*>(m.get_data_handle());
  size_t n = m.get_desc().get_size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) p[i] = 0.01f * static_cast<float>(i % 7);
}

template <typename Run>
double medianMs(Run run) {
  std::vector<double> times;
  for (int i = 0; i < 200; ++i) {
    auto start = std::chrono::steady_clock::now();
    run();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

convolution_forward::primitive_desc convolution(const engine& eng, const memory::desc& src, const memory::desc& weights,
                                                const memory::desc& bias, const memory::desc& dst, int stride,
                                                int pad, const post_ops& ops) {
  primitive_attr attr;
  attr.set_post_ops(ops);
  attr.set_scratchpad_mode(scratchpad_mode::user);
  return convolution_forward::primitive_desc(
      convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct, src, weights, bias, dst,
                                {stride, stride}, {pad, pad}, {pad, pad}),
      attr, eng);
}

}  // namespace

int main(int argc, char** argv) {
  const tag activations = argc > 1 && std::string(argv[1]) == "blocked" ? tag::nChw16c : tag::nhwc;
  engine eng(engine::kind::cpu, 0);
  stream strm(eng);
  const std::vector<Pair> pairs = {{16, 96, 112, 2}, {24, 144, 56, 1}, {24, 144, 56, 2}, {32, 192, 28, 1},
                                   {64, 384, 14, 1}, {96, 576, 14, 2}, {160, 960, 7, 1}};
  for (const Pair& p : pairs) {
    const int out = p.stride == 2 ? p.size / 2 : p.size;
    memory::desc src({1, p.in_channels, p.size, p.size}, dt::f32, activations);
    memory::desc mid({1, p.expanded, p.size, p.size}, dt::f32, activations);
    memory::desc dst({1, p.expanded, out, out}, dt::f32, activations);
    memory::desc pw_weights({p.expanded, p.in_channels, 1, 1}, dt::f32, tag::any);
    memory::desc dw_weights({p.expanded, 1, 1, 3, 3}, dt::f32, tag::any);
    memory::desc bias({p.expanded}, dt::f32, tag::a);
    post_ops relu6;
    relu6.append_eltwise(1.f, algorithm::eltwise_clip, 0.f, 6.f);

    auto pw = convolution(eng, src, pw_weights, bias, mid, 1, 0, relu6);
    auto dw = convolution(eng, mid, dw_weights, bias, dst, p.stride, 1, relu6);
    memory s(src, eng), m(mid, eng), d(dst, eng), b(bias, eng);
    memory pw_w(pw.weights_desc(), eng), dw_w(dw.weights_desc(), eng);
    memory scratch(memory::desc({static_cast<memory::dim>(std::max(pw.scratchpad_desc().get_size(), dw.scratchpad_desc().get_size()))},
                                dt::u8, tag::a),
                   eng);
    for (memory* x : {&s, &m, &d, &b, &pw_w, &dw_w}) fillSmall(*x);
    convolution_forward pw_conv(pw), dw_conv(dw);
    const double separate = medianMs([&] {
      pw_conv.execute(strm, {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, pw_w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, m},
                             {DNNL_ARG_SCRATCHPAD, scratch}});
      dw_conv.execute(strm, {{DNNL_ARG_SRC, m}, {DNNL_ARG_WEIGHTS, dw_w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, d},
                             {DNNL_ARG_SCRATCHPAD, scratch}});
    });

    post_ops chain = relu6;
    chain.append_dw(dt::f32, dt::f32, dt::f32, 3, p.stride, 1, 0, {1.f});
    chain.append_eltwise(1.f, algorithm::eltwise_clip, 0.f, 6.f);
    auto fused = convolution(eng, src, pw_weights, bias, mid, 1, 0, chain);
    const int dw_weights_arg = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS;
    memory fused_w(fused.weights_desc(), eng), fused_dw_w(fused.query_md(query::exec_arg_md, dw_weights_arg), eng);
    memory fused_dst(fused.dst_desc(), eng), fused_scratch(fused.scratchpad_desc(), eng);
    for (memory* x : {&fused_w, &fused_dw_w}) fillSmall(*x);
    convolution_forward fused_conv(fused);
    const double together = medianMs([&] {
      fused_conv.execute(strm, {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, fused_w}, {DNNL_ARG_BIAS, b},
                                {DNNL_ARG_DST, fused_dst}, {dw_weights_arg, fused_dw_w},
                                {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, b}, {DNNL_ARG_SCRATCHPAD, fused_scratch}});
    });
    std::printf("%3d -> %3d at %3d, depthwise stride %d: separate %.3f ms (%s + %s), fused %.3f ms (%s)\n",
                p.in_channels, p.expanded, p.size, p.stride, separate, pw.impl_info_str(), dw.impl_info_str(),
                together, fused.impl_info_str());
  }
}
