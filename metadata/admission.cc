#include "metadata/admission.h"

#include <algorithm>
#include <cmath>

#include "metadata/config.h"

namespace okna::metadata {

namespace {

constexpr int kScopes = 3;

// `fraction` of `whole`, rounded up, at least `floor` (one VM's own cap). A share that is the
// whole never binds before the network does: unbounded, so that the network's limit is the one
// that waits and counts (on a network of one project, "namespace").
std::size_t shareOf(double fraction, std::size_t whole, std::size_t floor) {
  const auto share = static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(whole)));
  const std::size_t capped = std::max(share, floor);
  return capped >= whole ? Caps::kUnbounded : capped;
}

std::size_t count(const std::unordered_map<std::string, Tally>& map, const std::string& key) {
  const auto it = map.find(key);
  return it == map.end() ? 0 : it->second.connections;
}

const Tally* find(const std::unordered_map<std::string, Tally>& map, const std::string& key) {
  const auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

// A port without a project counts as a project of its own.
const std::string& projectKey(const std::string& port, const std::string& project) {
  return project.empty() ? port : project;
}

Tally& entry(std::unordered_map<std::string, Tally>& map, const std::string& key) {
  auto [it, inserted] = map.try_emplace(key);
  if (inserted) it->second.key = &it->first;
  return it->second;
}

}  // namespace

Caps Caps::from(const MetadataLimits& limits) {
  Caps c;
  c.connectionsPerNetwork = static_cast<std::size_t>(limits.maxConnectionsPerNamespace);
  c.connectionsPerPort = static_cast<std::size_t>(limits.maxConnectionsPerClient);
  c.connectionsPerProject =
      shareOf(limits.projectShare, c.connectionsPerNetwork, c.connectionsPerPort);
  c.inFlightPerNetwork = static_cast<std::size_t>(limits.maxInFlightPerNamespace);
  c.inFlightPerPort = static_cast<std::size_t>(limits.maxInFlightPerClient);
  c.inFlightPerProject = shareOf(limits.projectShare, c.inFlightPerNetwork, c.inFlightPerPort);
  return c;
}

std::size_t Caps::connections(Scope s) const {
  switch (s) {
    case Scope::Port:
      return connectionsPerPort;
    case Scope::Project:
      return connectionsPerProject;
    case Scope::Network:
      break;
  }
  return connectionsPerNetwork;
}

std::size_t Caps::inFlight(Scope s) const {
  switch (s) {
    case Scope::Port:
      return inFlightPerPort;
    case Scope::Project:
      return inFlightPerProject;
    case Scope::Network:
      break;
  }
  return inFlightPerNetwork;
}

std::optional<Scope> Seats::full(const std::string& port, const std::string& project) const {
  if (count(ports_, port) >= caps_.connectionsPerPort) return Scope::Port;
  if (count(projects_, projectKey(port, project)) >= caps_.connectionsPerProject)
    return Scope::Project;
  if (members_.size() >= caps_.connectionsPerNetwork) return Scope::Network;
  return std::nullopt;
}

Occupant* Seats::leastDone(Scope scope, const std::string& port, const std::string& project) const {
  const Tally* within = nullptr;
  if (scope == Scope::Port) within = find(ports_, port);
  if (scope == Scope::Project) within = find(projects_, projectKey(port, project));
  if (scope != Scope::Network && within == nullptr) return nullptr;
  Occupant* best = nullptr;
  for (Occupant* o : members_) {
    if (o->activity_ == Activity::Asking) continue;
    if (scope == Scope::Port && o->port_ != within) continue;
    if (scope == Scope::Project && o->project_ != within) continue;
    if (best == nullptr || o->since_ < best->since_) best = o;
  }
  return best;
}

void Seats::seat(Occupant& o, const std::string& port, const std::string& project,
                 Occupant::TimePoint now) {
  o.port_ = &entry(ports_, port);
  o.project_ = &entry(projects_, projectKey(port, project));
  ++o.port_->connections;
  ++o.project_->connections;
  ++network_.connections;
  o.seat_ = members_.size();
  members_.push_back(&o);
  o.slots_ = 0;
  o.queuedAt_ = nullptr;
  o.setActivity(Activity::Waiting, now);
}

void Seats::unseat(Occupant& o) {
  if (o.port_ == nullptr) return;
  release(o);
  --o.port_->connections;
  --o.project_->connections;
  --network_.connections;
  Occupant* last = members_.back();
  members_[o.seat_] = last;
  last->seat_ = o.seat_;
  members_.pop_back();
  forget(ports_, o.port_);
  forget(projects_, o.project_);
  o.port_ = nullptr;
  o.project_ = nullptr;
}

void Seats::forget(std::unordered_map<std::string, Tally>& map, Tally* t) {
  // No connection left means no slot held and nobody waiting: the entry goes.
  if (t->connections == 0) map.erase(map.find(*t->key));
}

void Seats::admit(Occupant& o) {
  advance(o);
}

void Seats::release(Occupant& o) {
  leaveQueue(o);
  giveBack(o);
}

Tally& Seats::tally(Occupant& o, Scope s) {
  switch (s) {
    case Scope::Port:
      return *o.port_;
    case Scope::Project:
      return *o.project_;
    case Scope::Network:
      break;
  }
  return network_;
}

// Takes the request's next slots in order; waits where one is full; with all of them, proceeds.
void Seats::advance(Occupant& o) {
  while (o.slots_ < kScopes) {
    const auto scope = static_cast<Scope>(o.slots_);
    Tally& t = tally(o, scope);
    if (t.inFlight >= caps_.inFlight(scope)) {
      o.queuedAt_ = &t;
      o.queuePosition_ = t.waiting.insert(t.waiting.end(), &o);
      o.waitsAt(scope);
      return;
    }
    ++t.inFlight;
    ++o.slots_;
  }
  if (!o.proceed()) giveBack(o);
}

// Gives back every slot it holds, the widest scope first.
void Seats::giveBack(Occupant& o) {
  while (o.slots_ > 0) {
    --o.slots_;
    const auto scope = static_cast<Scope>(o.slots_);
    Tally& t = tally(o, scope);
    --t.inFlight;
    // Nearly always nobody waits: nothing to hand on.
    if (!t.waiting.empty()) handOn(t, scope);
  }
}

void Seats::handOn(Tally& t, Scope s) {
  freed_.emplace_back(&t, s);
  if (handingOn_) return;
  handingOn_ = true;
  while (!freed_.empty()) {
    const auto [tally, scope] = freed_.back();
    freed_.pop_back();
    fill(*tally, scope);
  }
  handingOn_ = false;
}

// Free slots of `t` go to the requests waiting there, in order.
void Seats::fill(Tally& t, Scope s) {
  while (!t.waiting.empty() && t.inFlight < caps_.inFlight(s)) {
    Occupant& next = *t.waiting.front();
    leaveQueue(next);
    ++t.inFlight;
    ++next.slots_;
    advance(next);
  }
}

void Seats::leaveQueue(Occupant& o) {
  if (o.queuedAt_ == nullptr) return;
  o.queuedAt_->waiting.erase(o.queuePosition_);
  o.queuedAt_ = nullptr;
}

const Tally* Seats::port(const std::string& port) const {
  return find(ports_, port);
}

const Tally* Seats::project(const std::string& project) const {
  return find(projects_, project);
}

bool overstays(const Occupant& o, Occupant::TimePoint now, std::chrono::milliseconds limit) {
  return o.activity() != Activity::Asking && now - o.since() >= limit;
}

}  // namespace okna::metadata
