#pragma once
// Lexical rules of the text form shared by the printer and the parser, so that what one
// writes the other reads.
#include <cstdint>
#include <string>
#include <string_view>

namespace estuary::text {

// Characters of a bare value or graph name: [A-Za-z0-9_.:/-].
bool isNameChar(char c);
// A name that prints without quotes. All-digit names are reserved for unnamed values
// (%0, %1, ...), so a value really called "12" prints as %"12". A bare name does not end
// in ':', which would run into the ':' of `%x: f32[2]`.
bool isBareName(std::string_view name);
// The length of the bare name at the start of `text` (0 when there is none).
size_t bareNameLength(std::string_view text);
bool isAllDigits(std::string_view text);

// Op types, domains and attribute names: [A-Za-z_][A-Za-z0-9_.]*.
bool isIdentStart(char c);
bool isIdentChar(char c);
bool isBareIdentifier(std::string_view text);

// Appends `text` in double quotes with C escapes (\" \\ \n \t \r, \xHH for other control
// bytes); bytes >= 0x80 are copied unchanged so UTF-8 stays readable.
void appendQuoted(std::string& out, std::string_view text);

// Shortest decimal that reads back to the same value; always contains '.' or 'e' or is
// one of inf, -inf, nan, so a float never reads as an integer.
void appendDouble(std::string& out, double value);
void appendFloat(std::string& out, float value);
// The same for f16 / bf16 bits: the shortest decimal that, read as f32 and rounded to
// the 16-bit type, gives these bits again.
void appendHalf(std::string& out, uint16_t bits);
void appendBFloat16(std::string& out, uint16_t bits);

}  // namespace estuary::text
