#include "k8s/informer.h"

#include "core/logging.h"
#include "k8s/objects.h"

namespace okna::k8s {

using nlohmann::json;
using std::chrono::milliseconds;

namespace {

// A watch that outlives its server timeout by this much is presumed dead (half-open TCP).
constexpr milliseconds kWatchSlack{30000};

milliseconds retryAfter(const core::HttpResponse& r) {
  auto it = r.headers.find("retry-after");
  if (it == r.headers.end()) return milliseconds{0};
  const long s = std::strtol(it->second.c_str(), nullptr, 10);
  return milliseconds{s > 0 && s < 600 ? s * 1000 : 0};
}

}  // namespace

const char* toString(Informer::EventType type) {
  switch (type) {
    case Informer::EventType::Added:
      return "ADDED";
    case Informer::EventType::Modified:
      return "MODIFIED";
    case Informer::EventType::Deleted:
      return "DELETED";
  }
  return "?";
}

Informer::Informer(boost::asio::io_context& io, ApiClient& api, InformerConfig config,
                   core::MetricsRegistry& metrics, Handler handler)
    : io_(io),
      api_(api),
      config_(std::move(config)),
      metrics_(metrics),
      handler_(std::move(handler)),
      backoff_(config_.backoff),
      retryTimer_(io) {
  metrics_.gauge("okna_k8s_informer_synced", "1 when the informer has completed its first LIST",
                 {{"resource", config_.resource}});
}

Informer::~Informer() {
  stop();
}

void Informer::start() {
  if (running_) return;
  running_ = true;
  startList();
}

void Informer::stop() {
  running_ = false;
  retryTimer_.cancel();
  cancelInFlight();
}

void Informer::cancelInFlight() {
  ++watchGeneration_;
  if (inFlight_) inFlight_->cancel();
  inFlight_.reset();
}

std::string Informer::query(bool watch) const {
  std::string q;
  if (!config_.fieldSelector.empty()) q += "&fieldSelector=" + urlEncode(config_.fieldSelector);
  if (watch) {
    q = "?watch=true&allowWatchBookmarks=true&resourceVersion=" + urlEncode(resourceVersion_) + q;
  } else if (config_.pageSize > 0) {
    q = "?limit=" + std::to_string(config_.pageSize) + q;
  } else if (!q.empty()) {
    q[0] = '?';
  }
  return q;
}

void Informer::list(const std::string& continueToken) {
  if (!running_) return;
  if (continueToken.empty()) listing_.clear();
  std::string path = config_.path + query(false);
  if (!continueToken.empty())
    path += (path.find('?') == std::string::npos ? "?" : "&") + std::string("continue=") +
            urlEncode(continueToken);
  core::logger("k8s")->debug("LIST {}", path);
  inFlight_ =
      api_.get(path, [this](core::Result<core::HttpResponse> r) { onListPage(std::move(r)); });
}

void Informer::onListPage(core::Result<core::HttpResponse> result) {
  inFlight_.reset();
  const RequestIntent intent{"list", config_.resource, "", ""};
  if (!result.ok()) return retry(&Informer::startList, "list: " + result.error().message);
  const core::HttpResponse& r = *result;
  if (r.status == 410) {
    // The continue token expired (etcd compaction): start the list over.
    metrics_
        .counter("okna_k8s_informer_relists_total", "LISTs started over",
                 {{"resource", config_.resource}, {"reason", "expired"}})
        .inc();
    return list("");
  }
  if (r.status != 200) return failed(r, intent, &Informer::startList);
  json body = json::parse(r.body, nullptr, false);
  if (!body.is_object() || !body.contains("items") || !body["items"].is_array())
    return retry(&Informer::startList, "list " + config_.resource + ": the response is not a List");
  for (auto& item : body["items"]) {
    const std::string key = objectKey(item);
    if (!key.empty()) listing_[key] = std::move(item);
  }
  const json& meta = body["metadata"];
  const std::string next = meta.is_object() ? meta.value("continue", "") : "";
  if (!next.empty()) return list(next);

  resourceVersion_ = meta.is_object() ? meta.value("resourceVersion", "") : "";
  replace(std::move(listing_));
  listing_.clear();
  lastError_.clear();
  backoff_.reset();
  const bool first = !synced_;
  synced_ = true;
  metrics_
      .gauge("okna_k8s_informer_synced", "1 when the informer has completed its first LIST",
             {{"resource", config_.resource}})
      .set(1);
  metrics_
      .gauge("okna_k8s_informer_objects", "Objects in the informer's store",
             {{"resource", config_.resource}})
      .set(static_cast<double>(items_.size()));
  core::logger("k8s")->info("{} informer {}: {} object(s) at resourceVersion {}", config_.resource,
                            first ? "synced" : "relisted", items_.size(), resourceVersion_);
  if (handler_.onSynced) handler_.onSynced();
  watch();
}

void Informer::watch() {
  if (!running_) return;
  std::uniform_int_distribution<long> dist(
      config_.watchTimeoutMin.count(),
      std::max(config_.watchTimeoutMin.count(), config_.watchTimeoutMax.count()));
  const long timeoutSeconds = dist(rng_);
  const std::string path =
      config_.path + query(true) + "&timeoutSeconds=" + std::to_string(timeoutSeconds);
  const unsigned generation = ++watchGeneration_;
  metrics_
      .counter("okna_k8s_informer_watches_total", "WATCH requests started",
               {{"resource", config_.resource}})
      .inc();
  core::logger("k8s")->debug("WATCH {}", path);
  ApiClient::WatchCallbacks cb;
  cb.onLine = [this, generation](std::string_view line) { onWatchLine(line, generation); };
  cb.onDone = [this, generation](core::Result<core::HttpResponse> r) {
    onWatchDone(std::move(r), generation);
  };
  inFlight_ = api_.watch(path, milliseconds(timeoutSeconds * 1000) + kWatchSlack, std::move(cb));
}

void Informer::onWatchLine(std::string_view line, unsigned generation) {
  if (generation != watchGeneration_ || !running_) return;
  json event = json::parse(line, nullptr, false);
  if (!event.is_object() || !event.contains("type") || !event.contains("object") ||
      !event["object"].is_object()) {
    metrics_
        .counter("okna_k8s_informer_errors_total", "Informer errors",
                 {{"resource", config_.resource}, {"reason", "decode"}})
        .inc();
    core::logger("k8s")->warn("{} watch: undecodable event skipped; relisting to stay consistent",
                              config_.resource);
    return relist("decode");
  }
  const std::string type = event["type"].is_string() ? event["type"].get<std::string>() : "";
  json& object = event["object"];
  const std::string rv = object.contains("metadata") && object["metadata"].is_object()
                             ? object["metadata"].value("resourceVersion", "")
                             : "";
  if (type == "ERROR") {
    const int code = object.value("code", 0);
    const std::string message = object.value("message", "");
    if (code == 410) {
      core::logger("k8s")->info("{} watch: resourceVersion expired ({}); relisting",
                                config_.resource, message);
      return relist("expired");
    }
    metrics_
        .counter("okna_k8s_informer_errors_total", "Informer errors",
                 {{"resource", config_.resource}, {"reason", "watch-error-event"}})
        .inc();
    cancelInFlight();
    return retry(&Informer::watch, "watch ERROR event " + std::to_string(code) + ": " + message);
  }
  metrics_
      .counter("okna_k8s_informer_events_total", "Watch events received",
               {{"resource", config_.resource}, {"type", type}})
      .inc();
  if (type == "BOOKMARK") {
    if (!rv.empty()) resourceVersion_ = rv;
    return;
  }
  EventType t;
  if (type == "ADDED") {
    t = EventType::Added;
  } else if (type == "MODIFIED") {
    t = EventType::Modified;
  } else if (type == "DELETED") {
    t = EventType::Deleted;
  } else {
    core::logger("k8s")->warn("{} watch: unknown event type \"{}\" ignored", config_.resource,
                              type);
    return;
  }
  if (!rv.empty()) resourceVersion_ = rv;
  apply(t, object);
}

void Informer::onWatchDone(core::Result<core::HttpResponse> result, unsigned generation) {
  if (generation != watchGeneration_ || !running_) return;
  inFlight_.reset();
  if (!result.ok()) return retry(&Informer::watch, "watch: " + result.error().message);
  const core::HttpResponse& r = *result;
  if (r.status == 200) {
    // The server closed the stream at timeoutSeconds: a healthy watch; continue from where it was.
    lastError_.clear();
    backoff_.reset();
    return watch();
  }
  if (r.status == 410) return relist("expired");
  failed(r, RequestIntent{"watch", config_.resource, "", ""}, &Informer::watch);
}

void Informer::failed(const core::HttpResponse& r, const RequestIntent& intent,
                      void (Informer::*what)()) {
  const std::string message = describeFailure(r, intent);
  if (r.status == 401) api_.credentialsRejected();
  if ((r.status == 401 || r.status == 403 || r.status == 400) && handler_.onError)
    handler_.onError(message);
  retry(what, message, retryAfter(r));
}

void Informer::retry(void (Informer::*what)(), const std::string& reason, milliseconds atLeast) {
  if (!running_) return;
  cancelInFlight();
  const milliseconds delay = std::max(backoff_.next(), atLeast);
  lastError_ = reason;
  metrics_
      .counter("okna_k8s_informer_errors_total", "Informer errors",
               {{"resource", config_.resource}, {"reason", "request"}})
      .inc();
  core::logger("k8s")->warn("{} informer: {}; retrying in {} ms", config_.resource, reason,
                            delay.count());
  retryTimer_.expires_after(delay);
  retryTimer_.async_wait([this, what](const boost::system::error_code& ec) {
    if (!ec && running_) (this->*what)();
  });
}

void Informer::relist(const std::string& reason) {
  cancelInFlight();
  metrics_
      .counter("okna_k8s_informer_relists_total", "LISTs started over",
               {{"resource", config_.resource}, {"reason", reason}})
      .inc();
  list("");
}

void Informer::replace(std::map<std::string, json> fresh) {
  // Deletions first, then additions and changes: what a watch would have shown.
  for (auto it = items_.begin(); it != items_.end();) {
    if (fresh.count(it->first) == 0) {
      json gone = std::move(it->second);
      it = items_.erase(it);
      if (handler_.onEvent) handler_.onEvent(EventType::Deleted, gone);
    } else {
      ++it;
    }
  }
  for (auto& [key, object] : fresh) {
    auto it = items_.find(key);
    if (it == items_.end()) {
      auto& stored = items_[key] = std::move(object);
      if (handler_.onEvent) handler_.onEvent(EventType::Added, stored);
    } else if (it->second != object) {
      it->second = std::move(object);
      if (handler_.onEvent) handler_.onEvent(EventType::Modified, it->second);
    }
  }
}

void Informer::apply(EventType type, const json& object) {
  const std::string key = objectKey(object);
  if (key.empty()) return;
  if (type == EventType::Deleted) {
    items_.erase(key);
  } else {
    items_[key] = object;
  }
  metrics_
      .gauge("okna_k8s_informer_objects", "Objects in the informer's store",
             {{"resource", config_.resource}})
      .set(static_cast<double>(items_.size()));
  if (handler_.onEvent) handler_.onEvent(type, object);
}

}  // namespace okna::k8s
