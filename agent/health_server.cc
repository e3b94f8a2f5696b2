#include "agent/health_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "core/logging.h"

namespace okna::agent {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// One connection: read a request, answer, repeat while keep-alive.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HealthServer& server)
      : stream_(std::move(socket)), server_(server) {}
  void start() { read(); }

 private:
  void read() {
    request_ = {};
    stream_.expires_after(std::chrono::seconds(10));
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->close();
                       self->respond();
                     });
  }

  void respond() {
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(request_.version());
    res->keep_alive(request_.keep_alive());
    res->set(http::field::server, "openkeel-node-agent");
    if (request_.method() != http::verb::get && request_.method() != http::verb::head) {
      res->result(http::status::method_not_allowed);
      res->set(http::field::content_type, "text/plain; charset=utf-8");
      res->body() = "method not allowed\n";
    } else {
      auto r = server_.handle(std::string(request_.target()));
      res->result(r.status);
      res->set(http::field::content_type, r.contentType);
      res->body() = request_.method() == http::verb::head ? "" : std::move(r.body);
    }
    res->prepare_payload();
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
  http::request<http::string_body> request_;
  const HealthServer& server_;
};

std::string renderChecks(const std::vector<core::HealthRegistry::Check>& checks, bool ok,
                         const std::string& name) {
  std::string out;
  for (const auto& c : checks)
    out +=
        std::string(c.ok ? "[+]" : "[-]") + c.name + (c.ok ? " ok" : " failed: " + c.detail) + "\n";
  out += name + (ok ? " check passed\n" : " check failed\n");
  return out;
}

}  // namespace

struct HealthServer::Acceptor {
  explicit Acceptor(asio::io_context& io) : socket(io) {}
  tcp::acceptor socket;
};

HealthServer::HealthServer(asio::io_context& io, core::HealthRegistry& health,
                           core::MetricsRegistry& metrics,
                           std::function<nlohmann::json()> debugPlan)
    : io_(io),
      health_(health),
      metrics_(metrics),
      debugPlan_(std::move(debugPlan)),
      acceptor_(std::make_unique<Acceptor>(io)) {}

HealthServer::~HealthServer() {
  stop();
}

core::Status HealthServer::listen(const std::string& host, unsigned short port) {
  beast::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) return core::makeError("health listen address \"" + host + "\": not an IP address");
  const tcp::endpoint endpoint(address, port);
  const std::string where = host + ":" + std::to_string(port);
  acceptor_->socket.open(endpoint.protocol(), ec);
  if (!ec) acceptor_->socket.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_->socket.bind(endpoint, ec);
  if (ec == asio::error::address_in_use)
    return core::makeError("health endpoint " + where +
                               ": the port is already in use by another process "
                               "(choose another with --health-listen or health.listen)",
                           ec.value());
  if (!ec) acceptor_->socket.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return core::makeError("health endpoint " + where + ": " + ec.message(), ec.value());
  port_ = acceptor_->socket.local_endpoint().port();
  core::logger("health")->info("serving /healthz /readyz /metrics /debug/plan on {}:{}", host,
                               port_);
  accept();
  return {};
}

void HealthServer::stop() {
  beast::error_code ec;
  acceptor_->socket.close(ec);
}

void HealthServer::accept() {
  acceptor_->socket.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_->socket.is_open()) return;
    if (!ec) std::make_shared<Session>(std::move(socket), *this)->start();
    accept();
  });
}

HealthServer::Response HealthServer::handle(const std::string& target) const {
  const auto q = target.find('?');
  const std::string path = target.substr(0, q);
  const bool verbose = q != std::string::npos && target.find("verbose", q) != std::string::npos;
  const std::string text = "text/plain; charset=utf-8";
  if (path == "/healthz" || path == "/livez") {
    const bool ok = health_.live();
    return {ok ? 200u : 500u, text,
            verbose || !ok ? renderChecks(health_.liveness(), ok, "livez") : "ok"};
  }
  if (path == "/readyz") {
    const bool ok = health_.ready();
    return {ok ? 200u : 503u, text,
            verbose || !ok ? renderChecks(health_.readiness(), ok, "readyz") : "ok"};
  }
  if (path == "/metrics")
    return {200u, "text/plain; version=0.0.4; charset=utf-8", metrics_.render()};
  if (path == "/debug/plan")
    return {200u, "application/json",
            (debugPlan_ ? debugPlan_() : nlohmann::json()).dump(2) + "\n"};
  return {404u, text, "not found\n"};
}

}  // namespace okna::agent
