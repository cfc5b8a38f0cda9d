#include "cpu/nn_support.h"

#include "cpu/elementwise_loops.h"
#include "cpu/nn_kernels.h"
#include "estuary/support/mapped_file.h"
#include "shared_across_plans.h"

#include <array>
#include <cstdio>

namespace estuary::ge::cpu {

namespace {

// A packed buffer with the constant it was packed from, so that the constant's address is
// not reused by another one while the buffer can still be found under it.
struct PackedCopy {
  Tensor source;
  ConstantBytes bytes;
};

// A plain or blocked layout, every field that decides where an element lies; empty for the
// other format kinds (never shared).
std::string layoutKey(const dnnl::memory::desc& desc) {
  const dnnl_memory_desc_t& md = desc.data;
  if (md.format_kind != dnnl_blocked) return {};
  std::string key = std::to_string(md.data_type) + ":" + std::to_string(md.offset0) + ":" +
                    std::to_string(md.extra.flags);
  auto add = [&key](const char* what, const dnnl_dim_t* values, int count) {
    key += what;
    for (int i = 0; i < count; ++i) key += std::to_string(values[i]) + ",";
  };
  add(" dims ", md.dims, md.ndims);
  add(" padded ", md.padded_dims, md.ndims);
  add(" offsets ", md.padded_offsets, md.ndims);
  add(" strides ", md.format_desc.blocking.strides, md.ndims);
  add(" blocks ", md.format_desc.blocking.inner_blks, md.format_desc.blocking.inner_nblks);
  add(" of ", md.format_desc.blocking.inner_idxs, md.format_desc.blocking.inner_nblks);
  return key;
}

std::shared_ptr<const PackedCopy> reorderConstant(const dnnl::engine& engine, const Tensor& constant,
                                                  const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  auto packed = std::make_shared<PackedCopy>(PackedCopy{constant, ConstantBytes(to.get_size())});
  dnnl::memory source(from, engine, const_cast<void*>(constant.data()));
  dnnl::memory destination(to, engine, packed->bytes.data());
  dnnl::stream stream(engine);
  dnnl::reorder(source, destination).execute(stream, source, destination);
  stream.wait();
  releaseMappedPages(constant.data(), from.get_size());
  return packed;
}

struct PackedFloats {
  Tensor source;  // as in PackedCopy
  std::vector<float> values;
};

// make()'s object for `constant`, made once per model where the plans share: kept under the
// constant's address and `what`, which must name everything else the object depends on.
std::shared_ptr<const void> onePerModel(const KernelBuildContext& context, const Tensor& constant,
                                        const std::string& what,
                                        const std::function<std::shared_ptr<const void>()>& make) {
  SharedAcrossPlans* shared = context.sharedAcrossPlans();
  if (!shared) return make();
  char address[2 * sizeof(void*) + 3];
  std::snprintf(address, sizeof address, "%p", constant.data());
  return shared->getOrMake(address + (" " + what), make);
}

}  // namespace

std::shared_ptr<const ConstantBytes> packedConstant(const KernelBuildContext& context, const dnnl::engine& engine,
                                                    const Tensor& constant, const dnnl::memory::desc& from,
                                                    const dnnl::memory::desc& to) {
  auto reorder = [&]() -> std::shared_ptr<const void> { return reorderConstant(engine, constant, from, to); };
  const std::string from_key = layoutKey(from), to_key = layoutKey(to);
  auto packed = std::static_pointer_cast<const PackedCopy>(
      from_key.empty() || to_key.empty() ? reorder()
                                         : onePerModel(context, constant, "reorder " + from_key + " -> " + to_key, reorder));
  return std::shared_ptr<const ConstantBytes>(packed, &packed->bytes);
}

std::shared_ptr<const std::vector<float>> packedWeights(const KernelBuildContext& context, const Tensor& weights,
                                                        const char* packing,
                                                        const std::function<std::vector<float>()>& pack) {
  auto packed = std::static_pointer_cast<const PackedFloats>(onePerModel(context, weights, packing, [&] {
    auto made = std::make_shared<const PackedFloats>(PackedFloats{weights, pack()});
    releaseMappedPages(weights.data(), weights.byteSize());
    return std::shared_ptr<const void>(made);
  }));
  return std::shared_ptr<const std::vector<float>>(packed, &packed->values);
}

dnnl::memory::desc plainDesc(const dnnl::memory::dims& dims, DType dtype) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  return dnnl::memory::desc(dims, dnnlType(dtype), strides);
}

WindowTable windowTable(const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                        const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                        const std::vector<int64_t>& dilations, const std::vector<int64_t>& pad_begin,
                        bool position_major) {
  const size_t rank = in.size();
  WindowTable table;
  table.kernel = table.positions = 1;
  for (size_t d = 0; d < rank; ++d) {
    table.kernel *= kernel[d];
    table.positions *= out[d];
  }
  table.offsets.resize(static_cast<size_t>(table.kernel * table.positions));
  std::vector<int64_t> k(rank, 0);
  for (int64_t r = 0; r < table.kernel; ++r) {
    int64_t rest = r;
    for (size_t d = rank; d-- > 0;) {
      k[d] = rest % kernel[d];
      rest /= kernel[d];
    }
    for (int64_t p = 0; p < table.positions; ++p) {
      int64_t left = p, offset = 0, scale = 1;
      bool inside = true;
      for (size_t d = rank; d-- > 0;) {
        int64_t position = (left % out[d]) * strides[d] - pad_begin[d] + k[d] * dilations[d];
        left /= out[d];
        inside &= position >= 0 && position < in[d];
        offset += position * scale;
        scale *= in[d];
      }
      table.offsets[position_major ? p * table.kernel + r : r * table.positions + p] = inside ? offset : -1;
    }
  }
  return table;
}

namespace {

constexpr size_t kMaxConvertedOperands = 16;

bool isHalf(DType dtype) { return dtype == DType::F16 || dtype == DType::BF16; }

// The conversions of F32ComputeKernel, split over the run's threads.
void widen(DType dtype, const void* from, float* to, int64_t count, int threads) {
  const auto* source = static_cast<const uint16_t*>(from);
  ge::parallelFor(count, 1, threads,
                  [&](int64_t begin, int64_t end) { widenToF32(dtype, source + begin, to + begin, end - begin); });
}

void narrow(DType dtype, const float* from, void* to, int64_t count, int threads) {
  auto* target = static_cast<uint16_t*>(to);
  ge::parallelFor(count, 1, threads,
                  [&](int64_t begin, int64_t end) { narrowFromF32(dtype, from + begin, target + begin, end - begin); });
}

class F32ComputeKernel final : public Kernel {
 public:
  struct Operand {
    DType dtype = DType::Undefined;  // F16/BF16: converted; else passed through
    int64_t count = 0;
    size_t offset = 0;               // in scratch
    const void* constant = nullptr;  // a constant input converted at build time
  };

  F32ComputeKernel(std::unique_ptr<Kernel> inner, std::vector<Operand> inputs, std::vector<Operand> outputs,
                   size_t inner_scratch_offset, std::vector<Tensor> constants)
      : inner_(std::move(inner)), inputs_(std::move(inputs)), outputs_(std::move(outputs)),
        inner_scratch_offset_(inner_scratch_offset), constants_(std::move(constants)) {}

  size_t scratchBytes() const override { return inner_scratch_offset_ + inner_->scratchBytes(); }
  std::unique_ptr<KernelState> createState() const override { return inner_->createState(); }

  void run(const KernelArgs& args, KernelState* state) const override {
    auto* scratch = static_cast<std::byte*>(args.scratch);
    std::array<const void*, kMaxConvertedOperands> inputs{};
    std::array<void*, kMaxConvertedOperands> outputs{};
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Operand& operand = inputs_[i];
      if (operand.constant) {
        inputs[i] = operand.constant;
      } else if (isHalf(operand.dtype)) {
        auto* converted = reinterpret_cast<float*>(scratch + operand.offset);
        if (args.inputs[i]) widen(operand.dtype, args.inputs[i], converted, operand.count, args.num_threads);
        inputs[i] = args.inputs[i] ? converted : nullptr;
      } else {
        inputs[i] = args.inputs[i];
      }
    }
    for (size_t o = 0; o < outputs_.size(); ++o) {
      const bool converted = isHalf(outputs_[o].dtype);
      outputs[o] = converted ? scratch + outputs_[o].offset : args.outputs[o];
    }
    KernelArgs inner{inputs.data(), outputs.data(), scratch + inner_scratch_offset_, args.num_threads, args.device};
    inner_->run(inner, state);
    for (size_t o = 0; o < outputs_.size(); ++o) {
      const Operand& operand = outputs_[o];
      const auto* result = reinterpret_cast<const float*>(scratch + operand.offset);
      if (isHalf(operand.dtype)) narrow(operand.dtype, result, args.outputs[o], operand.count, args.num_threads);
    }
  }
  std::string name() const override { return inner_->name() + " (16-bit via f32)"; }

 private:
  std::unique_ptr<Kernel> inner_;
  std::vector<Operand> inputs_, outputs_;
  size_t inner_scratch_offset_;
  std::vector<Tensor> constants_;
};

std::unique_ptr<Kernel> buildInF32(const KernelBuildContext& context, const NnFactory& factory) {
  if (context.numInputs() > kMaxConvertedOperands || context.numOutputs() > kMaxConvertedOperands) return nullptr;
  size_t scratch = 0;
  auto reserve = [&](int64_t count) {
    size_t offset = scratch;
    scratch += (static_cast<size_t>(count) * sizeof(float) + 63) / 64 * 64;
    return offset;
  };
  std::vector<TensorDesc> input_descs, output_descs;
  std::vector<const Tensor*> constant_inputs;
  std::vector<Tensor> constants;
  constants.reserve(context.numInputs());
  std::vector<F32ComputeKernel::Operand> inputs, outputs;
  for (size_t i = 0; i < context.numInputs(); ++i) {
    TensorDesc desc = context.input(i);
    F32ComputeKernel::Operand operand;
    const Tensor* constant = context.constantInput(i);
    if (isHalf(desc.dtype)) {
      operand.dtype = desc.dtype;
      operand.count = desc.numElements();
      desc.dtype = DType::F32;
      if (constant) {
        constants.push_back(Tensor::allocate(DType::F32, constant->shape()));
        auto* values = static_cast<float*>(constants.back().mutableData());
        widen(operand.dtype, constant->data(), values, operand.count, 1);
        constant = &constants.back();
        operand.constant = constant->data();
      } else {
        operand.offset = reserve(operand.count);
      }
    }
    input_descs.push_back(desc);
    constant_inputs.push_back(constant);
    inputs.push_back(operand);
  }
  for (size_t o = 0; o < context.numOutputs(); ++o) {
    TensorDesc desc = context.output(o);
    F32ComputeKernel::Operand operand;
    if (isHalf(desc.dtype)) {
      operand.dtype = desc.dtype;
      operand.count = desc.numElements();
      operand.offset = reserve(operand.count);
      desc.dtype = DType::F32;
    }
    output_descs.push_back(desc);
    outputs.push_back(operand);
  }
  KernelBuildContext f32_context(context.node(), std::move(input_descs), std::move(output_descs),
                                 std::move(constant_inputs), context.device(), context.maxThreads());
  std::unique_ptr<Kernel> inner = factory(f32_context);
  if (!inner) return nullptr;
  return std::make_unique<F32ComputeKernel>(std::move(inner), std::move(inputs), std::move(outputs), scratch,
                                            std::move(constants));
}

}  // namespace

namespace {

// Multiply-adds per output element of the products and convolutions; 0 for other ops.
int64_t reductionLength(const KernelBuildContext& context) {
  const std::string& op = context.node().opType();
  if (op == "MatMul" || op == "FusedMatMul" || op == "Gemm") {
    const TensorDesc& a = context.input(0);
    const Attribute* trans_a = context.node().attr("transA");  // Gemm's; MatMul has none
    bool transposed = trans_a && trans_a->asInt() != 0;
    return a.rank == 0 ? 1 : a.dims[a.rank - (transposed && a.rank >= 2 ? 2 : 1)];
  }
  if (op == "Conv" || op == "FusedConv" || op == "ConvTranspose") {
    const TensorDesc& weights = context.input(1);
    return weights.rank == 0 || weights.dims[0] == 0 ? 1 : weights.numElements() / weights.dims[0];
  }
  if (op == "Attention") return 2 * context.input(1).dims[context.input(1).rank - 2];
  return 0;
}

}  // namespace

int threadsForWork(const KernelBuildContext& context) {
  constexpr int64_t kMacsPerElement = 16;
  int64_t work = 0;
  if (int64_t length = reductionLength(context)) {
    for (size_t k = 0; k < context.numOutputs(); ++k) work += context.output(k).numElements() * length;
    work /= kMacsPerElement;
  } else {
    for (size_t i = 0; i < context.numInputs(); ++i) work += context.hasInput(i) ? context.input(i).numElements() : 0;
    for (size_t k = 0; k < context.numOutputs(); ++k) work += context.output(k).numElements();
  }
  // All or one, not parallelFor's one thread per kParallelRegionCost: oneDNN splits a
  // primitive's work over whatever team it is created for.
  return work < kParallelRegionCost ? 1 : context.maxThreads();
}

std::unique_ptr<Kernel> buildPreferringF32(const KernelBuildContext& context, const NnFactory& factory) {
  ScopedOpenMpThreads threads(threadsForWork(context));
  bool has_f16 = false, has_bf16 = false;
  for (size_t i = 0; i < context.numInputs(); ++i) {
    has_f16 |= context.hasInput(i) && context.input(i).dtype == DType::F16;
    has_bf16 |= context.hasInput(i) && context.input(i).dtype == DType::BF16;
  }
  for (size_t o = 0; o < context.numOutputs(); ++o) {
    has_f16 |= context.output(o).dtype == DType::F16;
    has_bf16 |= context.output(o).dtype == DType::BF16;
  }
  if (has_f16) {
    if (std::unique_ptr<Kernel> kernel = buildInF32(context, factory)) return kernel;
    return factory(context);
  }
  std::unique_ptr<Kernel> kernel = factory(context);
  if (has_bf16 && (!kernel || kernel->name().find(" ref:") != std::string::npos)) {
    if (std::unique_ptr<Kernel> f32_kernel = buildInF32(context, factory)) return f32_kernel;
  }
  return kernel;
}

namespace {

class ZeroFillKernel final : public Kernel {
 public:
  ZeroFillKernel(std::vector<size_t> bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {}
  void run(const KernelArgs& args, KernelState*) const override {
    for (size_t o = 0; o < bytes_.size(); ++o) {
      if (bytes_[o]) std::memset(args.outputs[o], 0, bytes_[o]);
    }
  }
  std::string name() const override { return name_; }

 private:
  std::vector<size_t> bytes_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Kernel> makeZeroFillKernel(const KernelBuildContext& context, std::string name) {
  std::vector<size_t> bytes;
  for (size_t o = 0; o < context.numOutputs(); ++o) bytes.push_back(context.output(o).byteSize());
  return std::make_unique<ZeroFillKernel>(std::move(bytes), std::move(name));
}

void registerNnKernels(KernelRegistry& registry) {
  registerMatMulKernels(registry);
  registerConvKernels(registry);
  registerPoolingKernels(registry);
  registerNormalizationKernels(registry);
  registerSoftmaxKernels(registry);
  registerAttentionKernels(registry);
}

}  // namespace estuary::ge::cpu
