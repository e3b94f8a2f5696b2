#pragma once
// An HttpClient decorator that records every request the agent sends ("PUT /resource_providers/
// .../inventories"), for the integration tests and the bench: requests per pod change, none at
// steady state.

#include <string>
#include <vector>

#include "core/http_client.h"

namespace okna::testing {

class CountingHttpClient final : public core::HttpClient {
 public:
  explicit CountingHttpClient(core::HttpClient& inner) : inner_(inner) {}

  // core::HttpClient
  core::HttpRequestHandlePtr send(core::HttpRequest request,
                                  core::HttpCallbacks callbacks) override {
    std::string path = request.url;
    if (auto scheme = path.find("://"); scheme != std::string::npos) {
      auto slash = path.find('/', scheme + 3);
      path = slash == std::string::npos ? "/" : path.substr(slash);
    }
    log_.push_back(request.method + " " + path);
    return inner_.send(std::move(request), std::move(callbacks));
  }

  const std::vector<std::string>& log() const { return log_; }
  size_t size() const { return log_.size(); }
  /** Requests since `from` whose "METHOD path" contains `what`. */
  size_t count(const std::string& what, size_t from = 0) const {
    size_t n = 0;
    for (size_t i = from; i < log_.size(); ++i) n += log_[i].find(what) != std::string::npos;
    return n;
  }

 private:
  core::HttpClient& inner_;
  std::vector<std::string> log_;
};

}  // namespace okna::testing
