// Shape, indexing and generator ops: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat,
// Split, Slice, Pad, Expand, Tile, DepthToSpace, SpaceToDepth, Gather, GatherElements,
// GatherND, ScatterElements, ScatterND, OneHot, NonZero, Trilu, ConstantOfShape, EyeLike,
// Range, Shape, Size.
//
// Most of them only move elements: their kernels copy dtypeSize bytes from the input element
// an output element reads, so one loop serves every dtype (bool included). They still refuse
// the 16-bit floats, like every reference kernel. The output dims are static: the ops whose
// operands only decide the output shape (Reshape's shape, Expand's shape, Tile's repeats,
// Split's sizes, Squeeze's and Unsqueeze's axes) need not read them; operands that decide
// which elements are read (Slice's starts, Pad's pads, Trilu's k, Range's start) are read
// at run time.
#include <cmath>
#include <cstring>

#include "estuary/support/error.h"
#include "reference/reference_kernels.h"

namespace estuary::ge::reference {

namespace {

// ---- Index arithmetic --------------------------------------------------------------------

int64_t product(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t dim : dims) count *= dim;
  return count;
}

// Calls fn(flat, index) for every multi-index of `dims` in row-major order; flat is the
// index's row-major offset. Nothing when a dim is 0; once (empty index) for rank 0.
template <typename Fn>
void forEachIndex(const std::vector<int64_t>& dims, Fn&& fn) {
  const int64_t count = product(dims);
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t flat = 0; flat < count; ++flat) {
    fn(flat, index);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
}

int64_t offsetOf(const std::vector<int64_t>& index, const std::vector<int64_t>& strides) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset += index[d] * strides[d];
  return offset;
}

void copyElement(void* dst, int64_t dst_index, const void* src, int64_t src_index, size_t size) {
  std::memcpy(static_cast<std::byte*>(dst) + dst_index * static_cast<int64_t>(size),
              static_cast<const std::byte*>(src) + src_index * static_cast<int64_t>(size), size);
}

// An index operand value in [-n, n) made non-negative; raises naming the node otherwise
// (rather than reading out of bounds).
int64_t checkedIndex(const std::string& node, int64_t index, int64_t n, const char* axis) {
  if (index < -n || index >= n) {
    raise(node, ": index ", index, " is out of range for ", axis, " of size ", n, " (valid: [", -n, ", ", n - 1, "])");
  }
  return index < 0 ? index + n : index;
}

// The values of integer operand `i` (starts, pads, ...) at run time.
std::vector<int64_t> readInts(const KernelArgs& args, size_t i, DType dtype, int64_t count) {
  std::vector<int64_t> values(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) values[k] = loadInt(dtype, args.inputs[i], k);
  return values;
}

// ---- Kernels that read each output element from one element of input 0 ------------------

// The flat offset in input 0 of the element output element `index` (flat offset `flat`)
// reads.
using SourceFunction =
    std::function<int64_t(const KernelArgs& args, int64_t flat, const std::vector<int64_t>& index)>;

std::unique_ptr<Kernel> movingKernel(const KernelBuildContext& context, SourceFunction source) {
  if (!takesAllDTypes(context)) return nullptr;
  const size_t size = dtypeSize(context.input(0).dtype);
  const std::vector<int64_t> out_dims = context.output(0).dimVector();
  return makeKernel(context, [=](const KernelArgs& args) {
    forEachIndex(out_dims, [&](int64_t flat, const std::vector<int64_t>& index) {
      copyElement(args.outputs[0], flat, args.inputs[0], source(args, flat, index), size);
    });
  });
}

// Reshape, Flatten, Squeeze, Unsqueeze: the same row-major elements under other dims.
std::unique_ptr<Kernel> relabel(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const TensorDesc& in = context.input(0);
  const TensorDesc& out = context.output(0);
  if (in.numElements() != out.numElements() || in.dtype != out.dtype) {
    context.fail("input ", in.str(), " and output ", out.str(), " do not hold the same elements");
  }
  const size_t bytes = out.byteSize();
  return makeKernel(context, [=](const KernelArgs& args) {
    if (bytes > 0) std::memcpy(args.outputs[0], args.inputs[0], bytes);
  });
}

// output[i_0, ..., i_r] = input[j] with j[perm[d]] = i_d.
std::unique_ptr<Kernel> transpose(const KernelBuildContext& context) {
  const TensorDesc& in = context.input(0);
  std::vector<int64_t> perm;
  if (context.attr("perm")) {
    for (int64_t axis : context.intsAttr("perm")) perm.push_back(normalizeAxis(context, axis, in.rank));
  } else {
    for (int64_t d = in.rank - 1; d >= 0; --d) perm.push_back(d);
  }
  if (static_cast<int>(perm.size()) != in.rank) context.fail("attribute 'perm' has ", perm.size(), " axes for input ", in.str());
  const std::vector<int64_t> in_strides = stridesOf(in);
  return movingKernel(context, [=](const KernelArgs&, int64_t, const std::vector<int64_t>& index) {
    int64_t offset = 0;
    for (size_t d = 0; d < perm.size(); ++d) offset += index[d] * in_strides[perm[d]];
    return offset;
  });
}

// Expand: ONNX broadcasting of the input to the output's dims.
std::unique_ptr<Kernel> expand(const KernelBuildContext& context) {
  const TensorDesc& in = context.input(0);
  const TensorDesc& out = context.output(0);
  const int skip = out.rank - in.rank;
  for (int d = 0; d < in.rank; ++d) {
    if (skip < 0 || (in.dims[d] != 1 && in.dims[d] != out.dims[skip + d])) {
      context.fail("input ", in.str(), " does not broadcast to ", out.str());
    }
  }
  return movingKernel(context, [in](const KernelArgs&, int64_t, const std::vector<int64_t>& index) {
    return broadcastOffset(index, in);
  });
}

// Tile: output index i reads input index i mod the input's dims.
std::unique_ptr<Kernel> tile(const KernelBuildContext& context) {
  const TensorDesc& in = context.input(0);
  const TensorDesc& out = context.output(0);
  if (in.rank != out.rank) context.fail("output ", out.str(), " and input ", in.str(), " differ in rank");
  for (int d = 0; d < in.rank; ++d) {
    if (in.dims[d] == 0 ? out.dims[d] != 0 : out.dims[d] % in.dims[d] != 0) {
      context.fail("output ", out.str(), " is not a tiling of ", in.str());
    }
  }
  const std::vector<int64_t> in_dims = in.dimVector();
  const std::vector<int64_t> in_strides = stridesOf(in);
  return movingKernel(context, [=](const KernelArgs&, int64_t, const std::vector<int64_t>& index) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += (index[d] % in_dims[d]) * in_strides[d];
    return offset;
  });
}

// DepthToSpace, output [N, C / bs^2, H * bs, W * bs]: output[n, c, h * bs + i, w * bs + j] =
// input[n, channel, h, w] with channel (i * bs + j) * (C / bs^2) + c in DCR mode and
// c * bs^2 + i * bs + j in CRD mode. SpaceToDepth (this codebase takes both modes for it
// too) is its inverse.
std::unique_ptr<Kernel> depthSpace(const KernelBuildContext& context, bool to_space) {
  const TensorDesc& in = context.input(0);
  if (in.rank != 4) context.fail("input ", in.str(), " is not 4-D");
  const int64_t bs = context.intAttr("blocksize");
  const bool crd = context.stringAttr("mode") == "CRD";
  const std::vector<int64_t> in_strides = stridesOf(in);
  if (to_space) {
    const int64_t depth = context.output(0).dims[1];
    return movingKernel(context, [=](const KernelArgs&, int64_t, const std::vector<int64_t>& index) {
      const int64_t c = index[1], i = index[2] % bs, j = index[3] % bs;
      const int64_t channel = crd ? c * bs * bs + i * bs + j : (i * bs + j) * depth + c;
      return offsetOf({index[0], channel, index[2] / bs, index[3] / bs}, in_strides);
    });
  }
  const int64_t depth = in.dims[1];
  return movingKernel(context, [=](const KernelArgs&, int64_t, const std::vector<int64_t>& index) {
    const int64_t channel = index[1];
    const int64_t c = crd ? channel / (bs * bs) : channel % depth;
    const int64_t block = crd ? channel % (bs * bs) : channel / depth;
    const int64_t i = block / bs, j = block % bs;
    return offsetOf({index[0], c, index[2] * bs + i, index[3] * bs + j}, in_strides);
  });
}

// ---- Concat, Split, Slice, Pad -------------------------------------------------------------

// Each input's elements land in the output shifted along the axis by the sizes before it.
std::unique_ptr<Kernel> concat(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const TensorDesc& out = context.output(0);
  const int64_t axis = normalizeAxis(context, context.intAttr("axis"), out.rank);
  std::vector<std::vector<int64_t>> in_dims;
  int64_t total = 0;
  for (size_t k = 0; k < context.numInputs(); ++k) {
    in_dims.push_back(context.input(k).dimVector());
    total += context.input(k).dims[axis];
  }
  if (total != out.dims[axis]) context.fail("the inputs add up to ", total, " along axis ", axis, ", the output ", out.str());
  const std::vector<int64_t> out_strides = stridesOf(out);
  const size_t size = dtypeSize(out.dtype);
  return makeKernel(context, [=](const KernelArgs& args) {
    int64_t shift = 0;
    for (size_t k = 0; k < in_dims.size(); ++k) {
      forEachIndex(in_dims[k], [&](int64_t flat, const std::vector<int64_t>& index) {
        std::vector<int64_t> to = index;
        to[axis] += shift;
        copyElement(args.outputs[0], offsetOf(to, out_strides), args.inputs[k], flat, size);
      });
      shift += in_dims[k][axis];
    }
  });
}

// Output k takes the input's elements along the axis after the sizes of outputs 0..k-1
// (the planned output dims hold the sizes, whether given by 'split' or 'num_outputs').
std::unique_ptr<Kernel> split(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const TensorDesc& in = context.input(0);
  const int64_t axis = normalizeAxis(context, context.intAttr("axis"), in.rank);
  std::vector<std::vector<int64_t>> out_dims;
  int64_t total = 0;
  for (size_t k = 0; k < context.numOutputs(); ++k) {
    out_dims.push_back(context.output(k).dimVector());
    total += context.output(k).dims[axis];
  }
  if (total != in.dims[axis]) context.fail("the outputs add up to ", total, " along axis ", axis, ", the input ", in.str());
  const std::vector<int64_t> in_strides = stridesOf(in);
  const size_t size = dtypeSize(in.dtype);
  return makeKernel(context, [=](const KernelArgs& args) {
    int64_t shift = 0;
    for (size_t k = 0; k < out_dims.size(); ++k) {
      forEachIndex(out_dims[k], [&](int64_t flat, const std::vector<int64_t>& index) {
        std::vector<int64_t> from = index;
        from[axis] += shift;
        copyElement(args.outputs[k], flat, args.inputs[0], offsetOf(from, in_strides), size);
      });
      shift += out_dims[k][axis];
    }
  });
}

// The first element and the count a slice takes along an axis of size n, with ONNX's
// clamping: negative starts and ends count from the end; then a positive step clamps both
// to [0, n], a negative one clamps start to [0, n - 1] and end to [-1, n - 1].
struct AxisSlice {
  int64_t start = 0;
  int64_t step = 1;
  int64_t length = 0;
};

AxisSlice sliceAxis(int64_t n, int64_t start, int64_t end, int64_t step) {
  if (n == 0) return {0, step, 0};
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, n);
    end = std::clamp<int64_t>(end, 0, n);
    return {start, step, end > start ? (end - start - 1) / step + 1 : 0};
  }
  start = std::clamp<int64_t>(start, 0, n - 1);
  end = std::clamp<int64_t>(end, -1, n - 1);
  return {start, step, start > end ? (end - start + 1) / step + 1 : 0};
}

std::unique_ptr<Kernel> slice(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const std::string node = context.node().describe();
  const TensorDesc in = context.input(0);
  const TensorDesc out = context.output(0);
  const int64_t count = context.input(1).numElements();
  const bool has_axes = context.hasInput(3), has_steps = context.hasInput(4);
  if (context.input(2).numElements() != count || (has_axes && context.input(3).numElements() != count) ||
      (has_steps && context.input(4).numElements() != count)) {
    context.fail("starts, ends, axes and steps must have the same length");
  }
  std::vector<DType> operand_types;  // of inputs 1 to 4
  for (size_t i = 1; i < 5; ++i) operand_types.push_back(context.hasInput(i) ? context.input(i).dtype : DType::Undefined);
  const std::vector<int64_t> out_dims = out.dimVector();
  const std::vector<int64_t> in_strides = stridesOf(in);
  const size_t size = dtypeSize(in.dtype);
  return makeKernel(context, [=](const KernelArgs& args) {
    const std::vector<int64_t> starts = readInts(args, 1, operand_types[0], count);
    const std::vector<int64_t> ends = readInts(args, 2, operand_types[1], count);
    std::vector<int64_t> axis_values(static_cast<size_t>(count)), steps(static_cast<size_t>(count), 1);
    for (int64_t k = 0; k < count; ++k) axis_values[k] = k;
    if (has_axes) axis_values = readInts(args, 3, operand_types[2], count);
    if (has_steps) steps = readInts(args, 4, operand_types[3], count);
    // Axes not named take every element.
    std::vector<AxisSlice> axes(static_cast<size_t>(in.rank));
    for (int d = 0; d < in.rank; ++d) axes[d].length = in.dims[d];
    std::vector<bool> seen(static_cast<size_t>(in.rank), false);
    for (int64_t k = 0; k < count; ++k) {
      int64_t axis = axis_values[k];
      if (axis < -in.rank || axis >= in.rank) raise(node, ": axis ", axis, " is out of range for input ", in.str());
      if (axis < 0) axis += in.rank;
      if (seen[axis]) raise(node, ": input 'axes' repeats axis ", axis);
      seen[axis] = true;
      if (steps[k] == 0) raise(node, ": input 'steps' holds a 0");
      axes[axis] = sliceAxis(in.dims[axis], starts[k], ends[k], steps[k]);
    }
    for (int d = 0; d < in.rank; ++d) {
      if (axes[d].length != out.dims[d]) {
        raise(node, ": the slice takes ", axes[d].length, " elements along axis ", d, ", the output was planned as ",
              out.str());
      }
    }
    forEachIndex(out_dims, [&](int64_t flat, const std::vector<int64_t>& index) {
      int64_t offset = 0;
      for (size_t d = 0; d < index.size(); ++d) offset += (axes[d].start + index[d] * axes[d].step) * in_strides[d];
      copyElement(args.outputs[0], flat, args.inputs[0], offset, size);
    });
  });
}

enum class PadMode { Constant, Reflect, Edge, Wrap };

// The input index along an axis of size n > 0 that padded position i (i - begin pad) reads,
// or -1 for the constant.
int64_t padSource(int64_t i, int64_t n, PadMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::Constant: return -1;
    case PadMode::Edge: return i < 0 ? 0 : n - 1;
    case PadMode::Wrap: return ((i % n) + n) % n;
    case PadMode::Reflect: {
      // Mirrored without repeating the edge, as often as the pad needs (numpy's reflect):
      // the pattern 0, 1, ..., n - 1, n - 2, ..., 1 repeats with period 2 (n - 1).
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      const int64_t m = ((i % period) + period) % period;
      return m < n ? m : period - m;
    }
  }
  return -1;
}

std::unique_ptr<Kernel> pad(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const std::string mode_name = context.stringAttr("mode");
  PadMode mode = PadMode::Constant;
  if (mode_name == "reflect") {
    mode = PadMode::Reflect;
  } else if (mode_name == "edge") {
    mode = PadMode::Edge;
  } else if (mode_name == "wrap") {
    mode = PadMode::Wrap;
  } else if (mode_name != "constant") {
    context.fail("attribute 'mode' is '", mode_name, "', expected constant, reflect, edge or wrap");
  }
  const std::string node = context.node().describe();
  const TensorDesc in = context.input(0);
  const TensorDesc out = context.output(0);
  const bool has_value = context.hasInput(2) && context.input(2).numElements() > 0;
  if (has_value && context.input(2).numElements() != 1) context.fail("input 'constant_value' must hold one element");
  const bool has_axes = context.hasInput(3);
  const int64_t axis_count = has_axes ? context.input(3).numElements() : in.rank;
  if (context.input(1).numElements() != 2 * axis_count) {
    context.fail("input 'pads' must hold a begin and an end pad for each of ", axis_count, " axes");
  }
  const DType pads_type = context.input(1).dtype;
  const DType axes_type = has_axes ? context.input(3).dtype : DType::Undefined;
  const size_t size = dtypeSize(in.dtype);
  const std::vector<int64_t> out_dims = out.dimVector();
  const std::vector<int64_t> in_strides = stridesOf(in);
  return makeKernel(context, [=](const KernelArgs& args) {
    const std::vector<int64_t> pads = readInts(args, 1, pads_type, 2 * axis_count);
    std::vector<int64_t> axes(static_cast<size_t>(axis_count));
    for (int64_t k = 0; k < axis_count; ++k) axes[k] = has_axes ? loadInt(axes_type, args.inputs[3], k) : k;
    std::vector<int64_t> begin(static_cast<size_t>(in.rank), 0), end(static_cast<size_t>(in.rank), 0);
    for (int64_t k = 0; k < axis_count; ++k) {
      int64_t axis = axes[k];
      if (axis < -in.rank || axis >= in.rank) raise(node, ": axis ", axis, " in 'axes' is out of range for input ", in.str());
      if (axis < 0) axis += in.rank;
      begin[axis] = pads[k];
      end[axis] = pads[k + axis_count];
    }
    for (int d = 0; d < in.rank; ++d) {
      if (in.dims[d] + begin[d] + end[d] != out.dims[d]) {
        raise(node, ": the pads make axis ", d, " of ", in.str(), " ", in.dims[d] + begin[d] + end[d],
              " long, the output was planned as ", out.str());
      }
      if (mode != PadMode::Constant && in.dims[d] == 0 && out.dims[d] > 0) {
        raise(node, ": ", mode_name, " padding needs a non-empty input along axis ", d, ", the input is ", in.str());
      }
    }
    std::vector<std::byte> value(size);  // zero when 'constant_value' is absent
    if (has_value) std::memcpy(value.data(), args.inputs[2], size);
    forEachIndex(out_dims, [&](int64_t flat, const std::vector<int64_t>& index) {
      int64_t offset = 0;
      for (int d = 0; d < in.rank && offset >= 0; ++d) {
        const int64_t source = padSource(index[d] - begin[d], in.dims[d], mode);
        offset = source < 0 ? -1 : offset + source * in_strides[d];
      }
      if (offset < 0) {
        copyElement(args.outputs[0], flat, value.data(), 0, size);
      } else {
        copyElement(args.outputs[0], flat, args.inputs[0], offset, size);
      }
    });
  });
}

// ---- Gather and scatter ----------------------------------------------------------------------

// Gather: output[a..., q..., b...] = data[a..., indices[q...], b...] with the indices' dims at
// the gathered axis.
std::unique_ptr<Kernel> gather(const KernelBuildContext& context) {
  const std::string node = context.node().describe();
  const TensorDesc& data = context.input(0);
  const TensorDesc indices = context.input(1);
  if (data.rank == 0) context.fail("input 'data' is a scalar");
  const int64_t axis = normalizeAxis(context, context.intAttr("axis"), data.rank);
  const int64_t limit = data.dims[axis];
  const std::vector<int64_t> data_strides = stridesOf(data);
  const std::vector<int64_t> index_strides = stridesOf(indices);
  return movingKernel(context, [=](const KernelArgs& args, int64_t, const std::vector<int64_t>& index) {
    int64_t at = 0;
    for (int q = 0; q < indices.rank; ++q) at += index[axis + q] * index_strides[q];
    int64_t offset = checkedIndex(node, loadInt(indices.dtype, args.inputs[1], at), limit, "the gathered axis") *
                     data_strides[axis];
    for (int64_t d = 0; d < axis; ++d) offset += index[d] * data_strides[d];
    for (int64_t d = axis + 1; d < data.rank; ++d) offset += index[d - 1 + indices.rank] * data_strides[d];
    return offset;
  });
}

// GatherElements: output[i] = data[i with its axis coordinate replaced by indices[i]].
std::unique_ptr<Kernel> gatherElements(const KernelBuildContext& context) {
  const std::string node = context.node().describe();
  const TensorDesc& data = context.input(0);
  const DType index_type = context.input(1).dtype;
  if (data.rank != context.input(1).rank) context.fail("data ", data.str(), " and indices ", context.input(1).str(), " differ in rank");
  const int64_t axis = normalizeAxis(context, context.intAttr("axis"), data.rank);
  const int64_t limit = data.dims[axis];
  const std::vector<int64_t> data_strides = stridesOf(data);
  return movingKernel(context, [=](const KernelArgs& args, int64_t flat, const std::vector<int64_t>& index) {
    std::vector<int64_t> from = index;
    from[axis] = checkedIndex(node, loadInt(index_type, args.inputs[1], flat), limit, "the indexed axis");
    return offsetOf(from, data_strides);
  });
}

// The dims GatherND and ScatterND share: indices [batch..., tuples..., depth] address
// slices data[batch..., tuple (depth coordinates), slice...].
struct TupleLayout {
  int64_t batch_dims = 0;
  int64_t depth = 0;
  int64_t tuple_rank = 0;  // rank of indices without its last axis
  std::vector<int64_t> data_dims, data_strides, index_strides;

  // The data offset of the element at `index`, an index into [indices.dims[:-1]..., slice...]:
  // its first tuple_rank coordinates pick the tuple.
  int64_t dataOffset(const std::string& node, const KernelArgs& args, const std::vector<int64_t>& index) const {
    int64_t tuple = 0;
    for (int64_t d = 0; d < tuple_rank; ++d) tuple += index[d] * index_strides[d];
    const auto* indices = static_cast<const int64_t*>(args.inputs[1]);
    int64_t offset = 0;
    for (int64_t d = 0; d < batch_dims; ++d) offset += index[d] * data_strides[d];
    for (int64_t j = 0; j < depth; ++j) {
      const int64_t axis = batch_dims + j;
      offset += checkedIndex(node, indices[tuple + j], data_dims[axis], "an indexed axis") * data_strides[axis];
    }
    for (int64_t d = batch_dims + depth; d < static_cast<int64_t>(data_dims.size()); ++d) {
      offset += index[tuple_rank + d - batch_dims - depth] * data_strides[d];
    }
    return offset;
  }
};

TupleLayout tupleLayout(const KernelBuildContext& context, int64_t batch_dims) {
  const TensorDesc& data = context.input(0);
  const TensorDesc& indices = context.input(1);
  TupleLayout layout;
  if (indices.rank < 1) context.fail("input 'indices' is a scalar");
  layout.batch_dims = batch_dims;
  layout.depth = indices.dims[indices.rank - 1];
  layout.tuple_rank = indices.rank - 1;
  if (batch_dims < 0 || batch_dims > layout.tuple_rank || batch_dims + layout.depth > data.rank) {
    context.fail("indices ", indices.str(), " with batch_dims ", batch_dims, " do not fit data ", data.str());
  }
  layout.data_dims = data.dimVector();
  layout.data_strides = stridesOf(data);
  layout.index_strides = stridesOf(indices);
  return layout;
}

std::unique_ptr<Kernel> gatherNd(const KernelBuildContext& context) {
  const std::string node = context.node().describe();
  const TupleLayout layout = tupleLayout(context, context.intAttr("batch_dims"));
  return movingKernel(context, [=](const KernelArgs& args, int64_t, const std::vector<int64_t>& index) {
    return layout.dataOffset(node, args, index);
  });
}

enum class Reduction { None, Add, Mul, Max, Min };

Reduction reductionOf(const KernelBuildContext& context) {
  const std::string reduction = context.stringAttr("reduction");
  if (reduction == "none") return Reduction::None;
  if (reduction == "add") return Reduction::Add;
  if (reduction == "mul") return Reduction::Mul;
  if (reduction == "max") return Reduction::Max;
  if (reduction == "min") return Reduction::Min;
  context.fail("attribute 'reduction' is '", reduction, "', expected none, add, mul, max or min");
}

// An output element after an update lands on it. Max and min propagate NaN (np.maximum,
// np.minimum in ONNX's reference); booleans stay 0/1, so add acts as "or" and mul as "and".
template <typename S>
S combine(Reduction reduction, S target, S update, bool is_bool) {
  using W = Wide<S>;
  const W a = target, b = update;
  W result = b;
  switch (reduction) {
    case Reduction::None: break;
    case Reduction::Add: result = a + b; break;
    case Reduction::Mul: result = a * b; break;
    case Reduction::Max:
    case Reduction::Min:
      if constexpr (std::is_floating_point_v<W>) {
        if (std::isnan(a) || std::isnan(b)) return static_cast<S>(std::isnan(a) ? a : b);
      }
      result = reduction == Reduction::Max ? std::max(a, b) : std::min(a, b);
      break;
  }
  return is_bool ? static_cast<S>(result != 0) : static_cast<S>(result);
}

// Scatters: output = data, then every update element is combined, in order, into the output
// element `target` names (a flat offset into data).
using TargetFunction = std::function<int64_t(const KernelArgs& args, const std::vector<int64_t>& update_index)>;

std::unique_ptr<Kernel> scatterKernel(const KernelBuildContext& context, TargetFunction target) {
  if (!takesAllDTypes(context)) return nullptr;
  const Reduction reduction = reductionOf(context);
  const DType dtype = context.input(0).dtype;
  const size_t bytes = context.input(0).byteSize();
  const std::vector<int64_t> update_dims = context.input(2).dimVector();
  return dispatch(ReferenceDTypes{}, dtype, [&](auto type) -> std::unique_ptr<Kernel> {
    using S = StorageOf<decltype(type)>;
    return makeKernel(context, [=](const KernelArgs& args) {
      if (bytes > 0) std::memcpy(args.outputs[0], args.inputs[0], bytes);
      S* out = static_cast<S*>(args.outputs[0]);
      const S* updates = static_cast<const S*>(args.inputs[2]);
      forEachIndex(update_dims, [&](int64_t flat, const std::vector<int64_t>& index) {
        S& element = out[target(args, index)];
        element = combine<S>(reduction, element, updates[flat], dtype == DType::Bool);
      });
    });
  });
}

// ScatterElements: output[i with its axis coordinate replaced by indices[i]] <- updates[i].
std::unique_ptr<Kernel> scatterElements(const KernelBuildContext& context) {
  const std::string node = context.node().describe();
  const TensorDesc& data = context.input(0);
  const TensorDesc indices = context.input(1);
  if (context.input(2).dimVector() != indices.dimVector() || data.rank != indices.rank) {
    context.fail("updates ", context.input(2).str(), " must have the shape of indices ", indices.str(),
                 " and the rank of data ", data.str());
  }
  const int64_t axis = normalizeAxis(context, context.intAttr("axis"), data.rank);
  const int64_t limit = data.dims[axis];
  const std::vector<int64_t> data_strides = stridesOf(data);
  const std::vector<int64_t> index_strides = stridesOf(indices);
  return scatterKernel(context, [=](const KernelArgs& args, const std::vector<int64_t>& index) {
    std::vector<int64_t> to = index;
    const int64_t at = offsetOf(index, index_strides);
    to[axis] = checkedIndex(node, loadInt(indices.dtype, args.inputs[1], at), limit, "the indexed axis");
    return offsetOf(to, data_strides);
  });
}

// ScatterND: updates [tuples..., slice...] land on data[tuple, slice...].
std::unique_ptr<Kernel> scatterNd(const KernelBuildContext& context) {
  const std::string node = context.node().describe();
  const TupleLayout layout = tupleLayout(context, 0);
  std::vector<int64_t> expected(context.input(1).dims.begin(), context.input(1).dims.begin() + layout.tuple_rank);
  for (int64_t d = layout.depth; d < context.input(0).rank; ++d) expected.push_back(context.input(0).dims[d]);
  if (context.input(2).dimVector() != expected) {
    context.fail("updates ", context.input(2).str(), " do not match indices ", context.input(1).str(), " and data ",
                 context.input(0).str());
  }
  return scatterKernel(context, [=](const KernelArgs& args, const std::vector<int64_t>& index) {
    return layout.dataOffset(node, args, index);
  });
}

// OneHot: output[a..., d, b...] = values[1] (on) if indices[a..., b...] (negative ones
// counted from the end) is d, else values[0] (off); an index outside [-depth, depth) gives
// a line of off values.
std::unique_ptr<Kernel> oneHot(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const std::string node = context.node().describe();
  const TensorDesc& out = context.output(0);
  const int64_t axis = normalizeAxis(context, context.intAttr("axis"), out.rank);
  if (context.input(1).numElements() != 1) context.fail("input 'depth' must hold one value");
  if (context.input(2).numElements() != 2) context.fail("input 'values' must hold [off, on], it is ", context.input(2).str());
  const DType index_type = context.input(0).dtype;
  const DType depth_type = context.input(1).dtype;
  const int64_t depth = out.dims[axis];
  const std::vector<int64_t> out_dims = out.dimVector();
  const std::vector<int64_t> index_strides = stridesOf(context.input(0));
  const size_t size = dtypeSize(out.dtype);
  return makeKernel(context, [=](const KernelArgs& args) {
    // A float depth is truncated to an integer, as ONNX says.
    const int64_t given = loadInt(depth_type, args.inputs[1], 0);
    if (given != depth) raise(node, ": input 'depth' is ", given, ", the output was planned with ", depth);
    forEachIndex(out_dims, [&](int64_t flat, const std::vector<int64_t>& index) {
      int64_t at = 0;
      for (int64_t d = 0, q = 0; d < static_cast<int64_t>(index.size()); ++d) {
        if (d != axis) at += index[d] * index_strides[q++];
      }
      int64_t value = loadInt(index_type, args.inputs[0], at);
      if (value < 0) value += depth;
      copyElement(args.outputs[0], flat, args.inputs[2], value == index[axis] ? 1 : 0, size);
    });
  });
}

// NonZero: the coordinates of the non-zero elements (NaN is non-zero, -0.0 is zero), one
// row per input axis, in row-major order. The build folds a constant input to its exact
// [rank, count]; otherwise (see data_dependent.h) the output is planned at [rank, elements]
// with a second output taking the count, and the [rank, count] result sits at the start of
// the buffer.
std::unique_ptr<Kernel> nonZero(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const std::string node = context.node().describe();
  const TensorDesc in = context.input(0);
  const TensorDesc& out = context.output(0);
  const bool runtime_count = context.numOutputs() == 2;
  if (out.rank != 2 || out.dims[0] != in.rank) context.fail("output ", out.str(), " is not [rank, count] for input ", in.str());
  if (runtime_count && out.dims[1] != in.numElements()) {
    context.fail("output ", out.str(), " with a runtime count must be planned for every element of ", in.str());
  }
  const int64_t planned = out.dims[1];
  return makeKernel(context, [=](const KernelArgs& args) {
    std::vector<int64_t> found;  // flat offsets of the non-zero elements
    for (int64_t i = 0; i < in.numElements(); ++i) {
      if (loadDouble(in.dtype, args.inputs[0], i) != 0) found.push_back(i);
    }
    const int64_t count = static_cast<int64_t>(found.size());
    if (runtime_count) {
      *static_cast<int64_t*>(args.outputs[1]) = count;
    } else if (count != planned) {
      raise(node, ": the input has ", count, " non-zero elements, the output was planned for ", planned);
    }
    auto* coordinates = static_cast<int64_t*>(args.outputs[0]);
    for (int64_t k = 0; k < count; ++k) {
      const std::vector<int64_t> index = unravel(found[k], in.dimVector());
      for (int d = 0; d < in.rank; ++d) coordinates[d * count + k] = index[d];
    }
  });
}

// Trilu: keeps the elements of each matrix (the last two axes) on and above (upper) or on
// and below (lower) the k-th diagonal, zeroes the rest.
std::unique_ptr<Kernel> trilu(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const TensorDesc& in = context.input(0);
  if (in.rank < 2) context.fail("input ", in.str(), " has rank below 2");
  if (context.hasInput(1) && context.input(1).numElements() != 1) context.fail("input 'k' must hold one value");
  const bool upper = context.intAttr("upper") != 0;
  const bool has_k = context.hasInput(1);
  const DType k_type = has_k ? context.input(1).dtype : DType::Undefined;
  const std::vector<int64_t> dims = in.dimVector();
  const size_t size = dtypeSize(in.dtype);
  return makeKernel(context, [=](const KernelArgs& args) {
    const int64_t k = has_k ? loadInt(k_type, args.inputs[1], 0) : 0;
    const std::vector<std::byte> zero(size);
    forEachIndex(dims, [&](int64_t flat, const std::vector<int64_t>& index) {
      const int64_t row = index[index.size() - 2], column = index[index.size() - 1];
      const bool keep = upper ? column - row >= k : column - row <= k;
      copyElement(args.outputs[0], flat, keep ? args.inputs[0] : zero.data(), keep ? flat : 0, size);
    });
  });
}

// ---- Generators ------------------------------------------------------------------------------

// ConstantOfShape: every element is the 'value' attribute's one element (f32 0 without it).
std::unique_ptr<Kernel> constantOfShape(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const TensorDesc& out = context.output(0);
  const size_t size = dtypeSize(out.dtype);
  std::vector<std::byte> value(size);
  if (const Attribute* attr = context.attr("value")) {
    const Tensor& tensor = attr->asTensor();
    if (tensor.numElements() != 1 || tensor.dtype() != out.dtype) {
      context.fail("attribute 'value' must hold one ", dtypeName(out.dtype), " element");
    }
    std::memcpy(value.data(), tensor.data(), size);
  }
  const int64_t count = out.numElements();
  return makeKernel(context, [=](const KernelArgs& args) {
    for (int64_t i = 0; i < count; ++i) copyElement(args.outputs[0], i, value.data(), 0, size);
  });
}

// EyeLike: ones where column - row = k, zeros elsewhere, in the output's dtype.
std::unique_ptr<Kernel> eyeLike(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const TensorDesc& out = context.output(0);
  if (out.rank != 2) context.fail("output ", out.str(), " is not 2-D");
  const int64_t k = context.intAttr("k");
  const DType dtype = out.dtype;
  const std::vector<int64_t> dims = out.dimVector();
  return makeKernel(context, [=](const KernelArgs& args) {
    forEachIndex(dims, [&](int64_t flat, const std::vector<int64_t>& index) {
      storeDouble(dtype, args.outputs[0], flat, index[1] - index[0] == k ? 1.0 : 0.0);
    });
  });
}

// Range: max(ceil((limit - start) / delta), 0) elements start + i * delta; integers exactly
// in int64, floats in double.
template <typename W>
int64_t rangeLength(W start, W limit, W delta) {
  if constexpr (std::is_integral_v<W>) {
    const W span = limit - start;
    if (delta > 0) return span > 0 ? (span - 1) / delta + 1 : 0;
    return span < 0 ? (span + 1) / delta + 1 : 0;
  } else {
    const double length = std::ceil((limit - start) / delta);
    return length > 0 ? static_cast<int64_t>(length) : 0;
  }
}

std::unique_ptr<Kernel> range(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  for (size_t i = 0; i < 3; ++i) {
    if (context.input(i).numElements() != 1) context.fail("input ", i, " must hold one value, got ", context.input(i).str());
  }
  const std::string node = context.node().describe();
  const int64_t planned = context.output(0).numElements();
  return dispatch(ReferenceDTypes{}, context.output(0).dtype, [&](auto type) -> std::unique_ptr<Kernel> {
    using S = StorageOf<decltype(type)>;
    using W = std::conditional_t<std::is_integral_v<S>, int64_t, double>;
    return makeKernel(context, [=](const KernelArgs& args) {
      const W start = *static_cast<const S*>(args.inputs[0]);
      const W limit = *static_cast<const S*>(args.inputs[1]);
      const W delta = *static_cast<const S*>(args.inputs[2]);
      if (delta == 0) raise(node, ": input 'delta' is 0");
      const int64_t count = rangeLength(start, limit, delta);
      if (count != planned) {
        raise(node, ": start ", start, ", limit ", limit, " and delta ", delta, " give ", count,
              " elements, the output was planned with ", planned);
      }
      S* out = static_cast<S*>(args.outputs[0]);
      for (int64_t i = 0; i < count; ++i) out[i] = static_cast<S>(start + static_cast<W>(i) * delta);
    });
  });
}

// Writes `values` (known from the input's static shape) to output 0 as i64.
std::unique_ptr<Kernel> knownInts(const KernelBuildContext& context, std::vector<int64_t> values) {
  if (!takesAllDTypes(context)) return nullptr;
  if (static_cast<int64_t>(values.size()) != context.output(0).numElements()) {
    context.fail("output ", context.output(0).str(), " cannot hold ", values.size(), " values");
  }
  return makeKernel(context, [values](const KernelArgs& args) {
    auto* out = static_cast<int64_t*>(args.outputs[0]);
    for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  });
}

// Shape: the input's dims from 'start' to 'end' (negative ones count from the end; both are
// clamped to [0, rank]).
std::unique_ptr<Kernel> shape(const KernelBuildContext& context) {
  const TensorDesc& in = context.input(0);
  auto clamped = [&](int64_t index) { return std::clamp<int64_t>(index < 0 ? index + in.rank : index, 0, in.rank); };
  const int64_t start = clamped(context.intAttr("start"));
  const int64_t end = context.attr("end") ? clamped(context.intAttr("end")) : in.rank;
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(in.dims[d]);
  return knownInts(context, std::move(dims));
}

std::unique_ptr<Kernel> size(const KernelBuildContext& context) {
  return knownInts(context, {context.input(0).numElements()});
}

}  // namespace

void registerTensorKernels(KernelRegistry& registry) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) registry.add(op, "", relabel);
  registry.add("Transpose", "", transpose);
  registry.add("Expand", "", expand);
  registry.add("Tile", "", tile);
  registry.add("DepthToSpace", "", [](const KernelBuildContext& context) { return depthSpace(context, true); });
  registry.add("SpaceToDepth", "", [](const KernelBuildContext& context) { return depthSpace(context, false); });
  registry.add("Concat", "", concat);
  registry.add("Split", "", split);
  registry.add("Slice", "", slice);
  registry.add("Pad", "", pad);
  registry.add("Gather", "", gather);
  registry.add("GatherElements", "", gatherElements);
  registry.add("GatherND", "", gatherNd);
  registry.add("ScatterElements", "", scatterElements);
  registry.add("ScatterND", "", scatterNd);
  registry.add("OneHot", "", oneHot);
  registry.add("NonZero", "", nonZero);
  registry.add("Trilu", "", trilu);
  registry.add("ConstantOfShape", "", constantOfShape);
  registry.add("EyeLike", "", eyeLike);
  registry.add("Range", "", range);
  registry.add("Shape", "", shape);
  registry.add("Size", "", size);
}

}  // namespace estuary::ge::reference
