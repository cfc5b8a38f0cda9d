#include "tf_messages.h"

#include <string>

namespace estuary::tensorflow_frontend {

std::string tfDataTypeName(int32_t dtype) {
  static const char* const kNames[] = {
      "DT_INVALID", "DT_FLOAT",   "DT_DOUBLE",    "DT_INT32",     "DT_UINT8",   "DT_INT16",   "DT_INT8",
      "DT_STRING",  "DT_COMPLEX64", "DT_INT64",   "DT_BOOL",      "DT_QINT8",   "DT_QUINT8",  "DT_QINT32",
      "DT_BFLOAT16", "DT_QINT16", "DT_QUINT16",   "DT_UINT16",    "DT_COMPLEX128", "DT_HALF", "DT_RESOURCE",
      "DT_VARIANT", "DT_UINT32",  "DT_UINT64"};
  const bool ref = dtype > kRefTypeOffset;
  const int32_t base = ref ? dtype - kRefTypeOffset : dtype;
  if (base >= 0 && static_cast<size_t>(base) < std::size(kNames)) return std::string(kNames[base]) + (ref ? "_REF" : "");
  return "data type " + std::to_string(dtype);
}

}  // namespace estuary::tensorflow_frontend

namespace estuary::proto {

using namespace tensorflow_frontend;

template <>
const MessageTable<ShapeDim>& tableOf<ShapeDim>() {
  static const MessageTable<ShapeDim> table{"TensorShapeProto.Dim", {
      field<&ShapeDim::size>(1, "size"),
      field<&ShapeDim::name>(2, "name"),
  }};
  return table;
}

template <>
const MessageTable<ShapeProto>& tableOf<ShapeProto>() {
  static const MessageTable<ShapeProto> table{"TensorShapeProto", {
      field<&ShapeProto::dims>(2, "dim"),
      field<&ShapeProto::unknown_rank>(3, "unknown_rank"),
  }};
  return table;
}

template <>
const MessageTable<TensorProto>& tableOf<TensorProto>() {
  static const MessageTable<TensorProto> table{"TensorProto", {
      field<&TensorProto::dtype>(1, "dtype"),
      field<&TensorProto::shape>(2, "tensor_shape"),
      field<&TensorProto::tensor_content>(4, "tensor_content"),
      field<&TensorProto::float_val>(5, "float_val"),
      field<&TensorProto::double_val>(6, "double_val"),
      field<&TensorProto::int_val>(7, "int_val"),
      field<&TensorProto::string_val>(8, "string_val"),
      field<&TensorProto::int64_val>(10, "int64_val"),
      field<&TensorProto::bool_val>(11, "bool_val"),
      field<&TensorProto::half_val>(13, "half_val"),
      field<&TensorProto::uint32_val>(16, "uint32_val"),
      field<&TensorProto::uint64_val>(17, "uint64_val"),
  }};
  return table;
}

template <>
const MessageTable<AttrList>& tableOf<AttrList>() {
  static const MessageTable<AttrList> table{"AttrValueProto.ListValue", {
      field<&AttrList::s>(2, "s"),
      field<&AttrList::i>(3, "i"),
      field<&AttrList::f>(4, "f"),
      field<&AttrList::b>(5, "b"),
      field<&AttrList::type>(6, "type"),
      field<&AttrList::shape>(7, "shape"),
      field<&AttrList::tensor>(8, "tensor"),
      field<&AttrList::func>(9, "func"),
  }};
  return table;
}

template <>
const MessageTable<AttrValueProto>& tableOf<AttrValueProto>() {
  static const MessageTable<AttrValueProto> table{"AttrValueProto", {
      field<&AttrValueProto::list>(1, "list"),
      field<&AttrValueProto::s>(2, "s"),
      field<&AttrValueProto::i>(3, "i"),
      field<&AttrValueProto::f>(4, "f"),
      field<&AttrValueProto::b>(5, "b"),
      field<&AttrValueProto::type>(6, "type"),
      field<&AttrValueProto::shape>(7, "shape"),
      field<&AttrValueProto::tensor>(8, "tensor"),
      field<&AttrValueProto::placeholder>(9, "placeholder"),
      field<&AttrValueProto::func>(10, "func"),
  }};
  return table;
}

template <>
const MessageTable<AttrEntry>& tableOf<AttrEntry>() {
  static const MessageTable<AttrEntry> table{"AttrEntry", {
      field<&AttrEntry::key>(1, "key"),
      field<&AttrEntry::value>(2, "value"),
  }};
  return table;
}

template <>
const MessageTable<NameAttrList>& tableOf<NameAttrList>() {
  static const MessageTable<NameAttrList> table{"NameAttrList", {
      field<&NameAttrList::name>(1, "name"),
      field<&NameAttrList::attr>(2, "attr"),
  }};
  return table;
}

template <>
const MessageTable<NodeDef>& tableOf<NodeDef>() {
  static const MessageTable<NodeDef> table{"NodeDef", {
      field<&NodeDef::name>(1, "name"),
      field<&NodeDef::op>(2, "op"),
      field<&NodeDef::input>(3, "input"),
      field<&NodeDef::device>(4, "device"),
      field<&NodeDef::attr>(5, "attr"),
  }};
  return table;
}

template <>
const MessageTable<ArgDef>& tableOf<ArgDef>() {
  static const MessageTable<ArgDef> table{"OpDef.ArgDef", {
      field<&ArgDef::name>(1, "name"),
      field<&ArgDef::type>(3, "type"),
      field<&ArgDef::type_attr>(4, "type_attr"),
      field<&ArgDef::number_attr>(5, "number_attr"),
      field<&ArgDef::type_list_attr>(6, "type_list_attr"),
  }};
  return table;
}

template <>
const MessageTable<OpDef>& tableOf<OpDef>() {
  static const MessageTable<OpDef> table{"OpDef", {
      field<&OpDef::name>(1, "name"),
      field<&OpDef::input_arg>(2, "input_arg"),
      field<&OpDef::output_arg>(3, "output_arg"),
  }};
  return table;
}

template <>
const MessageTable<StringEntry>& tableOf<StringEntry>() {
  static const MessageTable<StringEntry> table{"StringEntry", {
      field<&StringEntry::key>(1, "key"),
      field<&StringEntry::value>(2, "value"),
  }};
  return table;
}

template <>
const MessageTable<FunctionDef>& tableOf<FunctionDef>() {
  static const MessageTable<FunctionDef> table{"FunctionDef", {
      field<&FunctionDef::signature>(1, "signature"),
      field<&FunctionDef::node_def>(3, "node_def"),
      field<&FunctionDef::ret>(4, "ret"),
      field<&FunctionDef::attr>(5, "attr"),
  }};
  return table;
}

template <>
const MessageTable<FunctionDefLibrary>& tableOf<FunctionDefLibrary>() {
  static const MessageTable<FunctionDefLibrary> table{"FunctionDefLibrary", {
      field<&FunctionDefLibrary::function>(1, "function"),
  }};
  return table;
}

template <>
const MessageTable<VersionDef>& tableOf<VersionDef>() {
  static const MessageTable<VersionDef> table{"VersionDef", {
      field<&VersionDef::producer>(1, "producer"),
      field<&VersionDef::min_consumer>(2, "min_consumer"),
  }};
  return table;
}

template <>
const MessageTable<GraphDef>& tableOf<GraphDef>() {
  static const MessageTable<GraphDef> table{"GraphDef", {
      field<&GraphDef::node>(1, "node"),
      field<&GraphDef::library>(2, "library"),
      field<&GraphDef::versions>(4, "versions"),
  }};
  return table;
}

template <>
const MessageTable<TensorInfo>& tableOf<TensorInfo>() {
  static const MessageTable<TensorInfo> table{"TensorInfo", {
      field<&TensorInfo::name>(1, "name"),
      field<&TensorInfo::dtype>(2, "dtype"),
      field<&TensorInfo::shape>(3, "tensor_shape"),
  }};
  return table;
}

template <>
const MessageTable<TensorInfoEntry>& tableOf<TensorInfoEntry>() {
  static const MessageTable<TensorInfoEntry> table{"TensorInfoEntry", {
      field<&TensorInfoEntry::key>(1, "key"),
      field<&TensorInfoEntry::value>(2, "value"),
  }};
  return table;
}

template <>
const MessageTable<SignatureDef>& tableOf<SignatureDef>() {
  static const MessageTable<SignatureDef> table{"SignatureDef", {
      field<&SignatureDef::inputs>(1, "inputs"),
      field<&SignatureDef::outputs>(2, "outputs"),
      field<&SignatureDef::method_name>(3, "method_name"),
  }};
  return table;
}

template <>
const MessageTable<SignatureEntry>& tableOf<SignatureEntry>() {
  static const MessageTable<SignatureEntry> table{"SignatureDefEntry", {
      field<&SignatureEntry::key>(1, "key"),
      field<&SignatureEntry::value>(2, "value"),
  }};
  return table;
}

template <>
const MessageTable<MetaInfoDef>& tableOf<MetaInfoDef>() {
  static const MessageTable<MetaInfoDef> table{"MetaGraphDef.MetaInfoDef", {
      field<&MetaInfoDef::tags>(4, "tags"),
      field<&MetaInfoDef::tensorflow_version>(5, "tensorflow_version"),
  }};
  return table;
}

template <>
const MessageTable<ObjectReference>& tableOf<ObjectReference>() {
  static const MessageTable<ObjectReference> table{"TrackableObject.ObjectReference", {
      field<&ObjectReference::node_id>(1, "node_id"),
      field<&ObjectReference::local_name>(2, "local_name"),
  }};
  return table;
}

template <>
const MessageTable<SavedObject>& tableOf<SavedObject>() {
  static const MessageTable<SavedObject> table{"SavedObject", {
      field<&SavedObject::children>(1, "children"),
  }};
  return table;
}

template <>
const MessageTable<SavedConcreteFunction>& tableOf<SavedConcreteFunction>() {
  static const MessageTable<SavedConcreteFunction> table{"SavedConcreteFunction", {
      field<&SavedConcreteFunction::bound_inputs>(2, "bound_inputs"),
  }};
  return table;
}

template <>
const MessageTable<ConcreteFunctionEntry>& tableOf<ConcreteFunctionEntry>() {
  static const MessageTable<ConcreteFunctionEntry> table{"ConcreteFunctionsEntry", {
      field<&ConcreteFunctionEntry::key>(1, "key"),
      field<&ConcreteFunctionEntry::value>(2, "value"),
  }};
  return table;
}

template <>
const MessageTable<SavedObjectGraph>& tableOf<SavedObjectGraph>() {
  static const MessageTable<SavedObjectGraph> table{"SavedObjectGraph", {
      field<&SavedObjectGraph::nodes>(1, "nodes"),
      field<&SavedObjectGraph::concrete_functions>(2, "concrete_functions"),
  }};
  return table;
}

template <>
const MessageTable<SerializedTensor>& tableOf<SerializedTensor>() {
  static const MessageTable<SerializedTensor> table{"TrackableObject.SerializedTensor", {
      field<&SerializedTensor::name>(1, "name"),
      field<&SerializedTensor::full_name>(2, "full_name"),
      field<&SerializedTensor::checkpoint_key>(3, "checkpoint_key"),
  }};
  return table;
}

template <>
const MessageTable<TrackableObject>& tableOf<TrackableObject>() {
  static const MessageTable<TrackableObject> table{"TrackableObject", {
      field<&TrackableObject::children>(1, "children"),
      field<&TrackableObject::attributes>(2, "attributes"),
  }};
  return table;
}

template <>
const MessageTable<TrackableObjectGraph>& tableOf<TrackableObjectGraph>() {
  static const MessageTable<TrackableObjectGraph> table{"TrackableObjectGraph", {
      field<&TrackableObjectGraph::nodes>(1, "nodes"),
  }};
  return table;
}

template <>
const MessageTable<MetaGraphDef>& tableOf<MetaGraphDef>() {
  static const MessageTable<MetaGraphDef> table{"MetaGraphDef", {
      field<&MetaGraphDef::meta_info_def>(1, "meta_info_def"),
      field<&MetaGraphDef::graph_def>(2, "graph_def"),
      field<&MetaGraphDef::signature_def>(5, "signature_def"),
      field<&MetaGraphDef::object_graph_def>(7, "object_graph_def"),
  }};
  return table;
}

template <>
const MessageTable<SavedModel>& tableOf<SavedModel>() {
  static const MessageTable<SavedModel> table{"SavedModel", {
      field<&SavedModel::saved_model_schema_version>(1, "saved_model_schema_version"),
      field<&SavedModel::meta_graphs>(2, "meta_graphs"),
  }};
  return table;
}

template <>
const MessageTable<BundleHeader>& tableOf<BundleHeader>() {
  static const MessageTable<BundleHeader> table{"BundleHeaderProto", {
      field<&BundleHeader::num_shards>(1, "num_shards"),
      field<&BundleHeader::endianness>(2, "endianness"),
  }};
  return table;
}

template <>
const MessageTable<BundleEntry>& tableOf<BundleEntry>() {
  static const MessageTable<BundleEntry> table{"BundleEntryProto", {
      field<&BundleEntry::dtype>(1, "dtype"),
      field<&BundleEntry::shape>(2, "shape"),
      field<&BundleEntry::shard_id>(3, "shard_id"),
      field<&BundleEntry::offset>(4, "offset"),
      field<&BundleEntry::size>(5, "size"),
      field<&BundleEntry::crc32c, Encoding::Fixed>(6, "crc32c"),
      custom<BundleEntry>(7, "slices", [](BundleEntry& entry, const WireField& wire, const WireReader& reader,
                                          Decoder&, std::string_view name) {
        reader.asBytes(wire, name);
        ++entry.slices;
      }),
  }};
  return table;
}

}  // namespace estuary::proto
