#pragma once
// core::HttpClient as an Asio awaitable, so that a multi-step exchange with Keystone or
// Placement reads as straight-line code on the event loop.

// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>

#include "core/http_client.h"

namespace okna::placement {

template <typename T>
using Task = boost::asio::awaitable<T>;

/**
 * Sends `request` and completes with the response or the transport error. `handle` (optional)
 * receives the request's handle: an owner that goes away cancels it, and the suspended coroutine
 * is then destroyed without ever resuming.
 */
template <typename CompletionToken>
auto asyncSend(core::HttpClient& http, core::HttpRequest request,
               core::HttpRequestHandlePtr* handle, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(core::Result<core::HttpResponse>)>(
      [&http, handle](auto handler, core::HttpRequest r) {
        // HttpCallbacks hold std::function (copyable); the handler is move-only.
        auto shared = std::make_shared<decltype(handler)>(std::move(handler));
        core::HttpCallbacks callbacks;
        callbacks.onDone = [shared](core::Result<core::HttpResponse> result) {
          (*shared)(std::move(result));
        };
        auto h = http.send(std::move(r), std::move(callbacks));
        if (handle != nullptr) *handle = std::move(h);
      },
      token, std::move(request));
}

inline Task<core::Result<core::HttpResponse>> send(core::HttpClient& http,
                                                   core::HttpRequest request,
                                                   core::HttpRequestHandlePtr* handle) {
  co_return co_await asyncSend(http, std::move(request), handle, boost::asio::use_awaitable);
}

}  // namespace okna::placement
