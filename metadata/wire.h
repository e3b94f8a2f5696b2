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
};

/** Parses one request into a RequestData (cleared first). One parser per request. */
class RequestReader final : public boost::beast::http::basic_parser<true> {
 public:
  explicit RequestReader(RequestData& out);

 private:
  using string_view = boost::beast::string_view;
  using error_code = boost::beast::error_code;
  void on_request_impl(boost::beast::http::verb, string_view method, string_view target,
                       int version, error_code&) override;
  void on_response_impl(int, string_view, int, error_code&) override {}
  void on_field_impl(boost::beast::http::field name, string_view, string_view value,
                     error_code&) override;
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override;
  std::size_t on_body_impl(string_view data, error_code&) override;
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view data, error_code&) override;
  void on_finish_impl(error_code&) override {}

  RequestData& out_;
};

/**
 * The status line and headers of an answer, as Beast's serializer wrote them before: status
 * line, Content-Type, Content-Length, then Connection only where the version's default differs
 * ("close" on HTTP/1.1, "keep-alive" on HTTP/1.0). Replaces `out`'s content.
 */
void formatResponseHead(std::string& out, unsigned status, int version, bool keepAlive,
                        std::string_view contentType, std::size_t contentLength);

}  // namespace okna::metadata
