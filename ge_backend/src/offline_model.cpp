// CompiledModel::save / CompiledModel::load: the offline model file described in
// estuary/ge/offline_model.h.
#include "estuary/ge/offline_model.h"
#include "estuary/support/atomic_file.h"
#include "estuary/support/mapped_file.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include "estuary/ge/model.h"
#include "estuary/ops/schema.h"
#include "estuary/plugin/loader.h"
#include "estuary/serialize/serialize.h"
#include "plan.h"
#include "tuning.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "offline models store little-endian integers and tensor bytes");

namespace estuary::ge {

namespace {

constexpr char kMagic[8] = {'\x89', 'E', 'O', 'M', '\r', '\n', '\x1a', '\n'};
constexpr size_t kHeaderSize = 256;
constexpr size_t kNameField = 32;
constexpr size_t kDeviceAt = 24, kIsaAt = 56, kVersionAt = 88, kSectionsAt = 128;
constexpr uint64_t kAlignment = 64;
// Tensor attributes above this size go to the weights section; smaller ones stay in the graph.
constexpr size_t kInlineTensorLimit = 1024;

// In header order. The file holds the metadata sections in kMetadataSections order, then
// the weights.
enum Section {
  kGraph, kWeightTable, kPlanShapes, kWeights, kPlugins, kDimRanges, kProperties, kTactics, kNumSections
};
constexpr const char* kSectionNames[kNumSections] = {"graph",      "weight table", "plan shapes", "weights",
                                                     "plugins",    "dim ranges",   "properties",  "tactics"};
constexpr Section kMetadataSections[] = {kGraph,     kWeightTable, kPlanShapes, kPlugins,
                                         kDimRanges, kProperties,  kTactics};
// The format version that added each section; older files lack it.
constexpr uint32_t kSectionSince[kNumSections] = {1, 1, 1, 1, 2, 3, 4, 5};

// Fixed codes, independent of the DType enum's numbering (see offline_model.h).
constexpr DType kDTypeByCode[] = {DType::Undefined, DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8,
                                  DType::I16,       DType::I32, DType::I64, DType::U8,   DType::Bool};

uint32_t dtypeCode(DType dtype) {
  for (uint32_t code = 1; code < std::size(kDTypeByCode); ++code) {
    if (kDTypeByCode[code] == dtype) return code;
  }
  raise("cannot save a tensor of element type ", dtypeName(dtype), " in an offline model");
}

uint64_t alignUp(uint64_t value) { return (value + kAlignment - 1) / kAlignment * kAlignment; }

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// --- Little-endian encoding --------------------------------------------------------------

class ByteWriter {
 public:
  void u32(uint32_t value) { put(&value, sizeof value); }
  void u64(uint64_t value) { put(&value, sizeof value); }
  void i64(int64_t value) { put(&value, sizeof value); }
  void text(const std::string& value) {
    u32(static_cast<uint32_t>(value.size()));
    put(value.data(), value.size());
  }
  const std::string& bytes() const { return bytes_; }

 private:
  void put(const void* data, size_t size) { bytes_.append(static_cast<const char*>(data), size); }
  std::string bytes_;
};

// Reads a section; running past its end raises naming the file and the section.
class ByteReader {
 public:
  ByteReader(std::string_view bytes, const std::string& path, const char* section)
      : bytes_(bytes), path_(path), section_(section) {}
  uint32_t u32() { return get<uint32_t>(); }
  uint64_t u64() { return get<uint64_t>(); }
  int64_t i64() { return get<int64_t>(); }
  std::string text() {
    uint32_t size = u32();
    if (size > remaining()) fail("a name of ", size, " bytes runs past the end");
    std::string value(bytes_.substr(position_, size));
    position_ += size;
    return value;
  }
  bool atEnd() const { return position_ == bytes_.size(); }
  size_t remaining() const { return bytes_.size() - position_; }

  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    raise(path_, ": ", section_, " section: ", parts..., " (corrupt file)");
  }

  DType dtype() {
    uint32_t code = u32();
    if (code == 0 || code >= std::size(kDTypeByCode)) fail("unknown element type code ", code);
    return kDTypeByCode[code];
  }
  std::vector<int64_t> dims() {
    uint32_t rank = u32();
    if (rank > kMaxRank) fail("rank ", rank, " exceeds the maximum ", kMaxRank);
    std::vector<int64_t> dims(rank);
    for (int64_t& dim : dims) {
      dim = i64();
      if (dim < 0) fail("negative dimension ", dim);
    }
    return dims;
  }
  // Guards list lengths against sizes no section of this size can hold.
  uint64_t count(size_t min_entry_bytes) {
    uint64_t value = u64();
    if (value > remaining() / min_entry_bytes) fail("records ", value, " entries, more than fit in it");
    return value;
  }

 private:
  template <typename T>
  T get() {
    if (remaining() < sizeof(T)) fail("ends early");
    T value;
    std::memcpy(&value, bytes_.data() + position_, sizeof value);
    position_ += sizeof value;
    return value;
  }
  std::string_view bytes_;
  const std::string& path_;
  const char* section_;
  size_t position_ = 0;
};

void putField(char* header, size_t at, const std::string& text, const char* what) {
  if (text.size() >= kNameField) raise("cannot save an offline model: the ", what, " '", text, "' is too long");
  std::memcpy(header + at, text.data(), text.size());
}

std::string getField(const char* header, size_t at) {
  const char* field = header + at;
  return std::string(field, strnlen(field, kNameField));
}

// Byte size of a tensor of `dims`, or nothing when it overflows.
std::optional<uint64_t> byteSizeOf(DType dtype, const std::vector<int64_t>& dims) {
  uint64_t bytes = dtypeSize(dtype);
  for (int64_t dim : dims) {
    if (dim != 0 && bytes > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(dim)) return std::nullopt;
    bytes *= static_cast<uint64_t>(dim);
  }
  return bytes;
}

// Calls `visit(node, name, tensor)` for every tensor attribute, in the order the weight
// table's ordinals count: nodes in list order, attributes by name, subgraphs depth first.
template <typename Visit>
void forEachTensorAttribute(const Graph& graph, Visit&& visit) {
  for (Node* node : graph.nodes()) {
    for (const auto& [name, attr] : node->attributes()) {
      if (attr.kind() == AttrKind::Tensor) visit(*node, name, attr.asTensor());
      if (attr.kind() == AttrKind::Graph) forEachTensorAttribute(*attr.asGraph(), visit);
    }
  }
}

// Calls `visit(node)` for every node, subgraphs included.
template <typename Visit>
void forEachNode(const Graph& graph, Visit&& visit) {
  for (Node* node : graph.nodes()) {
    visit(*node);
    for (Graph* subgraph : node->subgraphs()) forEachNode(*subgraph, visit);
  }
}

// --- Writing -----------------------------------------------------------------------------

// The ops of `graph` that loaded plugins registered, each with its plugin's name.
std::map<std::string, std::string> pluginOps(const Graph& graph) {
  std::map<std::string, std::string> plugin_of;
  for (const PluginHandle& plugin : PluginLoader::global().loaded()) {
    for (const std::string& op : plugin->ops()) plugin_of.emplace(op, plugin->name());
  }
  std::map<std::string, std::string> used;
  forEachNode(graph, [&](const Node& node) {
    auto it = plugin_of.find(node.qualifiedOpType());
    if (it != plugin_of.end()) used.insert(*it);
  });
  return used;
}

struct WeightEntry {
  uint64_t ordinal;
  Tensor tensor;
  uint64_t offset;  // within the weights section
};

// Moves the large tensors of `graph` out: each is replaced by a zero-element placeholder and
// listed with its place in the weights section. Tensors sharing one buffer are stored once.
std::vector<WeightEntry> extractWeights(Graph& graph, uint64_t& weights_size) {
  struct Pending {
    Node* node;
    std::string name;
    WeightEntry entry;
  };
  std::vector<Pending> pending;
  std::unordered_map<const void*, std::pair<uint64_t, size_t>> stored;  // data -> offset, size
  uint64_t ordinal = 0;
  weights_size = 0;
  forEachTensorAttribute(graph, [&](const Node& node, const std::string& name, const Tensor& tensor) {
    uint64_t index = ordinal++;
    if (tensor.byteSize() <= kInlineTensorLimit) return;
    auto [place, inserted] = stored.try_emplace(tensor.data(), std::pair<uint64_t, size_t>{0, 0});
    if (inserted || place->second.second != tensor.byteSize()) {
      place->second = {alignUp(weights_size), tensor.byteSize()};
      weights_size = place->second.first + tensor.byteSize();
    }
    pending.push_back({const_cast<Node*>(&node), name, {index, tensor, place->second.first}});
  });
  std::vector<WeightEntry> entries;
  for (Pending& item : pending) {
    item.node->setAttr(item.name, Tensor::allocate(item.entry.tensor.dtype(), {0}));
    entries.push_back(std::move(item.entry));
  }
  return entries;
}

}  // namespace

// Where save() writes: a file (through an AtomicFile) or bytes in memory.
struct ByteSink {
  virtual ~ByteSink() = default;
  virtual void write(const void* data, uint64_t size) = 0;
  virtual uint64_t position() const = 0;
};

namespace {

struct FileSink : ByteSink {
  explicit FileSink(const std::string& path) : file(path) {}
  void write(const void* data, uint64_t size) override { file.write(data, size); }
  uint64_t position() const override { return file.position(); }
  AtomicFile file;
};

struct StringSink : ByteSink {
  void write(const void* data, uint64_t size) override { bytes.append(static_cast<const char*>(data), size); }
  uint64_t position() const override { return bytes.size(); }
  std::string bytes;
};

// Zeros up to `offset` (the next section's or weight's alignment).
void padTo(ByteSink& file, uint64_t offset) {
  static const char kZeros[kAlignment] = {};
  while (file.position() < offset) file.write(kZeros, std::min<uint64_t>(kAlignment, offset - file.position()));
}

// --- Reading -----------------------------------------------------------------------------

// The whole file mapped read-only (weight tensors keep the mapping alive); an error unless it
// is long enough to hold the magic bytes.
MappedFile mapModelFile(const std::string& path) {
  MappedFile mapping = mapFile(path, "offline model");
  if (mapping.size < sizeof kMagic) {
    raise(path, ": not an Estuary offline model (", mapping.size, " bytes, too short for its magic)");
  }
  return mapping;
}

struct Header {
  std::string device, isa, writer;  // writer: the Estuary version that wrote the file
  std::string_view sections[kNumSections];
  uint64_t weights_offset = 0;
};

Header checkHeader(const MappedFile& file, const std::string& path) {
  if (std::memcmp(file.data, kMagic, sizeof kMagic) != 0) {
    raise(path, ": not an Estuary offline model (bad magic bytes; 'estuary build' writes these files)");
  }
  if (file.size < kHeaderSize) {
    raise(path, ": truncated: ", file.size, " bytes, shorter than the ", kHeaderSize, "-byte header");
  }
  const char* head = file.data;
  uint32_t version, header_size;
  uint64_t recorded_size;
  std::memcpy(&version, head + 8, 4);
  std::memcpy(&header_size, head + 12, 4);
  std::memcpy(&recorded_size, head + 16, 8);
  Header header;
  header.writer = getField(head, kVersionAt);
  if (version > kOfflineModelFormatVersion) {
    raise(path, ": offline model format version ", version, " (written by estuary ", header.writer,
          ") is newer than this build reads (", kOfflineModelFormatVersion, "); rebuild the model with this estuary");
  }
  if (version == 0 || header_size != kHeaderSize) {
    raise(path, ": bad header (format version ", version, ", header size ", header_size, ") (corrupt file)");
  }
  if (recorded_size != file.size) {
    raise(path, ": ", recorded_size > file.size ? "truncated" : "corrupt", ": the file has ", file.size,
          " bytes, its header records ", recorded_size);
  }
  header.device = getField(head, kDeviceAt);
  header.isa = getField(head, kIsaAt);
  for (int s = 0; s < kNumSections; ++s) {
    if (version < kSectionSince[s]) continue;
    uint64_t offset, size;
    std::memcpy(&offset, head + kSectionsAt + 16 * s, 8);
    std::memcpy(&size, head + kSectionsAt + 16 * s + 8, 8);
    if (offset < kHeaderSize || offset > file.size || size > file.size - offset) {
      raise(path, ": the ", kSectionNames[s], " section (", size, " bytes at offset ", offset,
            ") lies outside the file of ", file.size, " bytes (truncated or corrupt file)");
    }
    header.sections[s] = std::string_view(file.data + offset, size);
    if (s == kWeights) header.weights_offset = offset;
  }
  if (header.weights_offset % kAlignment != 0) {
    raise(path, ": the weights section starts at offset ", header.weights_offset,
          ", not a multiple of 64 (corrupt file)");
  }
  return header;
}

// Puts the mapped weights back in place of the placeholders save() left in the graph.
void attachWeights(Graph& graph, const MappedFile& file, const Header& header, const std::string& path,
                   size_t& weight_bytes) {
  ByteReader table(header.sections[kWeightTable], path, "weight table");
  const uint64_t count = table.count(8 + 4 + 4 + 8 + 8);
  struct Entry {
    DType dtype;
    std::vector<int64_t> dims;
    uint64_t offset;
  };
  std::unordered_map<uint64_t, Entry> entries;
  const std::string_view weights = header.sections[kWeights];
  uint64_t previous = 0;
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t ordinal = table.u64();
    if (k > 0 && ordinal <= previous) table.fail("entry ", k, " is out of order");
    previous = ordinal;
    Entry entry{table.dtype(), table.dims(), 0};
    entry.offset = table.u64();
    uint64_t bytes = table.u64();
    std::optional<uint64_t> expected = byteSizeOf(entry.dtype, entry.dims);
    if (!expected || *expected != bytes) table.fail("entry ", k, " records ", bytes, " bytes for its shape");
    if (entry.offset % kAlignment != 0 || entry.offset > weights.size() || bytes > weights.size() - entry.offset) {
      table.fail("entry ", k, " (", bytes, " bytes at offset ", entry.offset, ") lies outside the ",
                 weights.size(), "-byte weights section");
    }
    entries.emplace(ordinal, std::move(entry));
  }
  if (!table.atEnd()) table.fail(table.remaining(), " bytes after the last entry");

  struct Placement {
    Node* node;
    std::string name;
    Tensor tensor;
  };
  std::vector<Placement> placements;
  uint64_t ordinal = 0;
  forEachTensorAttribute(graph, [&](const Node& node, const std::string& name, const Tensor& placeholder) {
    auto it = entries.find(ordinal++);
    if (it == entries.end()) return;
    const Entry& entry = it->second;
    if (placeholder.dtype() != entry.dtype || placeholder.numElements() != 0) {
      table.fail(node.describe(), " attribute '", name, "' is not the placeholder of its weight");
    }
    const char* data = weights.data() + entry.offset;
    placements.push_back({const_cast<Node*>(&node), name, Tensor::wrap(entry.dtype, entry.dims, data, file.owner)});
    weight_bytes += placements.back().tensor.byteSize();
  });
  if (placements.size() != entries.size()) {
    table.fail(entries.size(), " weights listed, ", placements.size(), " found in the graph");
  }
  for (Placement& placement : placements) placement.node->setAttr(placement.name, std::move(placement.tensor));
}

// Refuses a model whose ops come from plugins that are not loaded, naming the plugin.
void checkPlugins(const Graph& graph, std::string_view bytes, const std::string& path) {
  if (bytes.empty()) return;
  ByteReader reader(bytes, path, "plugins");
  std::map<std::string, std::string> plugin_of;
  for (uint64_t count = reader.count(8); count > 0; --count) {
    std::string op = reader.text();
    plugin_of[op] = reader.text();
  }
  if (!reader.atEnd()) reader.fail(reader.remaining(), " bytes after the last entry");
  forEachNode(graph, [&](const Node& node) {
    if (OpRegistry::global().find(node)) return;
    auto it = plugin_of.find(node.qualifiedOpType());
    if (it != plugin_of.end()) {
      raise(path, ": ", node.describe(), " uses op ", it->first, " from plugin '", it->second,
            "', which is not loaded; load it first (estuary ... --plugin ", it->second, ")");
    }
  });
}

std::vector<std::vector<TensorDesc>> readPlanShapes(std::string_view bytes, const std::string& path) {
  ByteReader reader(bytes, path, "plan shapes");
  std::vector<std::vector<TensorDesc>> plans(reader.count(4));
  for (std::vector<TensorDesc>& descs : plans) {
    uint32_t inputs = reader.u32();
    if (inputs > reader.remaining() / 8) reader.fail("a plan lists ", inputs, " inputs, more than fit in it");
    for (uint32_t i = 0; i < inputs; ++i) {
      DType dtype = reader.dtype();
      descs.push_back(TensorDesc::of(dtype, reader.dims()));
    }
  }
  if (!reader.atEnd()) reader.fail(reader.remaining(), " bytes after the last plan");
  return plans;
}

std::map<std::string, DimRange> readDimRanges(std::string_view bytes, const std::string& path) {
  std::map<std::string, DimRange> ranges;
  if (bytes.empty()) return ranges;  // a file from before format version 3
  ByteReader reader(bytes, path, "dim ranges");
  for (uint64_t count = reader.count(20); count > 0; --count) {
    std::string symbol = reader.text();
    DimRange range;
    range.min = reader.i64();
    range.max = reader.i64();
    ranges.emplace(std::move(symbol), range);
  }
  if (!reader.atEnd()) reader.fail(reader.remaining(), " bytes after the last range");
  return ranges;
}

// The properties and tactics sections: u64 count, then text pairs.
std::map<std::string, std::string> readTextPairs(std::string_view bytes, const std::string& path,
                                                 const char* section) {
  std::map<std::string, std::string> pairs;
  if (bytes.empty()) return pairs;  // a file from before the format version that added the section
  ByteReader reader(bytes, path, section);
  for (uint64_t count = reader.count(8); count > 0; --count) {
    std::string key = reader.text();
    pairs[std::move(key)] = reader.text();
  }
  if (!reader.atEnd()) reader.fail(reader.remaining(), " bytes after the last entry");
  return pairs;
}

std::map<std::string, std::string> readProperties(std::string_view bytes, const std::string& path) {
  return readTextPairs(bytes, path, "properties");
}

void writeTextPairs(ByteWriter& writer, const std::map<std::string, std::string>& pairs) {
  writer.u64(pairs.size());
  for (const auto& [key, value] : pairs) {
    writer.text(key);
    writer.text(value);
  }
}

}  // namespace

OfflineModelSummary readOfflineModelSummary(const std::string& path) {
  MappedFile file = mapModelFile(path);
  Header header = checkHeader(file, path);
  OfflineModelSummary summary;
  std::memcpy(&summary.format_version, file.data + 8, 4);
  summary.device = header.device;
  summary.isa = header.isa;
  summary.writer = header.writer;
  summary.file_bytes = file.size;
  summary.weight_bytes = header.sections[kWeights].size();
  summary.properties = readProperties(header.sections[kProperties], path);
  return summary;
}

bool isOfflineModelFile(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return false;
  char head[sizeof kMagic];
  bool matches = std::fread(head, 1, sizeof head, file) == sizeof head && std::memcmp(head, kMagic, sizeof head) == 0;
  std::fclose(file);
  return matches;
}

void CompiledModel::save(const std::string& path) const {
  // Saving over the file a model was loaded from leaves that model's mapping intact.
  FileSink sink(path);
  writeTo(sink);
  sink.file.commit();
}

std::string CompiledModel::saveToBytes() const {
  StringSink sink;
  writeTo(sink);
  return std::move(sink.bytes);
}

void CompiledModel::writeTo(ByteSink& file) const {
  std::unique_ptr<Graph> stripped = graph_->clone();
  uint64_t weights_size = 0;
  std::vector<WeightEntry> weights = extractWeights(*stripped, weights_size);
  const std::string graph_bytes = saveGraphToBytes(*stripped);

  ByteWriter table;
  table.u64(weights.size());
  for (const WeightEntry& entry : weights) {
    table.u64(entry.ordinal);
    table.u32(dtypeCode(entry.tensor.dtype()));
    table.u32(static_cast<uint32_t>(entry.tensor.shape().size()));
    for (int64_t dim : entry.tensor.shape()) table.i64(dim);
    table.u64(entry.offset);
    table.u64(entry.tensor.byteSize());
  }

  ByteWriter plan_shapes;
  {
    std::lock_guard<std::mutex> lock(plans_mutex_);
    // By signature, so that the same model always saves to the same bytes.
    std::map<std::string, const std::vector<TensorDesc>*> sorted;
    for (const auto& [signature, cached] : plans_) {
      // Plans for values of shape inputs are rebuilt when a run brings those values.
      bool by_value = false;
      for (const Tensor& value : cached.plan->shape_input_values) by_value |= !value.isNull();
      if (!by_value) sorted.emplace(signature, &cached.plan->input_descs);
    }
    plan_shapes.u64(sorted.size());
    for (const auto& [signature, descs] : sorted) {
      plan_shapes.u32(static_cast<uint32_t>(descs->size()));
      for (const TensorDesc& desc : *descs) {
        plan_shapes.u32(dtypeCode(desc.dtype));
        plan_shapes.u32(static_cast<uint32_t>(desc.rank));
        for (int64_t dim : desc.dimVector()) plan_shapes.i64(dim);
      }
    }
  }

  ByteWriter plugins;
  const std::map<std::string, std::string> plugin_ops = pluginOps(*graph_);
  plugins.u64(plugin_ops.size());
  for (const auto& [op, plugin] : plugin_ops) {
    plugins.text(op);
    plugins.text(plugin);
  }

  ByteWriter dim_ranges;
  dim_ranges.u64(options_.dim_ranges.size());
  for (const auto& [symbol, range] : options_.dim_ranges) {
    dim_ranges.text(symbol);
    dim_ranges.i64(range.min);
    dim_ranges.i64(range.max);
  }

  ByteWriter properties;
  writeTextPairs(properties, options_.properties);
  ByteWriter tactics;
  writeTextPairs(tactics, tuner_->usedTactics());

  std::string_view contents[kNumSections];
  contents[kGraph] = graph_bytes;
  contents[kWeightTable] = table.bytes();
  contents[kPlanShapes] = plan_shapes.bytes();
  contents[kPlugins] = plugins.bytes();
  contents[kDimRanges] = dim_ranges.bytes();
  contents[kProperties] = properties.bytes();
  contents[kTactics] = tactics.bytes();
  uint64_t offsets[kNumSections], sizes[kNumSections];
  uint64_t position = kHeaderSize;
  for (Section s : kMetadataSections) {
    offsets[s] = position;
    sizes[s] = contents[s].size();
    position += sizes[s];
  }
  offsets[kWeights] = alignUp(position);
  sizes[kWeights] = weights_size;
  const uint64_t file_size = offsets[kWeights] + weights_size;

  char header[kHeaderSize] = {};
  std::memcpy(header, kMagic, sizeof kMagic);
  const uint32_t version = kOfflineModelFormatVersion, header_size = kHeaderSize;
  std::memcpy(header + 8, &version, 4);
  std::memcpy(header + 12, &header_size, 4);
  std::memcpy(header + 16, &file_size, 8);
  putField(header, kDeviceAt, device_.name(), "device name");
  putField(header, kIsaAt, device_.isa(), "device ISA");
  putField(header, kVersionAt, ESTUARY_VERSION, "version");
  for (int s = 0; s < kNumSections; ++s) {
    std::memcpy(header + kSectionsAt + 16 * s, &offsets[s], 8);
    std::memcpy(header + kSectionsAt + 16 * s + 8, &sizes[s], 8);
  }

  file.write(header, sizeof header);
  for (Section s : kMetadataSections) file.write(contents[s].data(), contents[s].size());
  uint64_t written_end = 0;  // weights already written (shared buffers appear once)
  for (const WeightEntry& entry : weights) {
    if (entry.offset + entry.tensor.byteSize() <= written_end) continue;
    padTo(file, offsets[kWeights] + entry.offset);
    file.write(entry.tensor.data(), entry.tensor.byteSize());
    written_end = entry.offset + entry.tensor.byteSize();
  }
  padTo(file, file_size);
}

std::shared_ptr<CompiledModel> CompiledModel::load(const std::string& path, const BuildOptions& options,
                                                   const Device& device) {
  return loadMapped(mapModelFile(path), path, options, device);
}

std::shared_ptr<CompiledModel> CompiledModel::loadFromMemory(const void* data, size_t size,
                                                             const BuildOptions& options, const Device& device) {
  // Weights are used where they lie, so they need the 64-byte alignment the file gives them
  // and must outlive the model: the bytes are copied once into storage the model owns.
  const char* name = "offline model in memory";
  if (size < sizeof kMagic) raise(name, ": not an Estuary offline model (", size, " bytes, too short for its magic)");
  std::shared_ptr<char> copy(static_cast<char*>(std::aligned_alloc(kAlignment, alignUp(size))), std::free);
  if (!copy) throw std::bad_alloc();
  std::memcpy(copy.get(), data, size);
  MappedFile memory{copy.get(), size, copy};
  return loadMapped(memory, name, options, device);
}

std::shared_ptr<CompiledModel> CompiledModel::loadMapped(const MappedFile& file, const std::string& path,
                                                         const BuildOptions& options, const Device& device) {
  auto started = std::chrono::steady_clock::now();
  Header header = checkHeader(file, path);
  if (header.device != device.name()) {
    raise(path, ": built for the ", header.device, " device, not the ", device.name(), " device; open it with device '",
          header.device, "' (--device ", header.device, ") or rebuild it for ", device.name());
  }
  if (header.isa != device.isa()) {
    raise(path, ": built for ", header.device, "/", header.isa, ", this machine is ", device.name(), "/",
          device.isa(), "; rebuild the model here with 'estuary build'");
  }
  std::unique_ptr<Graph> graph = loadGraphFromBytes(header.sections[kGraph], path);
  checkPlugins(*graph, header.sections[kPlugins], path);
  size_t weight_bytes = 0;
  attachWeights(*graph, file, header, path, weight_bytes);
  std::vector<std::vector<TensorDesc>> plan_shapes = readPlanShapes(header.sections[kPlanShapes], path);

  BuildOptions model_options = options;
  if (model_options.dim_ranges.empty()) model_options.dim_ranges = readDimRanges(header.sections[kDimRanges], path);
  model_options.properties = readProperties(header.sections[kProperties], path);
  std::shared_ptr<CompiledModel> model(new CompiledModel(std::move(graph), model_options, device));
  model->tuner_->addRecorded(readTextPairs(header.sections[kTactics], path, "tactics"));
  for (Node* node : model->graph_->nodes()) ++model->report_.ops_after[node->qualifiedOpType()];
  model->report_.weight_bytes = weight_bytes;
  model->report_.stages.push_back({"load", secondsSince(started)});
  for (const std::vector<TensorDesc>& descs : plan_shapes) {
    try {
      model->planFor(descs);
    } catch (const ResourceLimitError& error) {
      raiseAs<ResourceLimitError>(path, ": ", error.what());
    } catch (const Error& error) {
      raise(path, ": cannot rebuild its plan for ", shapeSignature(descs), ": ", error.what());
    }
  }
  for (const auto& dims : options.prebuild_shapes) {
    if (dims.size() != model->inputs_.size()) {
      raise("a prebuild shape lists ", dims.size(), " inputs, the model has ", model->inputs_.size());
    }
    std::vector<TensorDesc> descs;
    for (size_t i = 0; i < dims.size(); ++i) descs.push_back(TensorDesc::of(model->inputs_[i].type.dtype, dims[i]));
    model->planFor(descs);
  }
  return model;
}

}  // namespace estuary::ge
