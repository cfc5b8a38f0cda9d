#pragma once
// What the reference kernels share: a kernel made of one function, the element types they
// take, and row-major index arithmetic with ONNX broadcasting.
//
// A reference kernel is written to be read: one plain loop over the output in the words of
// the ONNX specification. Floats compute in double (f32 inputs are widened, the result is
// rounded once when stored), integers in their own type or int64 with C++ semantics, so the
// reference is at least as accurate as any optimized kernel it checks. The 16-bit floats are
// not taken (a factory returns nullptr and the build reports the node): a model is compared
// in f32 or f64.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "estuary/ge/kernel.h"
#include "estuary/ge/kernel_helpers.h"

namespace estuary::ge::reference {

// The kernel families, one file each.
void registerElementwiseKernels(KernelRegistry& registry);  // elementwise.cpp
void registerReductionKernels(KernelRegistry& registry);    // reduction.cpp: reductions, softmax, arg/top-k, cumsum
void registerTensorKernels(KernelRegistry& registry);       // tensor.cpp: shape, indexing, generators
void registerResizeKernels(KernelRegistry& registry);       // resize.cpp
void registerNnKernels(KernelRegistry& registry);           // nn.cpp: conv, pooling, matmul, normalization, attention

// A kernel whose run() calls `run` with the node's buffers; everything it needs (dims,
// attributes, constant operands) is captured when the factory builds it.
using RunFunction = std::function<void(const KernelArgs& args)>;
std::unique_ptr<Kernel> makeKernel(const KernelBuildContext& context, RunFunction run);

// Whether the reference kernels take elements of `dtype`: every dtype but the 16-bit floats.
bool takesDType(DType dtype);
// Whether every present input and every output of the node has a dtype takesDType accepts.
bool takesAllDTypes(const KernelBuildContext& context);

// The dtypes takesDType accepts, and its floats, for the kernel helpers' dispatch: nothing is
// instantiated for the 16-bit floats. For factories:
// `return dispatch(ReferenceDTypes{}, dtype, [&](auto type) {...});`
using ReferenceDTypes =
    DTypeSet<DType::F32, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64, DType::U8, DType::Bool>;
using ReferenceFloatDTypes = DTypeSet<DType::F32, DType::F64>;

// The type a reference kernel computes in for storage type S: double for floats, S itself for
// integers.
template <typename S>
using Wide = std::conditional_t<std::is_floating_point_v<S>, double, S>;

// Element i of a tensor of `dtype` at `data`, as double / int64 (for kernels that work on
// values of any dtype, like Cast or index operands), and a double stored into it (rounded
// once; integers truncate toward zero like static_cast, bool is value != 0).
double loadDouble(DType dtype, const void* data, int64_t i);
int64_t loadInt(DType dtype, const void* data, int64_t i);
void storeDouble(DType dtype, void* data, int64_t i, double value);

// Row-major strides of the first `desc.rank` dims.
std::vector<int64_t> stridesOf(const TensorDesc& desc);
std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims);

// The multi-index of flat row-major offset `flat` in `dims`.
std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& dims);

// The flat offset in `input` (ONNX multidirectional broadcasting: dims aligned on the right,
// dims of size 1 read index 0) of the element an output multi-index reads.
int64_t broadcastOffset(const std::vector<int64_t>& output_index, const TensorDesc& input);

// An axis attribute in [-rank, rank) made non-negative; raises naming the node otherwise.
int64_t normalizeAxis(const KernelBuildContext& context, int64_t axis, int64_t rank);

}  // namespace estuary::ge::reference
