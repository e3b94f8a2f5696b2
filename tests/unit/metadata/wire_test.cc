// The metadata server's own HTTP framing (metadata/wire.h): the answer's head byte for byte as
// Beast's serializer wrote it, and the request reader over whole, split, chunked and bad input.

#include "metadata/wire.h"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

namespace okna::metadata {
namespace {

TEST(ResponseHead, KeepAliveIsTheDefaultOfHttp11) {
  std::string head = "left over from the last answer";
  formatResponseHead(head, 200, 11, true, "application/json", 1257);
  EXPECT_EQ(head,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1257\r\n\r\n");
}

TEST(ResponseHead, ClosingHttp11SaysSo) {
  std::string head;
  formatResponseHead(head, 404, 11, false, "text/plain; charset=UTF-8", 0);
  EXPECT_EQ(head,
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=UTF-8\r\n"
            "Content-Length: 0\r\nConnection: close\r\n\r\n");
}

TEST(ResponseHead, Http10KeepsAliveOnlyWhenAsked) {
  std::string head;
  formatResponseHead(head, 431, 10, true, "text/plain", 7);
  EXPECT_EQ(head,
            "HTTP/1.0 431 Request Header Fields Too Large\r\nContent-Type: text/plain\r\n"
            "Content-Length: 7\r\nConnection: keep-alive\r\n\r\n");
  formatResponseHead(head, 500, 10, false, "text/plain", 7);
  EXPECT_EQ(head,
            "HTTP/1.0 500 Internal Server Error\r\nContent-Type: text/plain\r\n"
            "Content-Length: 7\r\n\r\n");
}

// Feeds `input` in pieces of `step` bytes, as bytes would arrive from a socket.
boost::beast::error_code feed(RequestReader& reader, std::string_view input, std::size_t step) {
  std::string pending;
  for (std::size_t at = 0; at < input.size(); at += step) {
    pending.append(input.substr(at, step));
    while (!pending.empty() && !reader.is_done()) {
      boost::beast::error_code ec;
      const std::size_t used = reader.put(boost::asio::buffer(pending), ec);
      pending.erase(0, used);
      if (ec == boost::beast::http::error::need_more) break;
      if (ec) return ec;
    }
  }
  return {};
}

TEST(RequestReader, TakesMethodTargetVersionAndBodyInAnyPieces) {
  constexpr std::string_view kRequest =
      "POST /openstack/2013-04-04/password?x=1 HTTP/1.1\r\nHost: 169.254.169.254\r\n"
      "X-Instance-ID: forged\r\nContent-Length: 5\r\n\r\nhello";
  for (std::size_t step : {kRequest.size(), std::size_t{1}, std::size_t{7}}) {
    RequestData data;
    data.body = "stale";
    data.expectContinue = true;
    RequestReader reader(data);
    EXPECT_FALSE(feed(reader, kRequest, step)) << "step " << step;
    ASSERT_TRUE(reader.is_done()) << "step " << step;
    EXPECT_EQ(data.method, "POST");
    EXPECT_EQ(data.target, "/openstack/2013-04-04/password?x=1");
    EXPECT_EQ(data.version, 11);
    EXPECT_EQ(data.body, "hello");
    EXPECT_FALSE(data.expectContinue);
    EXPECT_TRUE(reader.keep_alive());
  }
}

// The header limit counts the request line, however the bytes arrive. Beast's own limit
// skipped it when the line came in the first read: 12,000 bytes passed an 8,192 limit read
// whole and got 431 read in small pieces (tests/fuzz/request_path_fuzz found it).
TEST(RequestReader, TheHeaderLimitCountsTheRequestLineInAnyPieces) {
  const auto request = [](std::size_t targetBytes, std::size_t fieldBytes) {
    return "GET /" + std::string(targetBytes - 1, 't') +
           " HTTP/1.1\r\nX-Pad: " + std::string(fieldBytes, 'f') + "\r\n\r\n";
  };
  const std::string over = request(4000, 5000);   // 9,030 bytes of request line and headers
  const std::string under = request(4000, 4000);  // 8,030
  for (std::size_t step : {over.size(), std::size_t{4096}, std::size_t{1460}, std::size_t{8}}) {
    RequestData data;
    RequestReader tooBig(data);
    tooBig.limitHeader(8192);
    EXPECT_EQ(feed(tooBig, over, step), boost::beast::http::error::header_limit) << "step " << step;
    RequestReader fits(data);
    fits.limitHeader(8192);
    EXPECT_FALSE(feed(fits, under, step)) << "step " << step;
    EXPECT_TRUE(fits.is_done()) << "step " << step;
  }
  // A request line alone over the limit.
  RequestData data;
  RequestReader line(data);
  line.limitHeader(512);
  EXPECT_EQ(feed(line, request(600, 1), 4096), boost::beast::http::error::header_limit);
}

TEST(RequestReader, ChunkedBodyExpectContinueAndHttp10) {
  RequestData data;
  RequestReader reader(data);
  EXPECT_FALSE(feed(reader,
                    "PUT /x HTTP/1.1\r\nExpect: 100-Continue\r\nTransfer-Encoding: chunked\r\n"
                    "Connection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
                    4));
  ASSERT_TRUE(reader.is_done());
  EXPECT_EQ(data.body, "abcde");
  EXPECT_TRUE(data.expectContinue);
  EXPECT_FALSE(reader.keep_alive());

  RequestData old;
  RequestReader reader10(old);
  EXPECT_FALSE(feed(reader10, "GET / HTTP/1.0\r\n\r\n", 100));
  ASSERT_TRUE(reader10.is_done());
  EXPECT_EQ(old.version, 10);
  EXPECT_FALSE(reader10.keep_alive());
}

TEST(RequestReader, LimitsAndGarbageAreErrors) {
  RequestData data;
  RequestReader tooLong(data);
  tooLong.body_limit(4);
  EXPECT_EQ(feed(tooLong, "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", 100),
            boost::beast::http::error::body_limit);
  RequestReader garbage(data);
  EXPECT_TRUE(feed(garbage, "NOT HTTP AT ALL\r\n\r\n", 100));
}

}  // namespace
}  // namespace okna::metadata
