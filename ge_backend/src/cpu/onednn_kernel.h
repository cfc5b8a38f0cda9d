#pragma once
// Kernels backed by one oneDNN primitive. The primitive (and its JIT code) is made once at
// build time; each run context gets its own memory objects and argument array, so a run
// only swaps the data pointers that changed since its last run (arena buffers keep theirs)
// and calls the C API. oneDNN 2.6's dnnl_primitive_execute itself still turns the argument
// array into a small std::unordered_map per call; its public API has no way around that.
//
// A primitive runs with the OpenMP threads it was created for (oneDNN sizes some work splits
// then): factories create small ones under ScopedOpenMpThreads(1), since starting a
// parallel region costs more than their whole work. A run given fewer threads than a primitive was made for
// (the machine is busy: worker_pool.h's threadsToUse) runs a copy made for that many, made on
// first need: the original would still split its work over every thread it was made for, and
// wait at each step for the ones the OS does not schedule.
#include <dnnl.h>

#include <cstdlib>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "cpu/cpu_device.h"

namespace estuary::ge::cpu {

// A constant's bytes at a cache-line boundary. oneDNN's AMX and AVX-512 kernels load packed
// weights a 64-byte row at a time; a buffer from malloc (16 bytes past a page for large
// ones) puts every row across two lines. BERT-base's 128 x 768 by 768 x 3072 bf16 product,
// weights not in cache, AMX, one thread: 886 us aligned, 1193 us 16 bytes off.
class ConstantBytes {
 public:
  explicit ConstantBytes(size_t size);
  ConstantBytes(const void* data, size_t size);
  std::byte* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(std::byte* data) const { std::free(data); }
  };
  std::unique_ptr<std::byte, Free> data_;
  size_t size_;
};

// Constant data a kernel's Source::Constant arguments point at (pre-packed weights, folded
// biases), held by the kernel; packed weights are shared with the model's other plans
// (packedConstant in nn_support.h).
using OwnedConstants = std::vector<std::shared_ptr<const ConstantBytes>>;

// Where a primitive argument's data comes from.
struct OnednnArg {
  enum class Source : uint8_t { Input, Output, Scratchpad, Constant };
  int dnnl_arg;              // DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, ...
  Source source;
  size_t index = 0;          // which input or output
  dnnl::memory::desc desc;
  const void* constant = nullptr;  // Source::Constant: pre-packed data owned by the kernel
  size_t offset = 0;               // bytes into an Input, Output or the Scratchpad (a block of it)
};

class OnednnKernel : public Kernel {
 public:
  // `primitive_desc` must have been created with a user scratchpad (see scratchpadAttr()).
  OnednnKernel(std::string name, const dnnl::engine& engine, dnnl::primitive primitive, size_t scratchpad_bytes,
               std::vector<OnednnArg> args);

  size_t scratchBytes() const override { return scratchpad_bytes_; }
  std::unique_ptr<KernelState> createState() const override;
  void run(const KernelArgs& args, KernelState* state) const override;
  std::string name() const override { return name_; }
  // The OpenMP threads the primitive was created for.
  int threads() const { return threads_; }

 protected:
  // Holds the data Source::Constant arguments point at.
  OwnedConstants owned_;

 private:
  // The primitive to run on `threads` threads, fewer than threads_.
  const dnnl::primitive& primitiveFor(int threads) const;
  // The same problem, implementation and memory formats made for `threads` threads; nullopt
  // when oneDNN would choose differently or need a larger scratchpad.
  std::optional<dnnl::primitive> remakeFor(int threads) const;

  std::string name_;
  dnnl::engine engine_;
  dnnl::primitive primitive_;
  size_t scratchpad_bytes_;
  std::vector<OnednnArg> args_;
  int threads_;
  mutable std::mutex remade_mutex_;
  mutable std::map<int, std::optional<dnnl::primitive>> remade_;
};

// A kernel copying input 0 laid out as `from` into output 0 laid out as `to`.
std::unique_ptr<Kernel> reorderKernel(const dnnl::engine& engine, const dnnl::memory::desc& from,
                                      const dnnl::memory::desc& to, std::string name);

// Primitive attributes every Estuary oneDNN kernel uses: scratchpad in Estuary's arena.
dnnl::primitive_attr scratchpadAttr();
// f32 -> dnnl::memory::data_type::f32 ...; raises for types oneDNN lacks.
dnnl::memory::data_type dnnlType(DType dtype);
bool dnnlSupports(DType dtype);
// A plain row-major memory desc for a tensor.
dnnl::memory::desc plainDesc(const TensorDesc& desc);
// The memory desc of a tensor in its layout (TensorDesc::layout).
dnnl::memory::desc layoutDesc(const TensorDesc& desc);
// The Layout whose desc `chosen` is (e.g. what a primitive created with format_tag::any
// picked for a tensor of `desc`'s dims), or nullopt when it is none of them.
std::optional<Layout> layoutOf(const dnnl::memory::desc& chosen, const TensorDesc& desc);
// The implementation oneDNN picked, e.g. "brg:avx512_core_amx".
std::string implName(const dnnl::primitive_desc_base& pd);
// An implementation's name without the instruction set it was made for: "jit_1x1" for
// "jit_1x1:avx2". oneDNN lists a family's variants together, the best instruction set first.
std::string implFamily(const std::string& impl_name);

}  // namespace estuary::ge::cpu
