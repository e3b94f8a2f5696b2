#pragma once
// The HTTP/1.x bytes the metadata server reads and writes, without Beast's message containers:
// a request is parsed into the connection's own strings (Beast's basic_fields allocates a node
// per header, and the proxy needs none of the VM's headers), and an answer's head is formatted
// into a reused string. Together they removed most of the proxy's per-request allocations.
// Beast's parser still does the parsing (limits, chunked bodies, keep-alive rules).

#include <boost/beast/http/basic_parser.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace okna::metadata {

/** What the proxy needs of a request. Kept per connection so the strings keep their capacity. */
struct RequestData {
  std::string method;
  std::string target;
  std::string body;
  int version = 11;
  bool expectContinue = false;
  // The Transfer-Encoding values (joined by ", ") and whether Content-Length was given: the
  // framing checked once the header is in (RFC 9112 6.1, 6.3).
  std::string transferEncoding;
  bool contentLength = false;
  // When the framing is refused: the status to answer (400, or 501 for a coding we do not
  // decode), then the connection is closed. 0: fine.
  unsigned framingError = 0;
};

/** Parses one request into a RequestData (cleared first). One parser per request. */
class RequestReader final : public boost::beast::http::basic_parser<true> {
 public:
  explicit RequestReader(RequestData& out);

  /** The limit on request line + headers, in bytes, however the bytes arrive. Beast's own
   *  header_limit() counts the request line only when it came in a read of its own: read whole,
   *  a 4 KB request line + 8 KB of fields passed an 8 KB limit, read in small pieces it got 431
   *  (found by tests/fuzz/request_path_fuzz). Use this instead of header_limit(). */
  void limitHeader(std::uint32_t bytes);

 private:
  using string_view = boost::beast::string_view;
  using error_code = boost::beast::error_code;
  void on_request_impl(boost::beast::http::verb, string_view method, string_view target,
                       int version, error_code&) override;
  void on_response_impl(int, string_view, int, error_code&) override {}
  void on_field_impl(boost::beast::http::field name, string_view, string_view value,
                     error_code&) override;
  void on_header_impl(error_code& ec) override;
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override;
  std::size_t on_body_impl(string_view data, error_code&) override;
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view data, error_code&) override;
  void on_finish_impl(error_code&) override {}

  RequestData& out_;
  std::uint32_t headerLimit_ = 8192;
};

/** The status a request's framing must be refused with (0: it is fine): Transfer-Encoding whose
 *  last coding is not chunked, chunked twice, or together with Content-Length, or in HTTP/1.0:
 *  400 (the body's end cannot be known: what follows must not be read as another request);
 *  any coding but chunked (gzip, deflate...): 501, as the proxy decodes none. */
unsigned transferEncodingError(std::string_view transferEncoding, bool contentLength, int version);

/** Turns an absolute-form target ("http://169.254.169.254/latest?x") into its origin form
 *  ("/latest?x") in place, as RFC 9112 3.2.2 asks of a server (haproxy accepts it too); the
 *  authority is dropped (the listener says which network). False when `target` is neither. */
bool toOriginForm(std::string& target);

/**
 * The status line and headers of an answer, as Beast's serializer wrote them before: status
 * line, Content-Type, Content-Length, then Connection only where the version's default differs
 * ("close" on HTTP/1.1, "keep-alive" on HTTP/1.0). Replaces `out`'s content.
 */
void formatResponseHead(std::string& out, unsigned status, int version, bool keepAlive,
                        std::string_view contentType, std::size_t contentLength);

}  // namespace okna::metadata
