// Pooling: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool. oneDNN's pooling
// primitive runs the 1-D to 3-D f32/bf16/f16 (and i8/u8 max) cases. An own kernel covers
// what it cannot: MaxPool's Indices output (oneDNN's workspace is not ONNX's flat index),
// f64, AveragePool counting the explicit padding when ceil_mode extends past it, and more
// than three spatial axes. oneDNN also runs them on tensors in other layouts than Plain
// (TensorDesc::layout); the own kernel is for Plain tensors only, beside one for 2-D max
// pooling in channels-last layout, which the tuner times against oneDNN's.
#include <cstring>
#include <limits>
#include <tuple>

#include "cpu/nn_kernels.h"
#include "cpu/nn_support.h"

namespace estuary::ge::cpu {

namespace {

enum class PoolKind { Max, Average };

struct PoolGeometry {
  std::vector<int64_t> in, out, kernel, strides, dilations, pad_begin, pad_end;
  int64_t planes = 0;  // N * C
  bool count_include_pad = false;
};

PoolGeometry poolGeometry(const KernelBuildContext& context, bool global) {
  const TensorDesc& x = context.input(0);
  const TensorDesc& y = context.output(0);
  const size_t spatial = static_cast<size_t>(x.rank) - 2;
  PoolGeometry geometry;
  geometry.planes = x.dims[0] * x.dims[1];
  for (size_t i = 0; i < spatial; ++i) {
    geometry.in.push_back(x.dims[2 + i]);
    geometry.out.push_back(y.dims[2 + i]);
  }
  if (global) {
    geometry.kernel = geometry.in;
    geometry.strides.assign(spatial, 1);
    geometry.dilations.assign(spatial, 1);
    geometry.pad_begin.assign(spatial, 0);
    geometry.pad_end.assign(spatial, 0);
    return geometry;
  }
  geometry.kernel = context.intsAttr("kernel_shape");
  auto perAxis = [&](const char* name) {
    std::vector<int64_t> values = context.intsAttr(name);
    if (values.empty()) values.assign(spatial, 1);
    return values;
  };
  geometry.strides = perAxis("strides");
  geometry.dilations = perAxis("dilations");
  std::vector<int64_t> pads = context.intsAttr("pads");
  if (pads.empty()) pads.assign(2 * spatial, 0);
  const std::string auto_pad = context.stringAttr("auto_pad");
  for (size_t i = 0; i < spatial; ++i) {
    int64_t begin = pads[i], end = pads[i + spatial];
    const int64_t extent = (geometry.kernel[i] - 1) * geometry.dilations[i] + 1;
    if (auto_pad == "VALID") {
      begin = end = 0;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t total = std::max<int64_t>(0, (geometry.out[i] - 1) * geometry.strides[i] + extent - geometry.in[i]);
      begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end = total - begin;
    }
    geometry.pad_begin.push_back(begin);
    geometry.pad_end.push_back(end);
  }
  if (context.attr("count_include_pad")) geometry.count_include_pad = context.intAttr("count_include_pad") != 0;
  return geometry;
}

// The end padding the windows actually reach (ceil_mode can reach past the explicit pads).
int64_t reachedPadEnd(const PoolGeometry& geometry, size_t axis) {
  const int64_t extent = (geometry.kernel[axis] - 1) * geometry.dilations[axis] + 1;
  return (geometry.out[axis] - 1) * geometry.strides[axis] + extent - geometry.in[axis] - geometry.pad_begin[axis];
}

std::unique_ptr<Kernel> onednnPool(const KernelBuildContext& context, const PoolGeometry& geometry, PoolKind kind) {
  const DType dtype = context.output(0).dtype;
  const size_t spatial = geometry.in.size();
  if (!dnnlSupports(dtype) || dtype == DType::I32 || spatial < 1 || spatial > 3) return nullptr;
  if (kind == PoolKind::Average && (dtype == DType::I8 || dtype == DType::U8)) return nullptr;
  dnnl::memory::dims pad_r;
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t reached = reachedPadEnd(geometry, i);
    // The divisor would count the ceil_mode extension as padding; ONNX counts only pads.
    if (kind == PoolKind::Average && geometry.count_include_pad && reached > geometry.pad_end[i]) return nullptr;
    pad_r.push_back(std::max(reached, geometry.pad_end[i]));
  }
  dnnl::algorithm algorithm = kind == PoolKind::Max ? dnnl::algorithm::pooling_max
                              : geometry.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                                           : dnnl::algorithm::pooling_avg_exclude_padding;
  dnnl::memory::dims dilations;
  for (int64_t d : geometry.dilations) dilations.push_back(d - 1);
  const dnnl::engine& engine = cpuOf(context).engine();
  dnnl::memory::desc src = layoutDesc(context.input(0)), dst = layoutDesc(context.output(0));
  try {
    dnnl::pooling_v2_forward::desc desc(
        dnnl::prop_kind::forward_inference, algorithm, src, dst,
        dnnl::memory::dims(geometry.strides.begin(), geometry.strides.end()),
        dnnl::memory::dims(geometry.kernel.begin(), geometry.kernel.end()), dilations,
        dnnl::memory::dims(geometry.pad_begin.begin(), geometry.pad_begin.end()), pad_r);
    dnnl::pooling_v2_forward::primitive_desc pd(desc, scratchpadAttr(), engine);
    return std::make_unique<OnednnKernel>(
        "onednn:pooling " + implName(pd), engine, dnnl::pooling_v2_forward(pd), pd.scratchpad_desc().get_size(),
        std::vector<OnednnArg>{{DNNL_ARG_SRC, OnednnArg::Source::Input, 0, src},
                               {DNNL_ARG_DST, OnednnArg::Source::Output, 0, dst},
                               {DNNL_ARG_SCRATCHPAD, OnednnArg::Source::Scratchpad, 0, pd.scratchpad_desc()}});
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

// Own pooling over any spatial rank: the window's input offsets for every output position
// are tabulated at build time, so a run is a gather-reduce per position, planes split
// across threads.
template <typename T>
class OwnPoolKernel final : public Kernel {
  using Acc = ComputeOf<T>;

 public:
  OwnPoolKernel(const PoolGeometry& geometry, PoolKind kind, bool indices, bool column_major)
      : kind_(kind), indices_(indices),
        table_(windowTable(geometry.in, geometry.out, geometry.kernel, geometry.strides, geometry.dilations,
                           geometry.pad_begin, true)),
        planes_(geometry.planes) {
    in_size_ = 1;
    for (int64_t size : geometry.in) in_size_ *= size;
    if (kind == PoolKind::Average) divisors_ = averageDivisors(geometry);
    if (indices && column_major) {
      // Indices count the spatial axes in reverse order (storage_order = 1).
      const size_t rank = geometry.in.size();
      column_major_.resize(static_cast<size_t>(in_size_));
      for (int64_t offset = 0; offset < in_size_; ++offset) {
        int64_t rest = offset, index = 0, scale = 1;
        std::vector<int64_t> coordinates(rank);
        for (size_t d = rank; d-- > 0;) {
          coordinates[d] = rest % geometry.in[d];
          rest /= geometry.in[d];
        }
        for (size_t d = 0; d < rank; ++d) {
          index += coordinates[d] * scale;
          scale *= geometry.in[d];
        }
        column_major_[offset] = index;
      }
    }
  }

  void run(const KernelArgs& args, KernelState*) const override {
    const T* x = static_cast<const T*>(args.inputs[0]);
    T* y = static_cast<T*>(args.outputs[0]);
    int64_t* indices = indices_ ? static_cast<int64_t*>(args.outputs[1]) : nullptr;
    const int64_t positions = table_.positions, kernel = table_.kernel;
    const double cost = static_cast<double>(positions * kernel);
    ge::parallelFor(planes_, cost, args.num_threads, [&](int64_t first, int64_t last) {
      for (int64_t plane = first; plane < last; ++plane) {
        const T* in = x + plane * in_size_;
        T* out = y + plane * positions;
        for (int64_t p = 0; p < positions; ++p) {
          const int64_t* offsets = table_.offsets.data() + p * kernel;
          if (kind_ == PoolKind::Max) {
            Acc best = std::numeric_limits<Acc>::lowest();
            int64_t best_offset = -1;
            for (int64_t r = 0; r < kernel; ++r) {
              if (offsets[r] < 0) continue;
              Acc value = loadAs(in[offsets[r]]);
              if (best_offset < 0 || value > best) {
                best = value;
                best_offset = offsets[r];
              }
            }
            out[p] = storeAs<T>(best);
            if (indices) {
              int64_t spatial = best_offset < 0 ? 0 : (column_major_.empty() ? best_offset : column_major_[best_offset]);
              indices[plane * positions + p] = plane * in_size_ + spatial;
            }
          } else {
            Acc sum = 0;
            for (int64_t r = 0; r < kernel; ++r) {
              if (offsets[r] >= 0) sum += loadAs(in[offsets[r]]);
            }
            out[p] = storeAs<T>(sum / divisors_[p]);
          }
        }
      }
    });
  }
  std::string name() const override { return kind_ == PoolKind::Max ? "cpu:max_pool" : "cpu:average_pool"; }

 private:
  // Per output position: the window cells inside the input, or inside input + explicit
  // pads when count_include_pad.
  std::vector<Acc> averageDivisors(const PoolGeometry& geometry) const {
    const size_t rank = geometry.in.size();
    std::vector<Acc> divisors(static_cast<size_t>(table_.positions));
    for (int64_t p = 0; p < table_.positions; ++p) {
      int64_t rest = p, count = 1;
      for (size_t d = rank; d-- > 0;) {
        const int64_t o = rest % geometry.out[d];
        rest /= geometry.out[d];
        const int64_t low = geometry.count_include_pad ? -geometry.pad_begin[d] : 0;
        const int64_t high = geometry.count_include_pad ? geometry.in[d] + geometry.pad_end[d] : geometry.in[d];
        int64_t cells = 0;
        for (int64_t k = 0; k < geometry.kernel[d]; ++k) {
          const int64_t position = o * geometry.strides[d] - geometry.pad_begin[d] + k * geometry.dilations[d];
          cells += position >= low && position < high;
        }
        count *= cells;
      }
      divisors[p] = static_cast<Acc>(std::max<int64_t>(count, 1));
    }
    return divisors;
  }

  PoolKind kind_;
  bool indices_;
  WindowTable table_;
  int64_t planes_;
  int64_t in_size_ = 1;
  std::vector<Acc> divisors_;
  std::vector<int64_t> column_major_;
};

// 2-D max pooling of f32 in channels-last layout: each output pixel takes the maximum of its
// window's channel vectors, eight channels a step. oneDNN's jit pooling reads the same bytes
// at a quarter of the speed (ResNet-50's 3x3 stride 2 over 64x112x112: 0.80 ms against
// ONNX Runtime's 0.18 on one thread, AMD EPYC family 25). As oneDNN's does, a NaN never
// wins against a number. The windows' pixels are tabulated at build time, as for the plain
// kernel; in channels-last a pixel's channels start at its offset times C.
class ChannelsLastMaxPoolKernel final : public Kernel {
 public:
  ChannelsLastMaxPoolKernel(const PoolGeometry& geometry, int64_t batch, int64_t channels)
      : table_(windowTable(geometry.in, geometry.out, geometry.kernel, geometry.strides, geometry.dilations,
                           geometry.pad_begin, true)),
        batch_(batch), channels_(channels), in_pixels_(geometry.in[0] * geometry.in[1]) {}

  void run(const KernelArgs& args, KernelState*) const override {
    using Vec8 = float __attribute__((vector_size(8 * sizeof(float))));
    const auto* x = static_cast<const float*>(args.inputs[0]);
    auto* y = static_cast<float*>(args.outputs[0]);
    const int64_t c = channels_, positions = table_.positions, kernel = table_.kernel;
    const float low = std::numeric_limits<float>::lowest();
    const Vec8 lowest{low, low, low, low, low, low, low, low};
    parallelFor(batch_ * positions, static_cast<double>(kernel * c), args.num_threads, [&](int64_t first, int64_t last) {
      for (int64_t item = first; item < last; ++item) {
        const float* in = x + item / positions * in_pixels_ * c;
        const int64_t* offsets = table_.offsets.data() + item % positions * kernel;
        float* out = y + item * c;
        int64_t channel = 0;
        for (; channel + 8 <= c; channel += 8) {
          Vec8 best = lowest;
          for (int64_t r = 0; r < kernel; ++r) {
            if (offsets[r] < 0) continue;
            Vec8 value;
            std::memcpy(&value, in + offsets[r] * c + channel, sizeof value);
            best = value > best ? value : best;
          }
          std::memcpy(out + channel, &best, sizeof best);
        }
        for (; channel < c; ++channel) {
          float best = low;
          for (int64_t r = 0; r < kernel; ++r) {
            if (offsets[r] < 0) continue;
            const float value = in[offsets[r] * c + channel];
            best = value > best ? value : best;
          }
          out[channel] = best;
        }
      }
    });
  }
  std::string name() const override { return "cpu:max_pool nhwc"; }

 private:
  WindowTable table_;  // position-major: the pixels each window reads, -1 in the padding
  int64_t batch_, channels_, in_pixels_;
};

// The own pooling kernel's dtypes: the floats, and the bytes max pooling takes.
using PoolDTypes = DTypeSet<DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8, DType::U8>;

std::unique_ptr<Kernel> makePool(const KernelBuildContext& context, PoolKind kind, bool global) {
  const DType dtype = context.output(0).dtype;
  if (context.input(0).dtype != dtype) return nullptr;
  // Layouts other than Plain only in f32: the f32 detour of the 16-bit types converts plain buffers.
  if ((context.input(0).layout != Layout::Plain || context.output(0).layout != Layout::Plain) && dtype != DType::F32) {
    return nullptr;
  }
  PoolGeometry geometry = poolGeometry(context, global);
  const bool indices = context.numOutputs() > 1;
  if (context.output(0).numElements() == 0 && context.output(0).layout == Layout::Plain) {
    return makeZeroFillKernel(context, "cpu:pool (empty)");
  }
  if (!indices && kind == PoolKind::Max && !global && dtype == DType::F32 && geometry.in.size() == 2 &&
      context.input(0).layout == Layout::ChannelsLast && context.output(0).layout == Layout::ChannelsLast) {
    const int64_t batch = context.input(0).dims[0], channels = context.input(0).dims[1];
    return context.choose({{"cpu:max_pool nhwc",
                            [&] { return std::make_unique<ChannelsLastMaxPoolKernel>(geometry, batch, channels); }},
                           {"onednn:pooling", [&] { return onednnPool(context, geometry, kind); }}});
  }
  if (!indices) {
    if (std::unique_ptr<Kernel> kernel = onednnPool(context, geometry, kind)) return kernel;
  }
  if (context.input(0).layout != Layout::Plain || context.output(0).layout != Layout::Plain) return nullptr;
  const bool column_major = !global && context.attr("storage_order") && context.intAttr("storage_order") != 0;
  std::unique_ptr<Kernel> kernel;
  dispatch(PoolDTypes{}, dtype, [&](auto type) {
    using T = StorageOf<decltype(type)>;
    if constexpr (std::is_integral_v<T>) {
      if (kind != PoolKind::Max) return;
    }
    kernel = std::make_unique<OwnPoolKernel<T>>(geometry, kind, indices, column_major);
  });
  return kernel;
}

}  // namespace

void registerPoolingKernels(KernelRegistry& registry) {
  const std::tuple<const char*, PoolKind, bool> ops[] = {{"MaxPool", PoolKind::Max, false},
                                                         {"AveragePool", PoolKind::Average, false},
                                                         {"GlobalMaxPool", PoolKind::Max, true},
                                                         {"GlobalAveragePool", PoolKind::Average, true}};
  for (const auto& [op, kind, global] : ops) {
    registry.addLayoutAware(op, "", [kind = kind, global = global](const KernelBuildContext& context) {
      return buildPreferringF32(context, [&](const KernelBuildContext& c) { return makePool(c, kind, global); });
    });
  }
}

}  // namespace estuary::ge::cpu
