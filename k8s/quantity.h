#pragma once
// Kubernetes resource quantities ("15500m", "60498112Ki", "2Gi", "1e3", "0.5"), parsed exactly
// with integer arithmetic so that rounding is the same on every node.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace okna::k8s {

// 128-bit intermediate values keep quantity arithmetic exact (a GCC/Clang extension).
__extension__ typedef __int128 Int128;

/** a + b, clamped to the int64 range instead of wrapping (sums of requests). */
inline std::int64_t saturatingAdd(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? INT64_MAX : INT64_MIN;
}

class Quantity {
 public:
  /**
   * Parses the Kubernetes quantity grammar; the error names the value and why it is invalid.
   * Values whose decimal exponent (suffix, fraction digits and `e` part together) is outside
   * +-30 are rejected: no resource is that large or that fine.
   */
  static core::Result<Quantity> parse(std::string_view text);

  /** value * scale, rounded up (scale 1000 gives millicores). Saturates at INT64_MAX. */
  std::int64_t ceilScaled(std::int64_t scale = 1) const;
  /** value * scale, rounded down. */
  std::int64_t floorScaled(std::int64_t scale = 1) const;
  bool negative() const { return mantissa_ < 0; }

 private:
  // value = mantissa * 10^pow10 * 2^pow2
  Int128 mantissa_ = 0;
  int pow10_ = 0;
  int pow2_ = 0;
  std::int64_t scaled(std::int64_t scale, bool roundUp) const;
};

}  // namespace okna::k8s
