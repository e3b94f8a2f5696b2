#include "placement/zone_sync.h"

#include "core/logging.h"

namespace okna::placement {

namespace {

auto log() {
  return core::logger("placement");
}

std::string joinProblems(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

Task<core::Status> ZoneSyncer::sync(const std::optional<std::string>& zone, const std::string& host,
                                    const std::string& rootUuid) {
  if (settled_ && zone == settledZone_ && rootUuid == settledRoot_) co_return core::Status{};
  const std::optional<JoinedZone> before = store_.joinedZone();
  if (!zone && !before) {
    // No label and nothing joined: nothing to ask Nova.
    settled_ = true;
    settledZone_ = zone;
    settledRoot_ = rootUuid;
    co_return core::Status{};
  }
  std::optional<JoinedZone> after;
  std::vector<std::string> problems;
  // Hundreds of agents may create the same aggregate at once: a taken name means another agent
  // won; read again and join (bounded).
  for (int attempt = 0;; ++attempt) {
    auto aggregates = co_await nova_.aggregates();
    if (!aggregates) co_return aggregates.error();
    ZonePlan plan = planZoneMembership(zone, host, *aggregates, before);
    problems = plan.problems;
    after = plan.joinedAfter;
    if (plan.leave) {
      if (auto s = co_await nova_.removeHost(plan.leave->id, host); !s) co_return s;
      ++novaWrites_;
      log()->info("host {} left Nova aggregate {} (zone label {})", host, plan.leave->name,
                  zone ? "now " + *zone : "gone");
    }
    std::optional<NovaAggregate> join = plan.join;
    if (plan.create) {
      auto created = co_await nova_.createAggregate(plan.aggregateName, *zone);
      if (!created && created.error().code == 409 && attempt < 3) continue;
      if (!created) co_return created.error();
      ++novaWrites_;
      log()->info("created Nova aggregate {} (availability_zone {}, uuid {})", created->name, *zone,
                  created->uuid);
      join = *created;
      after = JoinedZone{created->name, created->uuid};
    }
    if (join) {
      auto added = co_await nova_.addHost(join->id, host);
      // 409: already a member (a concurrent pass, an operator): what we want.
      if (!added && added.error().code != 409) {
        // Recorded before failing: a created aggregate is this agent's to leave later.
        if (auto s = store_.setJoinedZone(after); !s) log()->warn("{}", s.error().message);
        co_return added.error();
      }
      if (added) ++novaWrites_;
      log()->info("host {} joined Nova aggregate {} (availability zone {})", host, join->name,
                  *zone);
    }
    break;
  }
  if (auto s = store_.setJoinedZone(after); !s)
    log()->warn("cannot remember the zone aggregate: {}", s.error().message);
  const auto uuidOf = [](const std::optional<JoinedZone>& z) -> std::optional<std::string> {
    if (!z || z->uuid.empty()) return std::nullopt;
    return z->uuid;
  };
  if (auto s = co_await mirror(rootUuid, uuidOf(before), uuidOf(after)); !s) co_return s;
  if (!problems.empty())
    co_return core::makeError("availability zone: " + joinProblems(problems), 409);
  settled_ = true;
  settledZone_ = zone;
  settledRoot_ = rootUuid;
  co_return core::Status{};
}

Task<core::Status> ZoneSyncer::mirror(const std::string& rootUuid,
                                      const std::optional<std::string>& before,
                                      const std::optional<std::string>& after) {
  for (int attempt = 0; attempt <= conflictRetries_; ++attempt) {
    auto view = co_await placement_.providerAggregates(rootUuid);
    if (!view) co_return view.error();
    const auto want = placementAggregates(view->aggregates, before, after);
    if (want == view->aggregates) co_return core::Status{};
    auto written = co_await placement_.putProviderAggregates(rootUuid, view->generation, want);
    if (written) {
      ++placementWrites_;
      log()->info("root provider {}: aggregates {} -> {} (zone aggregate {})", rootUuid,
                  view->aggregates.size(), want.size(), after.value_or("none"));
      co_return core::Status{};
    }
    // Another writer (an allocation, Nova's own mirroring): read again, keep what it added.
    if (!isConcurrentUpdate(written.error())) co_return written.error();
  }
  co_return core::makeError("aggregates of " + rootUuid + ": still conflicting after " +
                                std::to_string(conflictRetries_) + " retries",
                            409);
}

}  // namespace okna::placement
