#include "k8s/quantity.h"

#include <cctype>
#include <limits>

namespace okna::k8s {

namespace {

struct Suffix {
  std::string_view text;
  int pow10;
  int pow2;
};

constexpr Suffix kSuffixes[] = {
    {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"", 0, 0},    {"k", 3, 0},   {"M", 6, 0},
    {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},
};

constexpr Int128 kMax = static_cast<Int128>(std::numeric_limits<std::int64_t>::max());
// Beyond 10^+-30 a quantity means nothing for a node (and 10^30 * 1000 still fits in Int128).
constexpr int kMaxPow10 = 30;

}  // namespace

core::Result<Quantity> Quantity::parse(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return core::makeError("quantity \"" + std::string(text) + "\": " + why);
  };
  std::string_view s = text;
  if (s.empty()) return bad("empty");
  bool neg = false;
  if (s.front() == '+' || s.front() == '-') {
    neg = s.front() == '-';
    s.remove_prefix(1);
  }
  Quantity q;
  int digits = 0;
  bool seenDot = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.') {
      if (seenDot) return bad("two decimal points");
      seenDot = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    ++digits;
    if (q.mantissa_ > kMax) return bad("too large");
    q.mantissa_ = q.mantissa_ * 10 + (c - '0');
    if (seenDot) --q.pow10_;
  }
  if (digits == 0) return bad("no digits");
  const std::string_view suffix = s.substr(i);
  for (const auto& sfx : kSuffixes) {
    if (suffix == sfx.text) {
      q.pow10_ += sfx.pow10;
      q.pow2_ = sfx.pow2;
      if (q.pow10_ > kMaxPow10 || q.pow10_ < -kMaxPow10) return bad("exponent out of range");
      if (neg) q.mantissa_ = -q.mantissa_;
      return q;
    }
  }
  // Not a suffix: a decimal exponent ("1e3", "5E-2"), where "E" alone would be exa.
  if (suffix.size() < 2 || (suffix.front() != 'e' && suffix.front() != 'E'))
    return bad("unknown suffix \"" + std::string(suffix) + "\"");
  std::string_view exp = suffix.substr(1);
  bool expNeg = false;
  if (exp.front() == '+' || exp.front() == '-') {
    expNeg = exp.front() == '-';
    exp.remove_prefix(1);
  }
  if (exp.empty() || exp.size() > 3) return bad("bad exponent");
  int e = 0;
  for (char c : exp) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return bad("bad exponent");
    e = e * 10 + (c - '0');
  }
  q.pow10_ += expNeg ? -e : e;
  if (q.pow10_ > kMaxPow10 || q.pow10_ < -kMaxPow10) return bad("exponent out of range");
  if (neg) q.mantissa_ = -q.mantissa_;
  return q;
}

std::int64_t Quantity::scaled(std::int64_t scale, bool roundUp) const {
  Int128 n = mantissa_ * scale;
  int p10 = pow10_;
  for (int i = 0; i < pow2_; ++i) {
    n *= 2;
    if (n > kMax * 1000000000LL || n < -kMax * 1000000000LL) break;
  }
  for (; p10 > 0; --p10) {
    n *= 10;
    if (n > kMax || n < -kMax)
      return n > 0 ? std::numeric_limits<std::int64_t>::max()
                   : std::numeric_limits<std::int64_t>::min();
  }
  Int128 d = 1;
  for (; p10 < 0; ++p10) {
    d *= 10;
    if (d > kMax) break;
  }
  Int128 quotient = n / d;
  const Int128 rem = n % d;
  if (rem != 0) {
    if (roundUp && n > 0) ++quotient;
    if (!roundUp && n < 0) --quotient;
  }
  if (quotient > kMax) return std::numeric_limits<std::int64_t>::max();
  if (quotient < -kMax) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(quotient);
}

std::int64_t Quantity::ceilScaled(std::int64_t scale) const {
  return scaled(scale, true);
}
std::int64_t Quantity::floorScaled(std::int64_t scale) const {
  return scaled(scale, false);
}

}  // namespace okna::k8s
