#pragma once
// An HttpClient for plain http:// peers on the hot path (Nova behind the metadata proxy): HTTP/1.1
// over Beast with a pool of keep-alive connections per host:port, on the event loop. It does a
// fraction of libcurl's per-request work (no option setting, URL object, proxy environment
// lookup or connection-cache matching), which dominated the metadata proxy's profile. No TLS,
// no proxies, no redirects: use CurlHttpClient for anything else (https:// URLs fail here).
//
// Errors carry CURLcode values, as CurlHttpClient's do, so callers classify them the same way:
// 7 (could not connect), 28 (timed out: "Connection timed out" while connecting, "Operation timed
// out" after), 56 (receive failure), 3 (bad URL), 1 (unsupported scheme).

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "core/http_client.h"

namespace okna::core {

class BeastHttpClient final : public HttpClient {
 public:
  /**
   * Keeps up to `maxIdlePerHost` idle connections per host:port. A connection goes back to the
   * pool only after exactly one whole answer to the one request sent, with no byte left over;
   * one taken from the pool is used only when nothing is waiting to be read on it.
   */
  explicit BeastHttpClient(boost::asio::io_context& io, std::string userAgent = "",
                           std::size_t maxIdlePerHost = 64);
  ~BeastHttpClient() override;
  BeastHttpClient(const BeastHttpClient&) = delete;
  BeastHttpClient& operator=(const BeastHttpClient&) = delete;

  // HttpClient
  HttpRequestHandlePtr send(HttpRequest request, HttpCallbacks callbacks) override;

  /** Idle keep-alive connections in the pool (for tests). */
  std::size_t idleConnections() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace okna::core
