#pragma once
// The `metadata:` section of the agent's configuration. Every key, its default and the Neutron
// option it replaces are listed in metadata/README.md.

#include <chrono>
#include <cstdint>
#include <string>

namespace okna::core {
class YamlField;
}

namespace okna::metadata {

struct NovaConfig {
  // Nova's metadata API (nova_metadata_host / _port / _protocol in Neutron).
  std::string host = "127.0.0.1";
  int port = 8775;
  // "http" or "https".
  std::string protocol = "http";
  // PEM CA bundle to verify Nova (auth_ca_cert); empty = the system store.
  std::string caFile;
  // Skip verification of Nova's certificate (nova_metadata_insecure); logged as a warning.
  bool insecure = false;
  // Client certificate and key for mutual TLS (nova_client_cert / nova_client_priv_key).
  std::string clientCertFile;
  std::string clientKeyFile;
  // TCP (and TLS) connection set-up limit. Nova is on the control plane network: 2 s is long.
  std::chrono::milliseconds connectTimeout{2000};
  // Whole-request limit, connection included. Below cloud-init's own 10 s per-request timeout,
  // so a VM gets our 504 (and retries) instead of timing out itself.
  std::chrono::milliseconds timeout{8000};
};

/** Per-namespace (per-network) limits: one VM, or one network, cannot exhaust the agent. */
struct MetadataLimits {
  // Open client connections per namespace; more are accepted and closed at once (counted).
  std::int64_t maxConnectionsPerNamespace = 64;
  // Request line + headers, in bytes; more -> 431 and the connection is closed.
  std::int64_t maxRequestHeaderBytes = 8192;
  // Request body, in bytes (Nova's largest, the password POST, is 256 bytes); more -> 413.
  std::int64_t maxBodyBytes = 16384;
  // Concurrent requests to Nova per namespace; further requests wait their turn (FIFO).
  std::int64_t maxInFlightPerNamespace = 16;
  // A request is answered within this long of its arrival (its last byte read): one still
  // waiting for a Nova slot (maxInFlightPerNamespace, maxInFlightPerClient) then gets 503, and
  // one sent to Nova gets what is left of it (at most nova.timeout; 504 when it runs out).
  // Below cloud-init's own 10 s per-request timeout, so that a VM gets an answer it retries on.
  std::chrono::milliseconds requestDeadline{9000};
  // From the first byte of a request to its last header byte; also the time a new connection
  // has to send its first byte.
  std::chrono::milliseconds headerTimeout{10000};
  // A keep-alive connection with no request in progress is closed after this.
  std::chrono::milliseconds idleTimeout{60000};
  // Per client of a namespace: the VM port its address belongs to (all of a port's addresses,
  // its IPv6 link-local one included, are one client). cloud-init uses one connection at a time.
  std::int64_t maxConnectionsPerClient = 8;
  std::int64_t maxInFlightPerClient = 4;
  // A project's VMs on one network together hold at most this share of the network's
  // connections and of its requests in flight to Nova (never less than one VM's own): on a
  // shared network the neighbours are other projects, and many VMs of one must leave them room.
  double projectShare = 0.5;
  // Once a namespace holds 3/4 of maxConnectionsPerNamespace, a connection that is doing nothing
  // for Nova (idle, its request still arriving, or its answer unread) is closed after this
  // instead of its usual timeout. At a cap (the VM's, its project's, the namespace's, all of
  // them), the connection there that has done so longest makes room for a new one
  // (metadata/admission.h).
  std::chrono::milliseconds busyIdleTimeout{2000};
  // All namespaces together; 0: the smaller of what the file limit allows
  // (core::connectionBudgetFor, less what the health and admin listeners may hold) and what half
  // the memory budget holds (metadata/memory_budget.h).
  std::int64_t maxConnectionsTotal = 0;
  // Bytes the server may hold for VMs: connections at their largest and the answers being
  // written to them; over it, the connections holding most and reading least are closed.
  // 0: memoryBudgetFraction of the cgroup's memory limit (128 MiB without one).
  std::int64_t memoryBudgetBytes = 0;
  double memoryBudgetFraction = 0.5;
};

struct MetadataConfig {
  // The service runs while the node has the compute or the network role (Neutron serves the
  // external ports bound to a network node); false: never.
  bool enabled = true;
  // File holding Neutron's metadata_proxy_shared_secret (surrounding whitespace is stripped,
  // as oslo.config strips Nova's). Re-read when it changes. Empty: the empty secret (Neutron's
  // default).
  std::string sharedSecretFile;
  NovaConfig nova;
  MetadataLimits limits;
  // Also serve fe80::a9fe:a9fe in each namespace.
  bool ipv6 = true;
  // How often every serving namespace is checked (and repaired) against what it should be: an
  // `ip netns delete` or `ip link delete` behind the agent's back. 0: never.
  std::chrono::milliseconds verifyInterval{60000};
};

/** Parses the `metadata:` section; throws core::ConfigError naming the field. */
MetadataConfig parseMetadataConfig(const core::YamlField& section);

}  // namespace okna::metadata
