// The real CurlHttpClient against a one-response-per-connection HTTP server on the same loop:
// a caller's callback that throws fails its transfer, never the loop.

#include "core/curl_http_client.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <boost/asio/buffers_iterator.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <map>
#include <memory>

namespace okna::core {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// Answers every request with `response`, then closes the connection.
class OneShotServer {
 public:
  OneShotServer(asio::io_context& io, std::string response)
      : acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
        response_(std::move(response)) {
    accept();
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/";
  }

 private:
  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec) return;
      auto s = std::make_shared<tcp::socket>(std::move(socket));
      auto buf = std::make_shared<asio::streambuf>();
      asio::async_read_until(
          *s, *buf, "\r\n\r\n", [this, s, buf](boost::system::error_code e, std::size_t) {
            if (e) return;
            asio::async_write(*s, asio::buffer(response_),
                              [s](boost::system::error_code, std::size_t) { s->close(); });
          });
      accept();
    });
  }
  tcp::acceptor acceptor_;
  std::string response_;
};

// Reads the whole request body (Content-Length) before it answers, as most servers do, in
// small reads: slower than curl writes, so that the socket buffers between them fill up.
class BodyReadingServer {
 public:
  explicit BodyReadingServer(asio::io_context& io)
      : acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec) return;
      socket_ = std::make_unique<tcp::socket>(std::move(socket));
      asio::async_read_until(*socket_, buf_, "\r\n\r\n", [this](auto e, std::size_t headerEnd) {
        if (e) return;
        head.assign(asio::buffers_begin(buf_.data()), asio::buffers_begin(buf_.data()) + headerEnd);
        length_ = std::stoul(head.substr(head.find("Content-Length: ") + 16));
        buf_.consume(headerEnd);
        received = buf_.size();
        readSome();
      });
    });
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/";
  }
  // The request line and headers, as received.
  std::string head;
  std::size_t received = 0;

 private:
  void readSome() {
    if (received >= length_) {
      response_ =
          "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(std::to_string(length_).size()) +
          "\r\nConnection: close\r\n\r\n" + std::to_string(length_);
      asio::async_write(*socket_, asio::buffer(response_),
                        [this](auto, std::size_t) { socket_->close(); });
      return;
    }
    socket_->async_read_some(asio::buffer(chunk_), [this](auto e, std::size_t n) {
      if (e) return;
      received += n;
      readSome();
    });
  }
  tcp::acceptor acceptor_;
  std::unique_ptr<tcp::socket> socket_;
  asio::streambuf buf_;
  std::array<char, 1024> chunk_{};
  std::size_t length_ = 0;
  std::string response_;
};

// Uploads `body` with `method` (and `headers`) to a BodyReadingServer; runs the loop until the
// transfer is done, the 20 s transfer timeout being the bound of a hang. Returns the answer.
Result<HttpResponse> upload(asio::io_context& io, BodyReadingServer& server, std::string method,
                            std::size_t size, std::map<std::string, std::string> headers = {}) {
  CurlHttpClient http(io);
  HttpRequest r;
  r.method = std::move(method);
  r.url = server.url();
  r.headers = std::move(headers);
  r.body.assign(size, 'x');
  r.totalTimeout = std::chrono::seconds(20);
  std::optional<Result<HttpResponse>> done;
  http.send(r, {nullptr, nullptr, [&](Result<HttpResponse> res) {
                  done = std::move(res);
                  io.stop();
                }});
  io.run();
  if (!done) return makeError("the loop stopped before the transfer was done");
  return std::move(*done);
}

const char* kOk =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n"
    "Connection: close\r\n\r\n{\"a\":\"b\"}\n\n\n";

// One GET of `server` with `limit`; streamed through onData when `streamed`. Runs the loop until
// the transfer is done (30 s: the bound of a hang).
Result<HttpResponse> getWithLimit(asio::io_context& io, const std::string& url, std::size_t limit,
                                  bool streamed = false, std::size_t* streamedBytes = nullptr) {
  CurlHttpClient http(io);
  HttpRequest r;
  r.url = url;
  r.maxResponseBytes = limit;
  std::optional<Result<HttpResponse>> done;
  HttpCallbacks cb;
  if (streamed)
    cb.onData = [streamedBytes](std::string_view data) {
      if (streamedBytes != nullptr) *streamedBytes += data.size();
    };
  cb.onDone = [&](Result<HttpResponse> res) {
    done = std::move(res);
    io.stop();
  };
  http.send(r, std::move(cb));
  io.run_for(std::chrono::seconds(30));
  io.restart();
  if (!done) return makeError("the loop stopped before the transfer was done");
  return std::move(*done);
}

std::string answerOf(std::size_t bodyBytes, bool chunked) {
  const std::string body(bodyBytes, 'x');
  if (!chunked)
    return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body;
  // No length announced: the limit can only be found while reading.
  std::string out = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
  for (std::size_t at = 0; at < body.size(); at += 1000) {
    const std::size_t n = std::min<std::size_t>(1000, body.size() - at);
    char size[16];
    std::snprintf(size, sizeof size, "%zx\r\n", n);
    out += size + body.substr(at, n) + "\r\n";
  }
  return out + "0\r\n\r\n";
}

// A peer (or whoever controls what it serves) cannot make the agent hold more than the
// request's limit: over it the request fails with an error that names the limit.
TEST(CurlHttpClientTest, AResponseOverItsLimitFailsNamingTheLimit) {
  EXPECT_EQ(HttpRequest{}.maxResponseBytes, std::size_t{16} << 20);
  for (const bool chunked : {false, true}) {
    for (const bool streamed : {false, true}) {
      asio::io_context io;
      OneShotServer server(io, answerOf(50000, chunked));
      std::size_t seen = 0;
      const auto r = getWithLimit(io, server.url(), 20000, streamed, &seen);
      ASSERT_FALSE(r.ok()) << "chunked " << chunked << " streamed " << streamed;
      EXPECT_NE(r.error().message.find("larger than its limit of 20000 bytes"), std::string::npos)
          << r.error().message;
      EXPECT_EQ(r.error().code, CURLE_FILESIZE_EXCEEDED);
      EXPECT_LE(seen, 20000u);
    }
  }
}

TEST(CurlHttpClientTest, AResponseWithinItsLimitOrWithoutOneIsRead) {
  for (const bool chunked : {false, true}) {
    asio::io_context io;
    OneShotServer server(io, answerOf(20000, chunked));
    const auto atLimit = getWithLimit(io, server.url(), 20000);
    ASSERT_TRUE(atLimit.ok()) << atLimit.error().message;
    EXPECT_EQ(atLimit->body.size(), 20000u);
    const auto unlimited = getWithLimit(io, server.url(), 0);
    ASSERT_TRUE(unlimited.ok()) << unlimited.error().message;
    EXPECT_EQ(unlimited->body.size(), 20000u);
  }
}

TEST(CurlHttpClientTest, ACallbackThatThrowsFailsItsTransferNotTheLoop) {
  asio::io_context io;
  OneShotServer server(io, kOk);
  CurlHttpClient http(io);
  std::optional<Result<HttpResponse>> streamed, plain;
  HttpRequest r;
  r.url = server.url();
  const auto bothDone = [&] {
    if (streamed && plain) io.stop();
  };
  http.send(r, {nullptr, [](std::string_view) { throw std::runtime_error("type_error: boom"); },
                [&](Result<HttpResponse> res) {
                  streamed = std::move(res);
                  bothDone();
                }});
  http.send(r, {nullptr, nullptr, [&](Result<HttpResponse> res) {
                  plain = std::move(res);
                  bothDone();
                }});
  // The bound of a hang, not a wait: the loop stops when both are done.
  EXPECT_NO_THROW(io.run_for(std::chrono::seconds(30)));
  ASSERT_TRUE(streamed.has_value());
  ASSERT_FALSE(streamed->ok());
  EXPECT_NE(streamed->error().message.find("a callback threw: type_error: boom"), std::string::npos)
      << streamed->error().message;
  // The other transfer on the same loop is unaffected.
  ASSERT_TRUE(plain.has_value());
  ASSERT_TRUE(plain->ok()) << plain->error().message;
  EXPECT_EQ((*plain)->status, 200);
  EXPECT_EQ(http.callbackErrors(), 1u);
}

TEST(CurlHttpClientTest, ADoneCallbackThatThrowsIsContained) {
  asio::io_context io;
  OneShotServer server(io, kOk);
  CurlHttpClient http(io);
  HttpRequest r;
  r.url = server.url();
  int done = 0;
  http.send(r, {nullptr, nullptr, [&](Result<HttpResponse>) {
                  if (++done == 2) io.stop();
                  throw std::logic_error("bug in a handler");
                }});
  http.send(r, {nullptr, nullptr, [&](Result<HttpResponse>) {
                  if (++done == 2) io.stop();
                }});
  EXPECT_NO_THROW(io.run_for(std::chrono::seconds(30)));
  EXPECT_EQ(done, 2);
  EXPECT_EQ(http.callbackErrors(), 1u);
  EXPECT_EQ(http.inFlight(), 0u);
}

TEST(CurlHttpClientTest, AnUploadWaitsForWritabilityWhileItAlsoWaitsForAnAnswer) {
  // curl watches an uploading socket in both directions (an early answer ends the upload).
  // Once the socket buffers are full, only writability (the server draining them, on this very
  // loop) lets the upload go on: a wait for readability alone would never end.
  asio::io_context io;
  BodyReadingServer server(io);
  auto done = upload(io, server, "POST", 64u << 20);  // well under a second
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_EQ(done->status, 200);
  EXPECT_EQ(done->body, std::to_string(64u << 20));
  EXPECT_EQ(server.received, 64u << 20);
}

TEST(CurlHttpClientTest, ADirectionAddedWhileAReadIsPendingIsWaitedFor) {
  // With "Expect: 100-continue" curl sends the headers, then wants only to read (the 100) while
  // it holds the body back. This server never sends a 100 and answers only once it has the whole
  // body: when curl's own 100-continue timer gives up waiting, curl wants to write as well while
  // the wait for readability is still pending. A client that kept just that wait would never
  // send the body, and both sides would wait until the transfer's timeout.
  asio::io_context io;
  BodyReadingServer server(io);
  // curl stops waiting for the 100 after 1 s (CURLOPT_EXPECT_100_TIMEOUT_MS).
  auto done = upload(io, server, "PUT", 256u << 10, {{"Expect", "100-continue"}});
  ASSERT_NE(server.head.find("Expect: 100-continue"), std::string::npos) << server.head;
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_EQ(done->status, 200);
  EXPECT_EQ(done->body, std::to_string(256u << 10));
  EXPECT_EQ(server.received, 256u << 10);
}

}  // namespace
}  // namespace okna::core
