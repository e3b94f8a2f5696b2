// libFuzzer target: a VM's bytes through the metadata proxy's request path, as
// metadata/server.cc's Connection handles them, up to the request the proxy would send to Nova.
//
//   bytes -> RequestReader (Beast's parser, the server's header and body limits), one parser per
//   request, pipelined requests read from what is left -> for each complete request:
//   toOriginForm + isOriginForm -> buildNovaRequest -> the invariants below.
//
// Invariants (any broken one aborts):
//   - a refused read answers 400, 413, 431 or the framing status, and a framing status is
//     0, 400 or 501; a request that completed has no framing error, and its Transfer-Encoding
//     (when given) is chunked alone, in HTTP/1.1, without Content-Length (the body's end is
//     known: what follows it is the next request) and passes transferEncodingError;
//   - Beast's method is an HTTP token, the target the server keeps is origin-form;
//   - the request to Nova passes core::requestFramingProblem (what both HTTP clients check last),
//     has no CR, LF or NUL in its URL, header names or values, its URL is Nova's base URL + the
//     target's path and query, and it carries exactly X-Forwarded-For, X-Instance-ID,
//     X-Tenant-ID, X-Instance-ID-Signature (the values given) plus Content-Type when Neutron
//     sends one;
//   - the same bytes arriving in small pieces (as TCP may deliver them) are read as the same
//     complete requests, forwarded or refused alike;
//   - transferEncodingError, on the input, each line of it and each line's text after ':' as a
//     Transfer-Encoding value, returns 0, 400 or 501; 0 only for a list whose single coding is
//     "chunked", 400 with Content-Length or in HTTP/1.0.

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/http_fields.h"
#include "metadata/config.h"
#include "metadata/proxy.h"
#include "metadata/wire.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace http = boost::beast::http;
using okna::fuzz::quoted;
using okna::metadata::RequestData;
using okna::metadata::RequestReader;

// The connection limits the server gives each parser (metadata/server.cc, Connection::readHeader),
// at their defaults: 8192 header bytes, 16384 body bytes.
const okna::metadata::MetadataLimits kLimits{};

constexpr std::string_view kClientIp = "10.0.0.5";
constexpr std::string_view kSignature =
    "2f1b5c3e9a0d4e6f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f";
const okna::metadata::InstancePort kPort{"3e1c9f62-7b5a-4d1e-9c3f-0a1b2c3d4e5f",
                                         "8d9a8b6e-1f2c-4c3d-9e4f-5a6b7c8d9e0f",
                                         "0a1b2c3d4e5f60718293a4b5c6d7e8f9", ""};

const okna::metadata::NovaEndpoint& nova() {
  static const okna::metadata::NovaEndpoint endpoint =
      okna::metadata::makeNovaEndpoint(okna::metadata::NovaConfig{});
  return endpoint;
}

bool hasFramingByte(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

// What the server did with one complete request of the connection.
struct Outcome {
  // 0: forwarded to Nova; 400: refused for its target (then the connection closes).
  unsigned status = 0;
  std::string method;
  std::string target;
  std::string body;
  int version = 0;
  bool keepAlive = false;
  bool operator==(const Outcome&) const = default;
};

// What the server did with a connection: the complete requests in order, then, if reading the
// next one failed, the status it answered before closing (0: none, the client closed).
struct Connection {
  std::vector<Outcome> requests;
  unsigned readError = 0;
};

std::string describe(const Connection& connection) {
  std::string out;
  for (const auto& o : connection.requests)
    out += "[" + std::to_string(o.status) + " " + quoted(o.method, 20) + " " +
           quoted(o.target, 60) + " body " + std::to_string(o.body.size()) + " v" +
           std::to_string(o.version) + (o.keepAlive ? " keep-alive" : " close") + "] ";
  return out + "read error " + std::to_string(connection.readError);
}

// A Transfer-Encoding list without separators (SP, HTAB, comma), lower-case: "chunked" when its
// only coding is chunked.
std::string squeeze(std::string_view te) {
  std::string out;
  for (const char c : te)
    if (c != ' ' && c != '\t' && c != ',')
      out += c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c;
  return out;
}

// The request the server hands to the HttpClient for a complete request, and its invariants.
void checkNovaRequest(const RequestData& request, std::string_view target) {
  FUZZ_CHECK(okna::core::isHttpToken(request.method),
             "Beast passed a method that is not a token: " + quoted(request.method));
  FUZZ_CHECK(!target.empty() && target.front() == '/', "isOriginForm accepted " + quoted(target));
  for (const char c : target)
    FUZZ_CHECK(static_cast<unsigned char>(c) > 0x20 && c != 0x7f,
               "isOriginForm accepted a control or a space: " + quoted(target));

  const auto built = okna::metadata::buildNovaRequest(nova(), request.method, target, request.body,
                                                      kClientIp, kPort, kSignature);
  const std::string problem = okna::core::requestFramingProblem(built);
  FUZZ_CHECK(problem.empty(), "the request to Nova would be refused: " + problem + "; target " +
                                  quoted(target) + " method " + quoted(request.method));

  FUZZ_CHECK(built.method == request.method, "method changed: " + quoted(built.method));
  FUZZ_CHECK(!hasFramingByte(built.url), "CR, LF or NUL in the URL " + quoted(built.url));
  const std::string& base = nova().baseUrl;
  FUZZ_CHECK(built.url.starts_with(base), "the URL " + quoted(built.url) + " is not under " + base);
  const std::string_view rest = std::string_view(built.url).substr(base.size());
  FUZZ_CHECK(rest.starts_with('/') && target.starts_with(rest),
             "the URL's path " + quoted(rest) + " is not a prefix of the target " + quoted(target));
  FUZZ_CHECK(rest.find('#') == std::string_view::npos, "a fragment reached Nova: " + quoted(rest));
  FUZZ_CHECK(built.body == request.body, "the body changed");

  const bool contentType =
      !request.body.empty() || (request.method != "GET" && request.method != "HEAD");
  std::set<std::string> names;
  for (const auto& [name, value] : built.headers) {
    FUZZ_CHECK(!hasFramingByte(name), "CR, LF or NUL in a header name " + quoted(name));
    FUZZ_CHECK(!hasFramingByte(value), "CR, LF or NUL in header " + name + ": " + quoted(value));
    names.insert(name);
  }
  std::set<std::string> expected{"X-Forwarded-For", "X-Instance-ID", "X-Instance-ID-Signature",
                                 "X-Tenant-ID"};
  if (contentType) expected.insert("Content-Type");
  FUZZ_CHECK(names == expected, "unexpected header set for method " + quoted(request.method) +
                                    " (body " + std::to_string(request.body.size()) + " bytes)");
  FUZZ_CHECK(built.headers.at("X-Forwarded-For") == kClientIp, "X-Forwarded-For changed");
  FUZZ_CHECK(built.headers.at("X-Instance-ID") == kPort.deviceId, "X-Instance-ID changed");
  FUZZ_CHECK(built.headers.at("X-Tenant-ID") == kPort.projectId, "X-Tenant-ID changed");
  FUZZ_CHECK(built.headers.at("X-Instance-ID-Signature") == kSignature, "signature changed");
  if (contentType)
    FUZZ_CHECK(built.headers.at("Content-Type").empty(), "a Content-Type value was set");
}

// One connection that receives `input` in pieces of `step` bytes: Connection::waitForRequest,
// readHeader (one parser per request, fed from what is buffered), readBody, onReadError and
// handleRequest, up to buildNovaRequest; pipelined requests are read from what is left.
Connection serve(std::string_view input, std::size_t step) {
  Connection outcomes;
  std::string pending;
  std::size_t received = 0;
  // The next piece from the socket; false: the client closed.
  const auto receive = [&] {
    if (received >= input.size()) return false;
    const std::size_t n = std::min(step, input.size() - received);
    pending.append(input.substr(received, n));
    received += n;
    return true;
  };

  RequestData request;
  for (;;) {
    // waitForRequest: idle until the next byte, or the end of the connection.
    if (pending.empty() && !receive()) break;
    RequestReader parser(request);
    parser.limitHeader(static_cast<std::uint32_t>(kLimits.maxRequestHeaderBytes));
    parser.body_limit(static_cast<std::uint64_t>(kLimits.maxBodyBytes));
    boost::system::error_code ec;
    while (!parser.is_done()) {
      std::size_t used = 0;
      if (!pending.empty()) {
        used = parser.put(boost::asio::buffer(pending), ec);
        pending.erase(0, used);
        if (ec == http::error::need_more) {
          ec = {};
          used = 0;
        }
        if (ec) break;
      }
      if (used == 0 && !receive()) {
        // The client closed mid-request (Beast's read: put_eof, or end_of_stream).
        if (parser.got_some()) {
          parser.put_eof(ec);
        } else {
          ec = http::error::end_of_stream;
        }
        break;
      }
    }

    FUZZ_CHECK(
        request.framingError == 0 || request.framingError == 400 || request.framingError == 501,
        "framing status " + std::to_string(request.framingError));
    if (ec || !parser.is_done()) {
      // onReadError: a clean end or a peer gone closes; anything else is answered and closes.
      if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
          (!ec && !parser.is_done()))
        break;
      unsigned status = 400;
      if (ec == http::error::header_limit) status = 431;
      if (ec == http::error::body_limit) status = 413;
      if (ec == http::error::buffer_overflow) status = 431;
      if (request.framingError != 0) {
        FUZZ_CHECK(ec == http::error::bad_transfer_encoding,
                   "framing refused with another error: " + ec.message());
        status = request.framingError;
      }
      outcomes.readError = status;
      break;
    }

    // handleRequest.
    FUZZ_CHECK(request.framingError == 0, "a refused request completed");
    if (!request.transferEncoding.empty()) {
      // Its body's end is known only when chunked is its one coding (and no Content-Length).
      FUZZ_CHECK(squeeze(request.transferEncoding) == "chunked" && !request.contentLength &&
                     request.version >= 11,
                 "a request completed with Transfer-Encoding " + quoted(request.transferEncoding));
      FUZZ_CHECK(okna::metadata::transferEncodingError(request.transferEncoding,
                                                       request.contentLength, request.version) == 0,
                 "a request completed with Transfer-Encoding " + quoted(request.transferEncoding));
    }
    const bool keepAlive = parser.keep_alive();
    if (!okna::metadata::toOriginForm(request.target) ||
        !okna::metadata::isOriginForm(request.target)) {
      outcomes.requests.push_back(
          {400, request.method, request.target, "", request.version, false});
      break;
    }
    checkNovaRequest(request, request.target);
    outcomes.requests.push_back(
        {0, request.method, request.target, request.body, request.version, keepAlive});
    // respond(): the connection closes after the answer unless kept alive.
    if (!keepAlive) break;
  }
  return outcomes;
}

// transferEncodingError on `te` with and without Content-Length, in HTTP/1.0 and 1.1.
void checkTransferEncoding(std::string_view te) {
  const std::string squeezed = squeeze(te);
  for (const bool contentLength : {false, true}) {
    for (const int version : {10, 11}) {
      const unsigned status = okna::metadata::transferEncodingError(te, contentLength, version);
      const std::string what = "transferEncodingError(" + quoted(te) + ", " +
                               (contentLength ? "true" : "false") + ", " + std::to_string(version) +
                               ") = " + std::to_string(status);
      FUZZ_CHECK(status == 0 || status == 400 || status == 501, what);
      if (te.empty()) FUZZ_CHECK(status == 0, what);
      if (!te.empty() && (contentLength || version < 11)) FUZZ_CHECK(status == 400, what);
      if (!te.empty() && status == 0) FUZZ_CHECK(squeezed == "chunked", what);
      if (status == 501) FUZZ_CHECK(squeezed.size() > 7 && squeezed.ends_with("chunked"), what);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // The whole input as a Transfer-Encoding value, then each line and what follows its first
  // ':' (a header's value; a value holds no CR or LF).
  checkTransferEncoding(input);
  for (std::size_t at = 0; at < input.size();) {
    const std::size_t end = std::min(input.find('\n', at), input.size());
    std::string_view line = input.substr(at, end - at);
    if (line.ends_with('\r')) line.remove_suffix(1);
    checkTransferEncoding(line);
    if (const auto colon = line.find(':'); colon != std::string_view::npos)
      checkTransferEncoding(line.substr(colon + 1));
    at = end + 1;
  }

  const auto whole = serve(input, input.size() + 1);
  // The same bytes in small pieces (1 to 16 bytes, from the input's first byte) give the same
  // requests. Not necessarily the same read error: Beast finds some malformed headers (a CR
  // not followed by LF) only when it scans them whole, so an incomplete one at the end of the
  // input is answered 400 when read whole but waits for more bytes (then the client closes)
  // when read in pieces; once the header's end arrives both refuse it.
  const std::size_t step = size == 0 ? 1 : 1 + data[0] % 16;
  const auto pieces = serve(input, step);
  FUZZ_CHECK(whole.requests == pieces.requests, "read whole: " + describe(whole) +
                                                    "\nin pieces of " + std::to_string(step) +
                                                    ": " + describe(pieces));
  return 0;
}
