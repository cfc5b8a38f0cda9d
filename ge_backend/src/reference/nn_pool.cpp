// MaxPool (with ceil_mode, dilations and the optional Indices output in either
// storage_order), AveragePool (count_include_pad, ceil_mode), GlobalAveragePool and
// GlobalMaxPool. Every (n, c) plane of X pools into the same plane of Y.
//
// Window positions past the padded input (a last window that ceil_mode adds) are never
// counted. A NaN in a max window wins, as in ReduceMax (the ONNX reference skips NaNs only
// as a side effect of padding with NaN).
#include <cmath>
#include <limits>
#include <string>

#include "reference/nn.h"

namespace estuary::ge::reference {

namespace {

template <typename S>
bool isNaN(S value) {
  if constexpr (std::is_floating_point_v<S>) {
    return std::isnan(value);
  } else {
    return false;
  }
}

// Whether `value` replaces `best` as a maximum: larger, or the first NaN.
template <typename S>
bool beats(S value, S best) {
  return value > best || (isNaN(value) && !isNaN(best));
}

// The value of a max over nothing (a window entirely in the padding).
template <typename S>
S emptyMax() {
  if constexpr (std::numeric_limits<S>::has_infinity) {
    return -std::numeric_limits<S>::infinity();
  } else {
    return std::numeric_limits<S>::lowest();
  }
}

// Calls visit(id, ih, iw) with the input position of every tap of the window of output
// position (od, oh, ow), in row-major kernel order; positions may lie in the padding.
template <typename Visit>
void forEachTap(const Window& window, int64_t od, int64_t oh, int64_t ow, Visit&& visit) {
  for (int64_t kd = 0; kd < window.kernel[0]; ++kd) {
    const int64_t id = od * window.strides[0] - window.pad_begin[0] + kd * window.dilations[0];
    for (int64_t kh = 0; kh < window.kernel[1]; ++kh) {
      const int64_t ih = oh * window.strides[1] - window.pad_begin[1] + kh * window.dilations[1];
      for (int64_t kw = 0; kw < window.kernel[2]; ++kw) {
        const int64_t iw = ow * window.strides[2] - window.pad_begin[2] + kw * window.dilations[2];
        visit(id, ih, iw);
      }
    }
  }
}

bool insideInput(const Window& window, int64_t id, int64_t ih, int64_t iw) {
  return id >= 0 && id < window.in[0] && ih >= 0 && ih < window.in[1] && iw >= 0 && iw < window.in[2];
}

// Inside the input with its padding: [-pad_begin, in + pad_end) on every axis (the taps a
// ceil_mode window has past the end padding are not).
bool insidePadded(const Window& window, int64_t id, int64_t ih, int64_t iw) {
  return id < window.in[0] + window.pad_end[0] && ih < window.in[1] + window.pad_end[1] &&
         iw < window.in[2] + window.pad_end[2];
}

// Calls pool(plane, output offset, od, oh, ow) for every output position of every plane.
template <typename Pool>
void forEachOutput(const Window& window, int64_t planes, Pool&& pool) {
  for (int64_t plane = 0; plane < planes; ++plane) {
    int64_t o = plane * window.outSize();
    for (int64_t od = 0; od < window.out[0]; ++od) {
      for (int64_t oh = 0; oh < window.out[1]; ++oh) {
        for (int64_t ow = 0; ow < window.out[2]; ++ow) pool(plane, o++, od, oh, ow);
      }
    }
  }
}

// Y = the window's maximum; Indices = its flat index in X: the plane's offset plus the
// spatial offset, row-major (storage_order 0) or column-major (1). The first maximum in
// row-major window order wins ties.
template <typename S>
void maxPool(const Window& window, int64_t planes, bool column_major, const S* x, S* y, int64_t* indices) {
  forEachOutput(window, planes, [&](int64_t plane, int64_t o, int64_t od, int64_t oh, int64_t ow) {
    const S* in = x + plane * window.inSize();
    bool found = false;
    S best = emptyMax<S>();
    int64_t best_index = 0;
    forEachTap(window, od, oh, ow, [&](int64_t id, int64_t ih, int64_t iw) {
      if (!insideInput(window, id, ih, iw)) return;
      const S value = in[(id * window.in[1] + ih) * window.in[2] + iw];
      if (found && !beats(value, best)) return;
      found = true;
      best = value;
      best_index = column_major ? id + (ih + iw * window.in[1]) * window.in[0] : (id * window.in[1] + ih) * window.in[2] + iw;
    });
    y[o] = best;
    if (indices) indices[o] = plane * window.inSize() + best_index;
  });
}

// Y = the sum of the window's input elements divided by their count, or with
// count_include_pad by the count of its taps inside the padded input.
template <typename S>
void averagePool(const Window& window, int64_t planes, bool count_include_pad, const S* x, S* y) {
  forEachOutput(window, planes, [&](int64_t plane, int64_t o, int64_t od, int64_t oh, int64_t ow) {
    const S* in = x + plane * window.inSize();
    double sum = 0;
    int64_t inputs = 0, padded = 0;
    forEachTap(window, od, oh, ow, [&](int64_t id, int64_t ih, int64_t iw) {
      if (insidePadded(window, id, ih, iw)) ++padded;
      if (!insideInput(window, id, ih, iw)) return;
      sum += static_cast<double>(in[(id * window.in[1] + ih) * window.in[2] + iw]);
      ++inputs;
    });
    y[o] = static_cast<S>(sum / static_cast<double>(count_include_pad ? padded : inputs));
  });
}

int64_t planesOf(const TensorDesc& x) { return x.dims[0] * x.dims[1]; }

std::unique_ptr<Kernel> makeMaxPool(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const Window window = forwardWindow(context, {});
  const int64_t planes = planesOf(context.input(0));
  const bool column_major = context.intAttr("storage_order") != 0;
  const bool has_indices = context.numOutputs() > 1;
  return dispatch(ReferenceDTypes{}, context.input(0).dtype, [&](auto type) {
    using S = StorageOf<decltype(type)>;
    return makeKernel(context, [=](const KernelArgs& args) {
      maxPool<S>(window, planes, column_major, static_cast<const S*>(args.inputs[0]), static_cast<S*>(args.outputs[0]),
                 has_indices ? static_cast<int64_t*>(args.outputs[1]) : nullptr);
    });
  });
}

std::unique_ptr<Kernel> makeAveragePool(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const Window window = forwardWindow(context, {});
  const int64_t planes = planesOf(context.input(0));
  const bool count_include_pad = context.intAttr("count_include_pad") != 0;
  return dispatch(ReferenceFloatDTypes{}, context.input(0).dtype, [&](auto type) {
    using S = StorageOf<decltype(type)>;
    return makeKernel(context, [=](const KernelArgs& args) {
      averagePool<S>(window, planes, count_include_pad, static_cast<const S*>(args.inputs[0]),
                     static_cast<S*>(args.outputs[0]));
    });
  });
}

// Global pools: one value per (n, c) plane, the mean or the maximum of the whole plane.
template <bool kMax>
std::unique_ptr<Kernel> makeGlobalPool(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const TensorDesc& x = context.input(0);
  const int64_t planes = planesOf(x);
  const int64_t size = planes == 0 ? 0 : x.numElements() / planes;
  return dispatch(ReferenceFloatDTypes{}, x.dtype, [&](auto type) {
    using S = StorageOf<decltype(type)>;
    return makeKernel(context, [=](const KernelArgs& args) {
      const S* in = static_cast<const S*>(args.inputs[0]);
      S* out = static_cast<S*>(args.outputs[0]);
      for (int64_t plane = 0; plane < planes; ++plane) {
        const S* values = in + plane * size;
        if constexpr (kMax) {
          S best = emptyMax<S>();
          for (int64_t i = 0; i < size; ++i) {
            if (beats(values[i], best)) best = values[i];
          }
          out[plane] = best;
        } else {
          double sum = 0;
          for (int64_t i = 0; i < size; ++i) sum += static_cast<double>(values[i]);
          out[plane] = static_cast<S>(sum / static_cast<double>(size));
        }
      }
    });
  });
}

}  // namespace

void registerPoolKernels(KernelRegistry& registry) {
  registry.add("MaxPool", "", makeMaxPool);
  registry.add("AveragePool", "", makeAveragePool);
  registry.add("GlobalMaxPool", "", makeGlobalPool<true>);
  registry.add("GlobalAveragePool", "", makeGlobalPool<false>);
}

}  // namespace estuary::ge::reference
