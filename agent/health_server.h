#pragma once
// The agent's local HTTP endpoints, served from the event loop by two listeners of this class:
//   - probes (health.listen, 0.0.0.0:19874 where the kubelet reaches it): /healthz and /livez
//     (liveness of the loop and worker threads), /readyz (every enabled component synced;
//     ?verbose lists them). Why a check fails (VM ports, namespaces, network ids, URLs) is told
//     to this host only (the kubelet probes from the node's own address); another host reads
//     the check names and ok/failed;
//   - admin (health.adminListen, loopback by default): /metrics (Prometheus), /debug/plan (the
//     current desired state) and /readyz with every detail, which name networks, VM addresses
//     and the OVS configuration and so are not for whoever can reach the node's address.
// Each listener caps its open connections and gives every request a deadline, so that a client
// cannot hold the agent's file descriptors; see core/listener_guard.h.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/clock.h"
#include "core/health.h"
#include "core/metrics.h"
#include "core/result.h"

namespace boost::asio {
class io_context;
}

namespace okna::agent {

struct HealthServerOptions {
  enum class Endpoints { Probes, Admin };
  // Which paths this listener answers; the others are 404.
  Endpoints endpoints = Endpoints::Probes;
  // Open connections beyond this are accepted and closed at once (and counted). Counted apart
  // for clients on this host (the kubelet probes a hostNetwork pod from the node's own address)
  // and for the others, so that a flood from the network cannot fail the probes.
  std::size_t maxConnections = 64;
  // From the start of each request to the end of its answer: a client that trickles its bytes is
  // cut here, however often it sends one.
  std::chrono::milliseconds requestDeadline = std::chrono::seconds(10);
};

class HealthServer {
 public:
  /** `clock` paces the log lines of refused and failed accepts. */
  HealthServer(boost::asio::io_context& io, core::Clock& clock, core::HealthRegistry& health,
               core::MetricsRegistry& metrics, std::function<nlohmann::json()> debugPlan,
               HealthServerOptions options);
  ~HealthServer();
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;

  /** Binds and starts accepting; a taken port is an error that says so. */
  core::Status listen(const std::string& host, unsigned short port);
  unsigned short port() const { return port_; }
  /** Closes the listening socket and every open connection. */
  void stop();
  /** Connections open now (for tests and the gauge). */
  std::size_t openConnections() const;

  struct Response {
    unsigned status;
    std::string contentType;
    std::string body;
  };
  /** Who asks, as the connection shows it: its peer's address is the one it connected to
   *  (only this host can do that), or not. */
  enum class Peer { ThisHost, OtherHost };
  /** What a GET of `target` from `peer` answers on this listener (exposed for unit tests). */
  Response handle(const std::string& target, Peer peer) const;

 private:
  struct State;
  void accept();
  void onAcceptError(const std::string& error);
  void refuse(bool fromThisHost);
  core::Status bindAndListen(const std::string& host, unsigned short port);
  const char* name() const;
  core::Labels labels() const;

  core::Clock& clock_;
  core::HealthRegistry& health_;
  core::MetricsRegistry& metrics_;
  std::function<nlohmann::json()> debugPlan_;
  HealthServerOptions options_;
  // The acceptor, its retry timer and the open sessions (Asio types, defined in the .cc so that
  // Asio's socket headers stay out of this one). Shared with the sessions, which may outlive
  // this object in the io_context's queue.
  std::shared_ptr<State> state_;
  core::Counter& refused_;
  core::Counter& acceptErrors_;
  unsigned short port_ = 0;
};

}  // namespace okna::agent
