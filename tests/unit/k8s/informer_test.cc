#include "k8s/informer.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <random>

#include <nlohmann/json.hpp>

#include "k8s/objects.h"
#include "tests/fakes/fake_http_client.h"
#include "tests/fakes/manual_clock.h"
#include "tests/fakes/transcripts.h"
#include "tests/support/test_paths.h"

namespace okna::k8s {
namespace {

using nlohmann::json;
using okna::testing::FakeHttpClient;
using namespace std::chrono_literals;

const std::string kTranscripts = std::string(::okna::testing::kTestDataDir) + "/transcripts/";

struct Seen {
  std::string type;
  std::string key;
  std::string rv;
};

class InformerTest : public ::testing::Test {
 protected:
  InformerTest() : api_(http_, cluster()) {}

  static ClusterConfig cluster() {
    ClusterConfig c;
    c.server = "https://127.0.0.1:6443";
    c.token = TokenSource::literal("t");
    return c;
  }

  std::unique_ptr<Informer> make(std::string resource, std::string path, std::string selector,
                                 const std::function<void(InformerConfig&)>& tweak = {}) {
    InformerConfig c;
    c.resource = std::move(resource);
    c.path = std::move(path);
    c.fieldSelector = std::move(selector);
    c.watchTimeoutMin = std::chrono::seconds(10);
    c.watchTimeoutMax = std::chrono::seconds(20);
    // 1 s, 2 s, 4 s, then 8 s, without jitter: every retry is due at a known instant.
    c.backoff = {1s, 8s, 2.0, 0.0};
    c.failingAfter = std::chrono::seconds(60);
    if (tweak) tweak(c);
    Informer::Handler h;
    h.onEvent = [this](Informer::EventType t, const json& o) {
      seen_.push_back({toString(t), objectKey(o), o["metadata"].value("resourceVersion", "")});
    };
    h.onSynced = [this] { ++synced_; };
    h.onError = [this](const std::string& e) { errors_.push_back(e); };
    return std::make_unique<Informer>(clock_, api_, c, metrics_, h);
  }

  // What the informer has sent by now (ready handlers run; time stands still), or null.
  std::shared_ptr<FakeHttpClient::Pending> sentNow() {
    clock_.drain();
    return http_.next();
  }
  // The first request sent within `window` of simulated time, which stops at the instant it is
  // sent; null after living through the whole window without one.
  std::shared_ptr<FakeHttpClient::Pending> sentWithin(std::chrono::nanoseconds window) {
    std::shared_ptr<FakeHttpClient::Pending> p;
    clock_.runFor(window, [&] {
      if (!p) p = http_.next();
      return p != nullptr;
    });
    return p;
  }
  // The next request, however long the informer waits for it (up to a simulated minute).
  std::shared_ptr<FakeHttpClient::Pending> nextRequest() { return sentWithin(60s); }
  // The next request, which must come exactly `delay` from now: nothing during the first
  // `delay` - 1 ms, then the request at `delay`.
  std::shared_ptr<FakeHttpClient::Pending> sentAfter(std::chrono::milliseconds delay) {
    const auto start = clock_.now();
    auto early = sentWithin(delay - 1ms);
    const auto at = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now() - start);
    EXPECT_EQ(early, nullptr) << "sent after " << at.count() << " ms, not " << delay.count();
    if (early) return early;
    auto p = sentWithin(1ms);
    EXPECT_NE(p, nullptr) << "nothing sent " << delay.count() << " ms later";
    return p;
  }

  static std::string param(const std::string& url, const std::string& name) {
    const auto p = url.find(name + "=");
    if (p == std::string::npos) return "<absent>";
    const auto end = url.find('&', p);
    return url.substr(p + name.size() + 1,
                      end == std::string::npos ? std::string::npos : end - p - name.size() - 1);
  }

  static std::string list(const std::string& rv,
                          const std::vector<std::pair<std::string, std::string>>& items,
                          const std::string& cont = "") {
    json l = {{"kind", "NodeList"},
              {"apiVersion", "v1"},
              {"metadata", {{"resourceVersion", rv}}},
              {"items", json::array()}};
    if (!cont.empty()) l["metadata"]["continue"] = cont;
    for (const auto& [name, itemRv] : items)
      l["items"].push_back({{"metadata", {{"name", name}, {"resourceVersion", itemRv}}}});
    return l.dump() + "\n";
  }

  std::string metric(const std::string& series) const {
    const std::string text = metrics_.render();
    const auto p = text.find("\n" + series + " ");
    if (p == std::string::npos) return "<absent>";
    const auto start = p + series.size() + 2;
    return text.substr(start, text.find('\n', start) - start);
  }

  boost::asio::io_context io_;
  // The informer's clock (retry timers, failure durations, short watches): simulated time.
  okna::testing::ManualClock clock_{io_};
  FakeHttpClient http_;
  ApiClient api_;
  core::MetricsRegistry metrics_;
  std::vector<Seen> seen_;
  std::vector<std::string> errors_;
  int synced_ = 0;
};

TEST_F(InformerTest, ListThenWatchRecordedStreamInArbitraryPieces) {
  auto informer = make("nodes", "/api/v1/nodes", "metadata.name=n1");
  informer->start();
  auto listReq = nextRequest();
  ASSERT_TRUE(listReq);
  EXPECT_EQ(
      listReq->request.url,
      "https://127.0.0.1:6443/api/v1/nodes?resourceVersion=0&fieldSelector=metadata.name%3Dn1")
      << "the first LIST comes from the watch cache (resourceVersion=0), unpaged, as client-go's";
  EXPECT_EQ(listReq->request.headers.at("Authorization"), "Bearer t");
  const std::string listBody =
      okna::testing::transcriptBody(kTranscripts + "02a-node-list-before-watch.txt");
  const std::string listRv = json::parse(listBody)["metadata"]["resourceVersion"];
  listReq->reply(200, listBody);
  EXPECT_TRUE(informer->hasSynced());
  EXPECT_EQ(synced_, 1);
  ASSERT_EQ(seen_.size(), 1u);
  EXPECT_EQ(seen_[0].type, "ADDED");

  auto watchReq = nextRequest();
  ASSERT_TRUE(watchReq);
  const std::string& url = watchReq->request.url;
  EXPECT_EQ(param(url, "watch"), "true");
  EXPECT_EQ(param(url, "allowWatchBookmarks"), "true");
  EXPECT_EQ(param(url, "resourceVersion"), listRv);
  EXPECT_EQ(param(url, "fieldSelector"), "metadata.name%3Dn1");
  const int timeout = std::stoi(param(url, "timeoutSeconds"));
  EXPECT_GE(timeout, 10);
  EXPECT_LE(timeout, 20);

  // The exact bytes the real server sent, de-chunked, then re-cut at random points.
  const auto chunks =
      okna::testing::dechunk(okna::testing::transcriptBody(kTranscripts + "02b-node-watch.txt"));
  std::string stream;
  for (const auto& c : chunks) stream += c;
  ASSERT_EQ(stream, okna::testing::readWholeFile(kTranscripts + "02b-node-watch.events.jsonl"));
  std::mt19937 rng(7);
  std::vector<std::string> pieces;
  for (size_t pos = 0; pos < stream.size();) {
    const size_t n = std::uniform_int_distribution<size_t>(1, 700)(rng);
    pieces.push_back(stream.substr(pos, n));
    pos += n;
  }
  watchReq->stream(200, pieces);
  // 02b: two MODIFIED events (label patch, status patch) then a BOOKMARK.
  ASSERT_EQ(seen_.size(), 3u);
  EXPECT_EQ(seen_[1].type, "MODIFIED");
  EXPECT_EQ(seen_[2].type, "MODIFIED");
  EXPECT_EQ(informer->items().at("n1")["metadata"]["labels"]["example.openkeel.io/watched"], "yes");
  const json lastLine = json::parse(stream.substr(stream.rfind('\n', stream.size() - 2) + 1));
  ASSERT_EQ(lastLine["type"], "BOOKMARK");
  EXPECT_EQ(informer->resourceVersion(), lastLine["object"]["metadata"]["resourceVersion"]);

  // The server ends the stream at timeoutSeconds: the informer watches on from the bookmark.
  watchReq->finish();
  auto again = sentNow();
  ASSERT_TRUE(again) << "at once";
  EXPECT_EQ(param(again->request.url, "resourceVersion"), informer->resourceVersion());
  EXPECT_EQ(param(again->request.url, "watch"), "true");
}

// One watch event (one line) over maxObjectBytes is not read: skipped, counted, said, and the
// watch goes on with the next event; the store keeps what it had.
TEST_F(InformerTest, AWatchEventOverTheObjectLimitIsSkippedAndTheWatchGoesOn) {
  auto informer = make("pods", "/api/v1/pods", "spec.nodeName=n1",
                       [](InformerConfig& c) { c.maxObjectBytes = 300; });
  informer->start();
  nextRequest()->reply(200, list("10", {{"a", "5"}}));
  auto watch = nextRequest();
  ASSERT_TRUE(watch);
  EXPECT_EQ(watch->request.maxResponseBytes, 0u) << "a watch bounds each line, not the stream";
  const auto event = [](const std::string& type, const std::string& name, const std::string& rv,
                        std::size_t padding = 0) {
    json o = {{"metadata", {{"name", name}, {"resourceVersion", rv}}}};
    if (padding > 0) o["metadata"]["annotations"]["pad"] = std::string(padding, 'p');
    return json{{"type", type}, {"object", o}}.dump() + "\n";
  };
  const std::string stream =
      event("MODIFIED", "a", "11") + event("ADDED", "big", "12", 1000) + event("ADDED", "c", "13");
  watch->stream(200, {stream.substr(0, 100), stream.substr(100, 500), stream.substr(600)});
  ASSERT_EQ(seen_.size(), 3u);
  EXPECT_EQ(seen_[1].type + " " + seen_[1].key, "MODIFIED a");
  EXPECT_EQ(seen_[2].type + " " + seen_[2].key, "ADDED c");
  EXPECT_EQ(informer->items().count("big"), 0u);
  EXPECT_EQ(informer->resourceVersion(), "13");
  EXPECT_EQ(metric(R"(okna_k8s_informer_skipped_total{resource="pods"})"), "1");
  EXPECT_EQ(metric(R"(okna_k8s_informer_relists_total{reason="decode",resource="pods"})"), "0");
  EXPECT_EQ(sentNow(), nullptr) << "the watch goes on: no relist, no new watch";
}

// A LIST page has its own limit on the request; in it, an object over maxObjectBytes is skipped
// as its watch event would be.
TEST_F(InformerTest, AListedObjectOverTheObjectLimitIsSkipped) {
  auto informer = make("pods", "/api/v1/pods", "spec.nodeName=n1", [](InformerConfig& c) {
    c.maxObjectBytes = 300;
    c.maxListBytes = 5000;
  });
  informer->start();
  auto listReq = nextRequest();
  ASSERT_TRUE(listReq);
  EXPECT_EQ(listReq->request.maxResponseBytes, 5000u);
  json body = json::parse(list("10", {{"a", "5"}, {"big", "6"}, {"c", "7"}}));
  body["items"][1]["metadata"]["annotations"]["pad"] = std::string(1000, 'p');
  listReq->reply(200, body.dump());
  EXPECT_TRUE(informer->hasSynced());
  EXPECT_EQ(informer->items().size(), 2u);
  EXPECT_EQ(informer->items().count("big"), 0u);
  EXPECT_EQ(metric(R"(okna_k8s_informer_skipped_total{resource="pods"})"), "1");
  EXPECT_EQ(metric(R"(okna_k8s_informer_objects{resource="pods"})"), "2");
}

// With `keep`, the store holds only what it leaves of each object (the agent's Pods: the fields
// it reads), from a LIST and from a watch; a relist of the same objects changes nothing.
TEST_F(InformerTest, KeepTrimsEveryStoredObject) {
  auto informer = make("pods", "/api/v1/pods", "spec.nodeName=n1",
                       [](InformerConfig& c) { c.keep = [](json& o) { o.erase("spec"); }; });
  informer->start();
  json body = json::parse(list("10", {{"a", "5"}}));
  body["items"][0]["spec"] = {{"containers", {{{"env", std::string(5000, 'e')}}}}};
  nextRequest()->reply(200, body.dump());
  ASSERT_EQ(informer->items().size(), 1u);
  EXPECT_FALSE(informer->items().at("a").contains("spec"));
  const double bytes = std::stod(metric(R"(okna_k8s_informer_object_bytes{resource="pods"})"));
  EXPECT_GT(bytes, 0);
  EXPECT_LT(bytes, 200);
  auto watch = nextRequest();
  json event = {{"type", "ADDED"},
                {"object",
                 {{"metadata", {{"name", "b"}, {"resourceVersion", "11"}}},
                  {"spec", {{"nodeName", std::string(5000, 'n')}}}}}};
  watch->stream(200, {event.dump() + "\n"});
  EXPECT_FALSE(informer->items().at("b").contains("spec"));
  EXPECT_LT(std::stod(metric(R"(okna_k8s_informer_object_bytes{resource="pods"})")), 400);
  // A relist of the same objects: nothing changed, no MODIFIED.
  const std::size_t before = seen_.size();
  watch->stream(200, {R"({"type":"ERROR","object":{"code":410,"message":"too old"}})"
                      "\n"});
  json again = json::parse(list("12", {{"a", "5"}, {"b", "11"}}));
  again["items"][0]["spec"] = body["items"][0]["spec"];
  again["items"][1]["spec"] = event["object"]["spec"];
  nextRequest()->reply(200, again.dump());
  EXPECT_EQ(seen_.size(), before);
}

TEST_F(InformerTest, ExpiredWatchRelistsWithoutLosingEvents) {
  auto informer = make("nodes", "/api/v1/nodes", "metadata.name=n1");
  informer->start();
  nextRequest()->reply(200, list("10", {{"a", "5"}, {"b", "6"}}));
  auto watch = nextRequest();
  // The real server's 410 after a restart: HTTP 200, one ERROR event, end of stream.
  watch->stream(200, {okna::testing::readWholeFile(
                         kTranscripts + "04c-node-watch-too-old-rv-after-restart.events.jsonl")});
  watch->finish();
  auto relist = sentNow();
  ASSERT_TRUE(relist) << "the relist after a watch that worked is at once";
  EXPECT_EQ(param(relist->request.url, "watch"), "<absent>");
  EXPECT_EQ(param(relist->request.url, "continue"), "<absent>");
  // From the cache, not older than what was seen; no limit (a limit would make it read etcd).
  EXPECT_EQ(param(relist->request.url, "resourceVersion"), "10");
  EXPECT_EQ(param(relist->request.url, "limit"), "<absent>");
  seen_.clear();
  // While the watch was gone: a was deleted, b changed, c was created.
  relist->reply(200, list("20", {{"b", "15"}, {"c", "16"}}));
  ASSERT_EQ(seen_.size(), 3u);
  EXPECT_EQ(seen_[0].type, "DELETED");
  EXPECT_EQ(seen_[0].key, "a");
  EXPECT_EQ(seen_[1].type, "MODIFIED");
  EXPECT_EQ(seen_[1].key, "b");
  EXPECT_EQ(seen_[2].type, "ADDED");
  EXPECT_EQ(seen_[2].key, "c");
  EXPECT_EQ(synced_, 2);
  EXPECT_NE(metrics_.render().find(
                "okna_k8s_informer_relists_total{reason=\"expired\",resource=\"nodes\"} 1"),
            std::string::npos)
      << metrics_.render();
  EXPECT_EQ(param(nextRequest()->request.url, "resourceVersion"), "20");
}

TEST_F(InformerTest, HttpGoneOnWatchAlsoRelists) {
  auto informer = make("pods", "/api/v1/pods", "spec.nodeName=n1");
  informer->start();
  nextRequest()->reply(200, list("10", {}));
  nextRequest()->reply(410, R"({"kind":"Status","code":410,"reason":"Expired"})");
  auto relist = sentNow();
  ASSERT_TRUE(relist) << "at once";
  EXPECT_EQ(param(relist->request.url, "watch"), "<absent>");
}

TEST_F(InformerTest, TransportFailureRetriesLaterFromTheSameResourceVersion) {
  auto informer = make("nodes", "/api/v1/nodes", "");
  informer->start();
  nextRequest()->reply(200, list("42", {{"a", "40"}}));
  nextRequest()->fail("Connection refused");
  // Nothing is sent during the first backoff delay (1 s); the retry comes when it ends.
  auto retry = sentAfter(1s);
  ASSERT_TRUE(retry);
  EXPECT_EQ(param(retry->request.url, "resourceVersion"), "42");
  EXPECT_NE(informer->lastError().find("Connection refused"), std::string::npos);
}

TEST_F(InformerTest, ServerErrorsBackOffAndHonourRetryAfterFloor) {
  auto informer = make("nodes", "/api/v1/nodes", "");
  informer->start();
  auto l = sentNow();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(l);
    l->reply(503, R"({"kind":"Status","message":"unavailable","code":503})");
    // A failed LIST is retried after the backoff alone: 1 s, 2 s, 4 s.
    const std::chrono::milliseconds delay = 1000ms * (1 << i);
    EXPECT_EQ(informer->retryDelay(), delay) << "attempt " << i;
    l = sentAfter(delay);
  }
  EXPECT_NE(informer->lastError().find("HTTP 503 on list nodes: unavailable"), std::string::npos)
      << informer->lastError();
  // 04k's answer, with Retry-After: 30. The next backoff (8 s) is raised to the server's 30 s.
  ASSERT_TRUE(l);
  l->reply(504, okna::testing::transcriptBody(kTranscripts + "04k-pod-list-future-rv.txt"),
           {{"retry-after", "30"}});
  EXPECT_EQ(informer->retryDelay(), 30s);
  l = sentAfter(30s);
  ASSERT_TRUE(l);
  l->reply(200, list("1", {}));
  EXPECT_TRUE(informer->lastError().empty());
  // The LIST succeeded: the next failure waits the first delay again.
  sentNow()->fail("Connection refused");
  EXPECT_EQ(informer->retryDelay(), 1s);
  EXPECT_TRUE(sentAfter(1s));
}

TEST_F(InformerTest, ForbiddenNamesTheMissingRbacPermission) {
  auto informer = make("pods", "/api/v1/pods", "spec.nodeName=n1");
  informer->start();
  auto req = nextRequest();
  req->reply(403, okna::testing::transcriptBody(kTranscripts + "05m-agent-pod-list-forbidden.txt"));
  ASSERT_EQ(errors_.size(), 1u);
  EXPECT_NE(errors_[0].find("RBAC: the agent's identity needs verb \"list\" on resource \"pods\" "
                            "at the cluster scope"),
            std::string::npos)
      << errors_[0];
  EXPECT_NE(errors_[0].find("User \"node-agent\" cannot list resource \"pods\""), std::string::npos)
      << errors_[0];
  EXPECT_FALSE(informer->hasSynced());
}

TEST_F(InformerTest, UnauthorizedSaysSoAndRetries) {
  auto informer = make("nodes", "/api/v1/nodes", "");
  informer->start();
  nextRequest()->reply(401, okna::testing::transcriptBody(kTranscripts + "07a-bad-token-401.txt"));
  ASSERT_EQ(errors_.size(), 1u);
  EXPECT_NE(errors_[0].find("HTTP 401 Unauthorized on list nodes"), std::string::npos)
      << errors_[0];
  EXPECT_TRUE(sentAfter(1s));
}

TEST_F(InformerTest, PagedListIsAssembledBeforeAnyEvent) {
  auto informer = make("pods", "/api/v1/pods", "spec.nodeName=n1");
  informer->start();
  nextRequest()->reply(200, list("", {{"p1", "1"}}, "tok/en"));
  EXPECT_TRUE(seen_.empty());
  auto page2 = nextRequest();
  EXPECT_EQ(param(page2->request.url, "continue"), "tok%2Fen");
  page2->reply(200, list("9", {{"p2", "2"}}));
  EXPECT_EQ(seen_.size(), 2u);
  EXPECT_EQ(informer->items().size(), 2u);
  EXPECT_EQ(informer->resourceVersion(), "9");
}

TEST_F(InformerTest, RecordedPodWatchTracksDeletesAndAdds) {
  auto informer = make("pods", "/api/v1/pods", "spec.nodeName=n1");
  informer->start();
  nextRequest()->reply(200,
                       okna::testing::transcriptBody(kTranscripts + "03h-pod-list-by-node.txt"));
  const size_t listed = informer->items().size();
  ASSERT_GE(listed, 1u);
  auto watch = nextRequest();
  for (const auto& chunk : okna::testing::dechunk(
           okna::testing::transcriptBody(kTranscripts + "03i-pod-watch-by-node.txt")))
    watch->stream(200, {chunk});
  // 03i: p-plain deleted (MODIFIED then DELETED), p-init marked terminating, p-late added; the
  // pod on n2 never shows up.
  EXPECT_EQ(informer->items().count("tenant-a/p-plain"), 0u);
  EXPECT_EQ(informer->items().count("tenant-a/p-late"), 1u);
  EXPECT_TRUE(informer->items().at("tenant-a/p-init")["metadata"].contains("deletionTimestamp"));
  for (const auto& s : seen_) EXPECT_EQ(s.key.find("other"), std::string::npos);
}

TEST_F(InformerTest, WatchDeniedAfterSyncFailsAfterTheBoundAndRecoversByItself) {
  auto informer = make("pods", "/api/v1/pods", "spec.nodeName=n1");
  informer->start();
  nextRequest()->reply(200, list("10", {{"p", "9"}}));
  ASSERT_TRUE(informer->hasSynced());
  EXPECT_TRUE(informer->health().ok);
  EXPECT_EQ(metric(R"(okna_k8s_informer_failing{resource="pods"})"), "0");
  // The watch is denied (list allowed): every attempt gets 403.
  const std::string forbidden =
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":)"
      R"("pods is forbidden: User \"node-agent\" cannot watch resource \"pods\"","code":403})";
  for (int second = 0; second < 59; second += 10) {
    auto w = nextRequest();
    ASSERT_TRUE(w);
    EXPECT_EQ(param(w->request.url, "watch"), "true");
    w->reply(403, forbidden);
    EXPECT_TRUE(informer->health().ok) << "within the bound at " << second << " s";
    clock_.advance(std::chrono::seconds(10));
  }
  auto w = nextRequest();
  clock_.advance(std::chrono::seconds(5));  // 65 s after the first failure
  w->reply(403, forbidden);
  const Informer::Health h = informer->health();
  EXPECT_FALSE(h.ok);
  EXPECT_NE(h.detail.find("failing for 65 s"), std::string::npos) << h.detail;
  EXPECT_NE(h.detail.find("needs verb \"watch\" on resource \"pods\""), std::string::npos)
      << h.detail;
  EXPECT_EQ(metric(R"(okna_k8s_informer_failing{resource="pods"})"), "1");
  // Still failing while nothing succeeds, however much time passes.
  clock_.advance(std::chrono::minutes(10));
  EXPECT_FALSE(informer->health().ok);

  // The permission comes back: the watch opens and stays open; no event needs to arrive.
  auto ok = nextRequest();
  ok->stream(200, {});
  EXPECT_FALSE(informer->health().ok) << "a watch that has just opened has not proved itself";
  clock_.advance(std::chrono::seconds(1));
  EXPECT_TRUE(informer->health().ok);
  EXPECT_EQ(metric(R"(okna_k8s_informer_failing{resource="pods"})"), "0");
}

TEST_F(InformerTest, UnauthorizedAfterSyncFailsAfterTheBound) {
  auto informer = make("nodes", "/api/v1/nodes", "metadata.name=n1");
  informer->start();
  nextRequest()->reply(200, list("10", {{"n1", "9"}}));
  const std::string unauthorized =
      okna::testing::transcriptBody(kTranscripts + "07c-bad-token-watch-401.txt");
  nextRequest()->reply(401, unauthorized);
  clock_.advance(std::chrono::seconds(61));
  nextRequest()->reply(401, unauthorized);
  const Informer::Health h = informer->health();
  EXPECT_FALSE(h.ok);
  EXPECT_NE(h.detail.find("HTTP 401 Unauthorized on watch nodes"), std::string::npos) << h.detail;
  // An event on a new watch proves it works at once.
  auto w = nextRequest();
  w->stream(200, {R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}})"
                  "\n"});
  EXPECT_TRUE(informer->health().ok);
}

TEST_F(InformerTest, AWatchThatWorkedStartsANewFailureEpisode) {
  auto informer = make("nodes", "/api/v1/nodes", "");
  informer->start();
  nextRequest()->reply(200, list("10", {}));
  // One failure, then a watch that stays open for minutes, then one failure: never failing.
  nextRequest()->fail("Connection refused");
  clock_.advance(std::chrono::seconds(30));
  auto w = nextRequest();
  w->stream(200, {});
  clock_.advance(std::chrono::minutes(5));
  w->fail("Connection reset by peer");
  EXPECT_TRUE(informer->health().ok);
  clock_.advance(std::chrono::seconds(30));
  nextRequest()->fail("Connection refused");
  EXPECT_TRUE(informer->health().ok) << "30 s of failure, not 6 minutes";
}

TEST_F(InformerTest, EverySeriesIsExportedFromTheStart) {
  auto informer = make("pods", "/api/v1/pods", "");
  for (const char* series :
       {R"(okna_k8s_informer_synced{resource="pods"})",
        R"(okna_k8s_informer_objects{resource="pods"})",
        R"(okna_k8s_informer_failing{resource="pods"})",
        R"(okna_k8s_informer_watches_total{resource="pods"})",
        R"(okna_k8s_informer_events_total{resource="pods",type="ADDED"})",
        R"(okna_k8s_informer_events_total{resource="pods",type="BOOKMARK"})",
        R"(okna_k8s_informer_errors_total{reason="request",resource="pods"})",
        R"(okna_k8s_informer_errors_total{reason="handler",resource="pods"})",
        R"(okna_k8s_informer_relists_total{reason="expired",resource="pods"})"})
    EXPECT_EQ(metric(series), "0") << series << "\n" << metrics_.render();
}

TEST_F(InformerTest, AHandlerThatThrowsIsCountedAndTheObjectComesAgainAfterABackoff) {
  auto informer = make("pods", "/api/v1/pods", "spec.nodeName=n1");
  bool broken = true;
  Informer::Handler h;
  h.onEvent = [&](Informer::EventType t, const json& o) {
    // What a handler does with a field of an unexpected type.
    if (broken && objectKey(o) == "bad") (void)o["metadata"]["labels"]["x"].get<std::string>();
    seen_.push_back({toString(t), objectKey(o), ""});
  };
  InformerConfig c = informer->config();
  informer = std::make_unique<Informer>(clock_, api_, c, metrics_, h);
  informer->start();
  nextRequest()->reply(200, list("10", {{"good", "9"}}));
  auto w = nextRequest();
  json bad = {
      {"type", "ADDED"},
      {"object",
       {{"metadata", {{"name", "bad"}, {"resourceVersion", "11"}, {"labels", {{"x", 1}}}}}}}};
  EXPECT_NO_THROW(w->stream(200, {bad.dump() + "\n"}));
  EXPECT_EQ(metric(R"(okna_k8s_informer_errors_total{reason="handler",resource="pods"})"), "1");
  EXPECT_EQ(informer->items().count("bad"), 0u) << "what the handler could not take is not stored";
  // The relist waits for its backoff (the first delay: the event had reset it).
  auto relist = sentAfter(1s);
  ASSERT_TRUE(relist);
  EXPECT_EQ(param(relist->request.url, "watch"), "<absent>");
  broken = false;
  seen_.clear();
  relist->reply(200, list("12", {{"good", "9"}, {"bad", "11"}}));
  ASSERT_EQ(seen_.size(), 1u);
  EXPECT_EQ(seen_[0].type, "ADDED");
  EXPECT_EQ(seen_[0].key, "bad");
  EXPECT_EQ(informer->items().count("bad"), 1u);
}

TEST_F(InformerTest, FieldsOfUnexpectedTypesInServerDataNeverThrow) {
  auto informer = make("nodes", "/api/v1/nodes", "");
  informer->start();
  nextRequest()->reply(
      200, R"({"kind":"NodeList","metadata":{"resourceVersion":"10","continue":7},"items":[)"
           R"({"metadata":{"name":5}},{"metadata":{"name":"a","resourceVersion":"9"}}]})"
           "\n");
  EXPECT_TRUE(informer->hasSynced());
  EXPECT_EQ(informer->items().size(), 1u);
  auto w = nextRequest();
  EXPECT_NO_THROW(w->stream(
      200, {R"({"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":11}}})"
            "\n",
            R"({"type":7,"object":{"metadata":{"name":"a"}}})"
            "\n",
            R"({"type":"ERROR","object":{"kind":"Status","code":"410","message":[]}})"
            "\n"}));
  EXPECT_EQ(informer->resourceVersion(), "10");
}

TEST_F(InformerTest, WhenTheCacheCannotAnswerAQuorumListIsPaged) {
  auto informer = make("pods", "/api/v1/pods", "spec.nodeName=n1");
  informer->start();
  nextRequest()->reply(200, list("10", {{"p1", "9"}}));
  auto w = nextRequest();
  w->reply(410, R"({"kind":"Status","code":410,"reason":"Expired"})");
  auto relist = nextRequest();
  EXPECT_EQ(param(relist->request.url, "resourceVersion"), "10");
  relist->reply(410, okna::testing::transcriptBody(kTranscripts +
                                                   "04g-pod-list-exact-rv-after-compaction.txt"));
  // At once, from etcd (no resourceVersion), in pages.
  auto page1 = sentNow();
  ASSERT_TRUE(page1) << "one fallback to a quorum list, at once";
  EXPECT_EQ(param(page1->request.url, "resourceVersion"), "<absent>");
  EXPECT_EQ(param(page1->request.url, "limit"), "500");
  EXPECT_EQ(param(page1->request.url, "continue"), "<absent>");
  page1->reply(200, list("30", {{"p1", "9"}}, "page-2"));
  auto page2 = nextRequest();
  EXPECT_EQ(param(page2->request.url, "continue"), "page-2");
  EXPECT_EQ(param(page2->request.url, "limit"), "500");
  EXPECT_EQ(param(page2->request.url, "resourceVersion"), "<absent>")
      << "a continue token carries its own resourceVersion";
  page2->reply(200, list("30", {{"p2", "29"}}));
  EXPECT_EQ(informer->items().size(), 2u);
  auto w2 = nextRequest();
  EXPECT_EQ(param(w2->request.url, "resourceVersion"), "30");
  // The next relist asks the cache again.
  w2->stream(200, {R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"31"}}})"
                   "\n"});
  w2->reply(410, "");
  EXPECT_EQ(param(nextRequest()->request.url, "resourceVersion"), "31");
}

TEST_F(InformerTest, AnExpiredContinueTokenRestartsTheListAfterABackoff) {
  auto informer = make("pods", "/api/v1/pods", "spec.nodeName=n1");
  informer->start();
  // A server that pages even the cached list (watch cache disabled).
  nextRequest()->reply(200, list("10", {{"p1", "9"}}, "tok"));
  auto page2 = nextRequest();
  page2->reply(410, okna::testing::transcriptBody(kTranscripts +
                                                  "04f-pod-list-continue-after-compaction.txt"));
  EXPECT_NE(informer->lastError().find("the continue token expired"), std::string::npos)
      << informer->lastError();
  // Not at once: after the backoff.
  auto again = sentAfter(1s);
  ASSERT_TRUE(again);
  EXPECT_EQ(param(again->request.url, "continue"), "<absent>");
  EXPECT_EQ(param(again->request.url, "resourceVersion"), "<absent>");
  EXPECT_EQ(param(again->request.url, "limit"), "500");
  again->reply(410, okna::testing::transcriptBody(kTranscripts +
                                                  "04f-pod-list-continue-after-compaction.txt"));
  EXPECT_TRUE(informer->items().empty());
  EXPECT_FALSE(informer->hasSynced());
  // Every restart waits, longer each time.
  EXPECT_TRUE(sentAfter(2s));
}

TEST_F(InformerTest, TooLargeResourceVersionFallsBackToAQuorumList) {
  auto informer = make("pods", "/api/v1/pods", "spec.nodeName=n1");
  informer->start();
  nextRequest()->reply(200, list("1000", {}));
  nextRequest()->reply(410, "");
  auto relist = nextRequest();
  EXPECT_EQ(param(relist->request.url, "resourceVersion"), "1000");
  // 04k: the cache is behind what the agent saw (etcd restored from a backup).
  relist->reply(504, okna::testing::transcriptBody(kTranscripts + "04k-pod-list-future-rv.txt"));
  auto quorum = sentAfter(1s);
  ASSERT_TRUE(quorum);
  EXPECT_EQ(param(quorum->request.url, "resourceVersion"), "<absent>");
}

TEST_F(InformerTest, AWatchClosedAtOnceIsRetriedWithGrowingBackoffNotAtOnce) {
  auto informer = make("nodes", "/api/v1/nodes", "");
  informer->start();
  nextRequest()->reply(200, list("10", {}));
  auto w = sentNow();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(w);
    EXPECT_EQ(param(w->request.url, "watch"), "true");
    w->stream(200, {});  // a proxy ends it at once: 200, no event
    clock_.advance(20ms);
    w->finish();
    // The backoff is not reset between them: 1, 2, 4 s, then the 8 s cap.
    const std::chrono::milliseconds delay = std::min(1000ms * (1 << i), 8000ms);
    EXPECT_EQ(informer->retryDelay(), delay) << "attempt " << i;
    w = sentAfter(delay);
  }
  EXPECT_NE(informer->lastError().find("ended after 20 ms without an event"), std::string::npos)
      << informer->lastError();
  EXPECT_EQ(metric(R"(okna_k8s_informer_errors_total{reason="request",resource="nodes"})"), "5");
  // A watch that ran its course (here: two seconds, no event) is followed at once by the next,
  ASSERT_TRUE(w);
  w->stream(200, {});
  clock_.advance(2s);
  w->finish();
  auto next = sentNow();
  ASSERT_TRUE(next) << "a healthy watch end is followed by the next watch at once";
  // and it reset the backoff: a failure now waits the first delay again.
  next->fail("Connection reset by peer");
  EXPECT_EQ(informer->retryDelay(), 1s);
  EXPECT_TRUE(sentAfter(1s));
}

TEST_F(InformerTest, ExpiringAgainRightAfterARelistBacksOff) {
  auto informer = make("nodes", "/api/v1/nodes", "");
  informer->start();
  nextRequest()->reply(200, list("10", {}));
  const std::string expired = okna::testing::readWholeFile(
      kTranscripts + "04c-node-watch-too-old-rv-after-restart.events.jsonl");
  nextRequest()->stream(200, {expired});
  auto relist = sentNow();
  ASSERT_TRUE(relist) << "the first relist is at once";
  EXPECT_EQ(param(relist->request.url, "watch"), "<absent>");
  relist->reply(200, list("11", {}));
  sentNow()->stream(200, {expired});
  // 410 again with no event since the relist: the relist waits for the backoff,
  auto later = sentAfter(1s);
  ASSERT_TRUE(later);
  EXPECT_EQ(param(later->request.url, "watch"), "<absent>");
  later->reply(200, list("12", {}));
  // and the LIST in between does not reset it: the next one waits longer.
  sentNow()->stream(200, {expired});
  auto again = sentAfter(2s);
  ASSERT_TRUE(again);
  EXPECT_EQ(param(again->request.url, "watch"), "<absent>");
  again->reply(200, list("13", {}));
  // A watch that delivers an event has worked: its 410 is followed by a relist at once.
  sentNow()->stream(200, {R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"14"}}})"
                          "\n",
                          expired});
  EXPECT_TRUE(sentNow());
}

TEST(LineSplitterTest, SplitsAcrossPieces) {
  LineSplitter s;
  std::vector<std::string> lines;
  auto collect = [&](std::string_view l) { lines.emplace_back(l); };
  s.feed("{\"a\":1}\n{\"b\"", collect);
  s.feed(":2}\n\n{", collect);
  s.feed("}", collect);
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", ""}));
  EXPECT_EQ(s.pending(), "{}");
}

}  // namespace
}  // namespace okna::k8s
