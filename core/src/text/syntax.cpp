#include "text/syntax.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "estuary/ir/float16.h"

namespace estuary::text {

bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == ':' || c == '/' || c == '-';
}

bool isAllDigits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool isBareName(std::string_view name) {
  return !isAllDigits(name) && !name.empty() && bareNameLength(name) == name.size();
}

size_t bareNameLength(std::string_view text) {
  size_t length = 0;
  while (length < text.size() && isNameChar(text[length])) ++length;
  while (length > 0 && text[length - 1] == ':') --length;
  return length;
}

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

bool isIdentChar(char c) { return isIdentStart(c) || (c >= '0' && c <= '9') || c == '.'; }

bool isBareIdentifier(std::string_view text) {
  if (text.empty() || !isIdentStart(text[0])) return false;
  for (char c : text) {
    if (!isIdentChar(c)) return false;
  }
  return true;
}

void appendQuoted(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: {
        auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f) {
          out += "\\x";
          out += kHex[byte >> 4];
          out += kHex[byte & 15];
        } else {
          out += c;
        }
      }
    }
  }
  out += '"';
}

namespace {

// Makes sure a finite number reads back as a float, not an integer: "1" -> "1.0".
void appendFloatText(std::string& out, const char* begin, const char* end) {
  std::string_view text(begin, static_cast<size_t>(end - begin));
  out += text;
  if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
}

template <typename T>
bool appendNonFinite(std::string& out, T value) {
  if (std::isnan(value)) {
    out += "nan";
    return true;
  }
  if (std::isinf(value)) {
    out += value < 0 ? "-inf" : "inf";
    return true;
  }
  return false;
}

template <typename T>
void appendShortest(std::string& out, T value) {
  if (appendNonFinite(out, value)) return;
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  appendFloatText(out, buffer, result.ptr);
}

// The shortest f32 whose 16-bit rounding is `bits`: try ever more significant digits,
// then print the f32 that the first good candidate reads as in its own shortest form
// (which is never longer, and avoids "1e+02" for 100).
template <typename ToBits>
void appendShortest16(std::string& out, float value, uint16_t bits, ToBits to_bits) {
  if (appendNonFinite(out, value)) return;
  char buffer[64];
  for (int precision = 1; precision <= 9; ++precision) {
    auto written =
        std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::general, precision);
    float candidate = 0;
    std::from_chars(buffer, written.ptr, candidate);
    if (to_bits(candidate) == bits) {
      appendShortest(out, candidate);
      return;
    }
  }
  appendShortest(out, value);
}

}  // namespace

void appendDouble(std::string& out, double value) { appendShortest(out, value); }
void appendFloat(std::string& out, float value) { appendShortest(out, value); }

void appendHalf(std::string& out, uint16_t bits) {
  appendShortest16(out, toFloat(Float16{bits}), bits, [](float value) { return toFloat16(value).bits; });
}

void appendBFloat16(std::string& out, uint16_t bits) {
  appendShortest16(out, toFloat(BFloat16{bits}), bits, [](float value) { return toBFloat16(value).bits; });
}

}  // namespace estuary::text
