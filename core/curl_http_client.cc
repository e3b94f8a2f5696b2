#include "core/curl_http_client.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <cctype>
#include <stdexcept>

#include "core/http_fields.h"
#include "core/listener_guard.h"
#include "core/logging.h"

namespace okna::core {

namespace asio = boost::asio;

namespace {

// libcurl's global init is not thread-safe; do it once, before any client exists.
struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
  ~CurlGlobal() { curl_global_cleanup(); }
};

void ensureCurlGlobal() {
  static CurlGlobal global;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' '))
    s.remove_suffix(1);
  return s;
}

// Asio waits are edge-triggered (epoll EPOLLET) and libcurl may leave bytes in the socket
// after one action, so before waiting for the next edge we ask the kernel whether the socket
// is already ready: that gives curl the level-triggered semantics it expects.
bool readyNow(curl_socket_t fd, int curlWhat) {
  pollfd p{fd, 0, 0};
  if (curlWhat & CURL_POLL_IN) p.events |= POLLIN;
  if (curlWhat & CURL_POLL_OUT) p.events |= POLLOUT;
  return ::poll(&p, 1, 0) > 0 && (p.revents & (p.events | POLLERR | POLLHUP)) != 0;
}

}  // namespace

struct CurlHttpClient::Socket {
  Socket(asio::io_context& io, curl_socket_t f) : sd(io, f), fd(f) {}
  asio::posix::stream_descriptor sd;
  curl_socket_t fd;
  // CURL_POLL_IN / CURL_POLL_OUT / CURL_POLL_INOUT, as curl last asked.
  int what = 0;
  // A readiness check is posted; a wait per direction is pending.
  bool posted = false;
  bool waitingIn = false;
  bool waitingOut = false;
};

struct CurlHttpClient::Transfer final : HttpRequestHandle, std::enable_shared_from_this<Transfer> {
  // HttpRequestHandle
  void cancel() override {
    if (cancelled || finished) return;
    cancelled = true;
    // Never remove an easy handle from inside a curl callback: do it from the loop.
    asio::post(client->io_, [alive = std::weak_ptr<bool>(clientAlive), self = shared_from_this()] {
      if (alive.lock()) self->client->remove(self);
    });
  }

  void deliverHeaders() {
    if (headersDelivered) return;
    headersDelivered = true;
    if (callbacks.onHeaders) callbacks.onHeaders(response.status, response.headers);
  }

  // A caller's callback that throws must not unwind through libcurl (C code) nor out of the
  // event loop: the transfer fails with the exception's message instead.
  template <typename F>
  bool guarded(F&& call) {
    try {
      call();
      return true;
    } catch (const std::exception& e) {
      callbackError = e.what();
    } catch (...) {
      callbackError = "unknown exception";
    }
    ++client->callbackErrors_;
    logger("http")->error("{} {}: a callback threw: {}", request.method, request.url,
                          callbackError);
    return false;
  }

  static size_t onHeaderLine(char* data, size_t size, size_t n, void* self) {
    auto* t = static_cast<Transfer*>(self);
    const std::string_view line(data, size * n);
    if (t->cancelled || !t->callbackError.empty()) return 0;
    if (line.starts_with("HTTP/")) {
      // A new header block (after a 100 Continue, for example) replaces the previous one.
      t->response.headers.clear();
      const auto sp = line.find(' ');
      t->response.status =
          sp == std::string_view::npos ? 0 : std::strtol(line.data() + sp + 1, nullptr, 10);
    } else if (trim(line).empty()) {
      if (t->response.status >= 200 && !t->guarded([t] { t->deliverHeaders(); })) return 0;
    } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
      t->response.headers[lower(trim(line.substr(0, colon)))] =
          std::string(trim(line.substr(colon + 1)));
    }
    return t->cancelled ? 0 : line.size();
  }

  static size_t onBody(char* data, size_t size, size_t n, void* self) {
    auto* t = static_cast<Transfer*>(self);
    if (t->cancelled || !t->callbackError.empty()) return 0;
    // Counted before anything is kept or streamed: past the limit nothing of it is.
    t->bodyBytes += size * n;
    const std::size_t limit = t->request.maxResponseBytes;
    if (limit > 0 && t->bodyBytes > limit) {
      t->tooLarge = true;
      return 0;
    }
    const bool ok = t->guarded([&] {
      t->deliverHeaders();
      if (t->callbacks.onData) {
        t->callbacks.onData(std::string_view(data, size * n));
      } else {
        t->response.body.append(data, size * n);
      }
    });
    if (!ok) return 0;
    // Returning less than given makes curl abort the transfer (CURLE_WRITE_ERROR).
    return t->cancelled ? 0 : size * n;
  }

  CurlHttpClient* client = nullptr;
  std::shared_ptr<bool> clientAlive;
  CURL* easy = nullptr;
  curl_slist* headerList = nullptr;
  curl_blob caBlob{}, certBlob{}, keyBlob{};
  HttpRequest request;
  HttpCallbacks callbacks;
  HttpResponse response;
  char errorBuffer[CURL_ERROR_SIZE] = {0};
  // What a callback threw (the transfer was aborted for it).
  std::string callbackError;
  // Body bytes received so far; past request.maxResponseBytes the transfer was aborted.
  std::size_t bodyBytes = 0;
  bool tooLarge = false;
  bool headersDelivered = false;
  bool cancelled = false;
  bool finished = false;
};

CurlHttpClient::CurlHttpClient(asio::io_context& io, std::string userAgent)
    : io_(io), userAgent_(std::move(userAgent)), multi_(nullptr), timer_(io) {
  ensureCurlGlobal();
  multi_ = curl_multi_init();
  if (multi_ == nullptr) throw std::runtime_error("curl_multi_init failed");
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &CurlHttpClient::onSocket);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &CurlHttpClient::onTimer);
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  // curl's default cache is 4x the handles in flight: when a burst ends it closes connections
  // that the next burst reopens. Keep-alive peers (Nova behind the metadata proxy, the API
  // server) are few; keep their connections.
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, 256L);
}

CurlHttpClient::~CurlHttpClient() {
  *alive_ = false;
  alive_.reset();
  auto transfers = transfers_;
  for (auto& [easy, t] : transfers) {
    t->cancelled = true;
    remove(t);
  }
  // Sockets still known belong to connections in curl's cache; curl closes them in cleanup.
  for (auto& [fd, s] : sockets_) s->sd.release();
  sockets_.clear();
  for (CURL* e : idleEasy_) curl_easy_cleanup(e);
  idleEasy_.clear();
  curl_multi_cleanup(multi_);
}

CURL* CurlHttpClient::takeEasy() {
  if (idleEasy_.empty()) return curl_easy_init();
  CURL* e = idleEasy_.back();
  idleEasy_.pop_back();
  return e;
}

void CurlHttpClient::recycleEasy(CURL* easy) {
  constexpr std::size_t kMaxIdle = 64;
  if (idleEasy_.size() >= kMaxIdle) {
    curl_easy_cleanup(easy);
    return;
  }
  // Back to a fresh handle's options; curl keeps its buffers (and the multi keeps connections).
  curl_easy_reset(easy);
  idleEasy_.push_back(easy);
}

HttpRequestHandlePtr CurlHttpClient::send(HttpRequest request, HttpCallbacks callbacks) {
  auto t = std::make_shared<Transfer>();
  t->client = this;
  t->clientAlive = alive_;
  t->request = std::move(request);
  t->callbacks = std::move(callbacks);
  const HttpRequest& r = t->request;
  // curl writes header lines as given: a CR or LF in one would be sent (request splitting).
  if (auto problem = requestFramingProblem(r); !problem.empty()) {
    asio::post(io_, [alive = std::weak_ptr<bool>(alive_), t, problem = std::move(problem)] {
      if (!alive.lock() || t->cancelled) return;
      t->finished = true;
      if (!t->callbacks.onDone) return;
      t->guarded([&] {
        t->callbacks.onDone(makeError(escapeForLog(t->request.method, 32) + " " +
                                          escapeForLog(t->request.url) + ": not sent: " + problem,
                                      CURLE_BAD_FUNCTION_ARGUMENT));
      });
    });
    return t;
  }

  CURL* e = takeEasy();
  t->easy = e;
  curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errorBuffer);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(r.connectTimeout.count()));
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(r.totalTimeout.count()));
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Transfer::onHeaderLine);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Transfer::onBody);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
  curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, &CurlHttpClient::onCloseSocket);
  curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, this);
  if (!userAgent_.empty()) curl_easy_setopt(e, CURLOPT_USERAGENT, userAgent_.c_str());
  // A Content-Length over the limit fails before the body is read (onBody checks the rest).
  if (r.maxResponseBytes > 0)
    curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(r.maxResponseBytes));

  if (r.method == "GET") {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else if (r.method == "HEAD") {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  }
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
  }
  for (const auto& [name, value] : r.headers) {
    t->headerList = curl_slist_append(t->headerList, (name + ": " + value).c_str());
  }
  // curl adds "Expect: 100-continue" to larger bodies; peers answer faster without it.
  t->headerList = curl_slist_append(t->headerList, "Expect:");
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headerList);

  const TlsOptions& tls = r.tls;
  if (!tls.caFile.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, tls.caFile.c_str());
  if (!tls.caPem.empty()) {
    t->caBlob = {const_cast<char*>(tls.caPem.data()), tls.caPem.size(), CURL_BLOB_NOCOPY};
    curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &t->caBlob);
  }
  if (!tls.clientCertFile.empty()) curl_easy_setopt(e, CURLOPT_SSLCERT, tls.clientCertFile.c_str());
  if (!tls.clientKeyFile.empty()) curl_easy_setopt(e, CURLOPT_SSLKEY, tls.clientKeyFile.c_str());
  if (!tls.clientCertPem.empty()) {
    t->certBlob = {const_cast<char*>(tls.clientCertPem.data()), tls.clientCertPem.size(),
                   CURL_BLOB_NOCOPY};
    curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &t->certBlob);
    curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
  }
  if (!tls.clientKeyPem.empty()) {
    t->keyBlob = {const_cast<char*>(tls.clientKeyPem.data()), tls.clientKeyPem.size(),
                  CURL_BLOB_NOCOPY};
    curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &t->keyBlob);
    curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
  }
  if (tls.insecureSkipVerify) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }

  transfers_[e] = t;
  // Adding from inside a curl callback is forbidden; posting also keeps the promise that no
  // callback runs inside send().
  asio::post(io_, [this, alive = std::weak_ptr<bool>(alive_), t] {
    if (!alive.lock() || t->cancelled) return;
    const CURLMcode rc = curl_multi_add_handle(multi_, t->easy);
    if (rc != CURLM_OK) {
      remove(t);
      t->finished = true;
      if (t->callbacks.onDone)
        t->guarded([&] {
          t->callbacks.onDone(
              makeError(std::string("curl_multi_add_handle: ") + curl_multi_strerror(rc), rc));
        });
    }
  });
  return t;
}

void CurlHttpClient::remove(const std::shared_ptr<Transfer>& t) {
  auto it = transfers_.find(t->easy);
  if (t->easy == nullptr || it == transfers_.end()) return;
  curl_multi_remove_handle(multi_, t->easy);
  recycleEasy(t->easy);
  curl_slist_free_all(t->headerList);
  t->headerList = nullptr;
  transfers_.erase(it);
  t->easy = nullptr;
}

int CurlHttpClient::onSocket(CURL*, curl_socket_t fd, int what, void* self, void*) {
  auto* c = static_cast<CurlHttpClient*>(self);
  if (what == CURL_POLL_REMOVE) {
    c->forgetSocket(fd);
    return 0;
  }
  auto& s = c->sockets_[fd];
  if (!s) s = std::make_shared<Socket>(c->io_, fd);
  s->what = what;
  c->armSocket(s);
  return 0;
}

void CurlHttpClient::forgetSocket(curl_socket_t fd) {
  auto it = sockets_.find(fd);
  if (it == sockets_.end()) return;
  // release(), not close(): the socket is curl's. Pending waits complete as aborted.
  it->second->sd.release();
  sockets_.erase(it);
}

int CurlHttpClient::onCloseSocket(void* self, curl_socket_t fd) {
  // curl may close a socket it never reported as removed; forget it before the number is reused.
  static_cast<CurlHttpClient*>(self)->forgetSocket(fd);
  return ::close(fd);
}

void CurlHttpClient::armSocket(const std::shared_ptr<Socket>& s) {
  if (s->what == 0 || s->posted) return;
  const bool wantIn = (s->what & CURL_POLL_IN) != 0;
  const bool wantOut = (s->what & CURL_POLL_OUT) != 0;
  // curl changed direction while a wait was pending: that wait could hold the socket until
  // the other direction happens to be ready. Cancel it; its handler arms what curl wants now.
  if ((s->waitingIn && !wantIn) || (s->waitingOut && !wantOut)) {
    s->sd.cancel();
    return;
  }
  if (readyNow(s->fd, s->what)) {
    s->posted = true;
    asio::post(io_, [this, alive = std::weak_ptr<bool>(alive_), weak = std::weak_ptr<Socket>(s)] {
      auto sp = weak.lock();
      if (!alive.lock() || !sp) return;
      sp->posted = false;
      socketAction(sp->fd, 0);  // curl checks the socket itself when given no event mask
    });
    return;
  }
  // A socket that wants both directions (an upload that may be answered early) waits for both:
  // whichever comes first wakes curl.
  const auto wait = [this, &s](bool in) {
    (in ? s->waitingIn : s->waitingOut) = true;
    s->sd.async_wait(
        in ? asio::posix::descriptor_base::wait_read : asio::posix::descriptor_base::wait_write,
        [this, in, alive = std::weak_ptr<bool>(alive_),
         weak = std::weak_ptr<Socket>(s)](const boost::system::error_code& ec) {
          auto sp = weak.lock();
          // Gone: the client, or the socket (released by forgetSocket, which aborts the wait).
          if (!alive.lock() || !sp) return;
          (in ? sp->waitingIn : sp->waitingOut) = false;
          const int flag = in ? CURL_POLL_IN : CURL_POLL_OUT;
          // Cancelled for a change of direction, or no longer wanted: arm what curl wants now.
          if (ec == asio::error::operation_aborted || (!ec && (sp->what & flag) == 0))
            return armSocket(sp);
          if (ec) return;
          socketAction(sp->fd, in ? CURL_CSELECT_IN : CURL_CSELECT_OUT);
        });
  };
  if (wantIn && !s->waitingIn) wait(true);
  if (wantOut && !s->waitingOut) wait(false);
}

void CurlHttpClient::socketAction(curl_socket_t fd, int events) {
  int running = 0;
  curl_multi_socket_action(multi_, fd, events, &running);
  drainCompleted();
  if (fd == CURL_SOCKET_TIMEOUT) return;
  auto it = sockets_.find(fd);
  if (it != sockets_.end()) armSocket(it->second);
}

int CurlHttpClient::onTimer(CURLM*, long timeoutMs, void* self) {
  auto* c = static_cast<CurlHttpClient*>(self);
  if (timeoutMs < 0) {
    // Deleted: a pending Asio wait may still fire; it finds no deadline and does nothing.
    c->curlDeadline_.reset();
    return 0;
  }
  const auto now = std::chrono::steady_clock::now();
  c->curlDeadline_ = now + std::chrono::milliseconds(timeoutMs);
  if (timeoutMs == 0) {
    // "As soon as possible": from the loop, never from inside this callback.
    if (!c->duePosted_) {
      c->duePosted_ = true;
      asio::post(c->io_, [c, alive = std::weak_ptr<bool>(c->alive_)] {
        if (!alive.lock()) return;
        c->duePosted_ = false;
        c->onTimerDue();
      });
    }
    return 0;
  }
  if (!c->timerExpiry_ || *c->curlDeadline_ < *c->timerExpiry_) c->armTimer(*c->curlDeadline_);
  return 0;
}

void CurlHttpClient::armTimer(std::chrono::steady_clock::time_point at) {
  timerExpiry_ = at;
  timer_.expires_at(at);  // cancels a pending wait (its handler sees operation_aborted)
  timer_.async_wait(
      [this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code& ec) {
        if (ec || !alive.lock()) return;
        timerExpiry_.reset();
        onTimerDue();
      });
}

void CurlHttpClient::onTimerDue() {
  if (!curlDeadline_) return;
  if (std::chrono::steady_clock::now() < *curlDeadline_) {
    // Woken early (the deadline moved later since the timer was set): wait for the real one.
    if (!timerExpiry_ || *curlDeadline_ < *timerExpiry_) armTimer(*curlDeadline_);
    return;
  }
  curlDeadline_.reset();
  socketAction(CURL_SOCKET_TIMEOUT, 0);
  // Sockets whose state changed during the timeout action get re-armed by onSocket.
}

void CurlHttpClient::drainCompleted() {
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    auto it = transfers_.find(msg->easy_handle);
    if (it == transfers_.end()) continue;
    std::shared_ptr<Transfer> t = it->second;
    const CURLcode rc = msg->data.result;
    remove(t);
    if (t->cancelled) continue;
    t->finished = true;
    if (!t->callbacks.onDone) continue;
    if (!t->callbackError.empty()) {
      t->guarded([&] {
        t->callbacks.onDone(makeError(
            t->request.method + " " + t->request.url + ": a callback threw: " + t->callbackError,
            CURLE_WRITE_ERROR));
      });
    } else if (t->tooLarge || rc == CURLE_FILESIZE_EXCEEDED) {
      t->guarded([&] {
        t->callbacks.onDone(makeError(t->request.method + " " + t->request.url + ": " +
                                          responseTooLargeMessage(t->request.maxResponseBytes),
                                      CURLE_FILESIZE_EXCEEDED));
      });
    } else if (rc != CURLE_OK) {
      std::string detail = t->errorBuffer[0] != 0 ? t->errorBuffer : curl_easy_strerror(rc);
      t->guarded([&] {
        t->callbacks.onDone(
            makeError(t->request.method + " " + t->request.url + ": " + detail, rc));
      });
    } else {
      if (t->guarded([&] { t->deliverHeaders(); })) {
        t->guarded([&] { t->callbacks.onDone(std::move(t->response)); });
      } else {
        t->guarded([&] {
          t->callbacks.onDone(makeError(
              t->request.method + " " + t->request.url + ": a callback threw: " + t->callbackError,
              CURLE_WRITE_ERROR));
        });
      }
    }
  }
}

}  // namespace okna::core
