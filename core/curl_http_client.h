#pragma once
// HttpClient over libcurl's multi socket API, driven by a Boost.Asio io_context: curl tells us
// which sockets to watch and when to wake it; Asio waits; no call ever blocks the loop.

#include <curl/curl.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/http_client.h"

namespace okna::core {

class CurlHttpClient final : public HttpClient {
 public:
  explicit CurlHttpClient(boost::asio::io_context& io, std::string userAgent = "");
  ~CurlHttpClient() override;
  CurlHttpClient(const CurlHttpClient&) = delete;
  CurlHttpClient& operator=(const CurlHttpClient&) = delete;

  // HttpClient
  HttpRequestHandlePtr send(HttpRequest request, HttpCallbacks callbacks) override;

  /** Transfers currently in flight (for tests and metrics). */
  size_t inFlight() const { return transfers_.size(); }
  /** Callbacks that threw (logged; the transfer failed instead of the loop). */
  unsigned long callbackErrors() const { return callbackErrors_; }

  struct Transfer;
  struct Socket;

 private:
  static int onSocket(CURL* easy, curl_socket_t fd, int what, void* self, void* socketp);
  static int onTimer(CURLM* multi, long timeoutMs, void* self);
  static int onCloseSocket(void* self, curl_socket_t fd);
  void armSocket(const std::shared_ptr<Socket>& socket);
  void socketAction(curl_socket_t fd, int events);
  void drainCompleted();
  void remove(const std::shared_ptr<Transfer>& transfer);
  void forgetSocket(curl_socket_t fd);

  void armTimer(std::chrono::steady_clock::time_point at);
  void onTimerDue();
  CURL* takeEasy();
  void recycleEasy(CURL* easy);

  boost::asio::io_context& io_;
  std::string userAgent_;
  CURLM* multi_;
  boost::asio::steady_timer timer_;
  // curl's single timer, kept lazily: a later deadline is only recorded (the Asio timer fires
  // early and re-arms), an earlier one re-arms, 0 is a post. Re-arming on every call cost a
  // timerfd_settime syscall per call, several per request.
  std::optional<std::chrono::steady_clock::time_point> curlDeadline_;
  std::optional<std::chrono::steady_clock::time_point> timerExpiry_;
  bool duePosted_ = false;
  // Easy handles of finished transfers, reset and reused (curl_easy_init per request showed in
  // profiles of the metadata proxy).
  std::vector<CURL*> idleEasy_;
  std::unordered_map<curl_socket_t, std::shared_ptr<Socket>> sockets_;
  std::unordered_map<CURL*, std::shared_ptr<Transfer>> transfers_;
  unsigned long callbackErrors_ = 0;
  // Guards callbacks that outlive the client (posted handlers).
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace okna::core
