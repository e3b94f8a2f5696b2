#include "k8s/api_client.h"

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

namespace okna::k8s {

using nlohmann::json;

std::string urlEncode(std::string_view value) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string describeFailure(const core::HttpResponse& response, const RequestIntent& intent) {
  std::string message;
  const json status = json::parse(response.body, nullptr, false);
  if (status.is_object() && status.value("kind", "") == "Status")
    message = status.value("message", "");
  if (message.empty()) message = response.body.substr(0, 200);
  const std::string scope =
      intent.namespace_.empty() ? "at the cluster scope" : "in namespace " + intent.namespace_;
  const std::string what =
      intent.resource + (intent.name.empty() ? "" : " \"" + intent.name + "\"");
  switch (response.status) {
    case 401:
      return "HTTP 401 Unauthorized on " + intent.verb + " " + what +
             ": the API server rejected the agent's credentials (expired or wrong token, or wrong "
             "client "
             "certificate): " +
             message;
    case 403:
      return "HTTP 403 Forbidden on " + intent.verb + " " + what +
             ": RBAC: the agent's identity needs verb \"" + intent.verb + "\" on resource \"" +
             intent.resource + "\" " + scope +
             " (check the ClusterRole bound to its service account): " + message;
    default:
      return "HTTP " + std::to_string(response.status) + " on " + intent.verb + " " + what + ": " +
             message;
  }
}

ApiClient::ApiClient(core::HttpClient& http, ClusterConfig config)
    : http_(http), config_(std::move(config)) {}

core::HttpRequest ApiClient::makeRequest(const std::string& method,
                                         const std::string& pathAndQuery) {
  core::HttpRequest r;
  r.method = method;
  r.url = config_.server + pathAndQuery;
  r.tls = config_.tls;
  r.headers["Accept"] = "application/json";
  if (const std::string token = config_.token.current(); !token.empty())
    r.headers["Authorization"] = "Bearer " + token;
  return r;
}

core::HttpRequestHandlePtr ApiClient::get(const std::string& pathAndQuery, Callback callback,
                                          std::chrono::milliseconds timeout, std::size_t maxBytes) {
  auto r = makeRequest("GET", pathAndQuery);
  if (timeout.count() > 0) r.totalTimeout = timeout;
  r.maxResponseBytes = maxBytes;
  return http_.send(std::move(r), {nullptr, nullptr, std::move(callback)});
}

core::HttpRequestHandlePtr ApiClient::post(const std::string& path, const json& body,
                                           Callback callback) {
  auto r = makeRequest("POST", path);
  r.headers["Content-Type"] = "application/json";
  r.body = body.dump();
  return http_.send(std::move(r), {nullptr, nullptr, std::move(callback)});
}

core::HttpRequestHandlePtr ApiClient::patch(const std::string& path, PatchType type,
                                            const json& body, Callback callback) {
  auto r = makeRequest("PATCH", path);
  r.headers["Content-Type"] = type == PatchType::Merge  ? "application/merge-patch+json"
                              : type == PatchType::Json ? "application/json-patch+json"
                                                        : "application/strategic-merge-patch+json";
  r.body = body.dump();
  return http_.send(std::move(r), {nullptr, nullptr, std::move(callback)});
}

core::HttpRequestHandlePtr ApiClient::watch(const std::string& pathAndQuery,
                                            std::chrono::milliseconds timeout,
                                            WatchCallbacks callbacks, std::size_t maxLineBytes) {
  auto r = makeRequest("GET", pathAndQuery);
  r.totalTimeout = timeout;
  // The stream lasts minutes: what bounds memory is the limit on each line, below.
  r.maxResponseBytes = 0;
  // Shared between the callbacks: a 200 stream is split into lines, anything else is a body.
  struct State {
    explicit State(std::size_t maxLine) : lines(maxLine), maxErrorBody(maxLine) {}
    long status = 0;
    LineSplitter lines;
    std::string errorBody;
    // A refused watch's body is read for its message only: no more of it than of a line.
    std::size_t maxErrorBody;
    WatchCallbacks callbacks;
  };
  auto state = std::make_shared<State>(maxLineBytes);
  state->callbacks = std::move(callbacks);
  core::HttpCallbacks cb;
  cb.onHeaders = [state](long status, const core::HttpHeaders&) {
    state->status = status;
    if (state->callbacks.onOpen) state->callbacks.onOpen(status);
  };
  cb.onData = [state](std::string_view data) {
    if (state->status != 200) {
      const std::size_t room =
          state->maxErrorBody == 0
              ? data.size()
              : state->maxErrorBody - std::min(state->maxErrorBody, state->errorBody.size());
      state->errorBody.append(data.substr(0, room));
      return;
    }
    state->lines.feed(
        data,
        [&](std::string_view line) {
          if (!line.empty() && state->callbacks.onLine) state->callbacks.onLine(line);
        },
        [&](std::size_t bytes) {
          if (state->callbacks.onLineTooLong) state->callbacks.onLineTooLong(bytes);
        });
  };
  cb.onDone = [state](core::Result<core::HttpResponse> result) {
    if (result.ok()) {
      result->status = state->status;
      result->body = state->status == 200 ? state->lines.pending() : state->errorBody;
    }
    if (state->callbacks.onDone) state->callbacks.onDone(std::move(result));
  };
  return http_.send(std::move(r), std::move(cb));
}

}  // namespace okna::k8s
