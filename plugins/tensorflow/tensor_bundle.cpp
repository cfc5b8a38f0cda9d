#include "tensor_bundle.h"

#include <cstring>

#include "crc32c.h"
#include "estuary/support/error.h"

namespace estuary::tensorflow_frontend {
namespace {

// LevelDB's table format, which TensorFlow's tensorflow/core/lib/io/table*.cc keeps: a
// footer of two block handles padded to 40 bytes and an 8-byte magic number; blocks of
// prefix-compressed entries followed by their restart points; after each block, a byte of
// compression type and the block's masked CRC32C.
constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
constexpr size_t kFooterSize = 48;
constexpr size_t kBlockTrailerSize = 5;

struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;
};

class TableReader {
 public:
  TableReader(const MappedFile& file, const std::string& path) : bytes_(file.bytes()), path_(path) {}

  // Calls visit(key, value) for every entry of every data block, in key order.
  template <typename Visit>
  void forEachEntry(Visit visit) {
    if (bytes_.size() < kFooterSize) fail(0, "is " + std::to_string(bytes_.size()) + " bytes, shorter than a table footer");
    const size_t footer = bytes_.size() - kFooterSize;
    uint64_t magic = 0;
    std::memcpy(&magic, bytes_.data() + bytes_.size() - 8, 8);
    if (magic != kTableMagic) fail(bytes_.size() - 8, "does not end with a table's magic number (not a tensor bundle index)");
    std::string_view rest = bytes_.substr(footer, kFooterSize - 8);
    readHandle(rest, footer);  // the metaindex: nothing the bundle uses
    BlockHandle index = readHandle(rest, footer);
    forEachInBlock(block(index), index.offset, [&](std::string_view, std::string_view value) {
      std::string_view handle_bytes = value;
      BlockHandle data = readHandle(handle_bytes, index.offset);
      forEachInBlock(block(data), data.offset, visit);
    });
  }

 private:
  [[noreturn]] void fail(uint64_t at, const std::string& what) const {
    raise(path_, ": at byte ", at, ": ", what, " (the file is truncated or corrupt)");
  }

  uint64_t varint(std::string_view& bytes, uint64_t at) const {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (bytes.empty()) fail(at, "a varint runs past its end");
      auto byte = static_cast<uint8_t>(bytes.front());
      bytes.remove_prefix(1);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return value;
    }
    fail(at, "a varint is longer than 10 bytes");
  }

  BlockHandle readHandle(std::string_view& bytes, uint64_t at) const {
    BlockHandle handle;
    handle.offset = varint(bytes, at);
    handle.size = varint(bytes, at);
    return handle;
  }

  // A block's contents, its trailer checked.
  std::string_view block(const BlockHandle& handle) const {
    if (handle.offset > bytes_.size() || handle.size > bytes_.size() - handle.offset ||
        kBlockTrailerSize > bytes_.size() - handle.offset - handle.size) {
      fail(handle.offset, "a block of " + std::to_string(handle.size) + " bytes lies past the end");
    }
    std::string_view contents = bytes_.substr(handle.offset, handle.size);
    const char type = bytes_[handle.offset + handle.size];
    uint32_t stored = 0;
    std::memcpy(&stored, bytes_.data() + handle.offset + handle.size + 1, 4);
    const uint32_t actual = crc32c(std::string_view(&type, 1), crc32c(contents));
    if (unmaskCrc(stored) != actual) fail(handle.offset, "a block's checksum does not match its bytes");
    if (type != 0) fail(handle.offset, "a block is compressed (type " + std::to_string(type) + "), which bundles never are");
    return contents;
  }

  template <typename Visit>
  void forEachInBlock(std::string_view contents, uint64_t at, Visit visit) const {
    if (contents.size() < 4) fail(at, "a block is shorter than its restart count");
    uint32_t restarts = 0;
    std::memcpy(&restarts, contents.data() + contents.size() - 4, 4);
    if (restarts > (contents.size() - 4) / 4) fail(at, "a block claims more restart points than it holds");
    std::string_view entries = contents.substr(0, contents.size() - 4 - 4 * static_cast<size_t>(restarts));
    std::string key;
    while (!entries.empty()) {
      uint64_t shared = varint(entries, at);
      uint64_t unshared = varint(entries, at);
      uint64_t value_size = varint(entries, at);
      if (shared > key.size() || unshared > entries.size() || value_size > entries.size() - unshared) {
        fail(at, "a block entry's lengths run past the block");
      }
      key.resize(shared);
      key.append(entries.substr(0, unshared));
      visit(std::string_view(key), entries.substr(unshared, value_size));
      entries.remove_prefix(unshared + value_size);
    }
  }

  std::string_view bytes_;
  const std::string& path_;
};

std::string shardPath(const std::string& prefix, int32_t shard, int32_t shards) {
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".data-%05d-of-%05d", shard, shards);
  return prefix + suffix;
}

}  // namespace

TensorBundle::TensorBundle(std::string prefix, WeightSource& weights) : prefix_(std::move(prefix)), weights_(weights) {
  const std::string index_path = prefix_ + ".index";
  readTable(weights_.fileInside(index_path, "the variables' index " + index_path));
}

void TensorBundle::readTable(const MappedFile& index) {
  const std::string index_path = prefix_ + ".index";
  std::optional<BundleHeader> header;
  proto::Source source{index_path, index.data, "a tensor bundle index", "tensor_bundle.proto"};
  TableReader(index, index_path).forEachEntry([&](std::string_view key, std::string_view value) {
    if (key.empty()) {
      header = proto::decode<BundleHeader>(source, value);
    } else {
      entries_.emplace(std::string(key), proto::decode<BundleEntry>(source, value));
    }
  });
  if (!header) raise(index_path, ": has no bundle header (the entry under the empty key)");
  if (header->endianness != 0) raise(index_path, ": the bundle is big-endian, which Estuary does not read");
  if (header->num_shards < 1) raise(index_path, ": the bundle header says ", header->num_shards, " shards");
  for (int32_t shard = 0; shard < header->num_shards; ++shard) {
    std::string path = shardPath(prefix_, shard, header->num_shards);
    shards_.push_back(&weights_.fileInside(path, "the variables' shard " + path));
  }
  for (const auto& [key, entry] : entries_) {
    if (entry.shard_id < 0 || entry.shard_id >= header->num_shards) {
      raise(index_path, ": variable '", key, "' is in shard ", entry.shard_id, " of ", header->num_shards);
    }
  }
}

std::vector<std::string> TensorBundle::keys() const {
  std::vector<std::string> keys;
  for (const auto& entry : entries_) keys.push_back(entry.first);
  return keys;
}

const BundleEntry& TensorBundle::entry(std::string_view key) const {
  auto found = entries_.find(key);
  if (found == entries_.end()) raise(prefix_, ".index: has no variable '", key, "'");
  return found->second;
}

std::string TensorBundle::shardPathOf(const BundleEntry& entry) const {
  return shardPath(prefix_, entry.shard_id, static_cast<int32_t>(shards_.size()));
}

std::string_view TensorBundle::bytesOf(const BundleEntry& entry, const std::string& what) const {
  const MappedFile& shard = *shards_[static_cast<size_t>(entry.shard_id)];
  if (entry.offset < 0 || entry.size < 0 || static_cast<uint64_t>(entry.offset) > shard.size ||
      static_cast<uint64_t>(entry.size) > shard.size - static_cast<uint64_t>(entry.offset)) {
    raise(shardPathOf(entry), ": ", what, " reads bytes ", entry.offset, "..", entry.offset + entry.size, " of a ",
          shard.size, "-byte shard (truncated?)");
  }
  return {shard.data + entry.offset, static_cast<size_t>(entry.size)};
}

Tensor TensorBundle::tensor(std::string_view key) const {
  const BundleEntry& found = entry(key);
  const std::string what = "variable '" + std::string(key) + "'";
  if (found.slices > 0) raise(prefix_, ".index: ", what, " is partitioned into slices, which Estuary does not read");
  std::optional<DType> dtype = dtypeFromTf(found.dtype);
  if (!dtype) raise(prefix_, ".index: ", what, " is ", tfDataTypeName(found.dtype), ", which Estuary has no type for");
  std::string_view bytes = bytesOf(found, what);
  if (crc32c(bytes) != unmaskCrc(found.crc32c)) {
    raise(shardPathOf(found), ": the bytes of ", what, " do not match their checksum (corrupt shard)");
  }
  const MappedFile& shard = *shards_[static_cast<size_t>(found.shard_id)];
  return weights_.fromBytes(*dtype, shapeDims(found.shape, what, prefix_ + ".index"), bytes, shard.owner, what);
}

std::string_view TensorBundle::string(std::string_view key) const {
  const BundleEntry& found = entry(key);
  const std::string what = "'" + std::string(key) + "'";
  if (found.dtype != kDtString || !shapeDims(found.shape, what, prefix_ + ".index").empty()) {
    raise(prefix_, ".index: ", what, " is not a scalar string");
  }
  // A string tensor is stored as the varint64 length of each element, a masked CRC32C of
  // the lengths (each as a 4-byte little-endian integer), and the elements' bytes; the
  // entry's CRC covers the lengths as 4-byte integers, the stored CRC and the bytes.
  std::string_view bytes = bytesOf(found, what);
  uint64_t length = 0;
  size_t at = 0;
  for (int shift = 0; at < bytes.size() && shift < 64; shift += 7) {
    auto byte = static_cast<uint8_t>(bytes[at++]);
    length |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) break;
  }
  if (length > 0xffffffffu || at + 4 > bytes.size() || length > bytes.size() - at - 4) {
    raise(shardPathOf(found), ": ", what, " is not a well-formed string tensor (truncated?)");
  }
  uint32_t length32 = static_cast<uint32_t>(length);
  char length_bytes[4];
  std::memcpy(length_bytes, &length32, 4);
  uint32_t lengths_crc = 0;
  std::memcpy(&lengths_crc, bytes.data() + at, 4);
  std::string_view text = bytes.substr(at + 4, static_cast<size_t>(length));
  uint32_t crc = crc32c(std::string_view(length_bytes, 4));
  const bool lengths_ok = unmaskCrc(lengths_crc) == crc;
  crc = crc32c(text, crc32c(bytes.substr(at, 4), crc));
  if (!lengths_ok || crc != unmaskCrc(found.crc32c)) {
    raise(shardPathOf(found), ": the bytes of ", what, " do not match their checksum (corrupt shard)");
  }
  return text;
}

}  // namespace estuary::tensorflow_frontend
