#pragma once
// What the metadata server holds for VMs, and its bound (issue 36).
//
// Each connection is charged what it can hold besides an answer: its objects, its socket in the
// kernel with the send and receive queues its listener bounds (boundSocketBuffers), its request
// at the largest the limits allow, and the answer buffer it keeps for the next answer. An answer
// the VM has not yet taken is charged while it is held. The sum stays within the budget: the
// default cap on connections gives them at most half of it, and over it the connections that
// hold most and read least are closed first. The budget is a fraction of the cgroup's memory
// limit unless configured (metadata/README.md, "What a node holds at most").

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "metadata/admission.h"

namespace okna::metadata {

struct MetadataLimits;

// Asked of the kernel for each VM connection's send and receive queues (set on the listener;
// accepted sockets inherit it). The kernel doubles the value for its own bookkeeping.
inline constexpr int kSocketBufferBytes = 16 * 1024;
// An answer buffer up to this size is kept for the connection's next answer; a larger one is
// released once written.
inline constexpr std::size_t kKeptAnswerBytes = 16 * 1024;
// The budget when the process has no cgroup memory limit: what the chart's 256 MiB gives.
inline constexpr std::size_t kBudgetWithoutLimit = 128u << 20;

/** Bounds the kernel's queues of every connection the listener accepts (kSocketBufferBytes). */
core::Status boundSocketBuffers(int listeningFd);

/** What one connection can hold besides the answer it is writing, in bytes. */
std::size_t connectionCharge(const MetadataLimits& limits);

/**
 * The memory limit of the cgroup this process is in: the lowest memory.max (v2) or
 * memory.limit_in_bytes (v1) from its own cgroup up to the hierarchy's root, as
 * `selfCgroupFile` (/proc/self/cgroup) names it under `root`; 0 when none is set.
 */
std::uint64_t cgroupMemoryLimit(const std::string& root = "/sys/fs/cgroup",
                                const std::string& selfCgroupFile = "/proc/self/cgroup");

struct BudgetChoice {
  std::size_t bytes = 0;
  // Where it comes from, for the log line at start.
  std::string source;
};
/** limits.memoryBudgetBytes when set; else limits.memoryBudgetFraction of `cgroupLimit`; else
 *  (no limit) kBudgetWithoutLimit. */
BudgetChoice memoryBudgetFor(const MetadataLimits& limits, std::uint64_t cgroupLimit);

/** How many connections fit in half of `budget` at `charge` each (at least 1). */
std::size_t connectionsWithin(std::size_t budget, std::size_t charge);

class MemoryBudget;
struct ConnectionCap {
  std::size_t connections = 0;
  // Which bound set it, for the log line at start.
  std::string source;
};
/**
 * All namespaces together hold at most this many client connections: limits.maxConnectionsTotal
 * when set, else the smaller of what the file limit leaves (core::connectionBudgetFor, less 128
 * for the health and admin listeners) and what half the memory budget holds.
 */
ConnectionCap totalConnectionCap(const MetadataLimits& limits, const MemoryBudget& budget);

/** The bytes held for VMs, against the budget. On the loop; no allocation per request. */
class MemoryBudget {
 public:
  MemoryBudget(std::size_t budget, std::size_t perConnection)
      : budget_(budget), perConnection_(perConnection) {}

  void opened() { held_ += perConnection_; }
  void closed() { held_ -= perConnection_; }
  /** `o` holds an answer taking `memory` bytes, `answerBytes` on the wire, of which its VM has
   *  taken `taken` so far; written since `now`. */
  void hold(Occupant& o, std::size_t memory, std::size_t answerBytes, std::size_t taken,
            Occupant::TimePoint now);
  /** Its VM has taken `taken` bytes of the answer by now. */
  static void progress(Occupant& o, std::size_t taken) { o.taken_ = taken; }
  /** Its answer is written, or its connection closes: no longer charged. */
  void drop(Occupant& o);

  bool over() const { return held_ > budget_; }
  /**
   * The connection to close first when over: the one whose answer would take longest to go at
   * the rate its VM has read it so far (never, for one that has read none of it); among equals,
   * the one holding more. Null: no answer is held.
   */
  Occupant* costliest(Occupant::TimePoint now) const;

  std::size_t held() const { return held_; }
  std::size_t budget() const { return budget_; }
  std::size_t perConnection() const { return perConnection_; }
  static std::size_t heldBy(const Occupant& o) { return o.held_; }
  static std::size_t takenOf(const Occupant& o) { return o.taken_; }

 private:
  std::size_t budget_;
  std::size_t perConnection_;
  std::size_t held_ = 0;
  std::vector<Occupant*> holders_;
};

}  // namespace okna::metadata
