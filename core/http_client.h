#pragma once
// Outbound HTTP for every peer of the agent (Kubernetes, Keystone, Placement, Nova). The
// interface is what components depend on; CurlHttpClient drives libcurl from the event loop,
// and unit tests use a fake.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/result.h"

namespace okna::core {

/** Header names are stored lower-case (HTTP header names are case-insensitive). */
using HttpHeaders = std::map<std::string, std::string>;

struct TlsOptions {
  // PEM CA bundle: a file path, or the PEM bytes themselves (kubeconfig
  // certificate-authority-data).
  std::string caFile;
  std::string caPem;
  // Client certificate and key for mutual TLS, as files or PEM bytes.
  std::string clientCertFile;
  std::string clientKeyFile;
  std::string clientCertPem;
  std::string clientKeyPem;
  // Skip server verification (kubeconfig insecure-skip-tls-verify); logged as a warning by callers.
  bool insecureSkipVerify = false;
};

/** The most bytes of body a response may have unless its request says otherwise (16 MiB): far
 *  above any answer of Placement, Keystone or Nova's metadata, and a bound on what a peer, or
 *  whoever controls what it serves, can make the agent hold. */
inline constexpr std::size_t kDefaultMaxResponseBytes = std::size_t{16} << 20;

/** The error of a response over its request's limit (its code: CURLE_FILESIZE_EXCEEDED). */
std::string responseTooLargeMessage(std::size_t limit);

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  // Request headers as sent ("Name: value" pairs; names as given). An empty value removes a
  // header the client would add by itself (curl: Content-Type on a POST, Accept, ...).
  std::map<std::string, std::string> headers;
  std::string body;
  TlsOptions tls;
  std::chrono::milliseconds connectTimeout{5000};
  // Whole-request limit; 0 = none (a watch sets its own from timeoutSeconds).
  std::chrono::milliseconds totalTimeout{30000};
  // When not empty: the only response headers kept in HttpResponse::headers (lower-case names;
  // the storage must outlive the request). A hot path that reads one header saves the
  // allocations of the others. Honoured by BeastHttpClient; other clients may keep all.
  std::span<const std::string_view> keepResponseHeaders;
  // The most bytes of body this response may have, kept in HttpResponse::body or streamed
  // through onData (in total). Past it the transfer stops and fails with an error that names
  // the limit; never a crash. 0: no limit, for a stream that bounds what it keeps itself (a
  // Kubernetes watch limits each line: k8s::ApiClient::watch).
  std::size_t maxResponseBytes = kDefaultMaxResponseBytes;
};

struct HttpResponse {
  long status = 0;
  HttpHeaders headers;
  // The body, unless the caller streamed it through onData.
  std::string body;
};

struct HttpCallbacks {
  // Called once, when the status line and headers are in (optional).
  std::function<void(long status, const HttpHeaders& headers)> onHeaders;
  // When set, the body is streamed here as it arrives and not kept in HttpResponse::body.
  std::function<void(std::string_view data)> onData;
  // Called exactly once unless the request was cancelled: the response, or a transport error
  // (connection refused, TLS, timeout) whose code is the CURLcode.
  std::function<void(Result<HttpResponse> result)> onDone;
};

/** A request in flight. Destroying the handle does not cancel; cancel() does. */
class HttpRequestHandle {
 public:
  virtual ~HttpRequestHandle() = default;
  /** Stop the transfer; no callback runs after this returns. Safe from inside a callback. */
  virtual void cancel() = 0;
};
using HttpRequestHandlePtr = std::shared_ptr<HttpRequestHandle>;

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  /**
   * Start a request. Callbacks run on the event loop thread, never inside this call.
   * @return a handle to cancel it.
   */
  virtual HttpRequestHandlePtr send(HttpRequest request, HttpCallbacks callbacks) = 0;
};

}  // namespace okna::core
