#include "metadata/wire.h"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/status.hpp>
#include <charconv>

namespace okna::metadata {

namespace http = boost::beast::http;

namespace {

bool iequal(std::string_view a, std::string_view b) {
  return boost::beast::iequals(boost::beast::string_view(a.data(), a.size()),
                               boost::beast::string_view(b.data(), b.size()));
}

}  // namespace

RequestReader::RequestReader(RequestData& out) : out_(out) {
  out_.method.clear();
  out_.target.clear();
  out_.body.clear();
  out_.version = 11;
  out_.expectContinue = false;
  out_.transferEncoding.clear();
  out_.contentLength = false;
  out_.framingError = 0;
}

void RequestReader::limitHeader(std::uint32_t bytes) {
  headerLimit_ = bytes;
  header_limit(bytes);
}

void RequestReader::on_request_impl(http::verb, string_view method, string_view target, int version,
                                    error_code& ec) {
  // Beast applies its limit to the fields alone once the request line is parsed: what is left
  // of ours is the limit less "METHOD SP target SP HTTP/x.y CRLF".
  const std::size_t line = method.size() + 1 + target.size() + 1 + 8 + 2;
  if (line >= headerLimit_) {
    ec = http::error::header_limit;
    return;
  }
  header_limit(static_cast<std::uint32_t>(headerLimit_ - line));
  out_.method.assign(method.data(), method.size());
  out_.target.assign(target.data(), target.size());
  out_.version = version;
}

void RequestReader::on_field_impl(http::field name, string_view, string_view value, error_code&) {
  if (name == http::field::expect && boost::beast::iequals(value, "100-continue"))
    out_.expectContinue = true;
  if (name == http::field::transfer_encoding) {
    if (!out_.transferEncoding.empty()) out_.transferEncoding.append(", ");
    out_.transferEncoding.append(value.data(), value.size());
  }
  if (name == http::field::content_length) out_.contentLength = true;
}

void RequestReader::on_header_impl(error_code& ec) {
  // Beast reads "chunked, identity" as "no body" and would parse the body as the next request.
  if (out_.transferEncoding.empty() && !out_.contentLength) return;
  out_.framingError =
      transferEncodingError(out_.transferEncoding, out_.contentLength, out_.version);
  if (out_.framingError != 0) ec = http::error::bad_transfer_encoding;
}

unsigned transferEncodingError(std::string_view te, bool contentLength, int version) {
  if (te.empty()) return 0;
  if (contentLength || version < 11) return 400;
  unsigned chunked = 0;
  bool unknown = false;
  std::string_view last;
  while (!te.empty()) {
    const auto comma = te.find(',');
    std::string_view coding = te.substr(0, comma);
    te = comma == std::string_view::npos ? std::string_view() : te.substr(comma + 1);
    while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t'))
      coding.remove_prefix(1);
    while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t'))
      coding.remove_suffix(1);
    if (coding.empty()) continue;  // empty list elements are allowed (RFC 9110 5.6.1)
    last = coding;
    if (iequal(coding, "chunked")) {
      ++chunked;
    } else {
      unknown = true;
    }
  }
  if (chunked != 1 || !iequal(last, "chunked")) return 400;
  return unknown ? 501 : 0;
}

bool toOriginForm(std::string& target) {
  if (target.starts_with('/')) return true;
  std::size_t scheme = 0;
  if (iequal(std::string_view(target).substr(0, 7), "http://")) scheme = 7;
  if (iequal(std::string_view(target).substr(0, 8), "https://")) scheme = 8;
  if (scheme == 0) return false;
  const auto end = target.find_first_of("/?#", scheme);
  if (end == std::string::npos) {
    target.assign("/");
  } else {
    target.erase(0, end);
    if (!target.starts_with('/')) target.insert(0, "/");
  }
  return true;
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
