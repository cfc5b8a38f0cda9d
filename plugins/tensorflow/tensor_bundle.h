#pragma once
// TensorFlow's tensor bundle, where a SavedModel keeps its variables: <prefix>.index, a
// table in LevelDB's format mapping each tensor's checkpoint key to a BundleEntryProto
// (dtype, shape, shard, offset, size, masked CRC32C), and the shards
// <prefix>.data-NNNNN-of-MMMMM holding the bytes. Blocks of the table and tensors are
// checksummed; both checksums are verified. Tensors are wrapped in the shard's mapping where
// aligned (the frontend layer's WeightSource), copied otherwise.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/frontend/weights.h"
#include "estuary/ir/tensor.h"
#include "tf_messages.h"
#include "tf_tensor.h"

namespace estuary::tensorflow_frontend {

class TensorBundle {
 public:
  // Opens `prefix`.index and its shards ("model/variables/variables"). Raises an Error
  // naming the file for anything missing, truncated or failing its checksum.
  TensorBundle(std::string prefix, WeightSource& weights);

  const std::string& prefix() const { return prefix_; }
  bool contains(std::string_view key) const { return entries_.count(key) > 0; }
  // The checkpoint keys, sorted.
  std::vector<std::string> keys() const;
  const BundleEntry& entry(std::string_view key) const;
  // The tensor under `key`, its bytes checked against their CRC32C. Raises naming the key
  // and the shard when they do not match.
  Tensor tensor(std::string_view key) const;
  // The bytes of the scalar string tensor under `key` (the checkpoint's object graph), its
  // checksums verified.
  std::string_view string(std::string_view key) const;

 private:
  void readTable(const MappedFile& index);
  // The entry's bytes in its shard, bounds checked.
  std::string_view bytesOf(const BundleEntry& entry, const std::string& what) const;
  std::string shardPathOf(const BundleEntry& entry) const;

  std::string prefix_;
  WeightSource& weights_;
  std::map<std::string, BundleEntry, std::less<>> entries_;
  std::vector<const MappedFile*> shards_;
};

}  // namespace estuary::tensorflow_frontend
