// core::BeastHttpClient against the fake Nova (python, loopback): what the metadata proxy tests
// do not reach (host names, HEAD, cancel, URL errors, connect failures, pooling).

#include "core/beast_http_client.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>

#include "tests/fakes/loop_thread.h"
#include "tests/fakes/process.h"
#include "tests/fakes/raw_http.h"
#include "tests/support/test_paths.h"

namespace okna::core {
namespace {

using okna::testing::waitFor;

class BeastHttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    nova_ = std::make_unique<okna::testing::Process>(
        std::vector<std::string>{"/usr/bin/python3", std::string(::okna::testing::kSourceDir) +
                                                         "/tests/fixtures/nova/fake_nova.py"},
        logPath_);
    const std::regex ready("listening on port ([0-9]+)");
    waitFor(
        [&] {
          std::smatch m;
          const std::string text = nova_->log();
          if (std::regex_search(text, m, ready)) port_ = std::stoi(m[1]);
          return port_ != 0 || !nova_->running();
        },
        std::chrono::seconds(60));
    ASSERT_NE(port_, 0) << nova_->log();
    loop_.run([&] { client_ = std::make_unique<BeastHttpClient>(loop_.io(), "t/1"); });
  }
  void TearDown() override {
    loop_.run([&] { client_.reset(); });
    loop_.stop();
    nova_.reset();
    std::remove(logPath_.c_str());
  }
  /** Sends on the loop and waits for onDone (or gives up after 10 s). */
  Result<HttpResponse> call(HttpRequest request) {
    std::optional<Result<HttpResponse>> result;
    loop_.run([&] {
      HttpCallbacks cb;
      cb.onDone = [&](Result<HttpResponse> r) { result = std::move(r); };
      client_->send(std::move(request), std::move(cb));
      EXPECT_FALSE(result.has_value()) << "no callback inside send()";
    });
    waitFor([&] { return loop_.run([&] { return result.has_value(); }); },
            std::chrono::seconds(10));
    return loop_.run([&] { return result.has_value() ? std::move(*result) : makeError("none"); });
  }
  std::string url(const std::string& path, const std::string& host = "127.0.0.1") {
    return "http://" + host + ":" + std::to_string(port_) + path;
  }

  const std::string logPath_ = "/tmp/okna-beast-client-test-" + std::to_string(::getpid()) + ".log";
  std::unique_ptr<okna::testing::Process> nova_;
  int port_ = 0;
  okna::testing::LoopThread loop_;
  std::unique_ptr<BeastHttpClient> client_;
};

TEST_F(BeastHttpClientTest, HostNameResolvedAndHeadersLowerCased) {
  HttpRequest r;
  r.url = url("/_control/stats", "localhost");
  auto res = call(r);
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->headers.at("content-type"), "application/json");
  EXPECT_NE(res->body.find("connections"), std::string::npos);
}

TEST_F(BeastHttpClientTest, KeepsOnlyTheResponseHeadersAskedFor) {
  static constexpr std::string_view kWanted[] = {"content-type"};
  HttpRequest r;
  r.url = url("/_control/stats");
  auto all = call(r);
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_GT(all->headers.size(), 1u) << "the fake answers with more than Content-Type";
  r.keepResponseHeaders = kWanted;
  auto some = call(r);
  ASSERT_TRUE(some.ok()) << some.error().message;
  EXPECT_EQ(some->headers.size(), 1u);
  EXPECT_EQ(some->headers.at("content-type"), all->headers.at("content-type"));
  EXPECT_EQ(some->body.empty(), all->body.empty());
}

// As the curl client: a body over the request's limit fails, naming the limit; 0 is none.
TEST_F(BeastHttpClientTest, AResponseOverItsLimitFailsNamingTheLimit) {
  HttpRequest r;
  r.url = url("/_control/stats");
  r.maxResponseBytes = 10;
  auto res = call(r);
  ASSERT_FALSE(res.ok());
  EXPECT_NE(res.error().message.find("larger than its limit of 10 bytes"), std::string::npos)
      << res.error().message;
  EXPECT_EQ(res.error().code, CURLE_FILESIZE_EXCEEDED);
  r.maxResponseBytes = 0;
  res = call(r);
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_GT(res->body.size(), 10u);
}

TEST_F(BeastHttpClientTest, HeadHasNoBody) {
  HttpRequest r;
  r.method = "HEAD";
  r.url = url("/_control/stats");
  auto res = call(r);
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "");
  // The connection is still usable afterwards.
  r.method = "GET";
  res = call(r);
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_FALSE(res->body.empty());
  EXPECT_EQ(loop_.run([&] { return client_->idleConnections(); }), 1u);
}

TEST_F(BeastHttpClientTest, UnsupportedSchemeAndBadUrlFailFromTheLoop) {
  HttpRequest r;
  r.url = "https://127.0.0.1/";
  auto res = call(r);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().code, CURLE_UNSUPPORTED_PROTOCOL);
  r.url = "http://[::1/";
  res = call(r);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().code, CURLE_URL_MALFORMAT);
}

TEST_F(BeastHttpClientTest, RefusedIsCouldNotConnect) {
  auto [fd, freePort] = okna::testing::listenOnLoopback();
  ::close(fd);
  HttpRequest r;
  r.url = "http://127.0.0.1:" + std::to_string(freePort) + "/";
  auto res = call(r);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().code, CURLE_COULDNT_CONNECT);
}

TEST_F(BeastHttpClientTest, CancelledRequestNeverCallsBack) {
  HttpRequest r;
  r.url = url("/_control/stats");
  bool called = false;
  loop_.run([&] {
    HttpCallbacks cb;
    cb.onDone = [&](Result<HttpResponse>) { called = true; };
    client_->send(r, std::move(cb))->cancel();
  });
  // A later request completes; by then the cancelled one would have too.
  auto res = call(r);
  ASSERT_TRUE(res.ok());
  EXPECT_FALSE(loop_.run([&] { return called; }));
}

TEST_F(BeastHttpClientTest, PoolReusesOneConnectionSequentially) {
  HttpRequest r;
  r.url = url("/_control/stats");
  auto first = call(r);
  ASSERT_TRUE(first.ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(call(r).ok());
  auto last = call(r);
  ASSERT_TRUE(last.ok());
  // The stats count accepted connections: unchanged from the first answer to the last.
  EXPECT_EQ(first->body, last->body);
}

TEST_F(BeastHttpClientTest, AConnectionThePeerClosedIsFoundOutBeforeSending) {
  HttpRequest closing;
  closing.url = url("/_control/answer-and-close");
  HttpRequest stats;
  stats.url = url("/_control/stats");
  // Every pooled connection is checked before use: the one the peer closed is readable (EOF),
  // is dropped, and the request goes on a new one (the fake has then accepted 2). The same
  // check keeps a connection with unread bytes out of use (tests/unit/core/http_framing_test).
  ASSERT_TRUE(call(closing).ok());
  auto first = call(stats);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_NE(first->body.find("\"connections\": 2"), std::string::npos) << first->body;
  ASSERT_TRUE(call(closing).ok());
  auto second = call(stats);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_NE(second->body.find("\"connections\": 3"), std::string::npos) << second->body;
}

TEST_F(BeastHttpClientTest, ABodyLargerThanTheSocketTakesIsSentWhole) {
  HttpRequest r;
  r.method = "POST";
  r.url = url("/_control/stats");
  // Far more than a socket's send buffer: the rest goes out as the server reads. The fake
  // reads exactly Content-Length bytes before it answers, so an answer means all arrived.
  r.body.assign(8 << 20, 'b');
  auto res = call(r);
  ASSERT_TRUE(res.ok()) << res.error().message;
  EXPECT_EQ(res->status, 200);
  // And the connection is still good for the next request.
  HttpRequest next;
  next.url = url("/_control/stats");
  auto again = call(next);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->body.find("\"connections\": 1"), std::string::npos) << again->body;
}

}  // namespace
}  // namespace okna::core
