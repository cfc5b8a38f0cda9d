// Conv and ConvTranspose in 1-D, 2-D and 3-D (seen as 3-D, see Window), with groups,
// strides, dilations, explicit or automatic padding and ConvTranspose's output_padding and
// output_shape. Sums of products accumulate in double per output plane; the innermost loop
// runs along the last spatial axis, so a ResNet-sized layer in f64 takes a fraction of a
// second.
#include <algorithm>
#include <string>

#include "reference/nn.h"

namespace estuary::ge::reference {

namespace {

struct Channels {
  int64_t batch = 0;
  int64_t in = 0;   // channels of X
  int64_t out = 0;  // channels of Y
  int64_t group = 1;
};

// Kernel offset k of a (kd, kh, kw) loop, flattened row-major.
int64_t kernelIndex(const Window& window, int64_t kd, int64_t kh, int64_t kw) {
  return (kd * window.kernel[1] + kh) * window.kernel[2] + kw;
}

// The input position output position `o` reads at kernel offset `k` along `axis` (may fall
// in the padding, outside [0, in)).
int64_t inputPosition(const Window& window, int axis, int64_t o, int64_t k) {
  return o * window.strides[axis] - window.pad_begin[axis] + k * window.dilations[axis];
}

bool inside(int64_t position, int64_t size) { return position >= 0 && position < size; }

// Conv: acc[o] += weight * plane[inputPosition(o, k)] for every output position o whose
// tap lands inside the input (taps in the padding read 0).
template <typename S>
void gatherTap(const Window& window, const S* plane, double weight, int64_t kd, int64_t kh, int64_t kw,
               double* acc) {
  for (int64_t od = 0; od < window.out[0]; ++od) {
    const int64_t id = inputPosition(window, 0, od, kd);
    if (!inside(id, window.in[0])) continue;
    for (int64_t oh = 0; oh < window.out[1]; ++oh) {
      const int64_t ih = inputPosition(window, 1, oh, kh);
      if (!inside(ih, window.in[1])) continue;
      const S* in_row = plane + (id * window.in[1] + ih) * window.in[2];
      double* out_row = acc + (od * window.out[1] + oh) * window.out[2];
      for (int64_t ow = 0; ow < window.out[2]; ++ow) {
        const int64_t iw = inputPosition(window, 2, ow, kw);
        if (inside(iw, window.in[2])) out_row[ow] += weight * static_cast<double>(in_row[iw]);
      }
    }
  }
}

// ConvTranspose, the adjoint of gatherTap: every input position i scatters into output
// position i * stride - pad_begin + k * dilation (positions outside the output are cropped).
template <typename S>
void scatterTap(const Window& window, const S* plane, double weight, int64_t kd, int64_t kh, int64_t kw,
                double* acc) {
  for (int64_t id = 0; id < window.in[0]; ++id) {
    const int64_t od = inputPosition(window, 0, id, kd);
    if (!inside(od, window.out[0])) continue;
    for (int64_t ih = 0; ih < window.in[1]; ++ih) {
      const int64_t oh = inputPosition(window, 1, ih, kh);
      if (!inside(oh, window.out[1])) continue;
      const S* in_row = plane + (id * window.in[1] + ih) * window.in[2];
      double* out_row = acc + (od * window.out[1] + oh) * window.out[2];
      for (int64_t iw = 0; iw < window.in[2]; ++iw) {
        const int64_t ow = inputPosition(window, 2, iw, kw);
        if (inside(ow, window.out[2])) out_row[ow] += weight * static_cast<double>(in_row[iw]);
      }
    }
  }
}

// Y[n, m] = B[m] + sum over the input channels c of m's group and the kernel offsets of the
// taps of X[n, c] weighted by the kernel of (m, c): W[m, c, k...] for Conv,
// W[c, m % (M / group), k...] for ConvTranspose.
template <typename S, bool kTranspose>
void convolve(const Channels& channels, const Window& window, const S* x, const S* w, const S* bias, S* y) {
  const int64_t in_per_group = channels.in / channels.group;
  const int64_t out_per_group = channels.out / channels.group;
  std::vector<double> acc(static_cast<size_t>(window.outSize()));
  for (int64_t n = 0; n < channels.batch; ++n) {
    for (int64_t m = 0; m < channels.out; ++m) {
      std::fill(acc.begin(), acc.end(), bias ? static_cast<double>(bias[m]) : 0.0);
      const int64_t g = m / out_per_group;
      for (int64_t c = 0; c < in_per_group; ++c) {
        const int64_t channel = g * in_per_group + c;
        const S* plane = x + (n * channels.in + channel) * window.inSize();
        const S* kernel = kTranspose ? w + (channel * out_per_group + m % out_per_group) * window.kernelSize()
                                     : w + (m * in_per_group + c) * window.kernelSize();
        for (int64_t kd = 0; kd < window.kernel[0]; ++kd) {
          for (int64_t kh = 0; kh < window.kernel[1]; ++kh) {
            for (int64_t kw = 0; kw < window.kernel[2]; ++kw) {
              const double weight = static_cast<double>(kernel[kernelIndex(window, kd, kh, kw)]);
              if (kTranspose) {
                scatterTap(window, plane, weight, kd, kh, kw, acc.data());
              } else {
                gatherTap(window, plane, weight, kd, kh, kw, acc.data());
              }
            }
          }
        }
      }
      S* out = y + (n * channels.out + m) * window.outSize();
      for (int64_t o = 0; o < window.outSize(); ++o) out[o] = static_cast<S>(acc[static_cast<size_t>(o)]);
    }
  }
}

// The spec's total_padding / 2 rounded down, as Python evaluates it, also for a negative
// total (an output_shape larger than the full output).
int64_t floorHalf(int64_t total) { return total >= 0 ? total / 2 : -((-total + 1) / 2); }

// ConvTranspose's window: `in` is X's spatial sizes, `out` Y's. With output_shape or a SAME
// auto_pad the spec derives the pads from the output size:
//   total = stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - out,
// SAME_UPPER starts with total / 2, otherwise with total - total / 2.
Window transposeWindow(const KernelBuildContext& context) {
  const TensorDesc& w = context.input(1);
  const int spatial = context.input(0).rank - 2;
  if (spatial < 1 || spatial > kSpatialAxes) context.fail("takes 1 to 3 spatial axes, not ", spatial);
  Window window;
  window.in = spatialDims(context.input(0));
  window.out = spatialDims(context.output(0));
  window.kernel = spatialDims(w);
  window.strides = spatialAttr(context, "strides", 1);
  window.dilations = spatialAttr(context, "dilations", 1);
  const Spatial output_padding = spatialAttr(context, "output_padding", 0);
  const std::string auto_pad = context.stringAttr("auto_pad");
  const bool derived = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER" || !context.intsAttr("output_shape").empty();
  std::vector<int64_t> pads = context.intsAttr("pads");
  if (pads.empty() || auto_pad != "NOTSET") pads.assign(static_cast<size_t>(2 * spatial), 0);
  if (static_cast<int>(pads.size()) != 2 * spatial) context.fail("attribute 'pads' has ", pads.size(), " values");
  for (int i = 0; i < spatial; ++i) {
    const int axis = kSpatialAxes - spatial + i;
    window.pad_begin[axis] = pads[i];
    window.pad_end[axis] = pads[spatial + i];
    if (derived) {
      const int64_t extent = (window.kernel[axis] - 1) * window.dilations[axis] + 1;
      const int64_t total = window.strides[axis] * (window.in[axis] - 1) + output_padding[axis] + extent - window.out[axis];
      window.pad_begin[axis] = auto_pad == "SAME_UPPER" ? floorHalf(total) : total - floorHalf(total);
      window.pad_end[axis] = total - window.pad_begin[axis];
    }
  }
  return window;
}

template <bool kTranspose>
std::unique_ptr<Kernel> makeConv(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const TensorDesc& x = context.input(0);
  const TensorDesc& w = context.input(1);
  Channels channels;
  channels.batch = x.dims[0];
  channels.in = x.dims[1];
  channels.group = context.intAttr("group");
  channels.out = context.output(0).dims[1];
  if (channels.group < 1 || channels.in % channels.group != 0 || channels.out % channels.group != 0) {
    context.fail("group ", channels.group, " does not divide ", channels.in, " input and ", channels.out,
                 " output channels");
  }
  const Window window = kTranspose ? transposeWindow(context)
                                   : forwardWindow(context, std::vector<int64_t>(w.dims.begin() + 2, w.dims.begin() + w.rank));
  const bool has_bias = context.hasInput(2);
  return dispatch(ReferenceFloatDTypes{}, x.dtype, [&](auto type) {
    using S = StorageOf<decltype(type)>;
    return makeKernel(context, [=](const KernelArgs& args) {
      convolve<S, kTranspose>(channels, window, static_cast<const S*>(args.inputs[0]),
                              static_cast<const S*>(args.inputs[1]),
                              has_bias ? static_cast<const S*>(args.inputs[2]) : nullptr, static_cast<S*>(args.outputs[0]));
    });
  });
}

}  // namespace

void registerConvKernels(KernelRegistry& registry) {
  registry.add("Conv", "", makeConv<false>);
  registry.add("ConvTranspose", "", makeConv<true>);
}

}  // namespace estuary::ge::reference
