// The nn family's registration and the sliding-window geometry convolutions and pooling share.
#include "reference/nn.h"

#include <algorithm>
#include <string>

namespace estuary::ge::reference {

Spatial spatialDims(const TensorDesc& desc) {
  Spatial dims{1, 1, 1};
  const int spatial = desc.rank - 2;
  for (int i = 0; i < spatial; ++i) dims[kSpatialAxes - spatial + i] = desc.dims[2 + i];
  return dims;
}

Spatial spatialAttr(const KernelBuildContext& context, const char* name, int64_t fallback) {
  const int spatial = context.input(0).rank - 2;
  std::vector<int64_t> values = context.intsAttr(name);
  if (values.empty()) values.assign(static_cast<size_t>(spatial), fallback);
  if (static_cast<int>(values.size()) != spatial) {
    context.fail("attribute '", name, "' has ", values.size(), " values for ", spatial, " spatial axes");
  }
  Spatial result{1, 1, 1};
  for (int i = 0; i < spatial; ++i) result[kSpatialAxes - spatial + i] = values[i];
  return result;
}

Window forwardWindow(const KernelBuildContext& context, const std::vector<int64_t>& kernel) {
  const int spatial = context.input(0).rank - 2;
  if (spatial < 1 || spatial > kSpatialAxes) context.fail("takes 1 to 3 spatial axes, not ", spatial);
  Window window;
  window.in = spatialDims(context.input(0));
  window.out = spatialDims(context.output(0));
  std::vector<int64_t> kernel_shape = context.intsAttr("kernel_shape");
  if (kernel_shape.empty()) kernel_shape = kernel;
  for (int i = 0; i < spatial; ++i) window.kernel[kSpatialAxes - spatial + i] = kernel_shape.at(i);
  window.strides = spatialAttr(context, "strides", 1);
  window.dilations = spatialAttr(context, "dilations", 1);
  const std::string auto_pad = context.stringAttr("auto_pad");
  std::vector<int64_t> pads = context.intsAttr("pads");
  if (pads.empty() || auto_pad != "NOTSET") pads.assign(static_cast<size_t>(2 * spatial), 0);
  if (static_cast<int>(pads.size()) != 2 * spatial) context.fail("attribute 'pads' has ", pads.size(), " values");
  for (int i = 0; i < spatial; ++i) {
    const int axis = kSpatialAxes - spatial + i;
    window.pad_begin[axis] = pads[i];
    window.pad_end[axis] = pads[spatial + i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // The padding that lets the last window end at the input's end (never negative).
      const int64_t extent = (window.kernel[axis] - 1) * window.dilations[axis] + 1;
      const int64_t total =
          std::max<int64_t>(0, (window.out[axis] - 1) * window.strides[axis] + extent - window.in[axis]);
      window.pad_begin[axis] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      window.pad_end[axis] = total - window.pad_begin[axis];
    }
  }
  return window;
}

void registerNnKernels(KernelRegistry& registry) {
  registerMatMulKernels(registry);
  registerConvKernels(registry);
  registerPoolKernels(registry);
  registerNormalizationKernels(registry);
  registerAttentionKernels(registry);
}

}  // namespace estuary::ge::reference
