#include "estuary/ge/kernel.h"

#include <algorithm>
#include <cstring>

#include "estuary/ge/device.h"
#include "estuary/ops/schema.h"

namespace estuary::ge {

TensorDesc TensorDesc::of(const TensorType& type) {
  if (!type.shape.isStatic()) raise("type ", type.str(), " is not static");
  return of(type.dtype, type.shape.staticDims());
}

TensorDesc TensorDesc::of(DType dtype, const std::vector<int64_t>& dims) {
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    raise("rank ", dims.size(), " is above the backend's limit of ", kMaxRank);
  }
  TensorDesc desc;
  desc.dtype = dtype;
  desc.rank = static_cast<int>(dims.size());
  std::copy(dims.begin(), dims.end(), desc.dims.begin());
  return desc;
}

const char* layoutName(Layout layout) {
  switch (layout) {
    case Layout::Plain: return "plain";
    case Layout::ChannelsLast: return "nhwc";
    case Layout::Blocked8: return "nChw8c";
    case Layout::Blocked16: return "nChw16c";
  }
  return "?";
}

int channelBlock(Layout layout) {
  switch (layout) {
    case Layout::Blocked8: return 8;
    case Layout::Blocked16: return 16;
    default: return 1;
  }
}

void copyToPlain(const TensorDesc& desc, const void* stored, void* plain) {
  const size_t element = dtypeSize(desc.dtype);
  if (desc.layout == Layout::Plain || desc.rank < 3) {
    std::memcpy(plain, stored, static_cast<size_t>(desc.numElements()) * element);
    return;
  }
  const int64_t batch = desc.dims[0], channels = desc.dims[1], spatial = desc.numElements() / std::max<int64_t>(1, batch * channels);
  const int64_t block = channelBlock(desc.layout);
  const int64_t blocks = (channels + block - 1) / block;
  const auto* from = static_cast<const std::byte*>(stored);
  auto* to = static_cast<std::byte*>(plain);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t s = 0; s < spatial; ++s) {
        const int64_t source = desc.layout == Layout::ChannelsLast ? (n * spatial + s) * channels + c
                                                                   : ((n * blocks + c / block) * spatial + s) * block + c % block;
        std::memcpy(to + static_cast<size_t>((n * channels + c) * spatial + s) * element,
                    from + static_cast<size_t>(source) * element, element);
      }
    }
  }
}

int64_t TensorDesc::numElements() const {
  int64_t count = 1;
  for (int i = 0; i < rank; ++i) count *= dims[i];
  return count;
}

int64_t TensorDesc::storedElements() const {
  const int64_t block = channelBlock(layout);
  if (block == 1 || rank < 2 || dims[1] % block == 0) return numElements();
  return numElements() / dims[1] * ((dims[1] + block - 1) / block * block);
}

std::string TensorDesc::str() const {
  std::string text(dtypeName(dtype));
  text += '[';
  for (int i = 0; i < rank; ++i) {
    if (i) text += ',';
    text += std::to_string(dims[i]);
  }
  text += ']';
  if (layout != Layout::Plain) text += std::string("{") + layoutName(layout) + "}";
  return text;
}

bool operator==(const TensorDesc& a, const TensorDesc& b) {
  return a.dtype == b.dtype && a.rank == b.rank && a.layout == b.layout &&
         std::equal(a.dims.begin(), a.dims.begin() + a.rank, b.dims.begin());
}

const Attribute* KernelBuildContext::attr(std::string_view name) const {
  if (const Attribute* attribute = node_.attr(name)) return attribute;
  if (const OpSchema* schema = OpRegistry::global().find(node_)) {
    if (const AttrSpec* spec = schema->findAttr(name); spec && spec->default_value) return &*spec->default_value;
  }
  return nullptr;
}

int64_t KernelBuildContext::intAttr(std::string_view name) const {
  const Attribute* attribute = attr(name);
  if (!attribute) fail("attribute '", name, "' is missing");
  return attribute->asInt();
}

double KernelBuildContext::floatAttr(std::string_view name) const {
  const Attribute* attribute = attr(name);
  if (!attribute) fail("attribute '", name, "' is missing");
  return attribute->asFloat();
}

std::vector<int64_t> KernelBuildContext::intsAttr(std::string_view name) const {
  const Attribute* attribute = attr(name);
  return attribute ? attribute->asInts() : std::vector<int64_t>{};
}

std::string KernelBuildContext::stringAttr(std::string_view name) const {
  const Attribute* attribute = attr(name);
  return attribute ? attribute->asString() : std::string();
}

namespace {

std::string qualified(std::string_view op_type, std::string_view domain) {
  return domain.empty() ? std::string(op_type) : std::string(domain) + "::" + std::string(op_type);
}

}  // namespace

void KernelRegistry::add(std::string_view op_type, std::string_view domain, KernelFactory factory,
                         std::shared_ptr<const void> keep_alive) {
  auto& candidates = entries_[qualified(op_type, domain)];
  candidates.insert(candidates.begin(), Entry{std::move(keep_alive), std::move(factory)});
}

void KernelRegistry::addLayoutAware(std::string_view op_type, std::string_view domain, KernelFactory factory) {
  auto& candidates = entries_[qualified(op_type, domain)];
  candidates.insert(candidates.begin(), Entry{nullptr, std::move(factory), true});
}

bool KernelRegistry::has(std::string_view op_type, std::string_view domain) const {
  return entries_.find(qualified(op_type, domain)) != entries_.end();
}

std::shared_ptr<const Kernel> KernelRegistry::create(const KernelBuildContext& context) const {
  const Node& node = context.node();
  auto it = entries_.find(node.qualifiedOpType());
  auto describeInputs = [&] {
    std::string text;
    for (size_t i = 0; i < context.numInputs(); ++i) {
      if (i) text += ", ";
      text += context.hasInput(i) ? context.input(i).str() : "_";
    }
    return text;
  };
  if (it == entries_.end()) {
    raiseAs<NoKernelError>(node.describe(), ": the ", context.device().name(), " device has no kernel for op ",
                           node.qualifiedOpType());
  }
  bool all_plain = true;
  for (size_t i = 0; i < context.numInputs(); ++i) all_plain &= context.input(i).layout == Layout::Plain;
  for (size_t o = 0; o < context.numOutputs(); ++o) all_plain &= context.output(o).layout == Layout::Plain;
  for (const Entry& entry : it->second) {
    if (!all_plain && !entry.layout_aware) continue;
    std::unique_ptr<Kernel> kernel = entry.factory(context);
    if (!kernel) continue;
    if (!entry.keep_alive) return std::shared_ptr<const Kernel>(std::move(kernel));
    // The kernel's code lives in a plugin: keep it loaded while the kernel exists.
    auto keep_alive = entry.keep_alive;
    return std::shared_ptr<const Kernel>(kernel.release(), [keep_alive](const Kernel* k) { delete k; });
  }
  raiseAs<NoKernelError>(node.describe(), ": no ", context.device().name(), " kernel of ", node.qualifiedOpType(),
                         " supports inputs (",
                         describeInputs(), ")");
}

std::vector<std::string> KernelRegistry::ops() const {
  std::vector<std::string> names;
  for (const auto& [name, entries] : entries_) names.push_back(name);
  return names;
}

}  // namespace estuary::ge
