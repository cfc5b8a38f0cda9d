// Slice: a strided view of the input (start and step per axis) copied out row by row.
// starts/ends/axes/steps are nearly always constants once shapes are folded; then the view
// is resolved at build time. Otherwise they are read when the kernel runs, and a slice
// whose size disagrees with the planned output shape is refused with an error.
#include "cpu/cpu_device.h"
#include "cpu/tensor_kernels.h"

namespace estuary::ge::cpu {

namespace {

// The elements a slice takes along one axis of size n (ONNX's clamping rules).
struct AxisSlice {
  int64_t start = 0;
  int64_t step = 1;
  int64_t length = 0;
};

AxisSlice sliceAxis(int64_t n, int64_t start, int64_t end, int64_t step) {
  AxisSlice axis;
  axis.step = step;
  if (n == 0) return axis;
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, n);
    end = std::clamp<int64_t>(end, 0, n);
    axis.length = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, n - 1);
    end = std::clamp<int64_t>(end, -1, n - 1);
    axis.length = start > end ? (start - end - step - 1) / -step : 0;
  }
  axis.start = start;
  return axis;
}

// The strided view of `in` a slice selects: first element and copy plan.
struct SliceView {
  int64_t offset = 0;  // elements
  StridedCopy copy;
};

class SliceKernel final : public Kernel {
 public:
  explicit SliceKernel(const KernelBuildContext& context)
      : node_(context.node().describe()),
        in_(context.input(0)),
        out_(context.output(0)),
        starts_(context, 1, "input 'starts'"),
        ends_(context, 2, "input 'ends'"),
        axes_(context, 3, "input 'axes'"),
        steps_(context, 4, "input 'steps'") {
    constant_ = starts_.isConstant() && ends_.isConstant() && (!axes_.present() || axes_.isConstant()) &&
                (!steps_.present() || steps_.isConstant());
    if (constant_) {
      const char* error = resolve(starts_.constantValues(), ends_.constantValues(),
                                  axes_.present() ? axes_.constantValues() : nullptr,
                                  steps_.present() ? steps_.constantValues() : nullptr, view_);
      if (error) context.fail(error);
    }
  }

  void run(const KernelArgs& args, KernelState*) const override {
    const SliceView* view = &view_;
    SliceView resolved;
    if (!constant_) {
      std::array<int64_t, SmallIntOperand::kMaxValues> starts, ends, axes, steps;
      starts_.read(args, starts.data());
      ends_.read(args, ends.data());
      if (axes_.present()) axes_.read(args, axes.data());
      if (steps_.present()) steps_.read(args, steps.data());
      if (const char* error = resolve(starts.data(), ends.data(), axes_.present() ? axes.data() : nullptr,
                                      steps_.present() ? steps.data() : nullptr, resolved)) {
        raise(node_, ": ", error);
      }
      view = &resolved;
    }
    dispatchBySize(dtypeSize(in_.dtype), [&](auto element) {
      using E = decltype(element);
      view->copy.run(static_cast<const E*>(args.inputs[0]) + view->offset, static_cast<E*>(args.outputs[0]),
                     args.num_threads);
    });
  }
  std::string name() const override { return constant_ ? "cpu:slice" : "cpu:slice runtime-bounds"; }

 private:
  // Resolves the view; returns an error message (static text) or nullptr.
  const char* resolve(const int64_t* starts, const int64_t* ends, const int64_t* axes, const int64_t* steps,
                      SliceView& view) const {
    const int count = starts_.count();
    if (ends_.count() != count || (axes && axes_.count() != count) || (steps && steps_.count() != count)) {
      return "starts, ends, axes and steps must have the same length";
    }
    std::array<int64_t, kMaxRank> start{}, step{}, length{};
    for (int d = 0; d < in_.rank; ++d) {
      step[d] = 1;
      length[d] = in_.dims[d];
    }
    std::array<bool, kMaxRank> seen{};
    for (int k = 0; k < count; ++k) {
      int64_t axis = axes ? axes[k] : k;
      if (axis < -in_.rank || axis >= in_.rank) return "an axis is out of range for the input's rank";
      if (axis < 0) axis += in_.rank;
      if (seen[axis]) return "input 'axes' repeats an axis";
      seen[axis] = true;
      int64_t s = steps ? steps[k] : 1;
      if (s == 0) return "input 'steps' holds a 0";
      AxisSlice slice = sliceAxis(in_.dims[axis], starts[k], ends[k], s);
      start[axis] = slice.start;
      step[axis] = slice.step;
      length[axis] = slice.length;
    }
    std::array<int64_t, kMaxRank> in_strides = stridesOf(in_), strides{};
    view.offset = 0;
    bool empty = false;
    for (int d = 0; d < in_.rank; ++d) {
      if (length[d] != out_.dims[d]) return "the slice's size differs from the output shape planned at build time";
      empty |= length[d] == 0;
      view.offset += start[d] * in_strides[d];
      strides[d] = step[d] * in_strides[d];
    }
    if (empty) view.offset = 0;
    view.copy = StridedCopy(length.data(), strides.data(), in_.rank);
    return nullptr;
  }

  std::string node_;
  TensorDesc in_, out_;
  SmallIntOperand starts_, ends_, axes_, steps_;
  bool constant_ = false;
  SliceView view_;
};

}  // namespace

void registerSliceKernels(KernelRegistry& registry) {
  registry.add("Slice", "", [](const KernelBuildContext& context) { return std::make_unique<SliceKernel>(context); });
}

}  // namespace estuary::ge::cpu
