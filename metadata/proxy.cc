#include "metadata/proxy.h"

#include <curl/curl.h>

#include "metadata/config.h"

namespace okna::metadata {

namespace {

constexpr std::string_view kUnknownError =
    "An unknown error has occurred. Please try your request again.";
constexpr std::string_view kNova500 =
    "Remote metadata server experienced an internal server error.";
// Neutron master's answer when requests raises ConnectionError (refused, unresolvable, TLS,
// connect timeout, connection lost mid-answer).
constexpr std::string_view kNovaUnavailable =
    "The remote metadata server is temporarily unavailable. Please try again later.";
// Of Nova's answer Neutron passes on only the body and the Content-Type.
constexpr std::string_view kNovaHeadersUsed[] = {"content-type"};

std::string_view reason(unsigned status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 413:
      return "Request Entity Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Error";
  }
}

// webob's default explanations for the statuses Neutron returns.
std::string_view defaultExplanation(unsigned status) {
  switch (status) {
    case 400:
      return "The server could not comply with the request since it is either malformed or "
             "otherwise incorrect.";
    case 403:
      return "Access was denied to this resource.";
    case 404:
      return "The resource could not be found.";
    case 409:
      return "There was a conflict when trying to complete your request.";
    case 413:
      return "The request is larger than the server is willing or able to process.";
    case 431:
      return "The request line and headers are larger than the server accepts.";
    case 500:
      return "The server has either erred or is incapable of performing the requested "
             "operation.";
    case 502:
      return "Bad gateway.";
    case 503:
      return "The server is currently unavailable. Please try again at a later time.";
    case 504:
      return "The gateway has timed out.";
    default:
      return "";
  }
}

}  // namespace

NovaEndpoint makeNovaEndpoint(const NovaConfig& nova) {
  NovaEndpoint e;
  const bool ipv6Literal = nova.host.find(':') != std::string::npos;
  e.baseUrl = nova.protocol + "://" + (ipv6Literal ? "[" + nova.host + "]" : nova.host) + ":" +
              std::to_string(nova.port);
  // Neutron: verify = auth_ca_cert unless insecure; the client certificate only with both halves.
  if (!nova.insecure) e.tls.caFile = nova.caFile;
  e.tls.insecureSkipVerify = nova.insecure;
  if (!nova.clientCertFile.empty() && !nova.clientKeyFile.empty()) {
    e.tls.clientCertFile = nova.clientCertFile;
    e.tls.clientKeyFile = nova.clientKeyFile;
  }
  e.connectTimeout = nova.connectTimeout;
  e.timeout = nova.timeout;
  return e;
}

bool isOriginForm(std::string_view target) {
  if (target.empty() || target.front() != '/') return false;
  for (const char c : target) {
    // Control characters and spaces never belong in a target (Beast already refuses most).
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return false;
  }
  return true;
}

core::HttpRequest buildNovaRequest(const NovaEndpoint& nova, std::string_view method,
                                   std::string_view target, std::string body,
                                   std::string_view clientIp, const InstancePort& port,
                                   std::string_view signature) {
  core::HttpRequest r;
  r.method.assign(method);
  // Neutron rebuilds the URL from path and query and drops the fragment; urlunsplit also drops
  // a '?' with nothing after it.
  std::string_view pathAndQuery = target.substr(0, target.find('#'));
  if (pathAndQuery.ends_with('?')) pathAndQuery.remove_suffix(1);
  r.url.reserve(nova.baseUrl.size() + pathAndQuery.size());
  r.url.append(nova.baseUrl).append(pathAndQuery);
  r.headers.emplace("X-Forwarded-For", clientIp);
  r.headers.emplace("X-Instance-ID", port.deviceId);
  r.headers.emplace("X-Tenant-ID", port.projectId);
  r.headers.emplace("X-Instance-ID-Signature", signature);
  // python-requests sends bytes without a Content-Type; an empty value tells the HttpClient not
  // to send its default (curl would add application/x-www-form-urlencoded to a POST).
  if (!body.empty() || (method != "GET" && method != "HEAD")) r.headers.emplace("Content-Type", "");
  r.body = std::move(body);
  r.tls = nova.tls;
  r.connectTimeout = nova.connectTimeout;
  r.totalTimeout = nova.timeout;
  r.keepResponseHeaders = kNovaHeadersUsed;
  return r;
}

const char* novaFailureLabel(NovaFailure failure) {
  switch (failure) {
    case NovaFailure::None:
      return "none";
    case NovaFailure::Connect:
      return "connect";
    case NovaFailure::Timeout:
      return "timeout";
    case NovaFailure::Status:
      return "status";
    case NovaFailure::Transport:
      return "transport";
  }
  return "transport";
}

ProxyResponse errorResponse(unsigned status, std::string_view explanation) {
  ProxyResponse r;
  r.status = status;
  r.contentType = "text/plain; charset=UTF-8";
  if (explanation.empty()) explanation = defaultExplanation(status);
  r.body.reserve(64 + explanation.size());
  r.body.append(std::to_string(status)).append(" ").append(reason(status)).append("\n\n");
  r.body.append(explanation).append("\n\n   ");
  return r;
}

ProxyResponse mapNovaResponse(core::Result<core::HttpResponse> result) {
  if (!result.ok()) {
    const core::Error& e = result.error();
    const bool connectTimeout = e.code == CURLE_OPERATION_TIMEDOUT &&
                                (e.message.find("Connection timed out") != std::string::npos ||
                                 e.message.find("Connection timeout") != std::string::npos);
    ProxyResponse r;
    if (e.code == CURLE_OPERATION_TIMEDOUT && !connectTimeout) {
      // Connected, no answer in time: what Neutron's haproxy answers when its `timeout server`
      // (32 s) expires.
      r = errorResponse(504);
      r.failure = NovaFailure::Timeout;
    } else {
      // Nova not reachable, or the connection lost: Neutron master's 503 (requests'
      // ConnectionError covers all of these; Zed answered 500).
      const bool connecting = connectTimeout || e.code == CURLE_COULDNT_CONNECT ||
                              e.code == CURLE_COULDNT_RESOLVE_HOST ||
                              e.code == CURLE_SSL_CONNECT_ERROR ||
                              e.code == CURLE_PEER_FAILED_VERIFICATION;
      r = errorResponse(503, kNovaUnavailable);
      r.failure = connecting ? NovaFailure::Connect : NovaFailure::Transport;
    }
    r.warning = "the metadata server could not be reached: " + e.message;
    return r;
  }
  core::HttpResponse& nova = result.value();
  switch (nova.status) {
    case 200: {
      auto type = nova.headers.find("content-type");
      if (type == nova.headers.end()) {
        // Neutron reads resp.headers['content-type'] and fails with a 500 when it is missing.
        ProxyResponse r = errorResponse(500, kUnknownError);
        r.failure = NovaFailure::Status;
        r.warning = "the metadata server answered 200 without a Content-Type";
        return r;
      }
      ProxyResponse r;
      r.status = 200;
      r.contentType = std::move(type->second);
      r.body = std::move(nova.body);
      return r;
    }
    case 403: {
      ProxyResponse r = errorResponse(403);
      r.failure = NovaFailure::Status;
      r.warning =
          "The remote metadata server responded with Forbidden. This response usually occurs "
          "when shared secrets do not match.";
      return r;
    }
    case 400:
    case 404:
    case 409:
      return errorResponse(static_cast<unsigned>(nova.status));
    case 500: {
      ProxyResponse r = errorResponse(500, kNova500);
      r.failure = NovaFailure::Status;
      r.warning = std::string(kNova500);
      return r;
    }
    case 502:
    case 503:
    case 504: {
      // Passed on as Neutron master passes them (a VM retries a 503), with what Nova said: its
      // body and its Content-Type exactly (Neutron sends webob's own page instead). Without a
      // Content-Type from Nova, the page Neutron sends.
      const auto status = static_cast<unsigned>(nova.status);
      auto type = nova.headers.find("content-type");
      ProxyResponse r = type == nova.headers.end() ? errorResponse(status) : ProxyResponse{};
      if (type != nova.headers.end()) {
        r.status = status;
        r.contentType = std::move(type->second);
        r.body = std::move(nova.body);
      }
      r.failure = NovaFailure::Status;
      r.warning = "the metadata server answered " + std::to_string(status);
      return r;
    }
    default: {
      ProxyResponse r = errorResponse(500, kUnknownError);
      r.failure = NovaFailure::Status;
      r.warning = "Unexpected response code: " + std::to_string(nova.status);
      return r;
    }
  }
}

std::string lookupFailureMessage(const std::string& networkId, const std::string& clientIp,
                                 const LookupResult& result) {
  if (result.matches <= 0)
    return "No port found in network " + networkId + " with IP address " + clientIp;
  return "More than one port found in network " + networkId + " with IP address " + clientIp +
         ". Please run the neutron-ovn-db-sync-util script as there seems to be inconsistent "
         "data between Neutron and OVN databases. OVN Port uuids: " +
         result.portUuids;
}

}  // namespace okna::metadata
