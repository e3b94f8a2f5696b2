#pragma once
// Requests to the Kubernetes API: authentication, JSON content negotiation, PATCH types, watch
// streams split into lines, and Status bodies turned into messages that name what is wrong
// (for 403: the RBAC verb and resource the agent lacks).

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "core/http_client.h"
#include "k8s/credentials.h"

namespace okna::k8s {

enum class PatchType { Merge, Json, StrategicMerge };

/** Splits a byte stream into '\n'-terminated lines, across arbitrary chunk boundaries. */
class LineSplitter {
 public:
  template <typename F>
  void feed(std::string_view data, F&& onLine) {
    size_t start = 0;
    for (size_t i = 0; i < data.size(); ++i) {
      if (data[i] != '\n') continue;
      if (partial_.empty()) {
        onLine(data.substr(start, i - start));
      } else {
        partial_.append(data.substr(start, i - start));
        std::string line;
        line.swap(partial_);
        onLine(std::string_view(line));
      }
      start = i + 1;
    }
    partial_.append(data.substr(start));
  }
  /** Bytes after the last newline. */
  const std::string& pending() const { return partial_; }

 private:
  std::string partial_;
};

/** What a request was for, so that errors can name the missing RBAC permission. */
struct RequestIntent {
  std::string verb;        // get, list, watch, patch, create
  std::string resource;    // nodes, pods, events, nodes/status
  std::string name;        // object name, if any
  std::string namespace_;  // empty: cluster scope (or all namespaces)
};

/** The message of a failed API response: Status.message, with an RBAC hint for 401/403. */
std::string describeFailure(const core::HttpResponse& response, const RequestIntent& intent);

/** Percent-encodes a query parameter value. */
std::string urlEncode(std::string_view value);

class ApiClient {
 public:
  using Callback = std::function<void(core::Result<core::HttpResponse>)>;
  struct WatchCallbacks {
    // One complete line of a 200 watch stream (one JSON event).
    std::function<void(std::string_view line)> onLine;
    // The end of the stream: for a non-200 answer, the response with its body.
    Callback onDone;
    // The status line and headers are in (200: the stream is open); optional.
    std::function<void(long status)> onOpen;
  };

  ApiClient(core::HttpClient& http, ClusterConfig config);

  /** `timeout`: the whole request's limit (0: the client's default). */
  core::HttpRequestHandlePtr get(const std::string& pathAndQuery, Callback callback,
                                 std::chrono::milliseconds timeout = {});
  core::HttpRequestHandlePtr post(const std::string& path, const nlohmann::json& body,
                                  Callback callback);
  core::HttpRequestHandlePtr patch(const std::string& path, PatchType type,
                                   const nlohmann::json& body, Callback callback);
  /** A watch; `timeout` bounds the whole stream (server timeoutSeconds plus slack). */
  core::HttpRequestHandlePtr watch(const std::string& pathAndQuery,
                                   std::chrono::milliseconds timeout, WatchCallbacks callbacks);

  /** After a 401: re-read the token file before the next request. */
  void credentialsRejected() { config_.token.invalidate(); }
  const ClusterConfig& config() const { return config_; }

 private:
  core::HttpRequest makeRequest(const std::string& method, const std::string& pathAndQuery);

  core::HttpClient& http_;
  ClusterConfig config_;
};

}  // namespace okna::k8s
