#pragma once
// The metadata HTTP server: one set of listeners per network (its ovnmeta namespace), all served
// by the agent's event loop. Each request is answered from Nova through core::HttpClient, as
// Neutron's agent answers it (metadata/proxy.h). Beast stays inside server.cc.

#include <cstddef>
#include <memory>
#include <string>

#include "core/result.h"

namespace boost::asio {
class io_context;
}

namespace okna::core {
class Clock;
class HttpClient;
class MetricsRegistry;
}  // namespace okna::core

namespace okna::metadata {

struct MetadataConfig;
class PortLookup;

class MetadataServer {
 public:
  /** Everything passed by reference must outlive the server. Call from the loop thread only. */
  MetadataServer(boost::asio::io_context& io, core::Clock& clock, core::HttpClient& http,
                 const MetadataConfig& config, const PortLookup& ports,
                 core::MetricsRegistry& metrics);
  ~MetadataServer();
  MetadataServer(const MetadataServer&) = delete;
  MetadataServer& operator=(const MetadataServer&) = delete;

  /**
   * Serves an already bound, listening TCP socket (IPv4 or IPv6; made inside the network's
   * namespace) for `networkId`. Takes ownership of the fd, also on failure (it is closed).
   */
  core::Status addListener(const std::string& networkId, int listeningFd);
  /** Closes the network's listeners and connections and cancels its requests to Nova. */
  void removeNetwork(const std::string& networkId);
  std::size_t listenerCount(const std::string& networkId) const;
  /** Open client connections of the network (for tests and /readyz detail). */
  std::size_t connectionCount(const std::string& networkId) const;
  /** Closes everything; the server serves nothing afterwards. */
  void stop();

 private:
  friend class Connection;  // one client connection (server.cc)
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace okna::metadata
