#pragma once
// The offline model file (".eom", Estuary offline model): what CompiledModel::save writes and
// CompiledModel::load maps. All integers are little-endian.
//
//   header, 256 bytes
//     0    magic "\x89EOM\r\n\x1a\n" (as PNG's: a text-mode transfer or a 7-bit channel
//          visibly breaks it)
//     8    u32 format version (kOfflineModelFormatVersion; newer versions are refused)
//     12   u32 header size (256)
//     16   u64 file size (a shorter file is truncated, a longer one is not this model)
//     24   char[32] device name, e.g. "cpu", NUL-padded
//     56   char[32] device ISA, e.g. "avx512_core_amx", NUL-padded
//     88   char[32] Estuary version that wrote the file, NUL-padded
//     120  u64 reserved, zero
//     128  eight sections, each u64 offset and u64 size in bytes:
//            graph, weight table, plan shapes, weights, plugins (version 2 on), dim ranges
//            (version 3 on), properties (version 4 on), tactics (version 5 on); the file
//            holds them in the order graph, weight table, plan shapes, plugins, dim ranges,
//            properties, tactics, weights
//   graph         the lowered graph in core's serialized form (saveGraphToBytes); tensor
//                 attributes larger than 1 KiB are zero-element placeholders there and their
//                 bytes live in the weights section
//   weight table  u64 count, then per tensor: u64 ordinal (of the tensor attribute in a walk of
//                 the graph: nodes in order, attributes by name, subgraphs depth first),
//                 u32 dtype code, u32 rank, i64 dims[rank], u64 offset within the weights
//                 section (a multiple of 64), u64 byte size
//   plan shapes   u64 count, then per prebuilt plan: u32 input count, per input u32 dtype code,
//                 u32 rank, i64 dims[rank]; load() rebuilds these plans, choosing kernels for
//                 the loading machine
//   plugins       u64 count, then per op that a plugin registered: u32 length and the op's
//                 qualified name, u32 length and the plugin's name; load() names the plugin
//                 when one of these ops is unknown
//   dim ranges    u64 count, then per symbolic dim with a range: u32 length and the dim's
//                 name, i64 smallest and i64 largest size a run may give it
//   properties    u64 count, then per property: u32 length and the key, u32 length and the
//                 value (BuildOptions::properties: how the model was made, e.g. its precision)
//   tactics       u64 count, then per problem with a choice (a node's kernel, a plan's
//                 activation layout): u32 length and the problem's key (CPU model, device,
//                 threads, op, attributes, types), u32 length and the tactic; load() reuses a choice when
//                 the loading machine gives the same key, so kernels measured at build are
//                 not timed again (BuildOptions::tune_kernels)
//   weights       at a 64-byte aligned file offset, each tensor 64-byte aligned within; load()
//                 maps the file and wraps these bytes without copying them
//
// dtype codes: 1 f32, 2 f16, 3 bf16, 4 f64, 5 i8, 6 i16, 7 i32, 8 i64, 9 u8, 10 bool.
#include <cstdint>
#include <map>
#include <string>

namespace estuary::ge {

inline constexpr uint32_t kOfflineModelFormatVersion = 5;
inline constexpr char kOfflineModelExtension[] = ".eom";

// What an offline model's header and properties say, read without building anything (so on
// any machine, for any device): `estuary convert --mode info`.
struct OfflineModelSummary {
  uint32_t format_version = 0;
  std::string device, isa, writer;
  uint64_t file_bytes = 0, weight_bytes = 0;
  std::map<std::string, std::string> properties;
};
// Raises an Error naming the file when it is not a whole offline model.
OfflineModelSummary readOfflineModelSummary(const std::string& path);

// True when `path` names a readable file that starts with the offline model magic.
bool isOfflineModelFile(const std::string& path);

}  // namespace estuary::ge
