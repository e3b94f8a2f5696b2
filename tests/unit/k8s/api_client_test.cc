#include "k8s/api_client.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <nlohmann/json.hpp>

#include "k8s/events.h"
#include "tests/fakes/fake_http_client.h"

namespace okna::k8s {
namespace {

using nlohmann::json;
using okna::testing::FakeHttpClient;

ClusterConfig cluster() {
  ClusterConfig c;
  c.server = "https://api:6443";
  c.token = TokenSource::literal("tok");
  c.tls.caFile = "/ca.crt";
  return c;
}

TEST(ApiClientTest, PatchTypesSetTheirContentType) {
  FakeHttpClient http;
  ApiClient api(http, cluster());
  api.patch("/api/v1/nodes/n1", PatchType::Merge, json{{"a", 1}}, nullptr);
  api.patch("/api/v1/nodes/n1", PatchType::Json, json::array({{{"op", "add"}}}), nullptr);
  api.patch("/api/v1/nodes/n1", PatchType::StrategicMerge, json::object(), nullptr);
  ASSERT_EQ(http.all().size(), 3u);
  EXPECT_EQ(http.all()[0]->request.headers.at("Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(http.all()[1]->request.headers.at("Content-Type"), "application/json-patch+json");
  EXPECT_EQ(http.all()[2]->request.headers.at("Content-Type"),
            "application/strategic-merge-patch+json");
  EXPECT_EQ(http.all()[0]->request.method, "PATCH");
  EXPECT_EQ(http.all()[0]->request.url, "https://api:6443/api/v1/nodes/n1");
  EXPECT_EQ(http.all()[0]->request.body, R"({"a":1})");
  EXPECT_EQ(http.all()[0]->request.headers.at("Authorization"), "Bearer tok");
  EXPECT_EQ(http.all()[0]->request.tls.caFile, "/ca.crt");
}

TEST(ApiClientTest, WatchSplitsLinesAndKeepsErrorBodies) {
  FakeHttpClient http;
  ApiClient api(http, cluster());
  std::vector<std::string> lines;
  std::vector<long> opened;
  core::HttpResponse done;
  api.watch("/api/v1/pods?watch=true", std::chrono::seconds(5),
            {[&](std::string_view l) { lines.emplace_back(l); },
             [&](core::Result<core::HttpResponse> r) { done = *r; },
             [&](long status) { opened.push_back(status); }, nullptr});
  auto p = http.next();
  p->stream(200, {"{\"type\":\"A\"}\n{\"ty", "pe\":\"B\"}\n"});
  p->finish();
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"type\":\"A\"}", "{\"type\":\"B\"}"}));
  EXPECT_EQ(done.status, 200);

  api.watch("/api/v1/pods?watch=true", std::chrono::seconds(5),
            {[&](std::string_view l) { lines.emplace_back(l); },
             [&](core::Result<core::HttpResponse> r) { done = *r; },
             [&](long status) { opened.push_back(status); }, nullptr});
  auto q = http.next();
  q->stream(400, {"{\"kind\":\"Status\",", "\"message\":\"field label not supported\"}\n"});
  q->finish();
  EXPECT_EQ(lines.size(), 2u);
  EXPECT_EQ(done.status, 400);
  EXPECT_EQ(describeFailure(done, {"watch", "pods", "", ""}),
            "HTTP 400 on watch pods: field label not supported");
  // The status line of each, as soon as it is in (a 200 is an open stream).
  EXPECT_EQ(opened, (std::vector<long>{200, 400}));
}

// A watch streams for minutes: no limit on the whole, one on each line (one event). A longer line
// is never held: its bytes are counted and dropped, and the watch goes on with the next line.
TEST(ApiClientTest, AWatchLineOverTheLimitIsReportedBySizeAndSkipped) {
  FakeHttpClient http;
  ApiClient api(http, cluster());
  std::vector<std::string> lines;
  std::vector<std::size_t> tooLong;
  ApiClient::WatchCallbacks cb;
  cb.onLine = [&](std::string_view l) { lines.emplace_back(l); };
  cb.onLineTooLong = [&](std::size_t bytes) { tooLong.push_back(bytes); };
  api.watch("/api/v1/pods?watch=true", std::chrono::seconds(5), cb, 10);
  auto p = http.next();
  EXPECT_EQ(p->request.maxResponseBytes, 0u);
  const std::string big(25, 'x');
  p->stream(200, {"{\"a\":1}\n" + big.substr(0, 4), big.substr(4, 12),
                  big.substr(16) + "\n{\"b\":2}\n", std::string(10, 'y') + "\n"});
  p->finish();
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", std::string(10, 'y')}));
  EXPECT_EQ(tooLong, (std::vector<std::size_t>{25}));

  // A refused watch's body is kept for its message, up to the same limit.
  api.watch("/api/v1/pods?watch=true", std::chrono::seconds(5),
            {nullptr, [&](core::Result<core::HttpResponse> r) { lines.push_back(r->body); },
             nullptr, nullptr},
            10);
  auto q = http.next();
  q->stream(403, {std::string(8, 'a'), std::string(8, 'b')});
  q->finish();
  EXPECT_EQ(lines.back(), "aaaaaaaabb");
}

TEST(ApiClientTest, AGetCarriesItsResponseLimit) {
  FakeHttpClient http;
  ApiClient api(http, cluster());
  api.get("/api/v1/pods", nullptr);
  api.get("/api/v1/pods", nullptr, {}, 1234);
  EXPECT_EQ(http.all()[0]->request.maxResponseBytes, core::kDefaultMaxResponseBytes);
  EXPECT_EQ(http.all()[1]->request.maxResponseBytes, 1234u);
}

TEST(EventRecorderTest, RepeatsArePatchedNotRecreated) {
  FakeHttpClient http;
  ApiClient api(http, cluster());
  boost::asio::io_context io;
  core::AsioClock clock(io);
  EventRecorder recorder(api, clock, {"lab-1", "uid-1", "openkeel-node-agent"});
  recorder.record("Warning", "InvalidBridgeMappings", "bad value");
  auto create = http.next();
  ASSERT_TRUE(create);
  EXPECT_EQ(create->request.method, "POST");
  EXPECT_EQ(create->request.url, "https://api:6443/api/v1/namespaces/default/events");
  const json event = json::parse(create->request.body);
  EXPECT_EQ(event["involvedObject"],
            (json{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "lab-1"}, {"uid", "uid-1"}}));
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["count"], 1);
  EXPECT_EQ(event["metadata"]["namespace"], "default");
  create->reply(201, create->request.body);
  EXPECT_EQ(recorder.sent(), 1u);

  recorder.record("Warning", "InvalidBridgeMappings", "bad value");
  auto patch = http.next();
  ASSERT_TRUE(patch);
  EXPECT_EQ(patch->request.method, "PATCH");
  EXPECT_EQ(patch->request.url, "https://api:6443/api/v1/namespaces/default/events/" +
                                    event["metadata"]["name"].get<std::string>());
  EXPECT_EQ(json::parse(patch->request.body)["count"], 2);

  recorder.record("Normal", "GatewayDrained", "done");
  EXPECT_EQ(http.next()->request.method, "POST");
}

}  // namespace
}  // namespace okna::k8s
