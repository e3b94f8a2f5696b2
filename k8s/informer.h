#pragma once
// A reflector for one resource: LIST, then WATCH from the list's resourceVersion, keeping a
// local store of the objects and telling its handler about every change. It follows the real
// API server's contract: bookmarks move the resourceVersion, 410 Gone (HTTP or ERROR event)
// means relist, and a relist is diffed against the store so that no add, update or delete is
// lost across it. Failures back off with jitter; 401/403 name the missing permission.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "core/backoff.h"
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

  Informer(boost::asio::io_context& io, ApiClient& api, InformerConfig config,
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
  const InformerConfig& config() const { return config_; }

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
  void replace(std::map<std::string, nlohmann::json> fresh);
  void apply(EventType type, const nlohmann::json& object);
  void startList() { list(""); }
  std::string query(bool watch) const;
  void cancelInFlight();

  boost::asio::io_context& io_;
  ApiClient& api_;
  InformerConfig config_;
  core::MetricsRegistry& metrics_;
  Handler handler_;
  core::Backoff backoff_;
  std::mt19937 rng_{std::random_device{}()};
  boost::asio::steady_timer retryTimer_;
  core::HttpRequestHandlePtr inFlight_;
  // Bumped for every watch, so that lines of a cancelled stream already split are ignored.
  unsigned watchGeneration_ = 0;
  bool running_ = false;
  bool synced_ = false;
  std::string resourceVersion_;
  std::string lastError_;
  std::map<std::string, nlohmann::json> items_;
  // Pages of a LIST in progress.
  std::map<std::string, nlohmann::json> listing_;
};

const char* toString(Informer::EventType type);

}  // namespace okna::k8s
