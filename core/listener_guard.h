#pragma once
// What every listener of the agent (the metadata namespaces' and the health endpoint's) shares
// against a flood of connections from whoever can reach it:
//   - a file-descriptor budget: the soft RLIMIT_NOFILE raised to the hard one at start, and
//     connection caps that add up to less than it, so accepted connections can never starve the
//     agent's own descriptors (OVSDB, netlink, namespaces, Kubernetes, Nova, Placement);
//   - accept retries that back off when accept() fails (EMFILE, ENFILE, ENOBUFS): re-posting the
//     accept at once spins the loop (measured: 5.0 M warnings, 483 MB of log in 20 s, timers
//     starved);
//   - log lines that a client can trigger, written at most once per interval with a count of
//     those dropped, and client bytes escaped before they reach a line.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace okna::core {

/** The soft and hard RLIMIT_NOFILE after raiseFileLimit(). */
struct FileLimit {
  std::uint64_t soft = 0;
  std::uint64_t hard = 0;
  // The soft limit before it was raised.
  std::uint64_t before = 0;
};

/** Raises the soft RLIMIT_NOFILE to the hard limit (as systemd advises daemons to do). */
Result<FileLimit> raiseFileLimit();

/** How many accepted connections all listeners together may hold under `fileLimit`: what is left
 *  after a reserve for the agent's own descriptors (a quarter, at least 256), never below 16. */
std::size_t connectionBudgetFor(std::uint64_t fileLimit);

/** The delay before the next accept after `consecutiveFailures` failed ones: 10 ms doubling to
 *  1 s. Pure. */
std::chrono::milliseconds acceptRetryDelay(unsigned consecutiveFailures);

/** Log lines a client can trigger, as a token bucket: `burst` lines at once, then one per
 *  `interval`. allow() says whether to write now and how many calls it refused since the last
 *  line it allowed (to be said in that line). Not thread-safe: one per loop. */
class LogThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogThrottle(Clock::duration interval = std::chrono::seconds(10), unsigned burst = 1)
      : interval_(interval), burst_(burst), tokens_(burst) {}
  bool allow(Clock::time_point now, std::uint64_t& suppressed);

 private:
  Clock::duration interval_;
  unsigned burst_;
  unsigned tokens_;
  Clock::time_point refilled_{};
  std::uint64_t suppressed_ = 0;
};

/** Bytes from a client, safe in a log line: printable ASCII kept, backslash, controls, DEL and
 *  every byte >= 0x80 (so no bidi override or terminal escape survives) as \xNN, cut to `max`
 *  bytes of input with "..." appended. */
std::string escapeForLog(std::string_view bytes, std::size_t max = 256);

}  // namespace okna::core
