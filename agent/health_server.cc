#include "agent/health_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_set>
#include <vector>

#include "core/listener_guard.h"
#include "core/logging.h"

namespace okna::agent {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// A probe or a scrape is a GET with a few headers: anything larger is not one of ours, and the
// limits keep a capped connection's memory small.
constexpr std::uint64_t kHeaderLimit = 8 * 1024;
constexpr std::uint64_t kBodyLimit = 4 * 1024;

class Session;

// What the listener shares with its sessions, which can outlive the HealthServer in the
// io_context's queue (a completion already posted when it is destroyed): they reach the server
// only through `server`, which the destructor clears.
struct Listener {
  explicit Listener(asio::io_context& io) : acceptor(io), retry(io) {}
  tcp::acceptor acceptor;
  asio::steady_timer retry;
  unsigned acceptFailures = 0;
  core::LogThrottle acceptLog;
  core::LogThrottle refuseLog;
  std::unordered_set<Session*> sessions;
  // Of `sessions`, those from this host.
  std::size_t fromThisHost = 0;
  const HealthServer* server = nullptr;
  core::Gauge* openGauge = nullptr;
  std::chrono::milliseconds requestDeadline{0};

  void countOpen() const {
    if (openGauge != nullptr) openGauge->set(static_cast<double>(sessions.size()));
  }
  bool full(bool local, std::size_t max) const {
    return (local ? fromThisHost : sessions.size() - fromThisHost) >= max;
  }
};

// Only this host can connect from the very address it connects to: the kernel drops a packet from
// outside whose source is one of its own addresses (a martian, unless accept_local is set). The
// kubelet probing a hostNetwork pod at the node's address connects so, as does a local curl.
bool isFromThisHost(const tcp::socket& socket) {
  beast::error_code peerError, localError;
  const auto peer = socket.remote_endpoint(peerError);
  const auto local = socket.local_endpoint(localError);
  return !peerError && !localError && peer.address() == local.address();
}

// One connection: read a request, answer, repeat while keep-alive. Each request (read and
// answer) must be done within the deadline, counted from when its read starts.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<Listener> listener, bool fromThisHost)
      : stream_(std::move(socket)), listener_(std::move(listener)), fromThisHost_(fromThisHost) {}
  ~Session() {
    if (listener_->sessions.erase(this) > 0 && fromThisHost_) --listener_->fromThisHost;
    listener_->countOpen();
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start() {
    listener_->sessions.insert(this);
    if (fromThisHost_) ++listener_->fromThisHost;
    listener_->countOpen();
    read();
  }
  /** Ends the connection now (the listener stops): pending operations complete aborted. */
  void abort() { stream_.close(); }

 private:
  void read() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    stream_.expires_after(listener_->requestDeadline);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec || self->listener_->server == nullptr) return self->close();
                       self->respond();
                     });
  }

  void respond() {
    const auto& request = parser_->get();
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(request.version());
    res->keep_alive(request.keep_alive());
    res->set(http::field::server, "openkeel-node-agent");
    if (request.method() != http::verb::get && request.method() != http::verb::head) {
      res->result(http::status::method_not_allowed);
      res->set(http::field::content_type, "text/plain; charset=utf-8");
      res->body() = "method not allowed\n";
    } else {
      auto r = listener_->server->handle(
          std::string(request.target()),
          fromThisHost_ ? HealthServer::Peer::ThisHost : HealthServer::Peer::OtherHost);
      res->result(r.status);
      res->set(http::field::content_type, r.contentType);
      res->body() = request.method() == http::verb::head ? "" : std::move(r.body);
    }
    res->prepare_payload();
    // The write runs under the same deadline as the read (not renewed): a client that does not
    // read its answer is cut too.
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res](beast::error_code ec, size_t) {
                        if (ec || !res->keep_alive()) return self->close();
                        self->read();
                      });
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<Listener> listener_;
  const bool fromThisHost_;
};

// A passing check's detail is shown too: what a component works around while ready (a refused
// child deletion in Placement) must be visible without failing readiness. Without `detail`
// (another host asks), the name and ok/failed only: the details name VM ports, namespaces,
// network ids, the Keystone URL and the Southbound address.
std::string renderChecks(const std::vector<core::HealthRegistry::Check>& checks, bool ok,
                         const std::string& name, bool detail) {
  std::string out;
  for (const auto& c : checks) {
    out += std::string(c.ok ? "[+]" : "[-]") + c.name + (c.ok ? " ok" : " failed");
    if (detail && (!c.ok || !c.detail.empty())) out += ": " + c.detail;
    out += "\n";
  }
  out += name + (ok ? " check passed\n" : " check failed\n");
  return out;
}

constexpr const char* kText = "text/plain; charset=utf-8";

}  // namespace

struct HealthServer::State : Listener {
  using Listener::Listener;
};

HealthServer::HealthServer(asio::io_context& io, core::Clock& clock, core::HealthRegistry& health,
                           core::MetricsRegistry& metrics,
                           std::function<nlohmann::json()> debugPlan, HealthServerOptions options)
    : clock_(clock),
      health_(health),
      metrics_(metrics),
      debugPlan_(std::move(debugPlan)),
      options_(options),
      state_(std::make_shared<State>(io)),
      refused_(metrics_.counter(
          "okna_health_connections_refused_total",
          "Connections closed at accept: the listener had maxConnections open", labels())),
      acceptErrors_(metrics_.counter(
          "okna_health_accept_errors_total",
          "Failed accepts (EMFILE, ENFILE, ENOBUFS, ...), each retried after a backoff",
          labels())) {
  state_->server = this;
  state_->requestDeadline = options_.requestDeadline;
  state_->openGauge = &metrics_.gauge("okna_health_connections_open",
                                      "Connections open on the agent's HTTP listener", labels());
}

HealthServer::~HealthServer() {
  stop();
  state_->server = nullptr;
  state_->openGauge = nullptr;
}

const char* HealthServer::name() const {
  return options_.endpoints == HealthServerOptions::Endpoints::Probes ? "health" : "admin";
}

core::Labels HealthServer::labels() const {
  return {{"listener", name()}};
}

core::Status HealthServer::listen(const std::string& host, unsigned short port) {
  if (auto s = bindAndListen(host, port); !s) return s;
  const bool probes = options_.endpoints == HealthServerOptions::Endpoints::Probes;
  core::logger("health")->info(
      "serving {} on {}:{} (at most {} connections from this host and {} from others)",
      probes ? "/healthz /livez /readyz" : "/metrics /debug/plan", host, port_,
      options_.maxConnections, options_.maxConnections);
  accept();
  return {};
}

core::Status HealthServer::bindAndListen(const std::string& host, unsigned short port) {
  const bool probes = options_.endpoints == HealthServerOptions::Endpoints::Probes;
  const std::string what = probes ? "health endpoint " : "admin endpoint ";
  const std::string flags =
      probes ? "--health-listen or health.listen" : "--admin-listen or health.adminListen";
  beast::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) return core::makeError(what + "address \"" + host + "\": not an IP address");
  const tcp::endpoint endpoint(address, port);
  const std::string where = host + ":" + std::to_string(port);
  auto& acceptor = state_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (ec == asio::error::address_in_use)
    return core::makeError(
        what + where + ": the port is already in use by another process (choose another with " +
            flags + ")",
        ec.value());
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return core::makeError(what + where + ": " + ec.message(), ec.value());
  port_ = acceptor.local_endpoint().port();
  return {};
}

void HealthServer::stop() {
  beast::error_code ec;
  state_->acceptor.close(ec);
  state_->retry.cancel();
  // A copy: a session leaves the set when it is destroyed, which closing may bring about.
  const std::vector<Session*> open(state_->sessions.begin(), state_->sessions.end());
  for (Session* s : open) s->abort();
}

std::size_t HealthServer::openConnections() const {
  return state_->sessions.size();
}

void HealthServer::accept() {
  state_->acceptor.async_accept([this, state = state_](beast::error_code ec, tcp::socket socket) {
    // Closed: this server may be gone already; touch nothing of it.
    if (!state->acceptor.is_open() || ec == asio::error::operation_aborted) return;
    if (ec) return onAcceptError(ec.message());
    state->acceptFailures = 0;
    const bool local = isFromThisHost(socket);
    if (state->full(local, options_.maxConnections)) {
      socket.close(ec);
      refuse(local);
    } else {
      std::make_shared<Session>(std::move(socket), state, local)->start();
    }
    accept();
  });
}

// Out of descriptors (or buffers) the accept would fail again at once: re-posting it would spin
// the loop and flood the log, so wait, longer after each failure in a row.
void HealthServer::onAcceptError(const std::string& error) {
  const unsigned failures = ++state_->acceptFailures;
  const auto delay = core::acceptRetryDelay(failures);
  acceptErrors_.inc();
  std::uint64_t suppressed = 0;
  if (state_->acceptLog.allow(clock_.now(), suppressed))
    core::logger("health")->warn(
        "{} listener: accept failed: {} ({} in a row; retrying in {} ms; {} failures not logged "
        "since the last line)",
        name(), error, failures, delay.count(), suppressed);
  state_->retry.expires_after(delay);
  state_->retry.async_wait([this, state = state_](beast::error_code ec) {
    if (ec || !state->acceptor.is_open()) return;
    accept();
  });
}

void HealthServer::refuse(bool fromThisHost) {
  refused_.inc();
  std::uint64_t suppressed = 0;
  if (state_->refuseLog.allow(clock_.now(), suppressed))
    core::logger("health")->warn(
        "{} listener: {} connections open from {} (maxConnections): closed a new one ({} more "
        "closed since the last line)",
        name(), options_.maxConnections, fromThisHost ? "this host" : "other hosts", suppressed);
}

HealthServer::Response HealthServer::handle(const std::string& target, Peer peer) const {
  const auto q = target.find('?');
  const std::string path = target.substr(0, q);
  const bool verbose = q != std::string::npos && target.find("verbose", q) != std::string::npos;
  const bool admin = options_.endpoints == HealthServerOptions::Endpoints::Admin;
  if (admin && path == "/metrics")
    return {200u, "text/plain; version=0.0.4; charset=utf-8", metrics_.render()};
  if (admin && path == "/debug/plan")
    return {200u, "application/json",
            (debugPlan_ ? debugPlan_() : nlohmann::json()).dump(2) + "\n"};
  // The admin listener tells why to whoever reaches it: it serves the plan, which says more.
  const bool detail = admin || peer == Peer::ThisHost;
  if (path == "/readyz") {
    const bool ok = health_.ready();
    return {ok ? 200u : 503u, kText,
            verbose || !ok ? renderChecks(health_.readiness(), ok, "readyz", detail) : "ok"};
  }
  if (!admin && (path == "/healthz" || path == "/livez")) {
    const bool ok = health_.live();
    return {ok ? 200u : 500u, kText,
            verbose || !ok ? renderChecks(health_.liveness(), ok, "livez", detail) : "ok"};
  }
  return {404u, kText, "not found\n"};
}

}  // namespace okna::agent
