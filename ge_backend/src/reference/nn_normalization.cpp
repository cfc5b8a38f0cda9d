// BatchNormalization (inference and training mode), InstanceNormalization,
// GroupNormalization, LayerNormalization (with Mean and InvStdDev) and RMSNormalization.
//
// The schemas let X, the parameters and the statistics have different float types, so
// every element goes through loadDouble / storeDouble; statistics are computed in double
// (mean first, then the mean of squared deviations: the biased variance the spec uses) and
// stash_type changes nothing here.
#include <cmath>

#include "reference/nn.h"

namespace estuary::ge::reference {

namespace {

// An input or output buffer with its element type.
struct Values {
  DType dtype = DType::Undefined;
  const void* data = nullptr;
  double operator[](int64_t i) const { return loadDouble(dtype, data, i); }
};

// The node's input and output types, kept for run time.
struct Descs {
  std::vector<TensorDesc> in, out;
};

Descs descsOf(const KernelBuildContext& context) {
  Descs descs;
  for (size_t i = 0; i < context.numInputs(); ++i) descs.in.push_back(context.input(i));
  for (size_t o = 0; o < context.numOutputs(); ++o) descs.out.push_back(context.output(o));
  return descs;
}

Values inputValues(const Descs& descs, const KernelArgs& args, size_t i) { return {descs.in[i].dtype, args.inputs[i]}; }

struct Moments {
  double mean = 0;
  double variance = 0;
};

// Mean and biased variance of x[start + b * block_stride + i] for b < blocks, i < length.
Moments momentsOf(const Values& x, int64_t start, int64_t blocks, int64_t length, int64_t block_stride) {
  const double count = static_cast<double>(blocks * length);
  Moments moments;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t i = 0; i < length; ++i) moments.mean += x[start + b * block_stride + i];
  }
  moments.mean /= count;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t i = 0; i < length; ++i) {
      const double deviation = x[start + b * block_stride + i] - moments.mean;
      moments.variance += deviation * deviation;
    }
  }
  moments.variance /= count;
  return moments;
}

// X [N, C, spatial...] seen as [N, C, S].
struct Planes {
  int64_t batch = 0, channels = 0, spatial = 0;
};

Planes planesOf(const KernelBuildContext& context) {
  const TensorDesc& x = context.input(0);
  if (x.rank < 2) context.fail("X must be [N, C, ...], got ", x.str());
  Planes planes{x.dims[0], x.dims[1], 1};
  for (int d = 2; d < x.rank; ++d) planes.spatial *= x.dims[d];
  return planes;
}

// ---------------------------------------------------------------------- BatchNormalization

// Y = (X - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + B[c], with the given statistics
// or, in training mode, those of the batch (over N and the spatial axes); training mode
// also outputs running_mean = input_mean * momentum + mean * (1 - momentum) and
// running_var likewise.
std::unique_ptr<Kernel> makeBatchNormalization(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const Planes planes = planesOf(context);
  const double epsilon = context.floatAttr("epsilon");
  const double momentum = context.floatAttr("momentum");
  const bool training = context.intAttr("training_mode") != 0;
  const Descs descs = descsOf(context);
  const size_t outputs = descs.out.size();
  return makeKernel(context, [=](const KernelArgs& args) {
    const Values x = inputValues(descs, args, 0), scale = inputValues(descs, args, 1),
                 bias = inputValues(descs, args, 2), input_mean = inputValues(descs, args, 3),
                 input_var = inputValues(descs, args, 4);
    const DType y_type = descs.out[0].dtype;
    for (int64_t c = 0; c < planes.channels; ++c) {
      Moments moments{input_mean[c], input_var[c]};
      if (training) {
        moments = momentsOf(x, c * planes.spatial, planes.batch, planes.spatial, planes.channels * planes.spatial);
        if (outputs > 1) {
          storeDouble(descs.out[1].dtype, args.outputs[1], c, input_mean[c] * momentum + moments.mean * (1 - momentum));
        }
        if (outputs > 2) {
          storeDouble(descs.out[2].dtype, args.outputs[2], c,
                      input_var[c] * momentum + moments.variance * (1 - momentum));
        }
      }
      const double inverse = 1 / std::sqrt(moments.variance + epsilon);
      for (int64_t n = 0; n < planes.batch; ++n) {
        const int64_t start = (n * planes.channels + c) * planes.spatial;
        for (int64_t i = start; i < start + planes.spatial; ++i) {
          storeDouble(y_type, args.outputs[0], i, (x[i] - moments.mean) * inverse * scale[c] + bias[c]);
        }
      }
    }
  });
}

// ------------------------------------------------------------ Instance and GroupNormalization

// Channels split into `groups` groups of consecutive channels; each (n, group) block is
// normalized by its own mean and variance, then every channel c gets scale[c] and bias[c].
// InstanceNormalization is the case of one channel per group.
std::unique_ptr<Kernel> makeGroupedNormalization(const KernelBuildContext& context, int64_t groups) {
  if (!takesAllDTypes(context)) return nullptr;
  const Planes planes = planesOf(context);
  if (groups < 1 || planes.channels % groups != 0) {
    context.fail("num_groups ", groups, " does not divide the ", planes.channels, " channels");
  }
  const double epsilon = context.floatAttr("epsilon");
  const Descs descs = descsOf(context);
  return makeKernel(context, [=](const KernelArgs& args) {
    const Values x = inputValues(descs, args, 0), scale = inputValues(descs, args, 1),
                 bias = inputValues(descs, args, 2);
    const int64_t group_channels = planes.channels / groups;
    const int64_t block = group_channels * planes.spatial;
    for (int64_t n = 0; n < planes.batch; ++n) {
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t start = (n * planes.channels + g * group_channels) * planes.spatial;
        const Moments moments = momentsOf(x, start, 1, block, 0);
        const double inverse = 1 / std::sqrt(moments.variance + epsilon);
        for (int64_t i = 0; i < block; ++i) {
          const int64_t c = g * group_channels + i / planes.spatial;
          storeDouble(descs.out[0].dtype, args.outputs[0], start + i,
                      (x[start + i] - moments.mean) * inverse * scale[c] + bias[c]);
        }
      }
    }
  });
}

std::unique_ptr<Kernel> makeInstanceNormalization(const KernelBuildContext& context) {
  return makeGroupedNormalization(context, context.input(0).rank >= 2 ? context.input(0).dims[1] : 1);
}

std::unique_ptr<Kernel> makeGroupNormalization(const KernelBuildContext& context) {
  return makeGroupedNormalization(context, context.intAttr("num_groups"));
}

// ----------------------------------------------------------------- Layer and RMSNormalization

// X seen as rows of the axes before `axis` by the normalized axes from `axis` on.
struct Rows {
  int64_t rows = 1, size = 1;
  std::vector<int64_t> dims;  // X's dims, for the parameters' broadcasting
};

Rows rowsOf(const KernelBuildContext& context) {
  const TensorDesc& x = context.input(0);
  const int64_t axis = normalizeAxis(context, context.intAttr("axis"), x.rank);
  Rows rows;
  rows.dims = x.dimVector();
  for (int64_t d = 0; d < x.rank; ++d) (d < axis ? rows.rows : rows.size) *= x.dims[d];
  return rows;
}

// Steps a row-major multi-index to the next element.
void advance(std::vector<int64_t>& index, const std::vector<int64_t>& dims) {
  for (size_t d = dims.size(); d-- > 0;) {
    if (++index[d] < dims[d]) return;
    index[d] = 0;
  }
}

// Y = (X - mean) * inv_std_dev * Scale + B over the axes from `axis` on, Scale and B
// broadcast to X's shape; Mean and InvStdDev (optional outputs, dims of X with 1 from axis
// on) hold each row's mean and 1 / sqrt(variance + epsilon).
std::unique_ptr<Kernel> makeLayerNormalization(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const Rows rows = rowsOf(context);
  const double epsilon = context.floatAttr("epsilon");
  const bool has_bias = context.hasInput(2);
  const Descs descs = descsOf(context);
  const size_t outputs = descs.out.size();
  return makeKernel(context, [=](const KernelArgs& args) {
    const Values x = inputValues(descs, args, 0), scale = inputValues(descs, args, 1);
    const Values bias = has_bias ? inputValues(descs, args, 2) : Values{};
    std::vector<int64_t> index(rows.dims.size(), 0);
    for (int64_t r = 0; r < rows.rows; ++r) {
      const Moments moments = momentsOf(x, r * rows.size, 1, rows.size, 0);
      const double inverse = 1 / std::sqrt(moments.variance + epsilon);
      if (outputs > 1) storeDouble(descs.out[1].dtype, args.outputs[1], r, moments.mean);
      if (outputs > 2) storeDouble(descs.out[2].dtype, args.outputs[2], r, inverse);
      for (int64_t i = r * rows.size; i < (r + 1) * rows.size; ++i, advance(index, rows.dims)) {
        double y = (x[i] - moments.mean) * inverse * scale[broadcastOffset(index, descs.in[1])];
        if (has_bias) y += bias[broadcastOffset(index, descs.in[2])];
        storeDouble(descs.out[0].dtype, args.outputs[0], i, y);
      }
    }
  });
}

// Y = X / sqrt(mean(X^2) + epsilon) * scale over the axes from `axis` on, scale broadcast
// to X's shape.
std::unique_ptr<Kernel> makeRmsNormalization(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const Rows rows = rowsOf(context);
  const double epsilon = context.floatAttr("epsilon");
  const Descs descs = descsOf(context);
  return makeKernel(context, [=](const KernelArgs& args) {
    const Values x = inputValues(descs, args, 0), scale = inputValues(descs, args, 1);
    std::vector<int64_t> index(rows.dims.size(), 0);
    for (int64_t r = 0; r < rows.rows; ++r) {
      double squares = 0;
      for (int64_t i = r * rows.size; i < (r + 1) * rows.size; ++i) squares += x[i] * x[i];
      const double inverse = 1 / std::sqrt(squares / static_cast<double>(rows.size) + epsilon);
      for (int64_t i = r * rows.size; i < (r + 1) * rows.size; ++i, advance(index, rows.dims)) {
        storeDouble(descs.out[0].dtype, args.outputs[0], i,
                    x[i] * inverse * scale[broadcastOffset(index, descs.in[1])]);
      }
    }
  });
}

}  // namespace

void registerNormalizationKernels(KernelRegistry& registry) {
  registry.add("BatchNormalization", "", makeBatchNormalization);
  registry.add("InstanceNormalization", "", makeInstanceNormalization);
  registry.add("GroupNormalization", "", makeGroupNormalization);
  registry.add("LayerNormalization", "", makeLayerNormalization);
  registry.add("RMSNormalization", "", makeRmsNormalization);
}

}  // namespace estuary::ge::reference
