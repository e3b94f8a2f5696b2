#pragma once
// A reflector for one resource: LIST, then WATCH from the list's resourceVersion, keeping a
// local store of the objects and telling its handler about every change. It follows the real
// API server's contract: bookmarks move the resourceVersion, 410 Gone (HTTP or ERROR event)
// means relist, and a relist is diffed against the store so that no add, update or delete is
// lost across it. Failures back off with jitter; 401/403 name the missing permission.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/backoff.h"
#include "core/clock.h"
#include "core/listener_guard.h"
#include "core/metrics.h"
#include "k8s/api_client.h"

namespace okna::k8s {

struct InformerConfig {
  // Resource name for messages, metrics and RBAC hints: "nodes", "pods".
  std::string resource;
  // Collection path: "/api/v1/nodes", "/api/v1/pods".
  std::string path;
  // "metadata.name=lab-1", "spec.nodeName=lab-1".
  std::string fieldSelector;
  // Each watch asks the server for a random timeoutSeconds in [min, max], so that a fleet of
  // agents does not reconnect in lockstep.
  std::chrono::seconds watchTimeoutMin{240};
  std::chrono::seconds watchTimeoutMax{480};
  core::BackoffConfig backoff;
  // LIST page size (limit=); 0 = no paging.
  int pageSize = 500;
  // An informer that has neither completed a LIST nor kept a WATCH open for this long while
  // failing reports itself failing (health(), okna_k8s_informer_failing), until it recovers.
  std::chrono::seconds failingAfter{60};
  // The most bytes of one LIST page (the request fails over it, with an error naming the limit,
  // and is retried as any failed LIST).
  std::size_t maxListBytes = kDefaultMaxListBytes;
  // The most bytes of one object: a watch event (one line of the stream) or an item of a LIST
  // over it is skipped (logged without its content, rate-limited; counted in
  // okna_k8s_informer_skipped_total), and the informer goes on.
  std::size_t maxObjectBytes = kDefaultMaxObjectBytes;
  // Trims an object to what the agent reads before it is stored and handed to the handler (the
  // Pods: k8s::trimPod); empty: whole objects.
  std::function<void(nlohmann::json& object)> keep;
};

class Informer {
 public:
  enum class EventType { Added, Modified, Deleted };
  struct Handler {
    // Every change to the store, in order; relists produce the differences as events.
    std::function<void(EventType type, const nlohmann::json& object)> onEvent;
    // After each complete LIST (the first one makes the informer synced).
    std::function<void()> onSynced;
    // A persistent failure (401/403/400), to surface in health details; optional.
    std::function<void(const std::string& error)> onError;
  };
  struct Health {
    bool ok = true;
    // Why it is failing, with the last error; empty when ok.
    std::string detail;
  };

  /** `clock` (the agent's core::AsioClock; tests a ManualClock) times the retries and measures
   *  failure durations and short watches; it must outlive the informer. */
  Informer(core::Clock& clock, ApiClient& api, InformerConfig config,
           core::MetricsRegistry& metrics, Handler handler);
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void start();
  /** Cancels the list or watch in flight; no handler runs afterwards. */
  void stop();

  bool hasSynced() const { return synced_; }
  /** Objects by "namespace/name". */
  const std::map<std::string, nlohmann::json>& items() const { return items_; }
  const std::string& resourceVersion() const { return resourceVersion_; }
  /** The last error, empty after a successful list or watch. */
  const std::string& lastError() const { return lastError_; }
  /** The delay of the last retry scheduled (backoff, or the server's Retry-After). */
  std::chrono::milliseconds retryDelay() const { return retryDelay_; }
  const InformerConfig& config() const { return config_; }
  /**
   * Failing: no LIST completed and no WATCH stayed open (or delivered an event) for
   * config.failingAfter while requests kept failing. Updates okna_k8s_informer_failing; the
   * agent polls it with its heartbeat.
   */
  Health health();

 private:
  void list(const std::string& continueToken);
  void onListPage(core::Result<core::HttpResponse> result);
  void watch();
  void onWatchLine(std::string_view line, unsigned generation);
  void onWatchDone(core::Result<core::HttpResponse> result, unsigned generation);
  void relist(const std::string& reason);
  void retry(void (Informer::*what)(), const std::string& reason,
             std::chrono::milliseconds atLeast = {});
  void failed(const core::HttpResponse& response, const RequestIntent& intent,
              void (Informer::*what)());
  void handlerFailed();
  // False when the handler failed on an object (logged, counted; kept out of the store).
  bool replace(std::map<std::string, nlohmann::json> fresh);
  void apply(EventType type, const nlohmann::json& object);
  // The store's gauges: its objects and about their bytes.
  void countStore();
  // An object over config_.maxObjectBytes: counted, and logged without its content.
  void skipped(std::size_t bytes, const char* what);
  void startList() { list(""); }
  std::string watchQuery() const;
  void cancelInFlight();
  using TimePoint = core::Clock::TimePoint;
  TimePoint now() const { return clock_.now(); }
  // A LIST completed or a watch proved itself: the current failure episode (if any) ends.
  void succeeded();
  // Runs a handler callback; an exception is logged and counted, and returns false.
  template <typename F>
  bool deliver(const char* what, const std::string& key, F&& call);
  core::Counter& errorsTotal(const std::string& reason);
  core::Counter& relistsTotal(const std::string& reason);

  core::Clock& clock_;
  ApiClient& api_;
  InformerConfig config_;
  core::MetricsRegistry& metrics_;
  Handler handler_;
  core::Backoff backoff_;
  std::mt19937 rng_{std::random_device{}()};
  std::unique_ptr<core::Timer> retryTimer_;
  core::HttpRequestHandlePtr inFlight_;
  // Bumped for every watch, so that lines of a cancelled stream already split are ignored.
  unsigned watchGeneration_ = 0;
  bool running_ = false;
  bool synced_ = false;
  std::string resourceVersion_;
  std::string lastError_;
  // Since when requests have been failing (empty while healthy).
  std::optional<TimePoint> failingSince_;
  // When the current watch answered 200 (empty while no watch is open), and its events so far.
  std::optional<TimePoint> watchOpenedAt_;
  unsigned watchEvents_ = 0;
  bool reportedFailing_ = false;
  core::LogThrottle skipLog_;
  std::chrono::milliseconds retryDelay_{0};
  std::map<std::string, nlohmann::json> items_;
  // Pages of a LIST in progress, its resourceVersion ("": quorum), and whether the page in
  // flight is a continuation.
  std::map<std::string, nlohmann::json> listing_;
  std::string listingRv_;
  bool continuing_ = false;
  // The watch cache could not serve the last LIST (410, too large): the next one reads etcd.
  bool rvUnavailable_ = false;
  // A relist happened and no watch event has come since: the next relist backs off.
  bool relistedWithoutEvents_ = false;
};

const char* toString(Informer::EventType type);

}  // namespace okna::k8s
