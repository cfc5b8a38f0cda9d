#include "estuary/serialize/serialize.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "estuary/ir.pb.h"
#include "estuary/support/atomic_file.h"
#include "estuary/support/error.h"
#include "text/flat_map.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "tensor bytes are stored little-endian; a big-endian host would need byte swaps");

namespace estuary {
namespace {

namespace pb = estuary::ir::v1;

constexpr char kMagic[8] = {'E', 'S', 'T', 'U', 'A', 'R', 'Y', '\x01'};
constexpr char kSideMagic[8] = {'E', 'S', 'T', 'U', 'A', 'R', 'Y', 'W'};
constexpr size_t kHeaderSize = 24;
constexpr size_t kSideHeaderSize = 64;
constexpr uint64_t kAlignment = 64;
// Deepest subgraph nesting read back; each level is three protobuf message levels.
constexpr int kMaxNesting = 200;

void putU32(char* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(value >> (8 * i));
}
void putU64(char* out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(value >> (8 * i));
}
uint32_t getU32(const char* in) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return value;
}
uint64_t getU64(const char* in) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return value;
}

pb::DataType toProto(DType dtype) {
  switch (dtype) {
    case DType::Undefined: return pb::DATA_TYPE_UNDEFINED;
    case DType::F32: return pb::DATA_TYPE_F32;
    case DType::F16: return pb::DATA_TYPE_F16;
    case DType::BF16: return pb::DATA_TYPE_BF16;
    case DType::F64: return pb::DATA_TYPE_F64;
    case DType::I8: return pb::DATA_TYPE_I8;
    case DType::I16: return pb::DATA_TYPE_I16;
    case DType::I32: return pb::DATA_TYPE_I32;
    case DType::I64: return pb::DATA_TYPE_I64;
    case DType::U8: return pb::DATA_TYPE_U8;
    case DType::Bool: return pb::DATA_TYPE_BOOL;
  }
  return pb::DATA_TYPE_UNDEFINED;
}

std::optional<DType> fromProto(int code) {
  switch (code) {
    case pb::DATA_TYPE_UNDEFINED: return DType::Undefined;
    case pb::DATA_TYPE_F32: return DType::F32;
    case pb::DATA_TYPE_F16: return DType::F16;
    case pb::DATA_TYPE_BF16: return DType::BF16;
    case pb::DATA_TYPE_F64: return DType::F64;
    case pb::DATA_TYPE_I8: return DType::I8;
    case pb::DATA_TYPE_I16: return DType::I16;
    case pb::DATA_TYPE_I32: return DType::I32;
    case pb::DATA_TYPE_I64: return DType::I64;
    case pb::DATA_TYPE_U8: return DType::U8;
    case pb::DATA_TYPE_BOOL: return DType::Bool;
    default: return std::nullopt;
  }
}

std::string baseName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string directoryOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// --- Writing ---------------------------------------------------------------------------

class Writer {
 public:
  Writer(size_t inline_limit, bool allow_side_file,
         google::protobuf::RepeatedPtrField<pb::Type>* types)
      : inline_limit_(inline_limit), allow_side_file_(allow_side_file), types_(types) {}

  struct External {
    const Tensor* tensor;
    uint64_t offset;
  };

  void encodeGraph(const Graph& graph, pb::Graph* out) {
    stack_.push_back(&graph);
    // Number every value first: operands may refer to values defined later.
    uint32_t next = 0;
    for (const Value* input : graph.inputs()) indices_.tryEmplace(input, next++);
    for (const Node* node : graph.nodes()) {
      for (size_t i = 0; i < node->numOutputs(); ++i) indices_.tryEmplace(node->output(i), next++);
    }
    out->set_name(graph.name());
    out->mutable_inputs()->Reserve(static_cast<int>(graph.inputs().size()));
    for (const Value* input : graph.inputs()) encodeValueInfo(*input, out->add_inputs());
    out->mutable_nodes()->Reserve(static_cast<int>(graph.numNodes()));
    for (const Node* node : graph.nodes()) encodeNode(*node, out->add_nodes());
    bool captured = false;
    for (const Value* output : graph.outputs()) {
      uint32_t depth = 0;
      out->add_outputs(reference(output, graph.returnNode(), depth));
      out->add_output_depths(depth);
      captured |= depth != 0;
    }
    if (!captured) out->clear_output_depths();
    for (const Graph::InputUpdate& update : graph.inputUpdates()) {
      pb::InputUpdate* entry = out->add_updates();
      entry->set_input(update.input->index());
      uint32_t depth = 0;
      entry->set_value(reference(update.new_value, graph.returnNode(), depth));
      entry->set_value_depth(depth);
    }
    stack_.pop_back();
  }

  const std::vector<External>& externals() const { return externals_; }
  uint64_t sideFileSize() const { return side_size_; }

 private:
  void encodeValueInfo(const Value& value, pb::ValueInfo* out) {
    if (!value.name().empty()) out->set_name(value.name());
    out->set_type(typeIndex(value.type()));
    if (value.isMutableInput()) out->set_is_mutable(true);
  }

  // The index of `type` in the model's type table, adding it when new. Neighbouring values
  // mostly share a type, so the last one is checked before the table.
  uint32_t typeIndex(const TensorType& type) {
    if (last_type_ && *last_type_ == type) return last_type_index_;
    auto [entry, inserted] = type_indices_.try_emplace(type.str(), static_cast<uint32_t>(types_->size()));
    if (inserted) encodeType(type, types_->Add());
    last_type_ = &type;
    last_type_index_ = entry->second;
    return entry->second;
  }

  static void encodeType(const TensorType& type, pb::Type* out) {
    out->set_dtype(toProto(type.dtype));
    if (!type.shape.isRanked()) {
      out->set_unranked(true);
      return;
    }
    for (const Dim& dim : type.shape.dims()) {
      pb::Dim* entry = out->add_dims();
      if (dim.isStatic()) {
        entry->set_value(dim.value());
      } else if (dim.isSymbolic()) {
        entry->set_symbolic(dim.str());
      }
    }
  }

  // The reference of `value` as seen from `user`'s graph (see ir.proto); sets `depth`.
  uint64_t reference(const Value* value, const Node* user, uint32_t& depth) {
    depth = 0;
    if (!value) return 0;
    for (auto graph = stack_.rbegin(); graph != stack_.rend(); ++graph, ++depth) {
      if (*graph == value->graph()) return uint64_t{*indices_.find(value)} + 1;
    }
    raise("cannot save graph '", stack_.front()->name(), "': ", user->describe(), " uses value '",
          value->name(), "', which is not defined in its graph or an enclosing one");
  }

  void encodeNode(const Node& node, pb::Node* out) {
    out->set_op_type(node.opType());
    if (!node.domain().empty()) out->set_domain(node.domain());
    if (!node.name().empty()) out->set_name(node.name());
    bool captured = false;
    out->mutable_operands()->Reserve(static_cast<int>(node.numInputs()));
    for (size_t i = 0; i < node.numInputs(); ++i) {
      uint32_t depth = 0;
      out->add_operands(reference(node.input(i), &node, depth));
      out->add_operand_depths(depth);
      captured |= depth != 0;
    }
    if (!captured) out->clear_operand_depths();
    for (size_t i = 0; i < node.numOutputs(); ++i) encodeValueInfo(*node.output(i), out->add_outputs());
    for (const auto& [name, attr] : node.attributes()) {
      pb::Attribute* entry = out->add_attributes();
      entry->set_name(name);
      encodeAttribute(node, name, attr, entry);
    }
  }

  void encodeAttribute(const Node& node, const std::string& name, const Attribute& attr,
                       pb::Attribute* out) {
    switch (attr.kind()) {
      case AttrKind::Int: out->set_int_value(attr.asInt()); break;
      case AttrKind::Float: out->set_float_value(attr.asFloat()); break;
      case AttrKind::String: out->set_string_value(attr.asString()); break;
      case AttrKind::Type: out->set_type_value(toProto(attr.asType())); break;
      case AttrKind::Tensor: encodeTensor(node, name, attr.asTensor(), out->mutable_tensor_value()); break;
      case AttrKind::Graph: encodeGraph(*attr.asGraph(), out->mutable_graph_value()); break;
      case AttrKind::Ints: {
        const auto& values = attr.asInts();
        out->mutable_ints_value()->mutable_values()->Add(values.begin(), values.end());
        break;
      }
      case AttrKind::Floats: {
        const auto& values = attr.asFloats();
        out->mutable_floats_value()->mutable_values()->Add(values.begin(), values.end());
        break;
      }
      case AttrKind::Strings: {
        pb::Strings* strings = out->mutable_strings_value();
        for (const std::string& value : attr.asStrings()) strings->add_values(value);
        break;
      }
    }
  }

  void encodeTensor(const Node& node, const std::string& name, const Tensor& tensor, pb::Tensor* out) {
    if (tensor.dtype() == DType::Undefined) {
      raise("cannot save ", node.describe(), ": attribute '", name, "' holds a tensor without an element type");
    }
    out->set_dtype(toProto(tensor.dtype()));
    out->mutable_dims()->Add(tensor.shape().begin(), tensor.shape().end());
    const size_t size = tensor.byteSize();
    if (!allow_side_file_ || size <= inline_limit_) {
      out->set_raw(tensor.data(), size);
      return;
    }
    // One copy of a buffer shared by several attributes (tied weights).
    auto [offset, inserted] = offsets_.try_emplace(tensor.data(), std::pair<uint64_t, size_t>{0, 0});
    if (inserted || offset->second.second != size) {
      const uint64_t start = (side_size_ + kAlignment - 1) / kAlignment * kAlignment;
      offset->second = {start, size};
      externals_.push_back(External{&tensor, start});
      side_size_ = start + size;
    }
    pb::ExternalData* external = out->mutable_external();
    external->set_offset(offset->second.first);
    external->set_size(size);
  }

  size_t inline_limit_;
  bool allow_side_file_;
  google::protobuf::RepeatedPtrField<pb::Type>* types_;
  std::unordered_map<std::string, uint32_t> type_indices_;  // by TensorType::str()
  const TensorType* last_type_ = nullptr;
  uint32_t last_type_index_ = 0;
  std::vector<const Graph*> stack_;  // the graphs being encoded, innermost last
  text::FlatMap<const Value*, uint32_t, text::PointerHash> indices_;
  std::unordered_map<const void*, std::pair<uint64_t, size_t>> offsets_;  // data -> offset, size
  std::vector<External> externals_;
  uint64_t side_size_ = kSideHeaderSize;
};

std::string makeHeader(uint64_t payload_size) {
  std::string bytes(kHeaderSize, '\0');
  std::memcpy(bytes.data(), kMagic, 8);
  putU32(bytes.data() + 8, kGraphFormatVersion);
  putU64(bytes.data() + 16, payload_size);
  return bytes;
}

pb::Model* newModel(google::protobuf::Arena& arena) {
  auto* model = google::protobuf::Arena::CreateMessage<pb::Model>(&arena);
  model->set_format_version(kGraphFormatVersion);
  model->set_producer("estuary " ESTUARY_VERSION);
  return model;
}

size_t checkedPayloadSize(const pb::Model& model, const std::string& what) {
  size_t size = model.ByteSizeLong();
  if (size > static_cast<size_t>(INT_MAX)) {
    raise(what, ": the graph structure alone takes ", size,
          " bytes, more than protobuf's 2 GB limit; store more tensors in the side file");
  }
  return size;
}

void writeSideFile(AtomicFile& file, const Writer& writer) {
  char head[kSideHeaderSize] = {};
  std::memcpy(head, kSideMagic, 8);
  putU32(head + 8, kGraphFormatVersion);
  putU64(head + 16, writer.sideFileSize());
  file.write(head, sizeof head);
  static const char kZeros[kAlignment] = {};
  uint64_t position = kSideHeaderSize;
  for (const Writer::External& external : writer.externals()) {
    file.write(kZeros, external.offset - position);
    file.write(external.tensor->data(), external.tensor->byteSize());
    position = external.offset + external.tensor->byteSize();
  }
  file.finish();
}

// --- Reading ---------------------------------------------------------------------------

// A read-only mapping of the side file; tensors hold it alive through their keep-alive.
struct Mapping {
  const char* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> owner;
};

Mapping mapSideFile(const std::string& path, const std::string& graph_path, uint64_t expected_size) {
  if (expected_size < kSideHeaderSize) {
    raise(graph_path, ": records a side file of ", expected_size, " bytes, smaller than its ",
          kSideHeaderSize, "-byte header (corrupt file)");
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    raise(graph_path, ": cannot open its weights side file '", path, "': ", std::strerror(errno));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    int error = errno;
    ::close(fd);
    raise(path, ": cannot read: ", std::strerror(error));
  }
  const auto size = static_cast<uint64_t>(info.st_size);
  if (size != expected_size) {
    ::close(fd);
    raise(path, ": ", size < expected_size ? "truncated" : "does not belong to this graph", ": ", size,
          " bytes, the graph file '", graph_path, "' expects ", expected_size);
  }
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int error = errno;
  ::close(fd);
  if (base == MAP_FAILED) raise(path, ": cannot map: ", std::strerror(error));
  Mapping mapping;
  mapping.data = static_cast<const char*>(base);
  mapping.size = size;
  mapping.owner = std::shared_ptr<const void>(base, [size](const void* p) {
    ::munmap(const_cast<void*>(p), size);
  });
  if (std::memcmp(mapping.data, kSideMagic, 8) != 0) {
    raise(path, ": not an Estuary weights file (bad magic bytes)");
  }
  uint32_t version = getU32(mapping.data + 8);
  if (version != kGraphFormatVersion) {
    raise(path, ": weights format version ", version, " does not match its graph file (version ",
          kGraphFormatVersion, ")");
  }
  if (getU64(mapping.data + 16) != size) {
    raise(path, ": its header records ", getU64(mapping.data + 16), " bytes but the file has ", size);
  }
  return mapping;
}

class Reader {
 public:
  Reader(std::string_view source, const Mapping* side) : source_(source), side_(side) {}

  std::unique_ptr<Graph> decode(const pb::Model& model) {
    types_.reserve(static_cast<size_t>(model.types_size()));
    for (int i = 0; i < model.types_size(); ++i) {
      type_index_ = i;
      types_.push_back(decodeType(model.types(i)));
    }
    type_index_ = -1;
    auto graph = std::make_unique<Graph>();
    decodeGraph(model.graph(), *graph);
    return graph;
  }

 private:
  struct Frame {
    const Graph* graph = nullptr;
    std::vector<Value*> values;
    const Node* node = nullptr;  // the node being decoded, for messages
    const char* part = nullptr;  // what of it, e.g. "attribute"
    std::string_view part_name;
  };

  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    std::ostringstream where;
    for (const Frame& frame : frames_) {
      where << "graph '" << frame.graph->name() << "'";
      if (frame.node) where << ", " << frame.node->describe();
      if (frame.part) where << ", " << frame.part << " '" << frame.part_name << "'";
      where << ": ";
    }
    if (type_index_ >= 0) where << "type " << type_index_ << ": ";
    raise(source_, ": ", where.str(), parts...);
  }

  void decodeGraph(const pb::Graph& in, Graph& graph) {
    if (frames_.size() >= static_cast<size_t>(kMaxNesting)) fail("subgraphs nested deeper than ", kMaxNesting);
    graph.setName(in.name());
    frames_.emplace_back();
    frames_.back().graph = &graph;
    size_t count = static_cast<size_t>(in.inputs_size());
    for (const pb::Node& node : in.nodes()) count += static_cast<size_t>(node.outputs_size());
    frames_.back().values.reserve(count);
    for (const pb::ValueInfo& input : in.inputs()) {
      Value* value = graph.addInput(input.name(), type(input.type()), input.is_mutable());
      frames_.back().values.push_back(value);
    }
    // Every node and its outputs first, so that references may point forward and
    // subgraphs may capture any value of this graph.
    static const std::vector<Value*> kNoInputs;
    std::vector<Node*> nodes;
    nodes.reserve(static_cast<size_t>(in.nodes_size()));
    for (const pb::Node& in_node : in.nodes()) {
      Node* node = graph.createNode(in_node.op_type(), kNoInputs, static_cast<size_t>(in_node.outputs_size()),
                                    in_node.domain());
      if (!in_node.name().empty()) node->setName(in_node.name());
      for (int i = 0; i < in_node.outputs_size(); ++i) {
        const pb::ValueInfo& info = in_node.outputs(i);
        Value* output = node->output(static_cast<size_t>(i));
        if (!info.name().empty()) output->setName(info.name());
        frames_.back().node = node;
        output->setType(type(info.type()));
        if (info.is_mutable()) fail("output ", i, " is marked mutable; only graph inputs can be");
        frames_.back().values.push_back(output);
      }
      nodes.push_back(node);
    }
    for (size_t k = 0; k < nodes.size(); ++k) {
      const pb::Node& in_node = in.nodes(static_cast<int>(k));
      Node* node = nodes[k];
      frames_.back().node = node;
      checkDepths(in_node.operand_depths_size(), in_node.operands_size(), "operand");
      for (int i = 0; i < in_node.operands_size(); ++i) {
        uint32_t depth = in_node.operand_depths_size() ? in_node.operand_depths(i) : 0;
        node->addInput(resolve(in_node.operands(i), depth, "operand ", i));
      }
      for (const pb::Attribute& attr : in_node.attributes()) {
        frames_.back().part = "attribute";
        frames_.back().part_name = attr.name();
        if (node->hasAttr(attr.name())) fail("appears twice");
        node->setAttr(attr.name(), decodeAttribute(attr));
        frames_.back().part = nullptr;
      }
    }
    frames_.back().node = graph.returnNode();
    checkDepths(in.output_depths_size(), in.outputs_size(), "output");
    for (int i = 0; i < in.outputs_size(); ++i) {
      uint32_t depth = in.output_depths_size() ? in.output_depths(i) : 0;
      graph.addOutput(resolve(in.outputs(i), depth, "output ", i));
    }
    for (const pb::InputUpdate& update : in.updates()) {
      if (update.input() >= graph.inputs().size()) {
        fail("update of input ", update.input(), ", but the graph has ", graph.inputs().size(), " inputs");
      }
      Value* input = graph.input(update.input());
      if (!input->isMutableInput()) fail("update of input '", input->name(), "', which is not mutable");
      if (graph.inputUpdate(input)) fail("input '", input->name(), "' is updated twice");
      Value* value = resolve(update.value(), update.value_depth(), "update of input ", update.input());
      if (!value) fail("update of input '", input->name(), "' has no value");
      graph.setInputUpdate(input, value);
    }
    frames_.pop_back();
  }

  void checkDepths(int depths, int references, const char* what) const {
    if (depths != 0 && depths != references) {
      fail(depths, " ", what, " depths for ", references, " ", what, "s");
    }
  }

  template <typename... What>
  Value* resolve(uint64_t reference, uint32_t depth, const What&... what) const {
    if (reference == 0) return nullptr;
    if (depth >= frames_.size()) {
      fail(what..., " refers to a graph ", depth, " levels up, but this graph is nested only ",
           frames_.size() - 1, " deep");
    }
    const std::vector<Value*>& values = frames_[frames_.size() - 1 - depth].values;
    if (reference - 1 >= values.size()) {
      fail(what..., " refers to value ", reference - 1, " of a graph that defines ", values.size(), " values");
    }
    return values[reference - 1];
  }

  const TensorType& type(uint32_t index) const {
    if (index >= types_.size()) fail("type ", index, " of a type table with ", types_.size(), " entries");
    return types_[index];
  }

  DType decodeDType(int code) const {
    std::optional<DType> dtype = fromProto(code);
    if (!dtype) fail("unknown element type code ", code);
    return *dtype;
  }

  TensorType decodeType(const pb::Type& in) const {
    DType dtype = decodeDType(in.dtype());
    if (in.unranked()) {
      if (in.dims_size()) fail("an unranked type has ", in.dims_size(), " dims");
      return TensorType(dtype, Shape::unranked());
    }
    std::vector<Dim> dims;
    dims.reserve(static_cast<size_t>(in.dims_size()));
    for (const pb::Dim& dim : in.dims()) {
      switch (dim.kind_case()) {
        case pb::Dim::kValue:
          if (dim.value() < 0) fail("negative dimension ", dim.value());
          dims.emplace_back(dim.value());
          break;
        case pb::Dim::kSymbolic: {
          std::optional<Dim> parsed = Dim::parse(dim.symbolic());
          if (!parsed) fail("bad symbolic dimension '", dim.symbolic(), "'");
          dims.push_back(std::move(*parsed));
          break;
        }
        case pb::Dim::KIND_NOT_SET:
          dims.emplace_back();
          break;
      }
    }
    return TensorType(dtype, Shape(std::move(dims)));
  }

  Attribute decodeAttribute(const pb::Attribute& in) {
    switch (in.value_case()) {
      case pb::Attribute::kIntValue: return Attribute(in.int_value());
      case pb::Attribute::kFloatValue: return Attribute(in.float_value());
      case pb::Attribute::kStringValue: return Attribute(in.string_value());
      case pb::Attribute::kTypeValue: return Attribute(decodeDType(in.type_value()));
      case pb::Attribute::kTensorValue: return Attribute(decodeTensor(in.tensor_value()));
      case pb::Attribute::kGraphValue: {
        auto subgraph = std::make_shared<Graph>();
        decodeGraph(in.graph_value(), *subgraph);
        return Attribute(std::move(subgraph));
      }
      case pb::Attribute::kIntsValue: {
        const auto& values = in.ints_value().values();
        return Attribute(std::vector<int64_t>(values.begin(), values.end()));
      }
      case pb::Attribute::kFloatsValue: {
        const auto& values = in.floats_value().values();
        return Attribute(std::vector<double>(values.begin(), values.end()));
      }
      case pb::Attribute::kStringsValue: {
        const auto& values = in.strings_value().values();
        return Attribute(std::vector<std::string>(values.begin(), values.end()));
      }
      case pb::Attribute::VALUE_NOT_SET: break;
    }
    fail("has no value (written by a newer Estuary, or corrupt)");
  }

  Tensor decodeTensor(const pb::Tensor& in) const {
    DType dtype = decodeDType(in.dtype());
    if (dtype == DType::Undefined) fail("a tensor without an element type");
    std::vector<int64_t> shape(in.dims().begin(), in.dims().end());
    uint64_t count = 1;
    for (int64_t dim : shape) {
      if (dim < 0) fail("a tensor with negative dimension ", dim);
      if (dim != 0 && count > std::numeric_limits<uint64_t>::max() / 8 / static_cast<uint64_t>(dim)) {
        fail("a tensor with too many elements");
      }
      count *= static_cast<uint64_t>(dim);
    }
    const uint64_t size = count * dtypeSize(dtype);
    const std::string type_text = TensorType(dtype, Shape::ofStatic(shape)).str();
    switch (in.data_case()) {
      case pb::Tensor::kRaw:
        if (in.raw().size() != size) {
          fail("tensor<", type_text, "> needs ", size, " bytes, the file has ", in.raw().size());
        }
        return Tensor::copyOf(dtype, std::move(shape), in.raw().data());
      case pb::Tensor::kExternal: {
        const pb::ExternalData& external = in.external();
        if (!side_) fail("tensor<", type_text, "> is stored in a side file, but there is none");
        if (external.size() != size) {
          fail("tensor<", type_text, "> needs ", size, " bytes, the side file entry has ", external.size());
        }
        if (external.offset() % kAlignment != 0 || external.offset() < kSideHeaderSize) {
          fail("tensor<", type_text, "> has data at offset ", external.offset(),
               ", which is not a 64-byte aligned offset past the side file header");
        }
        if (external.offset() > side_->size || size > side_->size - external.offset()) {
          fail("tensor<", type_text, "> has data at offset ", external.offset(), " of ", size,
               " bytes, beyond the end of the side file (", side_->size, " bytes)");
        }
        return Tensor::wrap(dtype, std::move(shape), side_->data + external.offset(), side_->owner);
      }
      case pb::Tensor::DATA_NOT_SET:
        if (size == 0) return Tensor::allocate(dtype, std::move(shape));
        break;
    }
    fail("tensor<", type_text, "> has no data");
  }

  std::string_view source_;
  const Mapping* side_;
  std::vector<Frame> frames_;
  std::vector<TensorType> types_;
  int type_index_ = -1;  // the type table entry being decoded, for messages
};

struct Header {
  uint32_t version;
  uint64_t payload_size;  // length of the Model message after the header
};

// Checks the header at the start of `bytes` (a whole graph file or its first bytes).
Header checkHeader(std::string_view bytes, std::string_view source, uint64_t total_size) {
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kSideMagic, 8) == 0) {
    raise(source, ": this is a weights side file; load the graph file it belongs to");
  }
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    const bool looks_like_text = bytes.substr(0, 5) == "graph" || bytes.substr(0, 1) == "#";
    raise(source, ": not an Estuary graph file (bad magic bytes)",
          looks_like_text ? "; it looks like the text form: use parseGraphFile()" : "");
  }
  if (total_size < kHeaderSize) {
    raise(source, ": truncated: ", total_size, " bytes, shorter than the ", kHeaderSize, "-byte header");
  }
  const uint32_t version = getU32(bytes.data() + 8);
  if (version == 0) raise(source, ": format version 0 is invalid (corrupt header)");
  if (version > kGraphFormatVersion) {
    raise(source, ": format version ", version, " is newer than this build of Estuary reads (",
          kGraphFormatVersion, "); upgrade Estuary to load it");
  }
  const uint64_t payload = getU64(bytes.data() + 16);
  if (payload > total_size - kHeaderSize) {
    raise(source, ": truncated: the header announces ", payload, " bytes of graph data, ",
          total_size - kHeaderSize, " follow");
  }
  if (payload < total_size - kHeaderSize) {
    raise(source, ": ", total_size - kHeaderSize - payload, " unexpected bytes after the graph data");
  }
  if (payload > static_cast<uint64_t>(INT_MAX)) {
    raise(source, ": graph data of ", payload, " bytes exceeds protobuf's 2 GB limit");
  }
  return Header{version, payload};
}

pb::Model* parseModel(std::string_view payload, uint32_t version, std::string_view source,
                      google::protobuf::Arena& arena) {
  auto* model = google::protobuf::Arena::CreateMessage<pb::Model>(&arena);
  google::protobuf::io::CodedInputStream stream(reinterpret_cast<const uint8_t*>(payload.data()),
                                                static_cast<int>(payload.size()));
  stream.SetRecursionLimit(3 * kMaxNesting + 8);
  if (!model->ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage()) {
    raise(source, ": corrupt graph data (not a valid protobuf message, or subgraphs nested more than ",
          kMaxNesting, " deep)");
  }
  if (model->format_version() != version) {
    raise(source, ": the header says format version ", version, " but the graph data says ",
          model->format_version(), " (corrupt file)");
  }
  if (!model->has_graph()) raise(source, ": the file holds no graph");
  return model;
}

}  // namespace

void saveGraph(const Graph& graph, const std::string& path, const SaveOptions& options) {
  google::protobuf::Arena arena;
  pb::Model* model = newModel(arena);
  Writer writer(options.inline_tensor_limit, true, model->mutable_types());
  writer.encodeGraph(graph, model->mutable_graph());
  std::optional<AtomicFile> side_file;
  if (!writer.externals().empty()) {
    const std::string side_path = path + ".weights";
    model->mutable_side_file()->set_file_name(baseName(side_path));
    model->mutable_side_file()->set_size(writer.sideFileSize());
    side_file.emplace(side_path);
    writeSideFile(*side_file, writer);
  }
  const size_t payload_size = checkedPayloadSize(*model, path);
  std::string bytes = makeHeader(payload_size);
  bytes.resize(kHeaderSize + payload_size);
  model->SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(bytes.data() + kHeaderSize));
  // Saving over the file a graph was loaded from is safe: its tensors still map the old file.
  AtomicFile file(path);
  file.write(bytes.data(), bytes.size());
  file.finish();
  // Both files are complete before either replaces an older version.
  if (side_file) side_file->commit();
  file.commit();
}

std::unique_ptr<Graph> loadGraph(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) raise(path, ": cannot open: ", std::strerror(errno));
  std::unique_ptr<FILE, int (*)(FILE*)> closer(file, std::fclose);
  struct stat info {};
  if (::fstat(::fileno(file), &info) != 0) raise(path, ": cannot read: ", std::strerror(errno));
  const auto total_size = static_cast<uint64_t>(info.st_size);
  std::string head(std::min<uint64_t>(total_size, kHeaderSize), '\0');
  if (std::fread(head.data(), 1, head.size(), file) != head.size()) {
    raise(path, ": cannot read: ", std::strerror(errno));
  }
  const Header header = checkHeader(head, path, total_size);
  std::string payload(header.payload_size, '\0');
  if (std::fread(payload.data(), 1, payload.size(), file) != payload.size()) {
    raise(path, ": cannot read: ", std::strerror(errno));
  }
  closer.reset();

  google::protobuf::Arena arena;
  pb::Model* model = parseModel(payload, header.version, path, arena);
  std::optional<Mapping> side;
  if (model->has_side_file()) {
    const std::string& name = model->side_file().file_name();
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
      raise(path, ": side file name '", name, "' is not a plain file name (corrupt file)");
    }
    side = mapSideFile(directoryOf(path) + name, path, model->side_file().size());
  }
  return Reader(path, side ? &*side : nullptr).decode(*model);
}

std::string saveGraphToBytes(const Graph& graph) {
  google::protobuf::Arena arena;
  pb::Model* model = newModel(arena);
  Writer writer(0, false, model->mutable_types());
  writer.encodeGraph(graph, model->mutable_graph());
  const size_t payload_size = checkedPayloadSize(*model, "saveGraphToBytes");
  std::string bytes = makeHeader(payload_size);
  bytes.resize(kHeaderSize + payload_size);
  model->SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(bytes.data() + kHeaderSize));
  return bytes;
}

std::unique_ptr<Graph> loadGraphFromBytes(std::string_view bytes, std::string_view source_name) {
  const Header header = checkHeader(bytes, source_name, bytes.size());
  google::protobuf::Arena arena;
  pb::Model* model =
      parseModel(bytes.substr(kHeaderSize, header.payload_size), header.version, source_name, arena);
  if (model->has_side_file()) {
    raise(source_name, ": the graph keeps tensors in side file '", model->side_file().file_name(),
          "'; load it from its file with loadGraph()");
  }
  return Reader(source_name, nullptr).decode(*model);
}

}  // namespace estuary
