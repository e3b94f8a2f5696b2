#pragma once
// A scripted HttpClient: requests queue up, and the test answers them one by one (with a whole
// body, or a stream of chunks), on its own schedule. Callbacks run when the test says so, never
// inside send(), as with the real client.

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/http_client.h"

namespace okna::testing {

class FakeHttpClient final : public core::HttpClient {
 public:
  struct Pending final : core::HttpRequestHandle {
    // core::HttpRequestHandle
    void cancel() override { cancelled = true; }

    /** Status and headers (names lower-case, as the real client gives them), then the body in
     * the given pieces. */
    void stream(long status, const std::vector<std::string>& pieces,
                const core::HttpHeaders& headers = {}) {
      if (cancelled) return;
      response.status = status;
      // Added to what the test may have put in `response.headers` directly.
      for (const auto& [name, value] : headers) response.headers[name] = value;
      if (callbacks.onHeaders) callbacks.onHeaders(status, response.headers);
      for (const auto& piece : pieces) {
        if (cancelled) return;
        if (callbacks.onData) {
          callbacks.onData(piece);
        } else {
          response.body += piece;
        }
      }
    }
    /** Ends the transfer normally. */
    void finish() {
      if (cancelled || done) return;
      done = true;
      if (callbacks.onDone) callbacks.onDone(response);
    }
    void reply(long status, const std::string& body, const core::HttpHeaders& headers = {}) {
      stream(status, {body}, headers);
      finish();
    }
    /** A transport failure (connection refused, reset). */
    void fail(const std::string& message) {
      if (cancelled || done) return;
      done = true;
      if (callbacks.onDone) callbacks.onDone(core::makeError(message, 7));
    }

    core::HttpRequest request;
    core::HttpCallbacks callbacks;
    core::HttpResponse response;
    bool cancelled = false;
    bool done = false;
  };

  // core::HttpClient
  core::HttpRequestHandlePtr send(core::HttpRequest request,
                                  core::HttpCallbacks callbacks) override {
    auto p = std::make_shared<Pending>();
    p->request = std::move(request);
    p->callbacks = std::move(callbacks);
    queue_.push_back(p);
    all_.push_back(p);
    return p;
  }

  /** The oldest unanswered, uncancelled request, or null. */
  std::shared_ptr<Pending> next() {
    while (!queue_.empty()) {
      auto p = queue_.front();
      queue_.pop_front();
      if (!p->cancelled) return p;
    }
    return nullptr;
  }
  const std::vector<std::shared_ptr<Pending>>& all() const { return all_; }

 private:
  std::deque<std::shared_ptr<Pending>> queue_;
  std::vector<std::shared_ptr<Pending>> all_;
};

}  // namespace okna::testing
