#pragma once
// Requests to the Kubernetes API: authentication, JSON content negotiation, PATCH types, watch
// streams split into lines, and Status bodies turned into messages that name what is wrong
// (for 403: the RBAC verb and resource the agent lacks).

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json_fwd.hpp>

#include "core/http_client.h"
#include "k8s/credentials.h"

namespace okna::k8s {

enum class PatchType { Merge, Json, StrategicMerge };

/** One LIST page, at most (16 MiB): hundreds of the node's pods at their usual size. */
inline constexpr std::size_t kDefaultMaxListBytes = std::size_t{16} << 20;
/** One object, at most (1 MiB): one watch event, or one item of a LIST. The API server stores
 *  objects up to etcd's request limit (1.5 MiB by default); real Pods and Nodes are far smaller. */
inline constexpr std::size_t kDefaultMaxObjectBytes = std::size_t{1} << 20;

/** Splits a byte stream into '\n'-terminated lines, across arbitrary chunk boundaries. A line
 *  longer than `maxLine` bytes (0: no limit) is never held: its bytes are counted and dropped as
 *  they come, and its end reports its size instead of the line. */
class LineSplitter {
 public:
  explicit LineSplitter(std::size_t maxLine = 0) : maxLine_(maxLine) {}

  template <typename F, typename G>
  void feed(std::string_view data, F&& onLine, G&& onTooLong) {
    size_t start = 0;
    for (size_t i = 0; i < data.size(); ++i) {
      if (data[i] != '\n') continue;
      endLine(data.substr(start, i - start), onLine, onTooLong);
      start = i + 1;
    }
    take(data.substr(start));
  }
  template <typename F>
  void feed(std::string_view data, F&& onLine) {
    feed(data, std::forward<F>(onLine), [](std::size_t) {});
  }
  /** Bytes after the last newline (none of a line over the limit). */
  const std::string& pending() const { return partial_; }

 private:
  // Bytes of the line in progress: kept while within the limit, counted only past it.
  void take(std::string_view piece) {
    if (dropped_ == 0 && (maxLine_ == 0 || partial_.size() + piece.size() <= maxLine_)) {
      partial_.append(piece);
      return;
    }
    dropped_ += partial_.size() + piece.size();
    partial_.clear();
    partial_.shrink_to_fit();
  }
  template <typename F, typename G>
  void endLine(std::string_view tail, F& onLine, G& onTooLong) {
    // The common case, a whole line within one piece: handed over without a copy.
    if (partial_.empty() && dropped_ == 0 && (maxLine_ == 0 || tail.size() <= maxLine_)) {
      onLine(tail);
      return;
    }
    take(tail);
    if (dropped_ > 0) {
      const std::size_t size = dropped_;
      dropped_ = 0;
      onTooLong(size);
      return;
    }
    std::string line;
    line.swap(partial_);
    onLine(std::string_view(line));
  }

  std::size_t maxLine_;
  std::string partial_;
  // Bytes of the line in progress once it is over the limit (0: within it).
  std::size_t dropped_ = 0;
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
    // A line over the limit was dropped unread; its size in bytes. Optional.
    std::function<void(std::size_t bytes)> onLineTooLong;
  };

  ApiClient(core::HttpClient& http, ClusterConfig config);

  /** `timeout`: the whole request's limit (0: the client's default); `maxBytes`: the body's. */
  core::HttpRequestHandlePtr get(const std::string& pathAndQuery, Callback callback,
                                 std::chrono::milliseconds timeout = {},
                                 std::size_t maxBytes = core::kDefaultMaxResponseBytes);
  core::HttpRequestHandlePtr post(const std::string& path, const nlohmann::json& body,
                                  Callback callback);
  core::HttpRequestHandlePtr patch(const std::string& path, PatchType type,
                                   const nlohmann::json& body, Callback callback);
  /** A watch; `timeout` bounds the whole stream (server timeoutSeconds plus slack), and
   *  `maxLineBytes` each line (one event): a longer one is dropped as it comes, never held. */
  core::HttpRequestHandlePtr watch(const std::string& pathAndQuery,
                                   std::chrono::milliseconds timeout, WatchCallbacks callbacks,
                                   std::size_t maxLineBytes = kDefaultMaxObjectBytes);

  /** After a 401: re-read the token file before the next request. */
  void credentialsRejected() { config_.token.invalidate(); }
  const ClusterConfig& config() const { return config_; }

 private:
  core::HttpRequest makeRequest(const std::string& method, const std::string& pathAndQuery);

  core::HttpClient& http_;
  ClusterConfig config_;
};

}  // namespace okna::k8s
