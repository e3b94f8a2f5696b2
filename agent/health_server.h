#pragma once
// The agent's one local HTTP endpoint, served from the event loop: /healthz (liveness of the
// loop and worker threads), /readyz (every enabled component synced; ?verbose lists them),
// /metrics (Prometheus) and /debug/plan (the current desired state, for operators).

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/health.h"
#include "core/metrics.h"
#include "core/result.h"

namespace boost::asio {
class io_context;
}

namespace okna::agent {

class HealthServer {
 public:
  HealthServer(boost::asio::io_context& io, core::HealthRegistry& health,
               core::MetricsRegistry& metrics, std::function<nlohmann::json()> debugPlan);
  ~HealthServer();

  /** Binds and starts accepting; a taken port is an error that says so. */
  core::Status listen(const std::string& host, unsigned short port);
  unsigned short port() const { return port_; }
  void stop();

  struct Response {
    unsigned status;
    std::string contentType;
    std::string body;
  };
  /** What a GET of `target` answers (exposed for unit tests). */
  Response handle(const std::string& target) const;

 private:
  void accept();

  boost::asio::io_context& io_;
  core::HealthRegistry& health_;
  core::MetricsRegistry& metrics_;
  std::function<nlohmann::json()> debugPlan_;
  // The listening socket (an Asio acceptor, defined in the .cc: Asio's socket headers stay out of
  // this one).
  struct Acceptor;
  std::unique_ptr<Acceptor> acceptor_;
  unsigned short port_ = 0;
};

}  // namespace okna::agent
