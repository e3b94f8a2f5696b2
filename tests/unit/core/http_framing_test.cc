// Both HttpClients refuse a request whose method, URL or headers would change its framing (CR,
// LF, NUL, other controls): an error, and not a byte on the wire. And the Beast client's pool
// never hands out a connection with unread bytes on it (an answer to no request of ours).

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <optional>
#include <string>

#include "core/beast_http_client.h"
#include "core/curl_http_client.h"
#include "core/http_fields.h"
#include "tests/fakes/loop_thread.h"
#include "tests/fakes/raw_http.h"

namespace okna::core {
namespace {

using okna::testing::listenOnLoopback;
using okna::testing::LoopThread;

constexpr int kBadArgument = 43;  // CURLE_BAD_FUNCTION_ARGUMENT

// A connection waiting in the listener's queue within `ms`.
bool connectionPending(int listenFd, int ms) {
  pollfd p{listenFd, POLLIN, 0};
  return ::poll(&p, 1, ms) > 0;
}

template <typename Client>
Result<HttpResponse> sendAndWait(LoopThread& loop, Client& client, HttpRequest request) {
  std::promise<Result<HttpResponse>> done;
  auto future = done.get_future();
  loop.run([&] {
    HttpCallbacks cb;
    cb.onDone = [&done](Result<HttpResponse> r) { done.set_value(std::move(r)); };
    client.send(std::move(request), std::move(cb));
  });
  if (future.wait_for(std::chrono::seconds(10)) != std::future_status::ready)
    return makeError("no answer within 10 s");
  return future.get();
}

struct BadRequest {
  const char* what;
  std::string method = "GET";
  std::string path = "/openstack";
  std::string name = "X-Instance-ID";
  std::string value = "0f8e1d2c-0000-4000-8000-000000000001";
};

std::vector<BadRequest> badRequests() {
  std::vector<BadRequest> out;
  out.push_back({.what = "CRLF in a value, carrying a second request",
                 .value = "id\r\n\r\nGET / HTTP/1.1\r\nX-A: b"});
  out.push_back({.what = "LF alone in a value", .value = "id\nX-Tenant-ID: other"});
  out.push_back({.what = "CR alone in a value", .value = "id\rX"});
  out.push_back({.what = "NUL in a value", .value = std::string("id\0x", 4)});
  out.push_back({.what = "another control in a value", .value = "id\x1b[2J"});
  out.push_back({.what = "CRLF in a name", .name = "X-A\r\nX-Instance-ID"});
  out.push_back({.what = "a space in a name", .name = "X Instance"});
  out.push_back({.what = "NUL in a name", .name = std::string("X-\0A", 4)});
  out.push_back({.what = "an empty name", .name = ""});
  out.push_back({.what = "CRLF in the method", .method = "GET / HTTP/1.1\r\nX:"});
  out.push_back({.what = "CRLF in the URL", .path = "/a\r\nX-Injected: 1"});
  out.push_back({.what = "a space in the URL", .path = "/a HTTP/1.1"});
  return out;
}

template <typename Client>
void expectEveryBadRequestRefused(const char* clientName) {
  const auto [listenFd, port] = listenOnLoopback();
  LoopThread loop;
  std::optional<Client> client;
  loop.run([&] { client.emplace(loop.io(), "t/1"); });
  for (const auto& bad : badRequests()) {
    HttpRequest r;
    r.method = bad.method;
    r.url = "http://127.0.0.1:" + std::to_string(port) + bad.path;
    r.headers[bad.name] = bad.value;
    EXPECT_NE(requestFramingProblem(r), "") << bad.what;
    auto result = sendAndWait(loop, *client, r);
    ASSERT_FALSE(result.ok()) << clientName << ": " << bad.what;
    EXPECT_EQ(result.error().code, kBadArgument) << clientName << ": " << bad.what;
    EXPECT_NE(result.error().message.find("not sent"), std::string::npos) << result.error().message;
    // The value is not quoted in the error (it may be a secret); the name is, escaped.
    EXPECT_EQ(result.error().message.find('\r'), std::string::npos) << bad.what;
    EXPECT_EQ(result.error().message.find('\n'), std::string::npos) << bad.what;
  }
  EXPECT_FALSE(connectionPending(listenFd, 50)) << clientName << " connected for a refused request";
  loop.run([&] { client.reset(); });
  loop.stop();
  ::close(listenFd);
}

TEST(HttpFramingTest, TheBeastClientSendsNothingOfARequestThatWouldBeSplit) {
  expectEveryBadRequestRefused<BeastHttpClient>("BeastHttpClient");
}

TEST(HttpFramingTest, TheCurlClientSendsNothingOfARequestThatWouldBeSplit) {
  expectEveryBadRequestRefused<CurlHttpClient>("CurlHttpClient");
}

TEST(HttpFramingTest, OrdinaryRequestsPass) {
  HttpRequest r;
  r.method = "POST";
  r.url = "http://127.0.0.1:8775/openstack/latest/password?x=1";
  r.headers["X-Instance-ID"] = "0f8e1d2c-0000-4000-8000-000000000001";
  r.headers["X-Tenant-ID"] = "4a5f0e9d8c7b4a3f9e8d7c6b5a4f3e2d";
  r.headers["Authorization"] = "Bearer abc.def\tghi";  // HTAB is a field-value character
  r.headers["Content-Type"] = "";                      // "do not send" stays allowed
  r.headers["X-Unicode"] = "caf\xc3\xa9";              // obs-text is not a framing byte
  EXPECT_EQ(requestFramingProblem(r), "");
  EXPECT_TRUE(isHttpToken("X-OVN-Network-ID"));
  EXPECT_FALSE(isHttpToken("X:Y"));
}

// A server the test drives byte for byte: it answers the first request, then writes a second,
// unrequested answer on the same connection once the client has read the first.
TEST(HttpFramingTest, APooledConnectionWithUnreadBytesIsNeverReused) {
  const auto [listenFd, port] = listenOnLoopback();
  LoopThread loop;
  std::optional<BeastHttpClient> client;
  loop.run([&] { client.emplace(loop.io(), "t/1"); });
  const auto answer = [](const std::string& body) {
    return "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  const auto acceptOne = [&] {
    EXPECT_TRUE(connectionPending(listenFd, 5000));
    const int fd = ::accept(listenFd, nullptr, nullptr);
    EXPECT_GE(fd, 0);
    return fd;
  };
  const auto readRequest = [](int fd) {
    std::string in;
    char buf[4096];
    while (in.find("\r\n\r\n") == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0) break;
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      in.append(buf, static_cast<std::size_t>(n));
    }
    return in;
  };
  const auto writeAll = [](int fd, const std::string& bytes) {
    ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  };

  HttpRequest r;
  r.url = "http://127.0.0.1:" + std::to_string(port) + "/first";
  std::promise<Result<HttpResponse>> firstDone;
  loop.run([&] {
    HttpCallbacks cb;
    cb.onDone = [&](Result<HttpResponse> res) { firstDone.set_value(std::move(res)); };
    client->send(r, std::move(cb));
  });
  const int first = acceptOne();
  EXPECT_NE(readRequest(first).find("GET /first "), std::string::npos);
  writeAll(first, answer("first"));
  auto one = firstDone.get_future().get();
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(one->body, "first");
  EXPECT_EQ(loop.run([&] { return client->idleConnections(); }), 1u);
  // The stray answer: on loopback, send() has queued it at the client's socket when it returns.
  writeAll(first, answer("stray, meant for nobody"));

  r.url = "http://127.0.0.1:" + std::to_string(port) + "/second";
  std::promise<Result<HttpResponse>> secondDone;
  loop.run([&] {
    HttpCallbacks cb;
    cb.onDone = [&](Result<HttpResponse> res) { secondDone.set_value(std::move(res)); };
    client->send(r, std::move(cb));
  });
  // The request goes on a new connection: the old one got no second request.
  const int second = acceptOne();
  EXPECT_NE(readRequest(second).find("GET /second "), std::string::npos);
  writeAll(second, answer("second"));
  auto two = secondDone.get_future().get();
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two->body, "second");
  loop.run([&] { client.reset(); });
  loop.stop();
  ::close(first);
  ::close(second);
  ::close(listenFd);
}

}  // namespace
}  // namespace okna::core
