#include "k8s/events.h"

#include <ctime>
#include <nlohmann/json.hpp>

#include "core/logging.h"

namespace okna::k8s {

using nlohmann::json;

namespace {
constexpr auto kAggregationWindow = std::chrono::hours(1);
}

std::string rfc3339(std::chrono::system_clock::time_point at) {
  const std::time_t now = std::chrono::system_clock::to_time_t(at);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

EventRecorder::EventRecorder(ApiClient& api, const core::Clock& clock, EventTarget target)
    : api_(api), clock_(clock), target_(std::move(target)) {}

void EventRecorder::record(const std::string& type, const std::string& reason,
                           const std::string& message) {
  const std::string key = type + "\n" + reason + "\n" + message;
  const auto now = clock_.now();
  const auto wallNow = clock_.wallNow();
  const std::string ts = rfc3339(wallNow);
  auto log = core::logger("k8s");
  auto it = recent_.find(key);
  if (it != recent_.end() && now - it->second.first < kAggregationWindow) {
    Sent& s = it->second;
    ++s.count;
    const json patch = {{"count", s.count}, {"lastTimestamp", ts}};
    api_.patch("/api/v1/namespaces/default/events/" + s.name, PatchType::StrategicMerge, patch,
               [this, log, reason](core::Result<core::HttpResponse> r) {
                 if (r.ok() && r->status == 200) {
                   ++sent_;
                 } else {
                   log->warn("event {}: {}", reason,
                             r.ok() ? describeFailure(*r, {"patch", "events", "", "default"})
                                    : r.error().message);
                 }
               });
    return;
  }
  // Unique per agent start and event: node name, time and a sequence number.
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "%lx%x",
                static_cast<unsigned long>(std::chrono::system_clock::to_time_t(wallNow)),
                ++sequence_);
  const std::string name = target_.nodeName + "." + suffix;
  recent_[key] = Sent{name, 1, now};
  const json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", name}, {"namespace", "default"}}},
      {"involvedObject",
       {{"apiVersion", "v1"},
        {"kind", "Node"},
        {"name", target_.nodeName},
        {"uid", target_.nodeUid}}},
      {"type", type},
      {"reason", reason},
      {"message", message},
      {"source", {{"component", target_.component}, {"host", target_.nodeName}}},
      {"reportingComponent", target_.component},
      {"reportingInstance", target_.nodeName},
      {"count", 1},
      {"firstTimestamp", ts},
      {"lastTimestamp", ts},
  };
  api_.post("/api/v1/namespaces/default/events", event,
            [this, log, reason](core::Result<core::HttpResponse> r) {
              if (r.ok() && r->status == 201) {
                ++sent_;
              } else {
                log->warn("event {}: {}", reason,
                          r.ok() ? describeFailure(*r, {"create", "events", "", "default"})
                                 : r.error().message);
              }
            });
}

}  // namespace okna::k8s
