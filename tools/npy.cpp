#include "npy.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "estuary/support/atomic_file.h"
#include "estuary/support/error.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "array bytes are handled as little-endian");

namespace estuary::cli {

namespace {

// --- .npy --------------------------------------------------------------------------------

constexpr char kNpyMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kNpyAlignment = 64;

struct ElementType {
  char kind;
  int size;
  DType dtype;
};
constexpr ElementType kElementTypes[] = {
    {'f', 2, DType::F16}, {'f', 4, DType::F32}, {'f', 8, DType::F64}, {'i', 1, DType::I8},
    {'i', 2, DType::I16}, {'i', 4, DType::I32}, {'i', 8, DType::I64}, {'u', 1, DType::U8},
    {'b', 1, DType::Bool}, {'V', 2, DType::BF16},
};

// The header's Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  struct Fields {
    std::optional<std::string> descr;
    std::optional<bool> fortran_order;
    std::optional<std::vector<int64_t>> shape;
  };

  Fields parse() {
    Fields fields;
    expect('{');
    while (!accept('}')) {
      std::string key = quoted();
      expect(':');
      if (key == "descr") {
        skipSpace();
        if (peek() != '\'' && peek() != '"') fail("a structured dtype (descr is not a string); save plain arrays");
        fields.descr = quoted();
      } else if (key == "fortran_order") {
        fields.fortran_order = boolean();
      } else if (key == "shape") {
        fields.shape = tuple();
      } else {
        fail("unexpected key '", key, "'");
      }
      if (!accept(',')) {
        expect('}');
        break;
      }
    }
    skipSpace();
    if (pos_ != text_.size()) fail("text after the closing brace");
    if (!fields.descr || !fields.fortran_order || !fields.shape) fail("'descr', 'fortran_order' or 'shape' is missing");
    return fields;
  }

 private:
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    raise(source_, ": bad .npy header: ", parts..., " in \"", text_, "\"");
  }
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool accept(char c) {
    skipSpace();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail("expected '", c, "' at offset ", pos_);
  }
  std::string quoted() {
    skipSpace();
    char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string at offset ", pos_);
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return value;
  }
  bool boolean() {
    skipSpace();
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False at offset ", pos_);
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> values;
    while (!accept(')')) {
      skipSpace();
      size_t start = pos_;
      int64_t value = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        int digit = text_[pos_++] - '0';
        if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) fail("a dimension overflows");
        value = value * 10 + digit;
      }
      if (pos_ == start) fail("expected a dimension at offset ", pos_);
      if (peek() == 'L') ++pos_;  // Python 2 wrote longs as 3L
      values.push_back(value);
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return values;
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
};

const ElementType* elementTypeOf(DType dtype) {
  for (const ElementType& type : kElementTypes) {
    if (type.dtype == dtype) return &type;
  }
  return nullptr;
}

[[noreturn]] void refuseDescr(const std::string& descr, const std::string& source, const char* why) {
  raise(source, ": dtype '", descr, "' ", why,
        " (supported: f2 f4 f8 i1 i2 i4 i8 u1 b1, and V2 for bfloat16 as ml_dtypes saves it)");
}

// DType and whether the bytes need swapping, from a descr such as "<f4".
std::pair<DType, bool> parseDescr(const std::string& descr, const std::string& source) {
  auto refuse = [&](const char* why) { refuseDescr(descr, source, why); };
  if (descr.size() < 3) refuse("is not understood");
  char order = descr[0], kind = descr[1];
  if (order != '<' && order != '>' && order != '|' && order != '=') refuse("has an unknown byte order");
  int size = 0;
  for (size_t i = 2; i < descr.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(descr[i])) || size > 1000) refuse("is not understood");
    size = size * 10 + (descr[i] - '0');
  }
  for (const ElementType& type : kElementTypes) {
    if (type.kind == kind && type.size == size) return {type.dtype, order == '>' && size > 1};
  }
  refuseDescr(descr, source, "has no Estuary element type");
}

void byteSwap(void* data, size_t count, size_t size) {
  auto* bytes = static_cast<unsigned char*>(data);
  for (size_t i = 0; i < count; ++i) std::reverse(bytes + i * size, bytes + (i + 1) * size);
}

uint16_t getU16(const char* in) {
  return static_cast<uint16_t>(static_cast<unsigned char>(in[0]) | static_cast<unsigned char>(in[1]) << 8);
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
void putU16(std::string& out, uint16_t value) {
  for (int i = 0; i < 2; ++i) out.push_back(static_cast<char>(value >> (8 * i)));
}
void putU32(std::string& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(value >> (8 * i)));
}

std::string shapeTuple(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

std::string readFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) raise(path, ": cannot open: ", std::strerror(errno));
  std::ostringstream bytes;
  bytes << file.rdbuf();
  if (file.bad()) raise(path, ": cannot read: ", std::strerror(errno));
  return bytes.str();
}

void writeFile(const std::string& path, const std::string& bytes) { writeFileAtomically(path, bytes); }

// --- .npz (zip) --------------------------------------------------------------------------

constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr size_t kLocalHeaderSize = 30, kCentralHeaderSize = 46, kEndSize = 22;
constexpr size_t kZip64EndSize = 56, kZip64LocatorSize = 20;
constexpr uint16_t kStored = 0, kDeflated = 8;
constexpr uint16_t kDosDate1980 = (0 << 9) | (1 << 5) | 1;  // 1980-01-01, as zip's epoch
// zlib counts in 32-bit units; larger entries go through in chunks.
constexpr size_t kZlibChunk = size_t{1} << 30;

class ZipReader {
 public:
  ZipReader(std::string_view bytes, const std::string& source) : bytes_(bytes), source_(source) {}

  std::vector<NamedArray> read() {
    auto [count, directory_offset, directory_size] = findDirectory();
    std::vector<NamedArray> arrays;
    size_t position = directory_offset;
    const size_t directory_end = directory_offset + directory_size;
    for (uint64_t k = 0; k < count; ++k) {
      need(position, kCentralHeaderSize, directory_end, "central directory entry");
      const char* entry = bytes_.data() + position;
      if (getU32(entry) != kCentralHeaderSignature) fail("central directory entry ", k, " has a bad signature");
      uint16_t flags = getU16(entry + 8), method = getU16(entry + 10);
      uint32_t crc = getU32(entry + 16);
      uint64_t compressed = getU32(entry + 20), size = getU32(entry + 24);
      uint16_t name_length = getU16(entry + 28), extra_length = getU16(entry + 30), comment_length = getU16(entry + 32);
      uint64_t local_offset = getU32(entry + 42);
      need(position + kCentralHeaderSize, size_t{name_length} + extra_length + comment_length, directory_end,
           "central directory entry");
      std::string name(entry + kCentralHeaderSize, name_length);
      readZip64Extra(std::string_view(entry + kCentralHeaderSize + name_length, extra_length), name, size,
                     compressed, local_offset);
      position += kCentralHeaderSize + name_length + extra_length + comment_length;
      if (!name.empty() && name.back() == '/') continue;  // a directory
      if (flags & 1) fail("entry '", name, "' is encrypted");
      std::string data = entryData(name, method, crc, compressed, size, local_offset);
      std::string array_name = name;
      if (array_name.size() > 4 && array_name.compare(array_name.size() - 4, 4, ".npy") == 0) array_name.resize(array_name.size() - 4);
      for (const NamedArray& previous : arrays) {
        if (previous.name == array_name) fail("holds '", array_name, "' twice");
      }
      arrays.push_back({array_name, parseNpy(data, source_ + ":" + name)});
    }
    return arrays;
  }

 private:
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    raise(source_, ": ", parts...);
  }
  void need(uint64_t offset, uint64_t size, uint64_t limit, const char* what) const {
    if (offset > limit || size > limit - offset) fail("truncated or corrupt archive: a ", what, " runs past the end");
  }

  struct Directory {
    uint64_t count, offset, size;
  };

  Directory findDirectory() const {
    if (bytes_.size() < kEndSize) fail("not a zip archive (", bytes_.size(), " bytes; .npz files are zip archives)");
    // The end record is last, followed only by a comment of at most 64 KiB.
    size_t lowest = bytes_.size() > kEndSize + 0xFFFF ? bytes_.size() - kEndSize - 0xFFFF : 0;
    for (size_t at = bytes_.size() - kEndSize + 1; at-- > lowest;) {
      const char* end = bytes_.data() + at;
      if (getU32(end) != kEndSignature) continue;
      Directory directory{getU16(end + 10), getU32(end + 16), getU32(end + 12)};
      if (directory.count == 0xFFFF || directory.offset == 0xFFFFFFFF || directory.size == 0xFFFFFFFF) {
        directory = zip64Directory(at);
      }
      need(directory.offset, directory.size, bytes_.size(), "central directory");
      return directory;
    }
    if (bytes_.size() >= 4 && getU32(bytes_.data()) == kLocalHeaderSignature) {
      fail("truncated zip archive: its central directory is missing");
    }
    fail("not a zip archive (no end-of-directory record; .npz files are zip archives)");
  }

  Directory zip64Directory(size_t end_at) const {
    if (end_at < kZip64LocatorSize || getU32(bytes_.data() + end_at - kZip64LocatorSize) != kZip64LocatorSignature) {
      fail("zip64 archive without its zip64 locator (corrupt archive)");
    }
    uint64_t record = getU64(bytes_.data() + end_at - kZip64LocatorSize + 8);
    need(record, kZip64EndSize, bytes_.size(), "zip64 end record");
    const char* end = bytes_.data() + record;
    if (getU32(end) != kZip64EndSignature) fail("bad zip64 end record signature (corrupt archive)");
    return Directory{getU64(end + 32), getU64(end + 48), getU64(end + 40)};
  }

  // Fields set to 0xFFFFFFFF in the 32-bit record are in the zip64 extra field, in order.
  void readZip64Extra(std::string_view extra, const std::string& name, uint64_t& size, uint64_t& compressed,
                      uint64_t& local_offset) const {
    while (extra.size() >= 4) {
      uint16_t id = getU16(extra.data()), length = getU16(extra.data() + 2);
      if (length > extra.size() - 4) fail("entry '", name, "' has a malformed extra field");
      std::string_view field = extra.substr(4, length);
      if (id == 0x0001) {
        for (uint64_t* value : {&size, &compressed, &local_offset}) {
          if (*value != 0xFFFFFFFF) continue;
          if (field.size() < 8) fail("entry '", name, "' has a short zip64 extra field");
          *value = getU64(field.data());
          field.remove_prefix(8);
        }
      }
      extra.remove_prefix(4 + length);
    }
  }

  std::string entryData(const std::string& name, uint16_t method, uint32_t crc, uint64_t compressed, uint64_t size,
                        uint64_t local_offset) const {
    need(local_offset, kLocalHeaderSize, bytes_.size(), "local header");
    const char* local = bytes_.data() + local_offset;
    if (getU32(local) != kLocalHeaderSignature) fail("entry '", name, "' has a bad local header signature");
    uint64_t data_offset = local_offset + kLocalHeaderSize + getU16(local + 26) + getU16(local + 28);
    if (data_offset > bytes_.size() || compressed > bytes_.size() - data_offset) {
      fail("truncated: entry '", name, "' needs ", compressed, " bytes at offset ", data_offset,
           ", the archive has ", bytes_.size());
    }
    std::string_view stored = bytes_.substr(data_offset, compressed);
    std::string data;
    if (method == kStored) {
      if (compressed != size) fail("entry '", name, "' is stored with two different sizes");
      data.assign(stored);
    } else if (method == kDeflated) {
      data = inflateEntry(name, stored, size);
    } else {
      fail("entry '", name, "' uses compression method ", method, "; only stored and deflated entries are read");
    }
    uLong actual = crc32(0L, Z_NULL, 0);
    for (size_t done = 0; done < data.size(); done += kZlibChunk) {
      size_t chunk = std::min(kZlibChunk, data.size() - done);
      actual = crc32(actual, reinterpret_cast<const Bytef*>(data.data() + done), static_cast<uInt>(chunk));
    }
    if (actual != crc) fail("entry '", name, "' fails its CRC check (corrupt archive)");
    return data;
  }

  std::string inflateEntry(const std::string& name, std::string_view input, uint64_t size) const {
    // Deflate expands at most 1032-fold (a 258-byte match per two bits at best): a larger
    // recorded size is a lie, refused before it is allocated.
    constexpr uint64_t kMaxDeflateRatio = 1032;
    if (size / kMaxDeflateRatio > input.size() + 1) {
      fail("entry '", name, "' records ", size, " bytes, more than its ", input.size(),
           " deflated bytes can hold (corrupt archive)");
    }
    std::string output(size, '\0');
    z_stream stream{};
    if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) fail("cannot start zlib");
    size_t in_done = 0, out_done = 0;
    int status;
    // Both buffers are refilled before every call, so Z_BUF_ERROR means one ran out for good:
    // the stream is truncated or inflates to more than recorded.
    do {
      if (stream.avail_in == 0 && in_done < input.size()) {
        stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data() + in_done));
        stream.avail_in = static_cast<uInt>(std::min(kZlibChunk, input.size() - in_done));
        in_done += stream.avail_in;
      }
      if (stream.avail_out == 0 && out_done < output.size()) {
        stream.next_out = reinterpret_cast<Bytef*>(output.data() + out_done);
        stream.avail_out = static_cast<uInt>(std::min(kZlibChunk, output.size() - out_done));
        out_done += stream.avail_out;
      }
      status = inflate(&stream, Z_NO_FLUSH);
    } while (status == Z_OK);
    uint64_t produced = stream.total_out;
    inflateEnd(&stream);
    if (status != Z_STREAM_END || produced != size) {
      fail("entry '", name, "' does not inflate to its recorded ", size, " bytes (corrupt or truncated archive)");
    }
    return output;
  }

  std::string_view bytes_;
  const std::string& source_;
};

std::string deflateEntry(const std::string& data) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    raise("cannot start zlib");
  }
  std::string output;
  size_t in_done = 0;
  int status = Z_OK;
  char buffer[1 << 16];
  while (status != Z_STREAM_END) {
    if (stream.avail_in == 0 && in_done < data.size()) {
      stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + in_done));
      stream.avail_in = static_cast<uInt>(std::min(kZlibChunk, data.size() - in_done));
      in_done += stream.avail_in;
    }
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    status = deflate(&stream, in_done == data.size() ? Z_FINISH : Z_NO_FLUSH);
    if (status == Z_STREAM_ERROR) {
      deflateEnd(&stream);
      raise("zlib failed to compress");
    }
    output.append(buffer, sizeof buffer - stream.avail_out);
  }
  deflateEnd(&stream);
  return output;
}

}  // namespace

std::string describeArray(const Tensor& array) {
  return std::string(dtypeName(array.dtype())) + " " + shapeTuple(array.shape());
}

Tensor parseNpy(std::string_view bytes, const std::string& source) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kNpyMagic, sizeof kNpyMagic) != 0) {
    raise(source, ": not a .npy file (bad magic bytes)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_length, header_start;
  if (major == 1) {
    header_length = getU16(bytes.data() + 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) raise(source, ": truncated .npy header");
    header_length = getU32(bytes.data() + 8);
    header_start = 12;
  } else {
    raise(source, ": .npy format version ", major, ".", static_cast<int>(static_cast<unsigned char>(bytes[7])),
          " is not supported (versions 1.0 to 3.0 are)");
  }
  if (header_length > bytes.size() - header_start) {
    raise(source, ": truncated .npy header (", header_length, " bytes announced, ", bytes.size() - header_start,
          " present)");
  }
  HeaderParser::Fields fields = HeaderParser(bytes.substr(header_start, header_length), source).parse();
  auto [dtype, swap] = parseDescr(*fields.descr, source);
  const std::vector<int64_t>& shape = *fields.shape;
  if (*fields.fortran_order && shape.size() > 1) {
    raise(source, ": Fortran-ordered array; save it in C order (np.ascontiguousarray)");
  }
  const size_t element = dtypeSize(dtype);
  uint64_t count = 1;
  for (int64_t dim : shape) {
    if (dim != 0 && count > std::numeric_limits<uint64_t>::max() / element / static_cast<uint64_t>(dim)) {
      raise(source, ": shape ", shapeTuple(shape), " is too large");
    }
    count *= static_cast<uint64_t>(dim);
  }
  const uint64_t data_bytes = count * element;
  const size_t data_start = header_start + header_length;
  const size_t present = bytes.size() - data_start;
  if (present != data_bytes) {
    raise(source, ": ", present < data_bytes ? "truncated" : "corrupt", ": ", *fields.descr, " ",
          shapeTuple(shape), " needs ", data_bytes, " data bytes, the file has ", present);
  }
  Tensor array = Tensor::allocate(dtype, shape);
  std::memcpy(array.mutableData(), bytes.data() + data_start, data_bytes);
  if (swap) byteSwap(array.mutableData(), count, element);
  return array;
}

std::string formatNpy(const Tensor& array) {
  const ElementType* type = elementTypeOf(array.dtype());
  if (!type) raise("cannot write a tensor of element type ", dtypeName(array.dtype()), " as .npy");
  std::string descr = std::string(type->size == 1 ? "|" : "<") + type->kind + std::to_string(type->size);
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shapeTuple(array.shape()) + ", }";
  // Magic, version and length, then the dict padded with spaces and ended by a newline so that
  // the data starts at a multiple of 64.
  size_t prefix = 10;
  size_t total = (prefix + dict.size() + 1 + kNpyAlignment - 1) / kNpyAlignment * kNpyAlignment;
  if (total - prefix > 0xFFFF) {
    prefix = 12;
    total = (prefix + dict.size() + 1 + kNpyAlignment - 1) / kNpyAlignment * kNpyAlignment;
  }
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string bytes(kNpyMagic, sizeof kNpyMagic);
  bytes.push_back(static_cast<char>(prefix == 10 ? 1 : 2));
  bytes.push_back(0);
  if (prefix == 10) {
    putU16(bytes, static_cast<uint16_t>(dict.size()));
  } else {
    putU32(bytes, static_cast<uint32_t>(dict.size()));
  }
  bytes += dict;
  bytes.append(static_cast<const char*>(array.data()), array.byteSize());
  return bytes;
}

Tensor readNpy(const std::string& path) { return parseNpy(readFile(path), path); }

void writeNpy(const std::string& path, const Tensor& array) { writeFile(path, formatNpy(array)); }

std::vector<NamedArray> parseNpz(std::string_view bytes, const std::string& source) {
  return ZipReader(bytes, source).read();
}

std::string formatNpz(const std::vector<NamedArray>& arrays, bool compress) {
  std::string archive, directory;
  auto checkedU32 = [](uint64_t value, const std::string& name) {
    if (value >= 0xFFFFFFFF) raise("array '", name, "' makes the .npz archive reach 4 GiB, which needs zip64 (not written)");
    return static_cast<uint32_t>(value);
  };
  if (arrays.size() >= 0xFFFF) raise("cannot write ", arrays.size(), " arrays into one .npz archive");
  for (const NamedArray& entry : arrays) {
    const std::string name = entry.name + ".npy";
    const std::string data = formatNpy(entry.array);
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t done = 0; done < data.size(); done += kZlibChunk) {
      crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data() + done),
                  static_cast<uInt>(std::min(kZlibChunk, data.size() - done)));
    }
    const std::string stored = compress ? deflateEntry(data) : data;
    const uint16_t method = compress ? kDeflated : kStored;
    const uint32_t offset = checkedU32(archive.size(), entry.name);
    // The fields local and central headers share: version needed (2.0), flags, method,
    // time, date, CRC, sizes, name length.
    std::string common;
    putU16(common, 20);
    putU16(common, 0);
    putU16(common, method);
    putU16(common, 0);
    putU16(common, kDosDate1980);
    putU32(common, static_cast<uint32_t>(crc));
    putU32(common, checkedU32(stored.size(), entry.name));
    putU32(common, checkedU32(data.size(), entry.name));
    putU16(common, static_cast<uint16_t>(name.size()));

    putU32(archive, kLocalHeaderSignature);
    archive += common;
    putU16(archive, 0);  // extra field length
    archive += name;
    archive += stored;
    checkedU32(archive.size(), entry.name);

    putU32(directory, kCentralHeaderSignature);
    putU16(directory, 20);  // version made by: MS-DOS, 2.0
    directory += common;
    putU16(directory, 0);  // extra field length
    putU16(directory, 0);  // comment length
    putU16(directory, 0);  // disk number
    putU16(directory, 0);  // internal attributes
    putU32(directory, 0);  // external attributes
    putU32(directory, offset);
    directory += name;
  }
  const uint32_t directory_offset = checkedU32(archive.size(), "(central directory)");
  archive += directory;
  checkedU32(archive.size(), "(central directory)");
  putU32(archive, kEndSignature);
  putU16(archive, 0);
  putU16(archive, 0);
  putU16(archive, static_cast<uint16_t>(arrays.size()));
  putU16(archive, static_cast<uint16_t>(arrays.size()));
  putU32(archive, static_cast<uint32_t>(directory.size()));
  putU32(archive, directory_offset);
  putU16(archive, 0);  // comment length
  return archive;
}

std::vector<NamedArray> readNpz(const std::string& path) { return parseNpz(readFile(path), path); }

void writeNpz(const std::string& path, const std::vector<NamedArray>& arrays, bool compress) {
  writeFile(path, formatNpz(arrays, compress));
}

}  // namespace estuary::cli
