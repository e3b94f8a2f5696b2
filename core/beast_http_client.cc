#include "core/beast_http_client.h"

#include <curl/curl.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/drain_aware_socket.h"
#include "core/http_fields.h"
#include "core/listener_guard.h"
#include "core/write_now.h"

namespace okna::core {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
// The io_context's concrete executor: no type-erased executor copies per operation.
using Socket = DrainAwareSocket;

namespace {

// Views into the request's URL (which the transfer keeps): no copies per request.
struct ParsedUrl {
  std::string_view host;       // without brackets
  std::string_view authority;  // host[:port] as written: the Host header and the pool key
  std::string_view target;     // path and query; "" means "/"
  unsigned short port = 80;
};

std::optional<ParsedUrl> parseHttpUrl(std::string_view url, std::string& error, int& code) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) {
    error = "only http:// URLs are supported by this client";
    code = CURLE_UNSUPPORTED_PROTOCOL;
    return std::nullopt;
  }
  url.remove_prefix(kScheme.size());
  const auto slash = url.find_first_of("/?");
  std::string_view authority = url.substr(0, slash);
  ParsedUrl p;
  p.target = slash == std::string_view::npos ? std::string_view() : url.substr(slash);
  p.authority = authority;
  std::string_view port;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) {
      error = "bad URL";
      code = CURLE_URL_MALFORMAT;
      return std::nullopt;
    }
    p.host = authority.substr(1, close - 1);
    authority.remove_prefix(close + 1);
    port = authority.starts_with(':') ? authority.substr(1) : "80";
  } else {
    const auto colon = authority.rfind(':');
    p.host = authority.substr(0, colon);
    port = colon == std::string_view::npos ? "80" : authority.substr(colon + 1);
  }
  unsigned value = 0;
  const auto parsed = std::from_chars(port.data(), port.data() + port.size(), value);
  if (p.host.empty() || parsed.ec != std::errc() || parsed.ptr != port.data() + port.size() ||
      value == 0 || value > 65535) {
    error = "bad URL";
    code = CURLE_URL_MALFORMAT;
    return std::nullopt;
  }
  p.port = static_cast<unsigned short>(value);
  return p;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool sameName(std::string_view a, std::string_view b) {
  return beast::iequals(beast::string_view(a.data(), a.size()),
                        beast::string_view(b.data(), b.size()));
}

// Parses an answer straight into an HttpResponse: Beast's response<> would first build a
// header map (one allocation per field) only to be copied into ours.
class ResponseReader final : public http::basic_parser<false> {
 public:
  ResponseReader(HttpResponse& out, std::span<const std::string_view> keep)
      : out_(out), keep_(keep) {}

 private:
  using string_view = beast::string_view;
  using error_code = beast::error_code;
  void on_request_impl(http::verb, string_view, string_view, int, error_code&) override {}
  void on_response_impl(int code, string_view, int, error_code&) override { out_.status = code; }
  void on_field_impl(http::field, string_view name, string_view value, error_code&) override {
    const std::string_view n(name.data(), name.size());
    if (keep_.empty()) {
      out_.headers[lower(n)].assign(value.data(), value.size());
      return;
    }
    for (const std::string_view wanted : keep_) {
      if (sameName(n, wanted)) out_.headers[std::string(wanted)].assign(value.data(), value.size());
    }
  }
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override {
    if (length) out_.body.reserve(static_cast<std::size_t>(*length));
  }
  std::size_t on_body_impl(string_view data, error_code&) override {
    out_.body.append(data.data(), data.size());
    return data.size();
  }
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view data, error_code&) override {
    out_.body.append(data.data(), data.size());
    return data.size();
  }
  void on_finish_impl(error_code&) override {}

  HttpResponse& out_;
  std::span<const std::string_view> keep_;
};

// Pool keys are looked up by the URL's authority (a view) without building a string.
struct KeyHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace

struct Connection {
  explicit Connection(asio::io_context& io) : socket(io) {
    // Beast reads into what the buffer has room for, starting at 512 bytes: a 1.5 kB answer
    // took four reads (each a recv and a loop turn). Room for a usual answer in one.
    buffer.reserve(kReadRoom);
  }
  static constexpr std::size_t kReadRoom = 16 * 1024;
  Socket socket;
  beast::flat_buffer buffer;
  // The request head being written; keeps its capacity across the connection's requests.
  std::string head;
};

/** A transfer the state's sweep can time out. */
struct Deadlined : HttpRequestHandle {
  virtual void expireIfDue(std::chrono::steady_clock::time_point now) = 0;
};

struct BeastHttpClient::State : std::enable_shared_from_this<BeastHttpClient::State> {
  State(asio::io_context& ioContext, std::string agent, std::size_t maxIdle)
      : io(ioContext),
        resolver(ioContext),
        sweepTimer(ioContext),
        userAgent(std::move(agent)),
        maxIdlePerHost(maxIdle) {}

  // One timer checks every transfer's total timeout (50 ms granularity) instead of one timer
  // armed and cancelled per request; it runs only while transfers are in flight.
  void ensureSweep() {
    if (sweeping || closed || live.empty()) return;
    sweeping = true;
    sweepTimer.expires_after(std::chrono::milliseconds(50));
    sweepTimer.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (!self) return;
      self->sweeping = false;
      if (ec || self->closed) return;
      const auto now = std::chrono::steady_clock::now();
      const std::vector<Deadlined*> all(self->live.begin(), self->live.end());
      for (Deadlined* t : all) t->expireIfDue(now);
      self->ensureSweep();
    });
  }

  std::unique_ptr<Connection> takeIdle(std::string_view key) {
    auto it = idle.find(key);
    while (it != idle.end() && !it->second.empty()) {
      auto c = std::move(it->second.back());
      it->second.pop_back();
      if (!c->socket.is_open()) continue;
      // An idle connection must have nothing to read. Bytes there are an answer to no request
      // of ours (a peer that answered twice, say because a request was split): reading them as
      // the next request's answer would hand one VM's metadata to another. EOF: the peer
      // closed it. Either way it is closed; a syscall per request is the price.
      char probe;
      const ssize_t n = ::recv(c->socket.native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return c;
    }
    return nullptr;
  }

  void giveBack(std::string_view key, std::unique_ptr<Connection> c) {
    if (closed || c->buffer.size() != 0) return;
    auto it = idle.find(key);
    if (it == idle.end()) it = idle.emplace(std::string(key), decltype(it->second)()).first;
    if (it->second.size() >= maxIdlePerHost) return;
    it->second.push_back(std::move(c));
  }

  asio::io_context& io;
  tcp::resolver resolver;
  asio::steady_timer sweepTimer;
  bool sweeping = false;
  std::string userAgent;
  std::size_t maxIdlePerHost;
  std::unordered_map<std::string, std::vector<std::unique_ptr<Connection>>, KeyHash,
                     std::equal_to<>>
      idle;
  // Transfers started and not finished: cancelled when the client goes away.
  std::unordered_set<Deadlined*> live;
  bool closed = false;
};

namespace {

class Transfer final : public Deadlined, public std::enable_shared_from_this<Transfer> {
 public:
  Transfer(std::shared_ptr<BeastHttpClient::State> state, HttpRequest request,
           HttpCallbacks callbacks)
      : state_(std::move(state)), request_(std::move(request)), callbacks_(std::move(callbacks)) {}

  // Deadlined
  void expireIfDue(std::chrono::steady_clock::time_point now) override {
    if (done_ || now < deadline_) return;
    timedOut_ = true;
    dropConnection();  // the pending operation completes with an error
  }

  // HttpRequestHandle
  void cancel() override {
    if (done_) return;
    done_ = true;
    state_->live.erase(this);
    if (connectTimer_) connectTimer_->cancel();
    dropConnection();
  }

  void start() {
    if (done_) return;
    std::string error;
    int code = 0;
    std::optional<ParsedUrl> url;
    // A CR or LF in a header would let its value add headers or a second request: nothing of
    // such a request is written.
    if (auto problem = requestFramingProblem(request_); !problem.empty()) {
      error = "not sent: " + problem;
      code = CURLE_BAD_FUNCTION_ARGUMENT;
    } else {
      url = parseHttpUrl(request_.url, error, code);
    }
    if (!url) {
      // Never call back inside send(): fail from the loop.
      return asio::post(state_->io, [self = shared_from_this(), error, code] {
        self->fail(escapeForLog(self->request_.method, 32) + " " +
                       escapeForLog(self->request_.url) + ": " + error,
                   code);
      });
    }
    url_ = *url;
    state_->live.insert(this);
    started_ = std::chrono::steady_clock::now();
    deadline_ = request_.totalTimeout.count() > 0 ? started_ + request_.totalTimeout
                                                  : std::chrono::steady_clock::time_point::max();
    state_->ensureSweep();
    conn_ = state_->takeIdle(url_.authority);
    if (conn_) {
      reused_ = true;
      return write();
    }
    connect();
  }

 private:
  // The request head as Beast's serializer wrote it (Host, User-Agent, Accept, the caller's
  // headers, Content-Length), formatted into the connection's reused string.
  void formatHead(std::string& out) const {
    out.clear();
    out.append(request_.method).append(" ");
    if (url_.target.empty() || url_.target.front() == '?') out.append("/");
    out.append(url_.target).append(" HTTP/1.1\r\n");
    const auto given = [&](std::string_view name) {
      for (const auto& [n, v] : request_.headers)
        if (sameName(n, name)) return true;
      return false;
    };
    const auto line = [&out](std::string_view name, std::string_view value) {
      out.append(name).append(": ").append(value).append("\r\n");
    };
    if (!given("Host")) line("Host", url_.authority);
    if (!state_->userAgent.empty() && !given("User-Agent")) line("User-Agent", state_->userAgent);
    if (!given("Accept")) line("Accept", "*/*");
    for (const auto& [name, value] : request_.headers) {
      // An empty value means "do not send" (see HttpRequest::headers); the length is ours.
      if (value.empty() || sameName(name, "Content-Length") || sameName(name, "Transfer-Encoding"))
        continue;
      line(name, value);
    }
    const bool bodyMethod = request_.method != "GET" && request_.method != "HEAD";
    if (!request_.body.empty() || bodyMethod) {
      char length[24];
      const auto end = std::to_chars(length, length + sizeof length, request_.body.size()).ptr;
      line("Content-Length", std::string_view(length, static_cast<std::size_t>(end - length)));
    }
    out.append("\r\n");
  }

  void connect() {
    reused_ = false;
    conn_ = std::make_unique<Connection>(state_->io);
    connecting_ = true;
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(std::string(url_.host), ec);
    const auto connectDeadline = started_ + request_.connectTimeout;
    if (request_.connectTimeout.count() > 0) {
      connectTimer_.emplace(state_->io);
      connectTimer_->expires_at(connectDeadline);
      connectTimer_->async_wait([self = shared_from_this()](const boost::system::error_code& e) {
        if (e || self->done_ || !self->connecting_) return;
        self->connectTimedOut_ = true;
        self->dropConnection();
      });
    }
    if (!ec) {
      endpoints_ = {tcp::endpoint(address, url_.port)};
      return connectTo();
    }
    state_->resolver.async_resolve(
        url_.host, std::to_string(url_.port),
        [self = shared_from_this()](const boost::system::error_code& e,
                                    tcp::resolver::results_type results) {
          if (self->done_) return;
          if (e)
            return self->fail(
                self->prefix() + "Could not resolve host: " + std::string(self->url_.host),
                CURLE_COULDNT_RESOLVE_HOST);
          for (const auto& r : results) self->endpoints_.push_back(r.endpoint());
          self->connectTo();
        });
  }

  void connectTo() {
    if (!conn_ || connectTimedOut_ || timedOut_)
      return failTimeoutOr("Failed to connect", CURLE_COULDNT_CONNECT);
    asio::async_connect(
        conn_->socket, endpoints_,
        [self = shared_from_this()](const boost::system::error_code& ec, const tcp::endpoint&) {
          if (self->done_) return;
          self->connecting_ = false;
          if (self->connectTimer_) self->connectTimer_->cancel();
          if (ec)
            return self->failTimeoutOr(
                "Failed to connect to " + std::string(self->url_.authority) + ": " + ec.message(),
                CURLE_COULDNT_CONNECT);
          boost::system::error_code ignored;
          self->conn_->socket.set_option(tcp::no_delay(true), ignored);
          self->conn_->socket.non_blocking(true, ignored);
          self->write();
        });
  }

  void write() {
    formatHead(conn_->head);
    const std::array<asio::const_buffer, 2> message{asio::buffer(conn_->head),
                                                    asio::buffer(request_.body)};
    // Written at once where it fits (see writeNow): one loop turn fewer per request.
    boost::system::error_code ec;
    const std::size_t written = writeNow(conn_->socket, message, ec);
    if (ec) return retryOrFail(ec, "Send failure");
    if (written == asio::buffer_size(message)) return read();
    beast::buffers_suffix<std::array<asio::const_buffer, 2>> rest(message);
    rest.consume(written);
    asio::async_write(conn_->socket, rest,
                      [self = shared_from_this()](const boost::system::error_code& e, std::size_t) {
                        if (self->done_) return;
                        if (e) return self->retryOrFail(e, "Send failure");
                        self->read();
                      });
  }

  void read() {
    response_ = HttpResponse();
    parser_.emplace(response_, request_.keepResponseHeaders);
    // Beast's own limit, so that a body over it is never buffered. 0 (none) is the largest
    // value, not boost::none: this Beast compares a Content-Length with an empty limit as
    // "larger" and fails the answer.
    parser_->body_limit(request_.maxResponseBytes > 0 ? std::uint64_t{request_.maxResponseBytes}
                                                      : std::numeric_limits<std::uint64_t>::max());
    if (request_.method == "HEAD") parser_->skip(true);
    // As http::async_read: parse header and body together as bytes come.
    parser_->eager(true);
    parseOrRead();
  }

  // Feeds the connection's buffered bytes to the parser and reads more until the answer is
  // whole. Nova answers only after the request went out, so the read waits for the socket's
  // readiness instead of trying a recv that would fail first (core::DrainAwareSocket).
  void parseOrRead() {
    beast::flat_buffer& buffer = conn_->buffer;
    while (buffer.size() > 0) {
      boost::system::error_code ec;
      const std::size_t used = parser_->put(buffer.data(), ec);
      buffer.consume(used);
      if (ec == http::error::need_more) break;
      if (ec == http::error::body_limit)
        return fail(prefix() + responseTooLargeMessage(request_.maxResponseBytes),
                    CURLE_FILESIZE_EXCEEDED);
      if (ec) return retryOrFail(ec, "Recv failure");
      if (parser_->is_done()) return finish();
      if (used == 0) break;
    }
    if (parser_->is_done()) return finish();
    conn_->socket.asyncReadSome(
        buffer.prepare(Connection::kReadRoom),
        [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
          if (self->done_) return;
          if (ec == asio::error::eof) return self->onEndOfStream();
          if (ec) return self->retryOrFail(ec, "Recv failure");
          self->conn_->buffer.commit(n);
          self->parseOrRead();
        });
  }

  // The peer closed: the end of an answer without a length, else a failure (as Beast's read).
  void onEndOfStream() {
    if (!parser_->got_some()) return retryOrFail(http::error::end_of_stream, "Recv failure");
    boost::system::error_code ec;
    parser_->put_eof(ec);
    if (ec) return retryOrFail(ec, "Recv failure");
    if (!parser_->is_done()) return retryOrFail(http::error::partial_message, "Recv failure");
    finish();
  }

  // A reused keep-alive connection the peer had closed fails before any answer: once, try a
  // fresh connection (curl does the same).
  void retryOrFail(const boost::system::error_code& ec, const char* what) {
    const bool nothingReceived = !parser_ || !parser_->got_some();
    if (reused_ && nothingReceived && !timedOut_ && !retried_) {
      retried_ = true;
      conn_.reset();
      parser_.reset();
      return connect();
    }
    failTimeoutOr(std::string(what) + ": " + ec.message(), CURLE_RECV_ERROR);
  }

  void finish() {
    done_ = true;
    state_->live.erase(this);
    HttpResponse response = std::move(response_);
    const bool keepAlive = parser_->keep_alive();
    parser_.reset();
    if (keepAlive && conn_) state_->giveBack(url_.authority, std::move(conn_));
    conn_.reset();
    auto onHeaders = std::move(callbacks_.onHeaders);
    auto onData = std::move(callbacks_.onData);
    auto onDone = std::move(callbacks_.onDone);
    if (onHeaders) onHeaders(response.status, response.headers);
    if (onData) {
      onData(response.body);
      response.body.clear();
    }
    if (onDone) onDone(std::move(response));
  }

  void failTimeoutOr(const std::string& message, int code) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - started_)
                        .count();
    if (connectTimedOut_)
      return fail(prefix() + "Connection timed out after " + std::to_string(ms) + " milliseconds",
                  CURLE_OPERATION_TIMEDOUT);
    if (timedOut_)
      return fail(prefix() + "Operation timed out after " + std::to_string(ms) + " milliseconds",
                  CURLE_OPERATION_TIMEDOUT);
    fail(prefix() + message, code);
  }

  void fail(const std::string& message, int code) {
    if (done_) return;
    done_ = true;
    state_->live.erase(this);
    if (connectTimer_) connectTimer_->cancel();
    dropConnection();
    auto onDone = std::move(callbacks_.onDone);
    if (onDone) onDone(makeError(message, code));
  }

  std::string prefix() const { return request_.method + " " + request_.url + ": "; }

  void dropConnection() {
    if (!conn_) return;
    boost::system::error_code ignored;
    conn_->socket.close(ignored);
  }

  std::shared_ptr<BeastHttpClient::State> state_;
  HttpRequest request_;
  HttpCallbacks callbacks_;
  std::chrono::steady_clock::time_point deadline_{};
  std::optional<asio::steady_timer> connectTimer_;
  ParsedUrl url_;
  std::vector<tcp::endpoint> endpoints_;
  std::unique_ptr<Connection> conn_;
  HttpResponse response_;
  std::optional<ResponseReader> parser_;
  std::chrono::steady_clock::time_point started_{};
  bool done_ = false;
  bool reused_ = false;
  bool retried_ = false;
  bool connecting_ = false;
  bool timedOut_ = false;
  bool connectTimedOut_ = false;
};

}  // namespace

BeastHttpClient::BeastHttpClient(asio::io_context& io, std::string userAgent,
                                 std::size_t maxIdlePerHost)
    : state_(std::make_shared<State>(io, std::move(userAgent), maxIdlePerHost)) {}

BeastHttpClient::~BeastHttpClient() {
  state_->closed = true;
  state_->sweepTimer.cancel();
  const std::vector<Deadlined*> live(state_->live.begin(), state_->live.end());
  for (Deadlined* t : live) t->cancel();
  state_->idle.clear();
  state_->resolver.cancel();
}

HttpRequestHandlePtr BeastHttpClient::send(HttpRequest request, HttpCallbacks callbacks) {
  auto t = std::make_shared<Transfer>(state_, std::move(request), std::move(callbacks));
  // Started at once (saves a loop turn per request): Asio never completes an operation inside
  // its initiating call, and start() posts its own failures, so no callback runs inside send().
  if (!state_->closed) t->start();
  return t;
}

std::size_t BeastHttpClient::idleConnections() const {
  std::size_t n = 0;
  for (const auto& [key, list] : state_->idle) n += list.size();
  return n;
}

}  // namespace okna::core
