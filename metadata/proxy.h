#pragma once
// The pure part of the proxy: the request Nova gets and the answer the VM gets, exactly as
// Neutron's ML2/OVN metadata agent (neutron/agent/ovn/metadata/server.py) builds them. No I/O.
//
// Neutron sends Nova a FRESH header set: X-Forwarded-For, X-Instance-ID, X-Tenant-ID and
// X-Instance-ID-Signature (plus what python-requests adds: Host, Accept, Content-Length...).
// None of the VM's own headers is forwarded, so a forged X-Instance-ID, X-Forwarded-For,
// X-OVN-Network-ID or X-Metadata-Provider never reaches Nova.

#include <chrono>
#include <string>
#include <string_view>

#include "core/http_client.h"
#include "core/result.h"
#include "metadata/lookup.h"

namespace okna::metadata {

struct NovaConfig;

/** Where and how to reach Nova, computed once from the configuration. */
struct NovaEndpoint {
  // "http://127.0.0.1:8775" (IPv6 literals in brackets, as Neutron's valid_ipv6_url does).
  std::string baseUrl;
  core::TlsOptions tls;
  std::chrono::milliseconds connectTimeout{2000};
  std::chrono::milliseconds timeout{8000};
};

NovaEndpoint makeNovaEndpoint(const NovaConfig& nova);

/** True for an origin-form request target ("/path?query"), the only form the proxy serves. */
bool isOriginForm(std::string_view target);

/**
 * The request to Nova: the VM's method, path, query and body (moved, not copied), and only the
 * four headers Neutron sets. `clientIp` is the socket's peer address, never a header.
 */
core::HttpRequest buildNovaRequest(const NovaEndpoint& nova, std::string_view method,
                                   std::string_view target, std::string body,
                                   std::string_view clientIp, const InstancePort& port,
                                   std::string_view signature);

/** Why Nova did not give a usable answer (metrics label okna_metadata_nova_errors_total). */
enum class NovaFailure {
  None,
  Connect,    // refused, unresolvable, TLS or TCP set-up failed or timed out
  Timeout,    // connected, but no complete answer within the timeout
  Status,     // Nova answered 403, 5xx or a status Neutron does not pass on
  Transport,  // any other transport error (connection reset mid-answer, ...)
};

const char* novaFailureLabel(NovaFailure failure);

struct ProxyResponse {
  unsigned status = 500;
  std::string contentType;
  std::string body;
  NovaFailure failure = NovaFailure::None;
  // Neutron's warning for this outcome (403: the shared-secret hint; 500: the Nova error), or
  // our own for transport failures; empty: nothing to warn about.
  std::string warning;
};

/**
 * Nova's answer as Neutron master maps it: 200 -> 200 with Nova's Content-Type and body (moved,
 * the Content-Type exactly as Nova sent it: webob would add "; charset=UTF-8" to text types);
 * 400/403/404/409 -> the same status with Neutron's own body; 502/503/504 -> the same status
 * with Nova's body and Content-Type; 500, any other status or a 200 without Content-Type -> 500;
 * Nova unreachable (refused, unresolvable, TLS, no connection within the connect timeout) or the
 * connection lost -> 503; no answer within the timeout -> 504 (what Neutron's haproxy answers
 * when its `timeout server` expires).
 */
ProxyResponse mapNovaResponse(core::Result<core::HttpResponse> result);

/** Neutron's (webob's) text/plain error page for `status`, with an optional explanation. */
ProxyResponse errorResponse(unsigned status, std::string_view explanation = {});

/** Neutron's log line for a lookup that did not find exactly one port (matches != 1). */
std::string lookupFailureMessage(const std::string& networkId, const std::string& clientIp,
                                 const LookupResult& result);

}  // namespace okna::metadata
