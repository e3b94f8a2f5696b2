#include "metadata/memory_budget.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/listener_guard.h"
#include "metadata/config.h"

namespace okna::metadata {

namespace {

// The connection, its strings at rest (the answer's head, the request's method and target) and
// Asio's state for its socket.
constexpr std::size_t kObjectBytes = 4096;
// The socket, its file and its epoll entry in the kernel.
constexpr std::size_t kKernelSocketBytes = 4096;
// v1 writes "no limit" as the largest page-aligned int64; anything this large is no limit.
constexpr std::uint64_t kNoLimitAbove = std::uint64_t{1} << 60;

std::uint64_t lowestOf(std::uint64_t a, std::uint64_t b) {
  if (a == 0) return b;
  if (b == 0) return a;
  return std::min(a, b);
}

// A limit file's value: bytes, or 0 for none ("max", absent, unlimited).
std::uint64_t readLimit(const std::string& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return 0;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
    if (value >= kNoLimitAbove) return 0;
  }
  return value;
}

// The lowest limit `file` sets from the cgroup `path` ("/a/b") up to the root of the hierarchy
// at `base`: base/a/b/file, base/a/file, base/file.
std::uint64_t lowestAlong(const std::string& base, const std::string& path,
                          const std::string& file) {
  std::uint64_t lowest = readLimit(base + "/" + file);
  for (std::size_t end = path.size(); end > 1; end = path.rfind('/', end - 1)) {
    const std::string dir = base + path.substr(0, end);
    lowest = lowestOf(lowest, readLimit(dir + "/" + file));
  }
  return lowest;
}

bool listsMemory(const std::string& controllers) {
  std::size_t start = 0;
  while (start <= controllers.size()) {
    const std::size_t end = std::min(controllers.find(',', start), controllers.size());
    if (controllers.compare(start, end - start, "memory") == 0) return true;
    start = end + 1;
  }
  return false;
}

// Seconds its answer would still take at the rate its VM has read it so far.
double secondsToDrain(std::size_t left, std::size_t taken, double elapsed) {
  if (taken == 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(left) * elapsed / static_cast<double>(taken);
}

}  // namespace

core::Status boundSocketBuffers(int listeningFd) {
  const int bytes = kSocketBufferBytes;
  for (const int option : {SO_SNDBUF, SO_RCVBUF}) {
    if (::setsockopt(listeningFd, SOL_SOCKET, option, &bytes, sizeof bytes) != 0)
      return core::makeError(std::string("setsockopt: ") + std::strerror(errno));
  }
  return {};
}

std::size_t connectionCharge(const MetadataLimits& limits) {
  const auto header = static_cast<std::size_t>(limits.maxRequestHeaderBytes);
  const auto body = static_cast<std::size_t>(limits.maxBodyBytes);
  // Send and receive queues, each twice the value asked (the kernel's bookkeeping).
  const std::size_t kernelQueues = 2 * 2 * static_cast<std::size_t>(kSocketBufferBytes);
  // The read buffer at its largest (server.cc: header + body + 4096) and the body parsed out.
  const std::size_t request = header + body + 4096 + body;
  return kObjectBytes + kKernelSocketBytes + kernelQueues + request + kKeptAnswerBytes;
}

std::uint64_t cgroupMemoryLimit(const std::string& root, const std::string& selfCgroupFile) {
  std::ifstream in(selfCgroupFile);
  std::uint64_t lowest = 0;
  // Lines "hierarchy:controllers:path"; v2's has no controllers.
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (path.empty() || path.front() != '/') continue;
    if (controllers.empty())
      lowest = lowestOf(lowest, lowestAlong(root, path, "memory.max"));
    else if (listsMemory(controllers))
      lowest = lowestOf(lowest, lowestAlong(root + "/memory", path, "memory.limit_in_bytes"));
  }
  return lowest;
}

BudgetChoice memoryBudgetFor(const MetadataLimits& limits, std::uint64_t cgroupLimit) {
  if (limits.memoryBudgetBytes > 0)
    return {static_cast<std::size_t>(limits.memoryBudgetBytes),
            "metadata.limits.memoryBudgetBytes"};
  if (cgroupLimit > 0) {
    const auto bytes = static_cast<std::size_t>(
        std::llround(limits.memoryBudgetFraction * static_cast<double>(cgroupLimit)));
    return {bytes, fmt::format("{} of the cgroup's memory limit of {} MiB",
                               limits.memoryBudgetFraction, cgroupLimit >> 20)};
  }
  return {kBudgetWithoutLimit, "no cgroup memory limit: the default"};
}

std::size_t connectionsWithin(std::size_t budget, std::size_t charge) {
  return std::max<std::size_t>(1, budget / 2 / std::max<std::size_t>(1, charge));
}

ConnectionCap totalConnectionCap(const MetadataLimits& limits, const MemoryBudget& budget) {
  if (limits.maxConnectionsTotal > 0)
    return {static_cast<std::size_t>(limits.maxConnectionsTotal),
            "metadata.limits.maxConnectionsTotal"};
  rlimit files{};
  const std::uint64_t soft = ::getrlimit(RLIMIT_NOFILE, &files) == 0 ? files.rlim_cur : 1024;
  constexpr std::size_t kHealthAndAdmin = 128;
  const std::size_t fds = core::connectionBudgetFor(soft);
  const std::size_t byFiles = fds > 2 * kHealthAndAdmin ? fds - kHealthAndAdmin : fds / 2;
  const std::size_t byMemory = connectionsWithin(budget.budget(), budget.perConnection());
  if (byFiles <= byMemory)
    return {byFiles,
            fmt::format("the file limit of {} (the memory budget holds {})", soft, byMemory)};
  return {byMemory,
          fmt::format("half the memory budget (the file limit of {} allows {})", soft, byFiles)};
}

void MemoryBudget::hold(Occupant& o, std::size_t memory, std::size_t answerBytes, std::size_t taken,
                        Occupant::TimePoint now) {
  drop(o);
  o.held_ = std::max<std::size_t>(1, memory);
  o.answerBytes_ = answerBytes;
  o.taken_ = taken;
  o.answerSince_ = now;
  o.holder_ = holders_.size();
  holders_.push_back(&o);
  held_ += o.held_;
}

void MemoryBudget::drop(Occupant& o) {
  if (o.held_ == 0) return;
  held_ -= o.held_;
  o.held_ = 0;
  Occupant* last = holders_.back();
  holders_[o.holder_] = last;
  last->holder_ = o.holder_;
  holders_.pop_back();
}

Occupant* MemoryBudget::costliest(Occupant::TimePoint now) const {
  Occupant* worst = nullptr;
  double worstSeconds = -1;
  for (Occupant* o : holders_) {
    const std::size_t left = o->answerBytes_ > o->taken_ ? o->answerBytes_ - o->taken_ : 0;
    const double elapsed = std::chrono::duration<double>(now - o->answerSince_).count();
    const double seconds = secondsToDrain(left, o->taken_, elapsed);
    if (worst == nullptr || seconds > worstSeconds ||
        (seconds == worstSeconds && o->held_ > worst->held_)) {
      worst = o;
      worstSeconds = seconds;
    }
  }
  return worst;
}

}  // namespace okna::metadata
