#include "core/listener_guard.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace okna::core {

Result<FileLimit> raiseFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return makeError(std::string("getrlimit(RLIMIT_NOFILE): ") + std::strerror(errno), errno);
  FileLimit out;
  out.before = limit.rlim_cur;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
      return makeError(std::string("setrlimit(RLIMIT_NOFILE): ") + std::strerror(errno), errno);
  }
  out.soft = limit.rlim_cur;
  out.hard = limit.rlim_max;
  return out;
}

std::size_t connectionBudgetFor(std::uint64_t fileLimit) {
  const std::uint64_t reserve = std::max<std::uint64_t>(256, fileLimit / 4);
  const std::uint64_t left = fileLimit > reserve ? fileLimit - reserve : 0;
  return static_cast<std::size_t>(std::max<std::uint64_t>(16, left));
}

std::chrono::milliseconds acceptRetryDelay(unsigned consecutiveFailures) {
  const unsigned shift = std::min(consecutiveFailures > 0 ? consecutiveFailures - 1 : 0u, 7u);
  return std::min(std::chrono::milliseconds(10) * (1u << shift), std::chrono::milliseconds(1000));
}

bool LogThrottle::allow(Clock::time_point now, std::uint64_t& suppressed) {
  if (refilled_ == Clock::time_point{}) refilled_ = now;
  if (interval_.count() > 0 && now > refilled_) {
    const auto earned = static_cast<std::uint64_t>((now - refilled_) / interval_);
    if (earned > 0) {
      tokens_ = static_cast<unsigned>(std::min<std::uint64_t>(burst_, tokens_ + earned));
      refilled_ += interval_ * earned;
    }
  }
  if (tokens_ == 0) {
    ++suppressed_;
    return false;
  }
  --tokens_;
  suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

std::string escapeForLog(std::string_view bytes, std::size_t max) {
  static constexpr char kHex[] = "0123456789abcdef";
  const bool cut = bytes.size() > max;
  if (cut) bytes = bytes.substr(0, max);
  std::string out;
  out.reserve(bytes.size() + 8);
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += ch;
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (cut) out += "...";
  return out;
}

}  // namespace okna::core
