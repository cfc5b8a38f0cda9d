#pragma once
// TensorFlow's messages as plain structs, decoded by the frontend layer's field tables
// (estuary/frontend/protobuf.h): strings and byte fields are views of the file's bytes,
// which must outlive them. Field numbers and meanings follow TensorFlow 2.21's
// tensorflow/core/framework/{graph,node_def,attr_value,tensor,tensor_shape,function,op_def,
// types}.proto and tensorflow/core/protobuf/{saved_model,meta_graph,tensor_bundle}.proto;
// tf_messages.cpp holds the tables. Nothing here registers TensorFlow's message names, so
// TensorFlow may be imported into the same process.
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "estuary/frontend/protobuf.h"

namespace estuary::tensorflow_frontend {

// tensorflow.DataType values the frontend reads; *_REF types are these plus 100.
enum TfDataType : int32_t {
  kDtInvalid = 0, kDtFloat = 1, kDtDouble = 2, kDtInt32 = 3, kDtUint8 = 4, kDtInt16 = 5, kDtInt8 = 6,
  kDtString = 7, kDtComplex64 = 8, kDtInt64 = 9, kDtBool = 10, kDtBfloat16 = 14, kDtUint16 = 17,
  kDtComplex128 = 18, kDtHalf = 19, kDtResource = 20, kDtVariant = 21, kDtUint32 = 22, kDtUint64 = 23,
};
inline constexpr int32_t kRefTypeOffset = 100;
// "DT_FLOAT", ... or the number for types past the list.
std::string tfDataTypeName(int32_t dtype);

struct ShapeDim {
  int64_t size = 0;  // -1: unknown
  std::string_view name;
};

struct ShapeProto {
  std::vector<ShapeDim> dims;
  bool unknown_rank = false;
};

struct TensorProto {
  int32_t dtype = kDtInvalid;
  std::optional<ShapeProto> shape;
  std::string_view tensor_content;
  std::vector<float> float_val;
  std::vector<double> double_val;
  std::vector<int32_t> int_val;  // also int8/16, uint8/16 and bool-as-int
  std::vector<std::string_view> string_val;
  std::vector<int64_t> int64_val;
  std::vector<bool> bool_val;
  std::vector<int32_t> half_val;  // half and bfloat16: the 16-bit pattern in each int32
  std::vector<uint32_t> uint32_val;
  std::vector<uint64_t> uint64_val;
};

struct NameAttrList;

struct AttrList {
  std::vector<std::string_view> s;
  std::vector<int64_t> i;
  std::vector<float> f;
  std::vector<bool> b;
  std::vector<int32_t> type;
  std::vector<ShapeProto> shape;
  std::vector<TensorProto> tensor;
  std::vector<NameAttrList> func;
};

// One member of AttrValueProto's oneof is set; which one is the first present field below.
struct AttrValueProto {
  std::shared_ptr<AttrList> list;
  std::optional<std::string_view> s;
  std::optional<int64_t> i;
  std::optional<float> f;
  std::optional<bool> b;
  std::optional<int32_t> type;
  std::optional<ShapeProto> shape;
  std::shared_ptr<TensorProto> tensor;
  std::optional<std::string_view> placeholder;
  std::shared_ptr<NameAttrList> func;
};

// An entry of a map<string, AttrValueProto>.
struct AttrEntry {
  std::string_view key;
  AttrValueProto value;
};

struct NameAttrList {
  std::string_view name;
  std::vector<AttrEntry> attr;
};

struct NodeDef {
  std::string_view name;
  std::string_view op;
  std::vector<std::string_view> input;  // "node", "node:1", "^control"; in functions "node:out:0"
  std::string_view device;
  std::vector<AttrEntry> attr;
};

struct ArgDef {
  std::string_view name;
  int32_t type = kDtInvalid;
  std::string_view type_attr;
  std::string_view number_attr;
  std::string_view type_list_attr;
};

struct OpDef {
  std::string_view name;
  std::vector<ArgDef> input_arg;
  std::vector<ArgDef> output_arg;
};

// An entry of a map<string, string>.
struct StringEntry {
  std::string_view key;
  std::string_view value;
};

struct FunctionDef {
  OpDef signature;
  std::vector<NodeDef> node_def;
  std::vector<StringEntry> ret;  // output arg name -> "node:out_arg:index"
  std::vector<AttrEntry> attr;
};

struct FunctionDefLibrary {
  std::vector<FunctionDef> function;
};

struct VersionDef {
  int32_t producer = 0;
  int32_t min_consumer = 0;
};

struct GraphDef {
  std::vector<NodeDef> node;
  std::optional<FunctionDefLibrary> library;
  std::optional<VersionDef> versions;
};

struct TensorInfo {
  std::string_view name;  // "serving_default_x:0"
  int32_t dtype = kDtInvalid;
  std::optional<ShapeProto> shape;
};

struct TensorInfoEntry {
  std::string_view key;
  TensorInfo value;
};

struct SignatureDef {
  std::vector<TensorInfoEntry> inputs;
  std::vector<TensorInfoEntry> outputs;
  std::string_view method_name;
};

struct SignatureEntry {
  std::string_view key;
  SignatureDef value;
};

struct MetaInfoDef {
  std::vector<std::string_view> tags;
  std::string_view tensorflow_version;
};

// The object graphs of TF 2: the SavedModel's (which saved object each concrete
// function's captured inputs are) and the checkpoint's (which key holds each object's
// value). Only what ties a captured variable to its checkpoint key is read.
struct ObjectReference {
  int32_t node_id = 0;
  std::string_view local_name;
};

struct SavedObject {
  std::vector<ObjectReference> children;
};

struct SavedConcreteFunction {
  std::vector<int32_t> bound_inputs;  // saved object ids, after the caller's inputs
};

struct ConcreteFunctionEntry {
  std::string_view key;  // the library function's name
  SavedConcreteFunction value;
};

struct SavedObjectGraph {
  std::vector<SavedObject> nodes;  // node 0 is the root
  std::vector<ConcreteFunctionEntry> concrete_functions;
};

struct SerializedTensor {
  std::string_view name;  // "VARIABLE_VALUE"
  std::string_view full_name;
  std::string_view checkpoint_key;
};

struct TrackableObject {
  std::vector<ObjectReference> children;
  std::vector<SerializedTensor> attributes;
};

struct TrackableObjectGraph {
  std::vector<TrackableObject> nodes;  // node 0 is the root
};

struct MetaGraphDef {
  std::optional<MetaInfoDef> meta_info_def;
  std::optional<GraphDef> graph_def;
  std::vector<SignatureEntry> signature_def;
  std::optional<SavedObjectGraph> object_graph_def;
};

struct SavedModel {
  int64_t saved_model_schema_version = 0;
  std::vector<MetaGraphDef> meta_graphs;
};

// The tensor bundle (variables/variables.index): the header under key "", then an entry
// per tensor.
struct BundleHeader {
  int32_t num_shards = 0;
  int32_t endianness = 0;  // 0: little endian
};

struct BundleEntry {
  int32_t dtype = kDtInvalid;
  std::optional<ShapeProto> shape;
  int32_t shard_id = 0;
  int64_t offset = 0;
  int64_t size = 0;
  uint32_t crc32c = 0;    // masked CRC32C of the tensor's bytes
  size_t slices = 0;      // partitioned variables; not read
};

}  // namespace estuary::tensorflow_frontend
