#pragma once
// Who gets a connection and a Nova slot on a network, and who gives way (issue 36).
//
// A client is who it is, not the address it uses: the VM port its address belongs to (all of a
// port's fixed IPs and its IPv6 link-local address are one client), found once, when the
// connection is accepted, and that port's project. Connections and requests in flight to Nova
// are counted per port, per project and per network. At a connection cap the connection in that
// scope that has done least (idle, its request still arriving, or its answer unread, for the
// longest time) gives way to the newcomer; one whose request is with Nova never does.
//
// Pure bookkeeping on the event loop: no socket, no timer, no allocation per request. The server
// (server.cc) seats each connection it accepts, admits its requests and closes whom it is told
// to; tests/unit/metadata/admission_test.cc drives it with plain Occupants.

#include <chrono>
#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/clock.h"

namespace okna::metadata {

struct MetadataLimits;
class Occupant;

// Where counts are kept, narrowest first; a request takes its Nova slots in this order.
enum class Scope { Port, Project, Network };

// How many connections and requests in flight each scope may hold.
struct Caps {
  static constexpr std::size_t kUnbounded = static_cast<std::size_t>(-1);

  std::size_t connectionsPerPort = 8;
  std::size_t connectionsPerProject = 32;
  std::size_t connectionsPerNetwork = 64;
  std::size_t inFlightPerPort = 4;
  std::size_t inFlightPerProject = 8;
  std::size_t inFlightPerNetwork = 16;

  /** From the configuration: a project's caps are its share of the network's, never less than
   *  one port's; kUnbounded when that is the whole network's (the network's cap binds). */
  static Caps from(const MetadataLimits& limits);
  std::size_t connections(Scope s) const;
  std::size_t inFlight(Scope s) const;
};

// Connections and Nova slots held in one scope, and the requests waiting there for a slot, in
// order (a list: nearly always empty, and a deque allocates as it is constructed).
struct Tally {
  std::size_t connections = 0;
  std::size_t inFlight = 0;
  std::list<Occupant*> waiting;
  // Its key in Seats' map (a port or project id), to erase it once its last connection closes.
  const std::string* key = nullptr;
};

// What a connection is doing, for choosing who gives way.
enum class Activity {
  Waiting,    // idle, or its request's bytes still arriving
  Asking,     // its request waits for a Nova slot or is at Nova: never closed to make room
  Answering,  // its answer is being written and the VM has not read all of it yet
};

// One connection as admission (and the memory budget, memory_budget.h) sees it; the server's
// Connection is one. The state below is theirs: the server only sets the activity.
class Occupant {
 public:
  using TimePoint = core::Clock::TimePoint;
  virtual ~Occupant() = default;

  /** Its request holds a slot in every scope: send it to Nova. False when it cannot use them (too
   *  little is left of its deadline); its slots then go to the next. Must not close anything. */
  virtual bool proceed() = 0;
  /** Its request waits for a slot in `scope` (the server counts it and bounds the wait). */
  virtual void waitsAt(Scope scope) = 0;

  Activity activity() const { return activity_; }
  /** When the current activity began. */
  TimePoint since() const { return since_; }
  void setActivity(Activity activity, TimePoint now) {
    activity_ = activity;
    since_ = now;
  }
  bool queued() const { return queuedAt_ != nullptr; }

 private:
  friend class Seats;
  friend class MemoryBudget;
  Activity activity_ = Activity::Waiting;
  TimePoint since_{};
  // Seats: its port's and project's tallies, its place among the network's connections, the
  // scopes whose slot it holds (Port up to but excluding `slots_`), where it waits.
  Tally* port_ = nullptr;
  Tally* project_ = nullptr;
  std::size_t seat_ = 0;
  int slots_ = 0;
  Tally* queuedAt_ = nullptr;
  std::list<Occupant*>::iterator queuePosition_{};
  // MemoryBudget: the memory its answer holds, the answer's bytes on the wire and how many the
  // VM has taken, since when, and its place among the holders (none while held_ is 0).
  std::size_t held_ = 0;
  std::size_t answerBytes_ = 0;
  std::size_t taken_ = 0;
  TimePoint answerSince_{};
  std::size_t holder_ = 0;
};

// The connections of one network, counted per port and per project, and their Nova slots.
class Seats {
 public:
  explicit Seats(const Caps& caps) : caps_(caps) {}
  Seats(const Seats&) = delete;
  Seats& operator=(const Seats&) = delete;

  /** The narrowest scope where a newcomer of `port` (of `project`) finds no room; none: room. */
  std::optional<Scope> full(const std::string& port, const std::string& project) const;
  /** The connection in that scope of `port` that has done least: doing nothing for Nova
   *  (Waiting or Answering) since the earliest time. Null: every one is Asking. */
  Occupant* leastDone(Scope scope, const std::string& port, const std::string& project) const;
  /** Counts a new connection (Waiting since `now`). A port without a project is a project of
   *  its own. */
  void seat(Occupant& o, const std::string& port, const std::string& project,
            Occupant::TimePoint now);
  /** Uncounts a closing connection: its slots go to the next requests, its place in a queue is
   *  left. Must not be called from proceed() or waitsAt(). */
  void unseat(Occupant& o);

  /** Its request is ready: takes its slots in order (port, project, network), waiting where
   *  one is full; proceed() once it holds all three. */
  void admit(Occupant& o);
  /** Its request is done (answered by Nova, or answered 503 while it waited): its slots go to
   *  the next requests, and it leaves the queue it was in. */
  void release(Occupant& o);

  std::size_t connections() const { return members_.size(); }
  const std::vector<Occupant*>& members() const { return members_; }
  /** Near its cap (3/4): connections doing nothing for Nova give way sooner (busyIdleTimeout). */
  bool busy() const { return members_.size() * 4 >= caps_.connectionsPerNetwork * 3; }
  /** For tests and the server's log lines; null when the port or project holds nothing. */
  const Tally* port(const std::string& port) const;
  const Tally* project(const std::string& project) const;
  const Tally& network() const { return network_; }

 private:
  Tally& tally(Occupant& o, Scope s);
  void advance(Occupant& o);
  void handOn(Tally& t, Scope s);
  void fill(Tally& t, Scope s);
  void giveBack(Occupant& o);
  void leaveQueue(Occupant& o);
  static void forget(std::unordered_map<std::string, Tally>& map, Tally* t);

  Caps caps_;
  std::unordered_map<std::string, Tally> ports_;
  std::unordered_map<std::string, Tally> projects_;
  Tally network_;
  std::vector<Occupant*> members_;
  // Slots freed while slots were being handed on: handed on in turn, by the outermost call (a
  // request that cannot use its slots frees them again, so the chain has no fixed length).
  std::vector<std::pair<Tally*, Scope>> freed_;
  bool handingOn_ = false;
};

/** Whether `o` has done nothing for Nova (Waiting or Answering) for at least `limit`: on a busy
 *  network such a connection is closed (busyIdleTimeout). */
bool overstays(const Occupant& o, Occupant::TimePoint now, std::chrono::milliseconds limit);

}  // namespace okna::metadata
