// The metadata proxy alone on loopback, for wrk: MetadataServer on 127.0.0.1:<listen> (every
// client is the same instance), Nova at 127.0.0.1:<nova>, on ONE event-loop thread like the
// agent. Runs until SIGINT/SIGTERM. See proxy_loopback.sh and RESULTS-proxy.md.
//
//   okna_metadata_proxy_bench <listen-port> <nova-port> [secret-file] [curl|beast]

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/beast_http_client.h"
#include "core/clock.h"
#include "core/curl_http_client.h"
#include "core/logging.h"
#include "core/metrics.h"
#include "metadata/config.h"
#include "metadata/lookup.h"
#include "metadata/server.h"

namespace {

class EveryoneIsOneVm final : public okna::metadata::PortLookup {
 public:
  okna::metadata::LookupResult lookup(const std::string&, const std::string&) const override {
    return {1, {"lport", "4b1a0cc0-7c2d-4e6a-9a9b-1a2b3c4d5e6f", "project", ""}, ""};
  }
};

int listenOn(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 1024) != 0) {
    std::perror("bind/listen");
    std::exit(1);
  }
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <listen-port> <nova-port> [secret-file] [curl|beast]\n",
                 argv[0]);
    return 2;
  }
  okna::core::LogConfig logConfig;
  logConfig.level = "warn";
  (void)okna::core::setupLogging(logConfig);
  boost::asio::io_context io;
  std::unique_ptr<okna::core::HttpClient> http;
  if (argc > 4 && std::string(argv[4]) == "beast") {
    http = std::make_unique<okna::core::BeastHttpClient>(io, "openkeel-node-agent/bench");
  } else {
    http = std::make_unique<okna::core::CurlHttpClient>(io, "openkeel-node-agent/bench");
  }
  okna::core::MetricsRegistry metrics;
  okna::metadata::MetadataConfig config;
  config.nova.port = std::atoi(argv[2]);
  if (argc > 3) config.sharedSecretFile = argv[3];
  config.limits.maxConnectionsPerNamespace = 1024;
  config.limits.maxInFlightPerNamespace = 1024;
  // wrk's connections all come from 127.0.0.1, one client: without these the per-VM caps (8
  // connections, 4 in flight) would be what c=16 measures, not the proxy.
  config.limits.maxConnectionsPerClient = 1024;
  config.limits.maxInFlightPerClient = 1024;
  EveryoneIsOneVm lookup;
  okna::core::AsioClock clock(io);
  okna::metadata::MetadataServer server(io, clock, *http, config, lookup, metrics);
  if (auto s = server.addListener("bench-network", listenOn(std::atoi(argv[1]))); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.error().message.c_str());
    return 1;
  }
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) {
    server.stop();
    io.stop();
  });
  std::printf("proxy listening on 127.0.0.1:%s -> nova 127.0.0.1:%s\n", argv[1], argv[2]);
  std::fflush(stdout);
  io.run();
  std::printf("%s", metrics.render().c_str());
  return 0;
}
