#pragma once
// Kubernetes Events about the agent's own Node (kubectl describe node shows them). Repeats of the
// same reason and message within an hour are folded into one Event whose count is patched, the
// way client-go's recorder aggregates them, so a flapping condition does not flood etcd.

#include <chrono>
#include <map>
#include <string>

#include "core/clock.h"
#include "k8s/api_client.h"

namespace okna::k8s {

struct EventTarget {
  std::string nodeName;
  std::string nodeUid;
  // source.component and reportingController.
  std::string component = "openkeel-node-agent";
};

class EventRecorder {
 public:
  /** `clock`: the Events' timestamps and the aggregation window. */
  EventRecorder(ApiClient& api, const core::Clock& clock, EventTarget target);

  /** type: "Normal" or "Warning"; reason: UpperCamelCase. Fire and forget; failures are logged. */
  void record(const std::string& type, const std::string& reason, const std::string& message);
  void setNodeUid(const std::string& uid) { target_.nodeUid = uid; }
  /** Events sent (created or patched), for tests and metrics. */
  unsigned sent() const { return sent_; }

 private:
  struct Sent {
    std::string name;
    int count = 0;
    std::chrono::steady_clock::time_point first;
  };
  ApiClient& api_;
  const core::Clock& clock_;
  EventTarget target_;
  std::map<std::string, Sent> recent_;
  unsigned sent_ = 0;
  unsigned sequence_ = 0;
};

/** RFC 3339 UTC timestamp with second precision, as Event timestamps use. */
std::string rfc3339(std::chrono::system_clock::time_point at);

}  // namespace okna::k8s
