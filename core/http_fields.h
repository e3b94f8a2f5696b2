#pragma once
// What an outbound request may carry before a client writes a byte of it. A header value with
// CR or LF ends the header early and lets whoever chose the value add headers or a whole second
// request (request splitting); NUL is cut or kept depending on the library. Values reach the
// clients from places a tenant controls (a Southbound device_id became X-Instance-ID), so both
// HttpClient implementations refuse such a request whole, whatever validated it before:
// defence in depth.

#include <string>
#include <string_view>

#include "core/http_client.h"

namespace okna::core {

/** RFC 9110 token characters (a method, a header name). */
bool isHttpToken(std::string_view s);

/** Why `request` must not be sent (its method, URL, a header name or a header value carries a
 *  byte that would change the request's framing: CR, LF, NUL, another control, or a name that
 *  is not a token); "" when it may be. Names the header, never quotes a value (it may be a
 *  secret). */
std::string requestFramingProblem(const HttpRequest& request);

}  // namespace okna::core
