#include "onnx_model.h"

#include <cstring>
#include <string>

#include "estuary/support/error.h"

namespace estuary::onnx_frontend {

std::string onnxDataTypeName(int32_t data_type) {
  static const char* const kNames[] = {"UNDEFINED", "FLOAT",  "UINT8",  "INT8",   "UINT16",    "INT16",
                                       "INT32",     "INT64",  "STRING", "BOOL",   "FLOAT16",   "DOUBLE",
                                       "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
                                       "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
                                       "UINT4", "INT4", "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2",
                                       "FLOAT6E2M3", "FLOAT6E3M2"};
  if (data_type >= 0 && static_cast<size_t>(data_type) < std::size(kNames)) return kNames[data_type];
  return "data type " + std::to_string(data_type);
}

std::string_view onnxAttrTypeName(OnnxAttrType type) {
  switch (type) {
    case OnnxAttrType::Undefined: return "UNDEFINED";
    case OnnxAttrType::Float: return "FLOAT";
    case OnnxAttrType::Int: return "INT";
    case OnnxAttrType::String: return "STRING";
    case OnnxAttrType::Tensor: return "TENSOR";
    case OnnxAttrType::Graph: return "GRAPH";
    case OnnxAttrType::Floats: return "FLOATS";
    case OnnxAttrType::Ints: return "INTS";
    case OnnxAttrType::Strings: return "STRINGS";
    case OnnxAttrType::Tensors: return "TENSORS";
    case OnnxAttrType::Graphs: return "GRAPHS";
    case OnnxAttrType::SparseTensor: return "SPARSE_TENSOR";
    case OnnxAttrType::SparseTensors: return "SPARSE_TENSORS";
    case OnnxAttrType::TypeProto: return "TYPE_PROTO";
    case OnnxAttrType::TypeProtos: return "TYPE_PROTOS";
  }
  return "INVALID";
}

namespace {

// Subgraphs nest (If inside Loop inside If ...); a crafted file could nest them deep enough
// to exhaust the stack, so the decoder stops far beyond what real models use.
constexpr int kMaxNesting = 64;

float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

double doubleFromBits(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

class Decoder {
 public:
  explicit Decoder(const WireSource& source) : source_(source) {}

  ModelProto model(std::string_view bytes) {
    ModelProto model;
    WireReader reader(source_, bytes, "ModelProto");
    WireField field;
    while (reader.next(field)) {
      switch (field.number) {
        case 1: model.ir_version = reader.asInt64(field, "ir_version"); break;
        case 2: model.producer_name = reader.asBytes(field, "producer_name"); break;
        case 3: model.producer_version = reader.asBytes(field, "producer_version"); break;
        case 4: model.domain = reader.asBytes(field, "domain"); break;
        case 5: model.model_version = reader.asInt64(field, "model_version"); break;
        case 6: model.doc_string = reader.asBytes(field, "doc_string"); break;
        case 7:
          model.graph = graph(reader.asBytes(field, "graph"), 0);
          model.has_graph = true;
          break;
        case 8: model.opset_imports.push_back(opsetId(reader.asBytes(field, "opset_import"))); break;
        case 14: model.metadata.push_back(stringEntry(reader.asBytes(field, "metadata_props"))); break;
        case 25: model.functions.push_back(function(reader.asBytes(field, "functions"))); break;
        default: break;  // training_info, configuration: nothing the frontend uses
      }
    }
    return model;
  }

 private:
  GraphProto graph(std::string_view bytes, int depth) {
    if (depth > kMaxNesting) {
      WireReader(source_, bytes, "GraphProto").fail(bytes.data(), "subgraphs nest deeper than " +
                                                                       std::to_string(kMaxNesting) + " levels");
    }
    GraphProto graph;
    WireReader reader(source_, bytes, "GraphProto");
    WireField field;
    while (reader.next(field)) {
      switch (field.number) {
        case 1: graph.nodes.push_back(node(reader.asBytes(field, "node"), depth)); break;
        case 2: graph.name = reader.asBytes(field, "name"); break;
        case 5: graph.initializers.push_back(tensor(reader.asBytes(field, "initializer"))); break;
        case 11: graph.inputs.push_back(valueInfo(reader.asBytes(field, "input"))); break;
        case 12: graph.outputs.push_back(valueInfo(reader.asBytes(field, "output"))); break;
        case 13: graph.value_infos.push_back(valueInfo(reader.asBytes(field, "value_info"))); break;
        case 15:
          graph.sparse_initializers.push_back(sparseTensor(reader.asBytes(field, "sparse_initializer")));
          break;
        default: break;  // doc_string, quantization_annotation, metadata_props
      }
    }
    return graph;
  }

  NodeProto node(std::string_view bytes, int depth) {
    NodeProto node;
    WireReader reader(source_, bytes, "NodeProto");
    WireField field;
    while (reader.next(field)) {
      switch (field.number) {
        case 1: node.inputs.push_back(reader.asBytes(field, "input")); break;
        case 2: node.outputs.push_back(reader.asBytes(field, "output")); break;
        case 3: node.name = reader.asBytes(field, "name"); break;
        case 4: node.op_type = reader.asBytes(field, "op_type"); break;
        case 5: node.attributes.push_back(attribute(reader.asBytes(field, "attribute"), depth)); break;
        case 7: node.domain = reader.asBytes(field, "domain"); break;
        default: break;  // doc_string, overload, metadata_props, device_configurations
      }
    }
    return node;
  }

  AttributeProto attribute(std::string_view bytes, int depth) {
    AttributeProto attr;
    WireReader reader(source_, bytes, "AttributeProto");
    WireField field;
    while (reader.next(field)) {
      switch (field.number) {
        case 1: attr.name = reader.asBytes(field, "name"); break;
        case 2: attr.f = reader.asFloat(field, "f"); break;
        case 3: attr.i = reader.asInt64(field, "i"); break;
        case 4: attr.s = reader.asBytes(field, "s"); break;
        case 5: attr.t = tensor(reader.asBytes(field, "t")); break;
        case 6: attr.g = std::make_shared<GraphProto>(graph(reader.asBytes(field, "g"), depth + 1)); break;
        case 7:
          reader.forEachFixed32(field, "floats", [&](uint32_t bits) { attr.floats.push_back(floatFromBits(bits)); });
          break;
        case 8:
          reader.forEachVarint(field, "ints", [&](uint64_t v) { attr.ints.push_back(static_cast<int64_t>(v)); });
          break;
        case 9: attr.strings.push_back(reader.asBytes(field, "strings")); break;
        case 10: attr.tensors.push_back(tensor(reader.asBytes(field, "tensors"))); break;
        case 11:
          attr.graphs.push_back(std::make_shared<GraphProto>(graph(reader.asBytes(field, "graphs"), depth + 1)));
          break;
        case 20: attr.type = static_cast<OnnxAttrType>(reader.asInt32(field, "type")); break;
        case 21: attr.ref_attr_name = reader.asBytes(field, "ref_attr_name"); break;
        case 22: attr.sparse_tensor = sparseTensor(reader.asBytes(field, "sparse_tensor")); break;
        default: break;  // doc_string, tp, sparse_tensors, type_protos
      }
    }
    return attr;
  }

  TensorProto tensor(std::string_view bytes) {
    TensorProto tensor;
    WireReader reader(source_, bytes, "TensorProto");
    WireField field;
    while (reader.next(field)) {
      switch (field.number) {
        case 1:
          reader.forEachVarint(field, "dims", [&](uint64_t v) { tensor.dims.push_back(static_cast<int64_t>(v)); });
          break;
        case 2: tensor.data_type = reader.asInt32(field, "data_type"); break;
        case 3: tensor.has_segment = true; break;
        case 4:
          reader.forEachFixed32(field, "float_data",
                                [&](uint32_t bits) { tensor.float_data.push_back(floatFromBits(bits)); });
          break;
        case 5:
          reader.forEachVarint(field, "int32_data", [&](uint64_t v) {
            tensor.int32_data.push_back(static_cast<int32_t>(static_cast<uint32_t>(v)));
          });
          break;
        case 6: tensor.string_data.push_back(reader.asBytes(field, "string_data")); break;
        case 7:
          reader.forEachVarint(field, "int64_data",
                               [&](uint64_t v) { tensor.int64_data.push_back(static_cast<int64_t>(v)); });
          break;
        case 8: tensor.name = reader.asBytes(field, "name"); break;
        case 9:
          tensor.raw_data = reader.asBytes(field, "raw_data");
          tensor.has_raw_data = true;
          break;
        case 10:
          reader.forEachFixed64(field, "double_data",
                                [&](uint64_t bits) { tensor.double_data.push_back(doubleFromBits(bits)); });
          break;
        case 11:
          reader.forEachVarint(field, "uint64_data", [&](uint64_t v) { tensor.uint64_data.push_back(v); });
          break;
        case 13: tensor.external_data.push_back(stringEntry(reader.asBytes(field, "external_data"))); break;
        case 14: tensor.external = reader.asInt32(field, "data_location") == 1; break;
        default: break;  // doc_string, metadata_props
      }
    }
    return tensor;
  }

  SparseTensorProto sparseTensor(std::string_view bytes) {
    SparseTensorProto sparse;
    WireReader reader(source_, bytes, "SparseTensorProto");
    WireField field;
    while (reader.next(field)) {
      switch (field.number) {
        case 1: sparse.values = tensor(reader.asBytes(field, "values")); break;
        case 2: sparse.indices = tensor(reader.asBytes(field, "indices")); break;
        case 3:
          reader.forEachVarint(field, "dims", [&](uint64_t v) { sparse.dims.push_back(static_cast<int64_t>(v)); });
          break;
        default: break;
      }
    }
    return sparse;
  }

  ValueInfoProto valueInfo(std::string_view bytes) {
    ValueInfoProto info;
    WireReader reader(source_, bytes, "ValueInfoProto");
    WireField field;
    while (reader.next(field)) {
      if (field.number == 1) info.name = reader.asBytes(field, "name");
      if (field.number == 2) {
        info.type = type(reader.asBytes(field, "type"));
        info.has_type = true;
      }
    }
    return info;
  }

  TypeProto type(std::string_view bytes) {
    TypeProto type;
    WireReader reader(source_, bytes, "TypeProto");
    WireField field;
    while (reader.next(field)) {
      switch (field.number) {
        case 1: type.kind = "tensor"; tensorType(reader.asBytes(field, "tensor_type"), type); break;
        case 4: type.kind = "sequence"; reader.asBytes(field, "sequence_type"); break;
        case 5: type.kind = "map"; reader.asBytes(field, "map_type"); break;
        case 7: type.kind = "opaque"; reader.asBytes(field, "opaque_type"); break;
        case 8: type.kind = "sparse_tensor"; tensorType(reader.asBytes(field, "sparse_tensor_type"), type); break;
        case 9: type.kind = "optional"; reader.asBytes(field, "optional_type"); break;
        default: break;  // denotation
      }
    }
    return type;
  }

  void tensorType(std::string_view bytes, TypeProto& type) {
    WireReader reader(source_, bytes, "TypeProto.Tensor");
    WireField field;
    while (reader.next(field)) {
      if (field.number == 1) type.elem_type = reader.asInt32(field, "elem_type");
      if (field.number == 2) {
        type.has_shape = true;
        WireReader shape(source_, reader.asBytes(field, "shape"), "TensorShapeProto");
        WireField dim_field;
        while (shape.next(dim_field)) {
          if (dim_field.number == 1) type.dims.push_back(dim(shape.asBytes(dim_field, "dim")));
        }
      }
    }
  }

  DimProto dim(std::string_view bytes) {
    DimProto dim;
    WireReader reader(source_, bytes, "TensorShapeProto.Dimension");
    WireField field;
    while (reader.next(field)) {
      if (field.number == 1) dim.value = reader.asInt64(field, "dim_value");
      if (field.number == 2) dim.param = reader.asBytes(field, "dim_param");
    }
    return dim;
  }

  OperatorSetId opsetId(std::string_view bytes) {
    OperatorSetId id;
    WireReader reader(source_, bytes, "OperatorSetIdProto");
    WireField field;
    while (reader.next(field)) {
      if (field.number == 1) id.domain = reader.asBytes(field, "domain");
      if (field.number == 2) id.version = reader.asInt64(field, "version");
    }
    return id;
  }

  StringEntry stringEntry(std::string_view bytes) {
    StringEntry entry;
    WireReader reader(source_, bytes, "StringStringEntryProto");
    WireField field;
    while (reader.next(field)) {
      if (field.number == 1) entry.key = reader.asBytes(field, "key");
      if (field.number == 2) entry.value = reader.asBytes(field, "value");
    }
    return entry;
  }

  FunctionProto function(std::string_view bytes) {
    FunctionProto function;
    WireReader reader(source_, bytes, "FunctionProto");
    WireField field;
    while (reader.next(field)) {
      switch (field.number) {
        case 1: function.name = reader.asBytes(field, "name"); break;
        case 4: function.inputs.push_back(reader.asBytes(field, "input")); break;
        case 5: function.outputs.push_back(reader.asBytes(field, "output")); break;
        case 6: function.attributes.push_back(reader.asBytes(field, "attribute")); break;
        case 7: function.nodes.push_back(node(reader.asBytes(field, "node"), 1)); break;
        case 9: function.opset_imports.push_back(opsetId(reader.asBytes(field, "opset_import"))); break;
        case 10: function.domain = reader.asBytes(field, "domain"); break;
        case 11: function.attribute_defaults.push_back(attribute(reader.asBytes(field, "attribute_proto"), 1)); break;
        default: break;
      }
    }
    return function;
  }

  const WireSource& source_;
};

}  // namespace

ModelProto decodeModel(const WireSource& source, std::string_view bytes) {
  return Decoder(source).model(bytes);
}

}  // namespace estuary::onnx_frontend
