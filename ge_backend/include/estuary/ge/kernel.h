#pragma once
// Kernels: the executable form of one node for one concrete shape.
//
// Everything costly happens when a kernel is created at build time: the factory sees the
// node, the concrete input and output types and any constant inputs, resolves the
// implementation, pre-packs weights and sizes its scratch memory. run() then only reads
// and writes the buffers it is handed, allocating nothing.
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/ir/graph.h"

namespace estuary::ge {

inline constexpr int kMaxRank = 8;

// How a tensor's elements sit in memory. Chains of convolutions keep their activations in
// the layout oneDNN's convolutions run fastest on; the plan builder inserts reorders where
// such a tensor meets an op that needs Plain (and before graph outputs). The other layouts
// apply to tensors of rank 3 to 5 (N, C, spatial...); dims stay the logical N, C, spatial
// in every layout.
enum class Layout : uint8_t {
  Plain,         // row-major
  ChannelsLast,  // N, spatial..., C (oneDNN's nwc/nhwc/ndhwc)
  Blocked8,      // N, ceil(C/8), spatial..., 8 (nChw8c): channels zero-padded to a multiple of 8
  Blocked16,     // N, ceil(C/16), spatial..., 16 (nChw16c)
};
const char* layoutName(Layout layout);  // "plain", "nhwc", "nChw8c", "nChw16c"
// Channels are padded to a multiple of this (1 for the unblocked layouts).
int channelBlock(Layout layout);

// A concrete tensor type: element type, static dims and memory layout.
struct TensorDesc {
  DType dtype = DType::Undefined;
  int rank = 0;
  std::array<int64_t, kMaxRank> dims{};
  Layout layout = Layout::Plain;

  static TensorDesc of(const TensorType& type);  // raises unless the shape is static
  static TensorDesc of(DType dtype, const std::vector<int64_t>& dims);
  int64_t numElements() const;
  // Elements stored, with a blocked layout's channel padding.
  int64_t storedElements() const;
  size_t byteSize() const { return static_cast<size_t>(storedElements()) * dtypeSize(dtype); }
  std::vector<int64_t> dimVector() const { return {dims.begin(), dims.begin() + rank}; }
  std::string str() const;  // "f32[1,64,56,56]", "f32[1,64,56,56]{nhwc}"
  friend bool operator==(const TensorDesc& a, const TensorDesc& b);
  friend bool operator!=(const TensorDesc& a, const TensorDesc& b) { return !(a == b); }
};

// Copies a tensor stored in desc.layout into row-major order (desc.numElements() elements).
void copyToPlain(const TensorDesc& desc, const void* stored, void* plain);

// Per-run-context state a kernel may need (e.g. oneDNN memory objects, a stream).
class KernelState {
 public:
  virtual ~KernelState() = default;
};

// Device-specific, per-run-context resources handed to every kernel (the CPU device's
// oneDNN stream, for instance).
class DeviceRunState {
 public:
  virtual ~DeviceRunState() = default;
};

struct KernelArgs {
  const void* const* inputs;  // one per node input; nullptr for an absent optional input
  void* const* outputs;       // one per node output
  void* scratch;              // Kernel::scratchBytes() bytes, 64-byte aligned
  int num_threads;            // intra-op threads for this run
  DeviceRunState* device;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Temporary memory run() needs; planned into the run context's arena.
  virtual size_t scratchBytes() const { return 0; }
  // An input whose buffer output `output` may share (the kernel reads each element before
  // writing the same element), or nullopt. The memory planner uses it only when the input
  // has no later use.
  virtual std::optional<size_t> inPlaceInput(size_t output) const { return std::nullopt; }
  // State for one run context; called once per context and plan.
  virtual std::unique_ptr<KernelState> createState() const { return nullptr; }
  virtual void run(const KernelArgs& args, KernelState* state) const = 0;
  // A short description for build reports ("onednn:conv jit:avx512_core", "cpu:add").
  virtual std::string name() const = 0;
};

class Device;
class Tuner;
class SharedAcrossPlans;

// One way to compute a node (KernelBuildContext::choose): an implementation or algorithm
// that may win on one CPU or shape and lose on another.
struct KernelTactic {
  // Stable across builds and machines ("cpu:gemv", "onednn:gemm:jit", "onednn:winograd"):
  // timing caches and offline models record choices by it.
  std::string name;
  // nullptr when the tactic does not handle the node after all.
  std::function<std::unique_ptr<Kernel>()> make;
};

// What a kernel factory sees.
class KernelBuildContext {
 public:
  KernelBuildContext(const Node& node, std::vector<TensorDesc> inputs, std::vector<TensorDesc> outputs,
                     std::vector<const Tensor*> constants, const Device& device, int max_threads)
      : node_(node), inputs_(std::move(inputs)), outputs_(std::move(outputs)),
        constants_(std::move(constants)), device_(device), max_threads_(max_threads) {}

  const Node& node() const { return node_; }
  size_t numInputs() const { return inputs_.size(); }
  bool hasInput(size_t i) const { return i < inputs_.size() && inputs_[i].dtype != DType::Undefined; }
  const TensorDesc& input(size_t i) const { return inputs_.at(i); }
  size_t numOutputs() const { return outputs_.size(); }
  const TensorDesc& output(size_t i) const { return outputs_.at(i); }
  // The value of input i when it is a constant (weights, shape operands), else nullptr.
  const Tensor* constantInput(size_t i) const { return i < constants_.size() ? constants_[i] : nullptr; }
  const Device& device() const { return device_; }
  int maxThreads() const { return max_threads_; }
  // Set when the builder only asks whether a kernel exists (to decide a fusion or a layout)
  // and throws it away: a factory may then skip work only a run needs, such as packing
  // weights.
  bool probing() const { return probing_; }
  void setProbing(bool probing) { probing_ = probing; }

  // The kernel of one of `tactics`, listed in the order the built-in rules prefer them. A
  // build that tunes (BuildOptions::tune_kernels) times each on this node's shapes and keeps
  // the fastest, or reuses the choice a timing cache or the offline model recorded; any other
  // build takes the first tactic that makes a kernel. nullptr when none does.
  std::unique_ptr<Kernel> choose(const std::vector<KernelTactic>& tactics) const;
  void setTuner(Tuner* tuner) { tuner_ = tuner; }

  // Where packed weights are shared with the model's plans for other input shapes
  // (shared_across_plans.h); nullptr: this plan keeps its own.
  SharedAcrossPlans* sharedAcrossPlans() const { return shared_; }
  void setSharedAcrossPlans(SharedAcrossPlans* shared) { shared_ = shared; }

  // Attribute access with the op schema's defaults applied.
  const Attribute* attr(std::string_view name) const;
  int64_t intAttr(std::string_view name) const;
  double floatAttr(std::string_view name) const;
  std::vector<int64_t> intsAttr(std::string_view name) const;
  std::string stringAttr(std::string_view name) const;

  // Raises an Error naming the node.
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    raise(node_.describe(), ": ", parts...);
  }

 private:
  const Node& node_;
  std::vector<TensorDesc> inputs_;
  std::vector<TensorDesc> outputs_;
  std::vector<const Tensor*> constants_;
  const Device& device_;
  int max_threads_;
  bool probing_ = false;
  Tuner* tuner_ = nullptr;
  SharedAcrossPlans* shared_ = nullptr;
};

// Returns a kernel, or nullptr when this implementation does not handle the case (another
// registered one is then tried).
using KernelFactory = std::function<std::unique_ptr<Kernel>(const KernelBuildContext&)>;

// The extension point (plugin/extensions.h) under which plugins reach the CPU kernels:
//   registrar.extend(ge::kCpuKernelsExtension, [](void* registry, const auto& keep_alive) {
//     static_cast<ge::KernelRegistry*>(registry)->add("MyOp", "my_domain", factory, keep_alive);
//   });
inline constexpr char kCpuKernelsExtension[] = "ge.cpu.kernels";

// No kernel takes a node with these input types and layouts (KernelRegistry::create): no
// value of an input can change that, so a build reports it rather than leaving the node to
// the first run.
class NoKernelError : public Error {
 public:
  using Error::Error;
};

// The kernels of one device (Device::kernels()); the CPU device's takes plugins' kernels
// through kCpuKernelsExtension.
class KernelRegistry {
 public:
  // Later registrations are tried first, so a plugin can override a built-in kernel.
  void add(std::string_view op_type, std::string_view domain, KernelFactory factory,
           std::shared_ptr<const void> keep_alive = nullptr);
  // A factory that also reads TensorDesc::layout. Only these are asked when an input or
  // output is not Plain, so a kernel written for row-major data never sees another layout.
  void addLayoutAware(std::string_view op_type, std::string_view domain, KernelFactory factory);
  bool has(std::string_view op_type, std::string_view domain = "") const;
  // The first factory that accepts the node; raises an Error naming the node, its op and
  // input types when none does. The kernel keeps its plugin (if any) loaded.
  std::shared_ptr<const Kernel> create(const KernelBuildContext& context) const;
  std::vector<std::string> ops() const;  // qualified names, sorted

 private:
  struct Entry {
    std::shared_ptr<const void> keep_alive;  // first: destroyed after the factory
    KernelFactory factory;
    bool layout_aware = false;
  };
  std::map<std::string, std::vector<Entry>, std::less<>> entries_;  // by qualified op name
};

}  // namespace estuary::ge
