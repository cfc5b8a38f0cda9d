// The .npy/.npz reader and writer of the command line, on files NumPy wrote
// (tests/data/npy, see its README) and on hand-made bytes.
#include "npy.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <functional>

#include "estuary/support/error.h"

namespace estuary::cli {
namespace {

std::string fixture(const std::string& name) { return std::string(ESTUARY_SOURCE_DIR) + "/tests/data/npy/" + name; }

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

template <typename T>
std::vector<T> elements(const Tensor& array) {
  const T* data = array.data<T>();
  return std::vector<T>(data, data + array.numElements());
}

std::string errorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

#define EXPECT_CONTAINS(text, piece) \
  EXPECT_NE(std::string(text).find(piece), std::string::npos) << "missing '" << (piece) << "' in:\n" << (text)

// A .npy image built by hand, the way the format document describes it.
std::string handMadeNpy(int major, const std::string& dict, const std::string& data) {
  std::string bytes = "\x93NUMPY";
  bytes.push_back(static_cast<char>(major));
  bytes.push_back(0);
  size_t length = dict.size();
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) bytes.push_back(static_cast<char>(length >> (8 * i)));
  return bytes + dict + data;
}

TEST(Npy, ReadsEveryElementTypeNumpyWrites) {
  Tensor f4 = readNpy(fixture("f4.npy"));
  EXPECT_EQ(f4.dtype(), DType::F32);
  EXPECT_EQ(f4.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(elements<float>(f4), (std::vector<float>{-1, -0.5, 0, 0.5, 1, 1.5}));

  Tensor f8 = readNpy(fixture("f8_big_endian.npy"));
  EXPECT_EQ(f8.dtype(), DType::F64);
  EXPECT_EQ(elements<double>(f8), (std::vector<double>{1.5, -2.25, 1e300}));

  Tensor f2 = readNpy(fixture("f2.npy"));
  EXPECT_EQ(f2.dtype(), DType::F16);
  EXPECT_EQ(elements<uint16_t>(f2), (std::vector<uint16_t>{0x3800, 0xBC00, 0x7BFF, 0x0400}));

  EXPECT_EQ(elements<int8_t>(readNpy(fixture("i1.npy"))), (std::vector<int8_t>{-3, -2, -1, 0, 1}));
  EXPECT_EQ(elements<int16_t>(readNpy(fixture("i2.npy"))), (std::vector<int16_t>{-3, -2, -1, 0}));
  Tensor i4 = readNpy(fixture("i4.npy"));
  EXPECT_EQ(i4.dtype(), DType::I32);
  EXPECT_EQ(i4.shape(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(elements<int32_t>(i4), (std::vector<int32_t>{-3, -2, -1}));
  EXPECT_EQ(elements<int64_t>(readNpy(fixture("i8.npy"))),
            (std::vector<int64_t>{-(int64_t{1} << 62), 7, int64_t{1} << 40}));
  EXPECT_EQ(elements<uint8_t>(readNpy(fixture("u1.npy"))), (std::vector<uint8_t>{0, 1, 255}));
  Tensor b1 = readNpy(fixture("b1.npy"));
  EXPECT_EQ(b1.dtype(), DType::Bool);
  EXPECT_EQ(b1.shape(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(elements<uint8_t>(b1), (std::vector<uint8_t>{1, 0, 1}));
}

TEST(Npy, ReadsBfloat16AsMlDtypesSavesIt) {
  Tensor bf16 = readNpy(fixture("bf16.npy"));
  EXPECT_EQ(bf16.dtype(), DType::BF16);
  // 1.5, -2.0 and 2^-7 are the upper halves of their f32 bit patterns.
  EXPECT_EQ(elements<uint16_t>(bf16), (std::vector<uint16_t>{0x3FC0, 0xC000, 0x3C00}));
}

TEST(Npy, ReadsScalarsEmptyArraysAndLaterHeaderVersions) {
  Tensor scalar = readNpy(fixture("scalar_f4.npy"));
  EXPECT_TRUE(scalar.shape().empty());
  EXPECT_EQ(elements<float>(scalar), std::vector<float>{3.5f});
  Tensor empty = readNpy(fixture("empty_f4.npy"));
  EXPECT_EQ(empty.shape(), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(empty.byteSize(), 0u);
  for (const char* name : {"f4_v2.npy", "f4_v3.npy"}) {
    EXPECT_EQ(elements<float>(readNpy(fixture(name))), (std::vector<float>{1, 2})) << name;
  }
}

TEST(Npy, WritesTheBytesNumpyWrites) {
  for (const char* name : {"f4.npy", "f2.npy", "i1.npy", "i2.npy", "i4.npy", "i8.npy", "u1.npy", "b1.npy",
                           "scalar_f4.npy", "empty_f4.npy", "bf16.npy"}) {
    EXPECT_EQ(formatNpy(readNpy(fixture(name))), readBytes(fixture(name))) << name;
  }
}

TEST(Npy, RoundTripsEveryElementType) {
  for (DType dtype : kAllDTypes) {
    Tensor array = Tensor::allocate(dtype, {3, 5});
    auto* bytes = static_cast<unsigned char*>(array.mutableData());
    for (size_t i = 0; i < array.byteSize(); ++i) bytes[i] = static_cast<unsigned char>(i * 37 + 1);
    if (dtype == DType::Bool) std::memset(bytes, 1, array.byteSize());
    Tensor back = parseNpy(formatNpy(array), "memory");
    EXPECT_EQ(back.dtype(), dtype);
    EXPECT_TRUE(back.contentEquals(array)) << dtypeName(dtype);
  }
}

TEST(Npy, HeadersAreAlignedTo64Bytes) {
  Tensor array = Tensor::allocate(DType::F32, std::vector<int64_t>(8, 1));
  std::string bytes = formatNpy(array);
  EXPECT_EQ((bytes.size() - array.byteSize()) % 64, 0u);
  EXPECT_EQ(bytes[bytes.size() - array.byteSize() - 1], '\n');
}

TEST(Npy, ParsesHandMadeHeaders) {
  const std::string data("\x01\x00\x02\x00\x03\x00", 6);
  // Double quotes, no trailing comma, keys in another order, Python 2 longs.
  Tensor a = parseNpy(handMadeNpy(1, "{\"shape\": (3L,), \"fortran_order\": False, \"descr\": \"<i2\"}\n", data), "a");
  EXPECT_EQ(elements<int16_t>(a), (std::vector<int16_t>{1, 2, 3}));
  // A one-dimensional Fortran-ordered array is the same as a C-ordered one.
  Tensor b = parseNpy(handMadeNpy(2, "{'descr': '>i2', 'fortran_order': True, 'shape': (3,), }\n", data), "b");
  EXPECT_EQ(elements<int16_t>(b), (std::vector<int16_t>{0x0100, 0x0200, 0x0300}));
}

TEST(Npy, RefusesWhatItCannotRepresent) {
  EXPECT_CONTAINS(errorOf([] { readNpy(fixture("fortran_f4.npy")); }),
                  "fortran_f4.npy: Fortran-ordered array; save it in C order");
  std::string u2 = errorOf([] { readNpy(fixture("u2.npy")); });
  EXPECT_CONTAINS(u2, "u2.npy: dtype '<u2' has no Estuary element type");
  EXPECT_CONTAINS(u2, "V2 for bfloat16");
  EXPECT_CONTAINS(errorOf([] { readNpy(fixture("structured.npy")); }), "structured.npy: bad .npy header: a structured dtype");
  EXPECT_CONTAINS(errorOf([] { parseNpy(handMadeNpy(1, "{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }", ""), "s"); }),
                  "s: dtype '<U3' has no Estuary element type");
}

TEST(Npy, RefusesBrokenFiles) {
  std::string bytes = readBytes(fixture("f4.npy"));
  EXPECT_EQ(errorOf([&] { parseNpy(bytes.substr(0, bytes.size() - 3), "cut.npy"); }),
            "cut.npy: truncated: <f4 (2, 3) needs 24 data bytes, the file has 21");
  EXPECT_CONTAINS(errorOf([&] { parseNpy(bytes + "xx", "long.npy"); }), "long.npy: corrupt: <f4 (2, 3) needs 24 data bytes, the file has 26");
  EXPECT_CONTAINS(errorOf([&] { parseNpy(bytes.substr(0, 40), "head.npy"); }), "head.npy: truncated .npy header");
  EXPECT_EQ(errorOf([] { parseNpy("PK\x03\x04 not npy", "zip.npy"); }), "zip.npy: not a .npy file (bad magic bytes)");
  std::string future = bytes;
  future[6] = 4;
  EXPECT_CONTAINS(errorOf([&] { parseNpy(future, "v4.npy"); }), "v4.npy: .npy format version 4.0 is not supported");
  EXPECT_CONTAINS(errorOf([] { parseNpy(handMadeNpy(1, "{'descr': '<f4', 'shape': (1,), }", "abcd"), "k.npy"); }),
                  "k.npy: bad .npy header: 'descr', 'fortran_order' or 'shape' is missing");
  EXPECT_CONTAINS(errorOf([] { parseNpy(handMadeNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,-2), }", ""), "n.npy"); }),
                  "n.npy: bad .npy header: expected a dimension");
  EXPECT_CONTAINS(errorOf([] { readNpy("/nonexistent/x.npy"); }), "/nonexistent/x.npy: cannot open");
}

void expectXY(const std::vector<NamedArray>& arrays, const std::string& source) {
  ASSERT_EQ(arrays.size(), 2u) << source;
  EXPECT_EQ(arrays[0].name, "x");
  EXPECT_EQ(arrays[1].name, "y");
  EXPECT_EQ(arrays[0].array.shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(elements<float>(arrays[0].array), (std::vector<float>{-2, -1, 0, 1, 2, 3, 4, 5})) << source;
  EXPECT_EQ(elements<float>(arrays[1].array), (std::vector<float>{0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75})) << source;
}

TEST(Npz, ReadsStoredDeflatedAndZip64Archives) {
  for (const char* name : {"xy.npz", "xy_compressed.npz", "xy_zip64.npz"}) expectXY(readNpz(fixture(name)), name);
}

TEST(Npz, RoundTripsStoredAndDeflated) {
  std::vector<NamedArray> arrays = readNpz(fixture("xy.npz"));
  arrays.push_back({"flags", readNpy(fixture("b1.npy"))});
  arrays.push_back({"big", Tensor::allocate(DType::F32, {300, 1000})});  // compresses well
  for (bool compress : {false, true}) {
    std::string bytes = formatNpz(arrays, compress);
    std::vector<NamedArray> back = parseNpz(bytes, "memory");
    ASSERT_EQ(back.size(), arrays.size());
    for (size_t i = 0; i < arrays.size(); ++i) {
      EXPECT_EQ(back[i].name, arrays[i].name);
      EXPECT_TRUE(back[i].array.contentEquals(arrays[i].array)) << arrays[i].name << " compress " << compress;
    }
    if (compress) {
      EXPECT_LT(bytes.size(), 100000u);
    }
  }
}

TEST(Npz, ArchiveLayoutIsPlainZip) {
  std::string bytes = formatNpz({{"x", readNpy(fixture("i1.npy"))}}, false);
  // Local header, the entry named x.npy, the .npy image itself, then the directory.
  EXPECT_EQ(bytes.substr(0, 4), std::string("PK\x03\x04", 4));
  EXPECT_EQ(bytes.substr(30, 5), "x.npy");
  EXPECT_EQ(bytes.substr(35, 128), readBytes(fixture("i1.npy")).substr(0, 128));
  EXPECT_EQ(bytes.substr(bytes.size() - 22, 4), std::string("PK\x05\x06", 4));
}

TEST(Npz, RefusesBrokenArchives) {
  const std::string bytes = readBytes(fixture("xy.npz"));
  EXPECT_CONTAINS(errorOf([&] { parseNpz(bytes.substr(0, bytes.size() - 30), "cut.npz"); }), "cut.npz: truncated zip archive");
  EXPECT_CONTAINS(errorOf([&] { parseNpz(bytes.substr(0, 10), "tiny.npz"); }), "tiny.npz: not a zip archive");
  EXPECT_CONTAINS(errorOf([&] { parseNpz(readBytes(fixture("f4.npy")), "f4.npz"); }), "f4.npz: not a zip archive");
  std::string flipped = bytes;
  flipped[200] = static_cast<char>(flipped[200] ^ 0x55);  // inside x.npy's data
  EXPECT_CONTAINS(errorOf([&] { parseNpz(flipped, "flip.npz"); }), "flip.npz: entry 'x.npy' fails its CRC check");

  const std::string deflated = readBytes(fixture("xy_compressed.npz"));
  std::string broken = deflated;
  broken[60] = static_cast<char>(broken[60] ^ 0xFF);  // inside x.npy's deflate stream
  std::string message = errorOf([&] { parseNpz(broken, "bad.npz"); });
  EXPECT_TRUE(message.find("bad.npz: entry 'x.npy' does not inflate") != std::string::npos ||
              message.find("bad.npz: entry 'x.npy' fails its CRC check") != std::string::npos)
      << message;

  EXPECT_CONTAINS(errorOf([] { readNpz("/nonexistent/in.npz"); }), "/nonexistent/in.npz: cannot open");
}

// Found by fuzzing: a 400-byte archive recording a 4 GiB deflated entry made the reader allocate
// the 4 GiB before inflating anything.
TEST(Npz, ASizeDeflateCannotReachIsRefusedBeforeAllocating) {
  const std::string path = std::string(ESTUARY_SOURCE_DIR) + "/fuzz/regressions/npz/inflate_allocates_declared_size.npz";
  EXPECT_CONTAINS(errorOf([&] { readNpz(path); }), "deflated bytes can hold (corrupt archive)");
}

TEST(Npz, EntryErrorsNameArchiveAndEntry) {
  std::string archive = formatNpz({{"w", Tensor::allocate(DType::U8, {4})}}, false);
  // The entry's descr '|u1' becomes '|u7', which no element type has, under a valid CRC
  // (local header bytes 14-17, central directory entry bytes 16-19).
  const size_t data_start = 30 + 5, data_size = 128 + 4;
  size_t at = archive.find("|u1");
  ASSERT_NE(at, std::string::npos);
  archive[at + 2] = '7';
  uint32_t crc = static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(archive.data() + data_start), static_cast<uInt>(data_size)));
  std::memcpy(archive.data() + 14, &crc, 4);
  std::memcpy(archive.data() + data_start + data_size + 16, &crc, 4);
  EXPECT_CONTAINS(errorOf([&] { parseNpz(archive, "in.npz"); }), "in.npz:w.npy: dtype '|u7' has no Estuary element type");
}

}  // namespace
}  // namespace estuary::cli
