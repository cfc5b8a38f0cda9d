#include "cpu/onednn_kernel.h"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "worker_pool.h"

namespace estuary::ge::cpu {

ConstantBytes::ConstantBytes(size_t size) : size_(size) {
  constexpr size_t kLine = 64, kHugePage = size_t{2} << 20;
  // Weights of 2 MiB or more start at a huge page and ask for huge pages over their whole
  // 2 MiB stretches (the tail keeps small pages, so that no unused bytes become resident):
  // streaming weights that are not in cache then misses the TLB 512x less often. oneDNN's
  // AMX matmul, bf16 128 x 768 by 768 x 3072, weights not in cache: 886 -> 851 us on one
  // thread, 452 -> 439 on two; 3072 x 768: 1289 -> 1226 and 605 -> 559 us.
  const size_t alignment = size >= kHugePage ? kHugePage : kLine;
  // aligned_alloc wants a multiple of the alignment, and a pointer even for 0 bytes.
  data_.reset(static_cast<std::byte*>(
      std::aligned_alloc(alignment, std::max<size_t>(1, (size + alignment - 1) / alignment) * alignment)));
  if (!data_) throw std::bad_alloc();
  if (size >= kHugePage) ::madvise(data_.get(), size / kHugePage * kHugePage, MADV_HUGEPAGE);
  // Zeroed: a layout with gaps (padded rows) leaves bytes that no reorder writes, and two
  // packings of one weight must be the same bytes.
  std::memset(data_.get(), 0, size);
}

ConstantBytes::ConstantBytes(const void* data, size_t size) : ConstantBytes(size) {
  if (size) std::memcpy(data_.get(), data, size);
}

namespace {

class OnednnState final : public KernelState {
 public:
  std::vector<dnnl::memory> memories;
  std::vector<dnnl_exec_arg_t> exec_args;
  // The data pointer each memory holds: setting a handle is not free (oneDNN zero-fills a
  // blocked tensor's channel padding each time), and most pointers never change.
  std::vector<void*> handles;
};

}  // namespace

OnednnKernel::OnednnKernel(std::string name, const dnnl::engine& engine, dnnl::primitive primitive,
                           size_t scratchpad_bytes, std::vector<OnednnArg> args)
    : name_(std::move(name)), engine_(engine), primitive_(std::move(primitive)),
      scratchpad_bytes_(scratchpad_bytes), args_(std::move(args)), threads_(omp_get_max_threads()) {}

std::unique_ptr<KernelState> OnednnKernel::createState() const {
  auto state = std::make_unique<OnednnState>();
  for (const OnednnArg& arg : args_) {
    state->memories.emplace_back(arg.desc, engine_, arg.source == OnednnArg::Source::Constant
                                                       ? const_cast<void*>(arg.constant)
                                                       : DNNL_MEMORY_NONE);
    state->exec_args.push_back(dnnl_exec_arg_t{arg.dnnl_arg, state->memories.back().get()});
  }
  state->handles.assign(args_.size(), nullptr);
  return state;
}

void OnednnKernel::run(const KernelArgs& args, KernelState* raw_state) const {
  auto* state = static_cast<OnednnState*>(raw_state);
  for (size_t i = 0; i < args_.size(); ++i) {
    const OnednnArg& arg = args_[i];
    std::byte* data = nullptr;
    switch (arg.source) {
      case OnednnArg::Source::Input: data = static_cast<std::byte*>(const_cast<void*>(args.inputs[arg.index])); break;
      case OnednnArg::Source::Output: data = static_cast<std::byte*>(args.outputs[arg.index]); break;
      case OnednnArg::Source::Scratchpad: data = static_cast<std::byte*>(args.scratch); break;
      case OnednnArg::Source::Constant: continue;
    }
    if (data) data += arg.offset;
    if (data == state->handles[i]) continue;
    dnnl_memory_set_data_handle(state->exec_args[i].memory, data);
    state->handles[i] = data;
  }
  const bool fewer_threads = threads_ < args.num_threads;
  if (fewer_threads) omp_set_num_threads(threads_);
  // BERT-base in bf16 on AMX, 2 threads: its products took 34 ms a run with the pool's
  // workers spinning beside oneDNN's team after each own kernel, 27 ms with them asleep.
  if (std::min(threads_, args.num_threads) > 1) restSpinningWorkers();
  const dnnl::primitive& primitive = args.num_threads < threads_ ? primitiveFor(args.num_threads) : primitive_;
  dnnl_status_t status = dnnl_primitive_execute(primitive.get(), streamOf(args).get(),
                                                 static_cast<int>(state->exec_args.size()), state->exec_args.data());
  if (fewer_threads) omp_set_num_threads(args.num_threads);
  if (status != dnnl_success) raise(name_, ": oneDNN execution failed (status ", static_cast<int>(status), ")");
}

const dnnl::primitive& OnednnKernel::primitiveFor(int threads) const {
  std::lock_guard lock(remade_mutex_);
  auto found = remade_.find(threads);
  if (found == remade_.end()) found = remade_.emplace(threads, remakeFor(threads)).first;
  return found->second ? *found->second : primitive_;
}

std::optional<dnnl::primitive> OnednnKernel::remakeFor(int threads) const {
  const_dnnl_primitive_desc_t made = primitive_.get_primitive_desc();
  dnnl_primitive_kind_t kind;
  const_dnnl_op_desc_t op_desc = nullptr;
  const_dnnl_primitive_attr_t attr = nullptr;
  const char* implementation = nullptr;
  // A reorder has no op descriptor to remake it from; it splits its work per run anyway.
  if (dnnl_primitive_desc_query(made, dnnl_query_primitive_kind, 0, &kind) != dnnl_success ||
      kind == dnnl_reorder || dnnl_primitive_desc_query(made, dnnl_query_op_d, 0, &op_desc) != dnnl_success ||
      !op_desc || dnnl_primitive_desc_get_attr(made, &attr) != dnnl_success ||
      dnnl_primitive_desc_query(made, dnnl_query_impl_info_str, 0, &implementation) != dnnl_success) {
    return std::nullopt;
  }
  auto same_as_made = [&](const_dnnl_primitive_desc_t candidate) {
    const char* name = nullptr;
    if (dnnl_primitive_desc_query(candidate, dnnl_query_impl_info_str, 0, &name) != dnnl_success ||
        std::string(name) != implementation) {
      return false;
    }
    for (const OnednnArg& arg : args_) {
      const dnnl_memory_desc_t* ours = dnnl_primitive_desc_query_md(made, dnnl_query_exec_arg_md, arg.dnnl_arg);
      const dnnl_memory_desc_t* theirs = dnnl_primitive_desc_query_md(candidate, dnnl_query_exec_arg_md, arg.dnnl_arg);
      if (arg.dnnl_arg == DNNL_ARG_SCRATCHPAD) {
        if (theirs && dnnl_memory_desc_get_size(theirs) > scratchpad_bytes_) return false;
      } else if (!ours || !theirs || !dnnl_memory_desc_equal(ours, theirs)) {
        return false;
      }
    }
    return true;
  };
  const int saved_threads = omp_get_max_threads();
  omp_set_num_threads(threads);
  std::optional<dnnl::primitive> remade;
  dnnl_primitive_desc_iterator_t iterator = nullptr;
  if (dnnl_primitive_desc_iterator_create(&iterator, op_desc, attr, engine_.get(), nullptr) == dnnl_success) {
    do {
      dnnl_primitive_desc_t candidate = dnnl_primitive_desc_iterator_fetch(iterator);
      if (!candidate) break;
      const bool same = same_as_made(candidate);
      dnnl_primitive_t primitive = nullptr;
      if (same && dnnl_primitive_create(&primitive, candidate) == dnnl_success) remade.emplace(primitive);
      dnnl_primitive_desc_destroy(candidate);
      if (same) break;
    } while (dnnl_primitive_desc_iterator_next(iterator) == dnnl_success);
    dnnl_primitive_desc_iterator_destroy(iterator);
  }
  omp_set_num_threads(saved_threads);
  return remade;
}

std::unique_ptr<Kernel> reorderKernel(const dnnl::engine& engine, const dnnl::memory::desc& from,
                                      const dnnl::memory::desc& to, std::string name) {
  dnnl::reorder::primitive_desc pd(engine, from, engine, to, scratchpadAttr());
  return std::make_unique<OnednnKernel>(
      std::move(name), engine, dnnl::reorder(pd), pd.scratchpad_desc().get_size(),
      std::vector<OnednnArg>{{DNNL_ARG_FROM, OnednnArg::Source::Input, 0, from},
                             {DNNL_ARG_TO, OnednnArg::Source::Output, 0, to},
                             {DNNL_ARG_SCRATCHPAD, OnednnArg::Source::Scratchpad, 0, pd.scratchpad_desc()}});
}

dnnl::primitive_attr scratchpadAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

bool dnnlSupports(DType dtype) {
  switch (dtype) {
    case DType::F32: case DType::F16: case DType::BF16: case DType::I8: case DType::U8: case DType::I32:
      return true;
    default:
      return false;
  }
}

dnnl::memory::data_type dnnlType(DType dtype) {
  using dt = dnnl::memory::data_type;
  switch (dtype) {
    case DType::F32: return dt::f32;
    case DType::F16: return dt::f16;
    case DType::BF16: return dt::bf16;
    case DType::I8: return dt::s8;
    case DType::U8: return dt::u8;
    case DType::I32: return dt::s32;
    default: raise("oneDNN has no data type for ", dtypeName(dtype));
  }
}

dnnl::memory::desc plainDesc(const TensorDesc& desc) {
  dnnl::memory::dims dims(desc.dims.begin(), desc.dims.begin() + desc.rank);
  if (dims.empty()) dims.push_back(1);  // oneDNN has no rank-0 tensors
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  return dnnl::memory::desc(dims, dnnlType(desc.dtype), strides);
}

dnnl::memory::desc layoutDesc(const TensorDesc& desc) {
  using tag = dnnl::memory::format_tag;
  if (desc.layout == Layout::Plain) return plainDesc(desc);
  if (desc.rank < 3 || desc.rank > 5) raise("layout ", layoutName(desc.layout), " needs rank 3 to 5, not ", desc.str());
  const size_t spatial = static_cast<size_t>(desc.rank) - 3;
  const tag channels_last[] = {tag::nwc, tag::nhwc, tag::ndhwc};
  const tag blocked8[] = {tag::nCw8c, tag::nChw8c, tag::nCdhw8c};
  const tag blocked16[] = {tag::nCw16c, tag::nChw16c, tag::nCdhw16c};
  const tag format = desc.layout == Layout::ChannelsLast ? channels_last[spatial]
                     : desc.layout == Layout::Blocked8   ? blocked8[spatial]
                                                         : blocked16[spatial];
  return dnnl::memory::desc(dnnl::memory::dims(desc.dims.begin(), desc.dims.begin() + desc.rank),
                            dnnlType(desc.dtype), format);
}

std::optional<Layout> layoutOf(const dnnl::memory::desc& chosen, const TensorDesc& desc) {
  for (Layout layout : {Layout::Plain, Layout::ChannelsLast, Layout::Blocked8, Layout::Blocked16}) {
    TensorDesc candidate = desc;
    candidate.layout = layout;
    if (layout != Layout::Plain && (desc.rank < 3 || desc.rank > 5)) continue;
    if (layoutDesc(candidate) == chosen) return layout;
  }
  return std::nullopt;
}

std::string implName(const dnnl::primitive_desc_base& pd) { return pd.impl_info_str(); }

std::string implFamily(const std::string& impl_name) { return impl_name.substr(0, impl_name.rfind(':')); }

}  // namespace estuary::ge::cpu
