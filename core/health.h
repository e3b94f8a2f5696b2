#pragma once
// What /healthz and /readyz report. Liveness: the event loop and every worker thread beat a
// heartbeat; one that has been silent for too long makes /healthz fail, so the kubelet restarts
// a wedged agent. Readiness: every enabled component says when it has synced.

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace okna::core {

class HealthRegistry {
 public:
  using Clock = std::chrono::steady_clock;

  struct Check {
    std::string name;
    bool ok = false;
    // Why it is not ok (or a short status when it is).
    std::string detail;
  };

  /** A component that must sync before the agent is ready; starts not ready. */
  void addComponent(const std::string& name);
  void removeComponent(const std::string& name);
  void setReady(const std::string& name, bool ready, const std::string& detail = "");
  /** The components in name order. */
  std::vector<Check> readiness() const;
  /** One component (nullopt: not registered). */
  std::optional<Check> component(const std::string& name) const;
  bool ready() const;

  /** A thread or loop that must beat at least every `maxSilence`. Thread-safe. */
  void addHeartbeat(const std::string& name, Clock::duration maxSilence);
  void beat(const std::string& name);
  /** The thread is gone (it threw, or its loop ended): /healthz fails at once. Thread-safe. */
  void stopped(const std::string& name, const std::string& reason);
  std::vector<Check> liveness(Clock::time_point now = Clock::now()) const;
  bool live(Clock::time_point now = Clock::now()) const;

 private:
  struct Component {
    bool ready = false;
    std::string detail;
  };
  struct Beat {
    Clock::duration maxSilence{};
    Clock::time_point last{};
    // Set when the thread stopped: why.
    std::string stopped;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Component> components_;
  std::map<std::string, Beat> beats_;
};

}  // namespace okna::core
