#include "metadata/wire.h"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/status.hpp>
#include <charconv>

namespace okna::metadata {

namespace http = boost::beast::http;

RequestReader::RequestReader(RequestData& out) : out_(out) {
  out_.method.clear();
  out_.target.clear();
  out_.body.clear();
  out_.version = 11;
  out_.expectContinue = false;
}

void RequestReader::on_request_impl(http::verb, string_view method, string_view target, int version,
                                    error_code&) {
  out_.method.assign(method.data(), method.size());
  out_.target.assign(target.data(), target.size());
  out_.version = version;
}

void RequestReader::on_field_impl(http::field name, string_view, string_view value, error_code&) {
  if (name == http::field::expect && boost::beast::iequals(value, "100-continue"))
    out_.expectContinue = true;
}

void RequestReader::on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) {
  // The body limit was checked against the length before this is called.
  if (length) out_.body.reserve(static_cast<std::size_t>(*length));
}

std::size_t RequestReader::on_body_impl(string_view data, error_code&) {
  out_.body.append(data.data(), data.size());
  return data.size();
}

std::size_t RequestReader::on_chunk_body_impl(std::uint64_t, string_view data, error_code&) {
  out_.body.append(data.data(), data.size());
  return data.size();
}

void formatResponseHead(std::string& out, unsigned status, int version, bool keepAlive,
                        std::string_view contentType, std::size_t contentLength) {
  const auto reason = http::obsolete_reason(http::int_to_status(status));
  char number[24];
  out.clear();
  out.append(version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ");
  auto end = std::to_chars(number, number + sizeof number, status).ptr;
  out.append(number, end).append(" ").append(reason.data(), reason.size()).append("\r\n");
  out.append("Content-Type: ").append(contentType).append("\r\nContent-Length: ");
  end = std::to_chars(number, number + sizeof number, contentLength).ptr;
  out.append(number, end).append("\r\n");
  if (version >= 11 && !keepAlive) out.append("Connection: close\r\n");
  if (version < 11 && keepAlive) out.append("Connection: keep-alive\r\n");
  out.append("\r\n");
}

}  // namespace okna::metadata
