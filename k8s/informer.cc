#include "k8s/informer.h"

#include <nlohmann/json.hpp>

#include "core/logging.h"
#include "k8s/objects.h"

namespace okna::k8s {

using nlohmann::json;
using std::chrono::milliseconds;

namespace {

// A watch that outlives its server timeout by this much is presumed dead (half-open TCP).
constexpr milliseconds kWatchSlack{30000};
// A watch open this long (or one that delivered an event) works: as client-go's reflector, a
// shorter one without events is a failure, retried with backoff, not at once.
constexpr milliseconds kMinWatch{1000};

const char* const kEventTypes[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK"};
const char* const kErrorReasons[] = {"decode", "watch-error-event", "request", "handler"};
const char* const kRelistReasons[] = {"expired", "decode", "handler"};

// A string member, or "" when it is absent or of another type: server data never throws.
std::string stringField(const json& o, const char* key) {
  if (!o.is_object()) return {};
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

long seconds(std::chrono::steady_clock::duration d) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(d).count());
}

// About the bytes of `j` as compact JSON (escapes not counted), without writing it: what a listed
// object weighs against the limit of one object, and what the store holds.
std::size_t jsonBytes(const nlohmann::json& j) {
  switch (j.type()) {
    case json::value_t::object: {
      std::size_t n = 2;
      for (auto it = j.begin(); it != j.end(); ++it) n += it.key().size() + 4 + jsonBytes(*it);
      return n;
    }
    case json::value_t::array: {
      std::size_t n = 2;
      for (const auto& v : j) n += jsonBytes(v) + 1;
      return n;
    }
    case json::value_t::string:
      return j.get_ref<const std::string&>().size() + 2;
    default:
      return 8;
  }
}

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

Informer::Informer(core::Clock& clock, ApiClient& api, InformerConfig config,
                   core::MetricsRegistry& metrics, Handler handler)
    : clock_(clock),
      api_(api),
      config_(std::move(config)),
      metrics_(metrics),
      handler_(std::move(handler)),
      backoff_(config_.backoff),
      retryTimer_(clock.makeTimer()) {
  // Every series exists from the start, at 0, not after its first increment.
  const core::Labels r{{"resource", config_.resource}};
  metrics_.gauge("okna_k8s_informer_synced", "1 when the informer has completed its first LIST", r);
  metrics_.gauge("okna_k8s_informer_objects", "Objects in the informer's store", r);
  metrics_.gauge("okna_k8s_informer_object_bytes",
                 "About the bytes (as JSON) of the objects in the informer's store, as kept", r);
  metrics_.counter("okna_k8s_informer_skipped_total",
                   "Objects not read: over the limit of one object (maxObjectBytes)", r);
  metrics_.gauge("okna_k8s_informer_failing",
                 "1 while the informer has been failing for longer than its bound", r);
  metrics_.counter("okna_k8s_informer_watches_total", "WATCH requests started", r);
  for (const char* type : kEventTypes)
    metrics_.counter("okna_k8s_informer_events_total", "Watch events received",
                     {{"resource", config_.resource}, {"type", type}});
  for (const char* reason : kErrorReasons) errorsTotal(reason);
  for (const char* reason : kRelistReasons) relistsTotal(reason);
}

core::Counter& Informer::errorsTotal(const std::string& reason) {
  return metrics_.counter("okna_k8s_informer_errors_total", "Informer errors",
                          {{"resource", config_.resource}, {"reason", reason}});
}

core::Counter& Informer::relistsTotal(const std::string& reason) {
  return metrics_.counter("okna_k8s_informer_relists_total", "LISTs started over",
                          {{"resource", config_.resource}, {"reason", reason}});
}

void Informer::succeeded() {
  failingSince_.reset();
  lastError_.clear();
}

Informer::Health Informer::health() {
  const TimePoint t = now();
  // A watch that has stayed open long enough works, whatever failed before it.
  const bool watching = watchOpenedAt_ && t - *watchOpenedAt_ >= kMinWatch;
  Health h;
  if (failingSince_ && !watching && t - *failingSince_ >= config_.failingAfter) {
    h.ok = false;
    h.detail = "failing for " + std::to_string(seconds(t - *failingSince_)) + " s: " + lastError_;
  }
  metrics_
      .gauge("okna_k8s_informer_failing",
             "1 while the informer has been failing for longer than its bound",
             {{"resource", config_.resource}})
      .set(h.ok ? 0 : 1);
  if (!h.ok && !reportedFailing_)
    core::logger("k8s")->error("{} informer: {}", config_.resource, h.detail);
  if (h.ok && reportedFailing_)
    core::logger("k8s")->info("{} informer: recovered", config_.resource);
  reportedFailing_ = !h.ok;
  return h;
}

template <typename F>
bool Informer::deliver(const char* what, const std::string& key, F&& call) {
  try {
    call();
    return true;
  } catch (const std::exception& e) {
    errorsTotal("handler").inc();
    core::logger("k8s")->error("{} informer: the handler of {} {} failed: {}", config_.resource,
                               what, key, e.what());
  }
  return false;
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
  retryTimer_->cancel();
  cancelInFlight();
}

void Informer::cancelInFlight() {
  ++watchGeneration_;
  if (inFlight_) inFlight_->cancel();
  inFlight_.reset();
}

std::string Informer::watchQuery() const {
  std::string q =
      "?watch=true&allowWatchBookmarks=true&resourceVersion=" + urlEncode(resourceVersion_);
  if (!config_.fieldSelector.empty()) q += "&fieldSelector=" + urlEncode(config_.fieldSelector);
  return q;
}

void Informer::list(const std::string& continueToken) {
  if (!running_) return;
  std::vector<std::string> params;
  if (continueToken.empty()) {
    listing_.clear();
    // As client-go's reflector: from the watch cache (resourceVersion=0 at first, then "not
    // older than" what was seen), which the API server serves whole without touching etcd; a
    // quorum read from etcd, paged, only when the cache cannot answer.
    listingRv_ = rvUnavailable_ ? "" : resourceVersion_.empty() ? "0" : resourceVersion_;
    if (!listingRv_.empty()) params.push_back("resourceVersion=" + urlEncode(listingRv_));
  }
  // A resourceVersion with a limit would make the server read etcd; page quorum lists only.
  if ((listingRv_.empty() || !continueToken.empty()) && config_.pageSize > 0)
    params.push_back("limit=" + std::to_string(config_.pageSize));
  if (!config_.fieldSelector.empty())
    params.push_back("fieldSelector=" + urlEncode(config_.fieldSelector));
  if (!continueToken.empty()) params.push_back("continue=" + urlEncode(continueToken));
  continuing_ = !continueToken.empty();
  std::string path = config_.path;
  for (size_t i = 0; i < params.size(); ++i) path += (i == 0 ? "?" : "&") + params[i];
  core::logger("k8s")->debug("LIST {}", path);
  inFlight_ = api_.get(
      path, [this](core::Result<core::HttpResponse> r) { onListPage(std::move(r)); }, {},
      config_.maxListBytes);
}

void Informer::onListPage(core::Result<core::HttpResponse> result) {
  inFlight_.reset();
  const RequestIntent intent{"list", config_.resource, "", ""};
  if (!result.ok()) return retry(&Informer::startList, "list: " + result.error().message);
  const core::HttpResponse& r = *result;
  if (r.status == 410) {
    relistsTotal("expired").inc();
    if (continuing_) {
      // The continue token expired (etcd compaction): the whole list again, after a backoff.
      rvUnavailable_ = true;
      return retry(&Informer::startList, "list " + config_.resource +
                                             ": the continue token expired (410); listing again");
    }
    // The resourceVersion asked for is gone: once, at once, a quorum list (it cannot be "too
    // old", so this does not repeat).
    if (!listingRv_.empty()) {
      rvUnavailable_ = true;
      return list("");
    }
    return retry(&Informer::startList, "list " + config_.resource + ": 410 on a quorum list");
  }
  // "Too large resource version" (the cache is behind what was seen, e.g. after an etcd
  // restore): the next attempt reads etcd.
  if (r.status == 504 && !listingRv_.empty() && listingRv_ != "0" &&
      r.body.find("ResourceVersionTooLarge") != std::string::npos)
    rvUnavailable_ = true;
  if (r.status != 200) return failed(r, intent, &Informer::startList);
  json body = json::parse(r.body, nullptr, false);
  if (!body.is_object() || !body.contains("items") || !body["items"].is_array())
    return retry(&Informer::startList, "list " + config_.resource + ": the response is not a List");
  for (auto& item : body["items"]) {
    if (const std::size_t bytes = jsonBytes(item); bytes > config_.maxObjectBytes) {
      skipped(bytes, "a listed object");
      continue;
    }
    if (config_.keep) config_.keep(item);
    const std::string key = objectKey(item);
    if (!key.empty()) listing_[key] = std::move(item);
  }
  const json& meta = body["metadata"];
  const std::string next = stringField(meta, "continue");
  if (!next.empty()) return list(next);

  resourceVersion_ = stringField(meta, "resourceVersion");
  rvUnavailable_ = false;
  const bool delivered = replace(std::move(listing_));
  listing_.clear();
  succeeded();
  // A relist whose watches keep expiring at once must not start from the shortest delay again.
  if (!relistedWithoutEvents_) backoff_.reset();
  const bool first = !synced_;
  synced_ = true;
  metrics_
      .gauge("okna_k8s_informer_synced", "1 when the informer has completed its first LIST",
             {{"resource", config_.resource}})
      .set(1);
  countStore();
  core::logger("k8s")->info("{} informer {}: {} object(s) at resourceVersion {}", config_.resource,
                            first ? "synced" : "relisted", items_.size(), resourceVersion_);
  if (handler_.onSynced && !deliver("sync", "", [&] { handler_.onSynced(); }))
    return handlerFailed();
  if (!delivered) return handlerFailed();
  watch();
}

void Informer::watch() {
  if (!running_) return;
  std::uniform_int_distribution<long> dist(
      config_.watchTimeoutMin.count(),
      std::max(config_.watchTimeoutMin.count(), config_.watchTimeoutMax.count()));
  const long timeoutSeconds = dist(rng_);
  const std::string path =
      config_.path + watchQuery() + "&timeoutSeconds=" + std::to_string(timeoutSeconds);
  const unsigned generation = ++watchGeneration_;
  watchOpenedAt_.reset();
  watchEvents_ = 0;
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
  cb.onOpen = [this, generation](long status) {
    if (generation == watchGeneration_ && status == 200) watchOpenedAt_ = now();
  };
  cb.onLineTooLong = [this, generation](std::size_t bytes) {
    if (generation == watchGeneration_ && running_) skipped(bytes, "a watch event");
  };
  inFlight_ = api_.watch(path, milliseconds(timeoutSeconds * 1000) + kWatchSlack, std::move(cb),
                         config_.maxObjectBytes);
}

void Informer::onWatchLine(std::string_view line, unsigned generation) {
  if (generation != watchGeneration_ || !running_) return;
  json event = json::parse(line, nullptr, false);
  if (!event.is_object() || !event.contains("type") || !event.contains("object") ||
      !event["object"].is_object()) {
    errorsTotal("decode").inc();
    core::logger("k8s")->warn("{} watch: undecodable event skipped; relisting to stay consistent",
                              config_.resource);
    return relist("decode");
  }
  const std::string type = stringField(event, "type");
  json& object = event["object"];
  const auto meta = object.find("metadata");
  const std::string rv = meta != object.end() ? stringField(*meta, "resourceVersion") : "";
  if (type == "ERROR") {
    const auto code = object.find("code");
    const long status = code != object.end() && code->is_number_integer() ? code->get<long>() : 0;
    const std::string message = stringField(object, "message");
    if (status == 410) {
      core::logger("k8s")->info("{} watch: resourceVersion expired ({}); relisting",
                                config_.resource, message);
      return relist("expired");
    }
    errorsTotal("watch-error-event").inc();
    cancelInFlight();
    return retry(&Informer::watch, "watch ERROR event " + std::to_string(status) + ": " + message);
  }
  EventType t = EventType::Added;
  if (type == "ADDED") {
    t = EventType::Added;
  } else if (type == "MODIFIED") {
    t = EventType::Modified;
  } else if (type == "DELETED") {
    t = EventType::Deleted;
  } else if (type != "BOOKMARK") {
    core::logger("k8s")->warn("{} watch: unknown event type \"{}\" ignored", config_.resource,
                              type);
    return;
  }
  metrics_
      .counter("okna_k8s_informer_events_total", "Watch events received",
               {{"resource", config_.resource}, {"type", type}})
      .inc();
  // An event proves the watch works: a failure episode before it is over.
  ++watchEvents_;
  relistedWithoutEvents_ = false;
  succeeded();
  backoff_.reset();
  if (type == "BOOKMARK") {
    if (!rv.empty()) resourceVersion_ = rv;
    return;
  }
  if (!rv.empty()) resourceVersion_ = rv;
  if (config_.keep) config_.keep(object);
  apply(t, object);
}

void Informer::onWatchDone(core::Result<core::HttpResponse> result, unsigned generation) {
  if (generation != watchGeneration_ || !running_) return;
  inFlight_.reset();
  // A watch that stayed open long enough worked: what fails now is a new failure episode.
  const auto lasted = watchOpenedAt_ ? now() - *watchOpenedAt_ : std::chrono::nanoseconds(0);
  const bool worked = watchEvents_ > 0 || (watchOpenedAt_ && lasted >= kMinWatch);
  if (watchOpenedAt_ && lasted >= kMinWatch) failingSince_.reset();
  watchOpenedAt_.reset();
  if (!result.ok()) return retry(&Informer::watch, "watch: " + result.error().message);
  const core::HttpResponse& r = *result;
  if (r.status == 200) {
    // Closed at once without an event (a proxy, an overloaded server): not a healthy watch
    // but a failure, retried after a backoff so that it cannot become a hot loop.
    if (!worked)
      return retry(&Informer::watch,
                   "the watch ended after " +
                       std::to_string(std::chrono::duration_cast<milliseconds>(lasted).count()) +
                       " ms without an event");
    // The server closed the stream at timeoutSeconds: a healthy watch; continue from where it was.
    succeeded();
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
  lastError_ = message;
  if ((r.status == 401 || r.status == 403 || r.status == 400) && handler_.onError)
    deliver("error", "", [&] { handler_.onError(message); });
  retry(what, message, retryAfter(r));
}

void Informer::retry(void (Informer::*what)(), const std::string& reason, milliseconds atLeast) {
  if (!running_) return;
  cancelInFlight();
  const milliseconds delay = std::max(backoff_.next(), atLeast);
  lastError_ = reason;
  if (!failingSince_) failingSince_ = now();
  retryDelay_ = delay;
  errorsTotal("request").inc();
  core::logger("k8s")->warn("{} informer: {}; retrying in {} ms", config_.resource, reason,
                            delay.count());
  retryTimer_->waitUntil(now() + delay, [this, what] {
    if (running_) (this->*what)();
  });
}

void Informer::handlerFailed() {
  // What the handler could not take is not in the store: a relist after a backoff brings it
  // again, and a handler that keeps failing keeps the informer failing (health()).
  relistsTotal("handler").inc();
  retry(&Informer::startList, "the event handler failed (see the log); relisting");
}

void Informer::relist(const std::string& reason) {
  cancelInFlight();
  relistsTotal(reason).inc();
  // At once after a watch that worked; a relist whose watch fails again at once backs off.
  if (watchEvents_ == 0 && relistedWithoutEvents_)
    return retry(&Informer::startList,
                 "the watch failed again right after a relist (" + reason + ")");
  relistedWithoutEvents_ = true;
  list("");
}

bool Informer::replace(std::map<std::string, json> fresh) {
  // Deletions first, then additions and changes: what a watch would have shown. An object the
  // handler failed on keeps its previous state in the store, so that the next relist retries it.
  bool ok = true;
  for (auto it = items_.begin(); it != items_.end();) {
    if (fresh.count(it->first) == 0) {
      json gone = std::move(it->second);
      const std::string key = it->first;
      it = items_.erase(it);
      if (handler_.onEvent &&
          !deliver("DELETED", key, [&] { handler_.onEvent(EventType::Deleted, gone); })) {
        ok = false;
        it = std::next(items_.emplace(key, std::move(gone)).first);
      }
    } else {
      ++it;
    }
  }
  for (auto& [key, object] : fresh) {
    auto it = items_.find(key);
    if (it == items_.end()) {
      auto& stored = items_[key] = std::move(object);
      if (handler_.onEvent &&
          !deliver("ADDED", key, [&] { handler_.onEvent(EventType::Added, stored); })) {
        ok = false;
        items_.erase(key);
      }
    } else if (it->second != object) {
      std::swap(it->second, object);
      if (handler_.onEvent &&
          !deliver("MODIFIED", key, [&] { handler_.onEvent(EventType::Modified, it->second); })) {
        ok = false;
        std::swap(it->second, object);
      }
    }
  }
  return ok;
}

void Informer::apply(EventType type, const json& object) {
  const std::string key = objectKey(object);
  if (key.empty()) return;
  std::optional<json> previous;
  if (auto it = items_.find(key); it != items_.end()) previous = it->second;
  if (type == EventType::Deleted) {
    items_.erase(key);
  } else {
    items_[key] = object;
  }
  if (handler_.onEvent && !deliver(toString(type), key, [&] { handler_.onEvent(type, object); })) {
    if (previous) {
      items_[key] = std::move(*previous);
    } else {
      items_.erase(key);
    }
    handlerFailed();
  }
  countStore();
}

void Informer::countStore() {
  const core::Labels r{{"resource", config_.resource}};
  metrics_.gauge("okna_k8s_informer_objects", "Objects in the informer's store", r)
      .set(static_cast<double>(items_.size()));
  std::size_t bytes = 0;
  for (const auto& [key, object] : items_) bytes += key.size() + jsonBytes(object);
  metrics_
      .gauge("okna_k8s_informer_object_bytes",
             "About the bytes (as JSON) of the objects in the informer's store, as kept", r)
      .set(static_cast<double>(bytes));
}

// Not read, so neither stored nor handed on: the store keeps what it had of that object (a
// relist drops it). Never its content in the log, which is whatever the object's author wrote.
void Informer::skipped(std::size_t bytes, const char* what) {
  metrics_
      .counter("okna_k8s_informer_skipped_total",
               "Objects not read: over the limit of one object (maxObjectBytes)",
               {{"resource", config_.resource}})
      .inc();
  std::uint64_t suppressed = 0;
  if (skipLog_.allow(now(), suppressed))
    core::logger("k8s")->warn(
        "{} informer: {} of about {} bytes skipped: over the limit of {} bytes for one object "
        "(its content is not read; {} more skipped since the last line)",
        config_.resource, what, bytes, config_.maxObjectBytes, suppressed);
}

}  // namespace okna::k8s
