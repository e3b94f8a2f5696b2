#pragma once
// The fuzz targets' assertion: a broken invariant prints what broke and aborts, which libFuzzer
// reports as a crash and saves the input (crash-<sha1>). Not assert(): it must hold in every
// build type.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace okna::fuzz {

/** Bytes as a C string literal would show them (for the message of a broken invariant). */
inline std::string quoted(std::string_view bytes, std::size_t max = 200) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (std::size_t i = 0; i < bytes.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  out += bytes.size() > max ? "\"..." : "\"";
  return out;
}

[[noreturn]] inline void fail(const char* file, int line, const char* condition,
                              const std::string& detail) {
  std::fprintf(stderr, "%s:%d: invariant broken: %s\n  %s\n", file, line, condition,
               detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace okna::fuzz

// FUZZ_CHECK(condition, detail): `detail` (a std::string expression) is only built on failure.
#define FUZZ_CHECK(condition, detail)                                               \
  do {                                                                              \
    if (!(condition)) ::okna::fuzz::fail(__FILE__, __LINE__, #condition, (detail)); \
  } while (0)
