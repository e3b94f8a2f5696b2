#include "metadata/server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/clock.h"
#include "core/drain_aware_socket.h"
#include "core/http_client.h"
#include "core/listener_guard.h"
#include "core/logging.h"
#include "core/loop_thread.h"
#include "core/metrics.h"
#include "core/write_now.h"
#include "metadata/admission.h"
#include "metadata/config.h"
#include "metadata/lookup.h"
#include "metadata/memory_budget.h"
#include "metadata/proxy.h"
#include "metadata/shared_secret.h"
#include "metadata/signature.h"
#include "metadata/wire.h"

namespace okna::metadata {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using TimePoint = core::Clock::TimePoint;
// Sockets bound to the io_context's concrete executor: the default polymorphic executor costs
// copies and type-erased calls on every operation (~5% of the proxy's CPU).
using Executor = asio::io_context::executor_type;
using Socket = asio::basic_stream_socket<tcp, Executor>;
using Acceptor = asio::basic_socket_acceptor<tcp, Executor>;

namespace {

// The client's address as Nova should see it: IPv4-mapped IPv6 shown as IPv4, and no zone
// ("%tap...") on link-local IPv6 (the port index knows addresses, not interfaces).
std::string clientAddress(const tcp::endpoint& peer) {
  asio::ip::address a = peer.address();
  if (a.is_v6()) {
    auto v6 = a.to_v6();
    if (v6.is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, v6).to_string();
    v6.scope_id(0);
    return v6.to_string();
  }
  return a.to_string();
}

}  // namespace

class Connection;

// The kinds of log line a VM can trigger: each is rate-limited per network on its own, so a
// flood of one kind does not hide another (a Nova failure behind a storm of bad requests).
enum class VmLog { Refused, Evicted, Lookup, BadRequest, Nova, Answer, Accept, Count };

struct Listener {
  Listener(asio::io_context& io, std::unique_ptr<Acceptor> a) : acceptor(std::move(a)), retry(io) {}
  std::unique_ptr<Acceptor> acceptor;
  // accept() failing (EMFILE, ENFILE, ENOBUFS) is retried after a growing delay, not at once.
  asio::steady_timer retry;
  unsigned failures = 0;
};

struct Network {
  explicit Network(const Caps& caps) : seats(caps) {
    logs.fill(core::LogThrottle(std::chrono::seconds(2), 10));
  }
  std::string id;
  std::vector<std::unique_ptr<Listener>> listeners;
  // Owns the network's connections; `seats` counts them per VM port and project and holds
  // their Nova slots (metadata/admission.h).
  std::unordered_set<std::shared_ptr<Connection>> connections;
  Seats seats;
  std::array<core::LogThrottle, static_cast<std::size_t>(VmLog::Count)> logs;
  bool removed = false;
};

namespace {

// The label of a scope in the metrics: `client` is one VM (its port), as in the limits' names.
const char* scopeLabel(Scope scope) {
  switch (scope) {
    case Scope::Port:
      return "client";
    case Scope::Project:
      return "project";
    case Scope::Network:
      break;
  }
  return "namespace";
}

}  // namespace

struct MetadataServer::Impl : std::enable_shared_from_this<MetadataServer::Impl> {
  Impl(asio::io_context& ioContext, core::Clock& loopClock, core::HttpClient& httpClient,
       const MetadataConfig& cfg, const PortLookup& portLookup, core::MetricsRegistry& registry)
      : io(ioContext),
        clock(loopClock),
        http(httpClient),
        config(cfg),
        ports(portLookup),
        metrics(registry),
        nova(makeNovaEndpoint(cfg.nova)),
        secret(cfg.sharedSecretFile),
        log(core::logger("metadata")),
        duration(registry.histogram("okna_metadata_request_duration_seconds",
                                    "Time from a complete request to its answer being sent")),
        refusedTotal(refusedCounter(registry, "total")),
        refusedUnknown(refusedCounter(registry, "unknown")),
        evictedTotal(evictedCounter(registry, "total")),
        evictedBusy(evictedCounter(registry, "busy")),
        evictedMemory(evictedCounter(registry, "memory")),
        suppressedLines(registry.counter(
            "okna_metadata_log_lines_suppressed_total",
            "Log lines a VM triggered beyond the per-network rate limit, not written")),
        acceptFailures(registry.counter("okna_metadata_accept_failures_total",
                                        "accept() failures (EMFILE, ENFILE, ...), each retried "
                                        "after a growing delay")),
        caps(Caps::from(cfg.limits)),
        budgetChoice(memoryBudgetFor(cfg.limits, cgroupMemoryLimit())),
        budget(budgetChoice.bytes, connectionCharge(cfg.limits)),
        connectionCap(totalConnectionCap(cfg.limits, budget)),
        maxTotalConnections(connectionCap.connections),
        openConnections(registry.gauge("okna_metadata_open_connections",
                                       "Open client connections, all namespaces")),
        listenersGauge(registry.gauge("okna_metadata_listeners", "Listening sockets")),
        heldGauge(registry.gauge("okna_metadata_memory_held_bytes",
                                 "Bytes charged against the memory budget: every connection at "
                                 "its largest, and the answers held for VMs that have not read "
                                 "them")),
        sweepTimer(ioContext),
        // Timeouts are enforced to within a quarter of the shortest one (at most 250 ms late).
        sweepInterval(std::clamp(std::min({cfg.limits.headerTimeout, cfg.limits.idleTimeout,
                                           cfg.limits.requestDeadline}) /
                                     4,
                                 std::chrono::milliseconds(5), std::chrono::milliseconds(250))) {
    for (const Scope scope : {Scope::Port, Scope::Project, Scope::Network}) {
      const auto i = static_cast<std::size_t>(scope);
      refusedIn[i] = &refusedCounter(registry, scopeLabel(scope));
      evictedIn[i] = &evictedCounter(registry, scopeLabel(scope));
      queuedIn[i] = &queuedCounter(registry, scopeLabel(scope));
    }
    for (const char* reason : {"connect", "timeout", "status", "transport"}) {
      novaErrors[reason] =
          &registry.counter("okna_metadata_nova_errors_total",
                            "Requests Nova did not answer usably, by reason", {{"reason", reason}});
    }
    registry
        .gauge("okna_metadata_memory_budget_bytes",
               "The bytes the metadata server may hold for VMs (metadata.limits.memoryBudgetBytes)")
        .set(static_cast<double>(budget.budget()));
    if (cfg.nova.insecure)
      log->warn("metadata.nova.insecure: Nova's TLS certificate is not verified");
    log->info(
        "metadata memory: at most {} MiB held for VMs ({}), {} KiB charged per connection "
        "besides its answer; connections: {}",
        budget.budget() >> 20, budgetChoice.source, budget.perConnection() >> 10,
        connectionCap.source);
    log->info(
        "metadata connections: at most {} in all, {} per network, {} per project, {} per VM "
        "port; requests to Nova: {} per network, {} per project, {} per VM port",
        maxTotalConnections, caps.connectionsPerNetwork,
        std::min(caps.connectionsPerProject, caps.connectionsPerNetwork), caps.connectionsPerPort,
        caps.inFlightPerNetwork, std::min(caps.inFlightPerProject, caps.inFlightPerNetwork),
        caps.inFlightPerPort);
  }

  static core::Counter& refusedCounter(core::MetricsRegistry& registry, const char* reason) {
    return registry.counter("okna_metadata_connections_refused_total",
                            "Client connections closed at once: from an address of no port of "
                            "the network (unknown), or at a limit where no connection could give "
                            "way (client: one VM port, project, namespace, total: all namespaces)",
                            {{"reason", reason}});
  }

  static core::Counter& evictedCounter(core::MetricsRegistry& registry, const char* reason) {
    return registry.counter("okna_metadata_connections_evicted_total",
                            "Client connections closed to make room: for a new connection at a "
                            "limit (client, project, namespace, total), or doing nothing for Nova "
                            "for busyIdleTimeout on a busy network (busy)",
                            {{"reason", reason}});
  }

  // Requests that waited for a Nova slot, by the limit that held them: a VM over its in-flight
  // cap (one client holding the network's slots, or a benchmark from one address), its
  // project over its share, or the network over its own.
  static core::Counter& queuedCounter(core::MetricsRegistry& registry, const char* limit) {
    return registry.counter("okna_metadata_requests_queued_total",
                            "Requests that waited for a Nova slot, by the limit that held them "
                            "(client: the VM's maxInFlightPerClient, project: its project's "
                            "share, namespace: the network's maxInFlightPerNamespace)",
                            {{"limit", limit}});
  }

  // A line a VM can trigger: at most 10 at once, then one per 2 s per kind and network; the
  // next line written says how many were dropped. Client bytes in it must be escaped
  // (core::escapeForLog) by the caller.
  template <typename... Args>
  void vmLog(Network& net, VmLog kind, spdlog::level::level_enum level,
             fmt::format_string<Args...> format, Args&&... args) {
    if (!log->should_log(level)) return;
    std::uint64_t dropped = 0;
    if (!net.logs[static_cast<std::size_t>(kind)].allow(clock.now(), dropped)) {
      suppressedLines.inc();
      return;
    }
    std::string line = fmt::format(format, std::forward<Args>(args)...);
    if (dropped > 0) line += fmt::format(" ({} similar lines of this network not logged)", dropped);
    log->log(level, "{}", line);
  }

  core::Counter& requests(unsigned status) {
    auto it = requestsByCode.find(status);
    if (it != requestsByCode.end()) return *it->second;
    core::Counter& c =
        metrics.counter("okna_metadata_requests_total", "Metadata requests answered, by status",
                        {{"code", std::to_string(status)}});
    requestsByCode.emplace(status, &c);
    return c;
  }

  // The signature of an instance id under the current secret. HMAC through OpenSSL 3's EVP
  // (algorithm fetch, context, locks) was a tenth of the proxy's CPU; a VM asks dozens of times
  // with the same id, so signatures are kept until the secret changes (bounded).
  const std::string& signatureFor(std::string_view secretValue, const std::string& instanceId) {
    if (signatureGeneration != secret.loads()) {
      signatures.clear();
      signatureGeneration = secret.loads();
    }
    auto it = signatures.find(instanceId);
    if (it != signatures.end()) return it->second;
    if (signatures.size() >= 4096) signatures.clear();
    return signatures.emplace(instanceId, signInstanceId(secretValue, instanceId)).first->second;
  }

  void accept(const std::shared_ptr<Network>& net, Listener& listener);
  void onAccepted(const std::shared_ptr<Network>& net, Socket socket);
  // The newcomer's narrowest full scope (its port, its project, its network, all networks)
  // gives up the connection there that has done least. False when none can (every one is with
  // Nova): the newcomer is refused.
  bool makeRoom(Network& net, const std::string& port, const std::string& project,
                const std::string& client);
  // Across all networks: the connection doing nothing for Nova for the longest time.
  Occupant* leastDoneAnywhere() const;
  // Over the memory budget, closes the connections holding most and reading least first.
  void enforceBudget();
  void ensureSweep();
  void sweep();
  void closeNetwork(Network& net);

  asio::io_context& io;
  // Deadlines, idle times and request durations (the agent's core::AsioClock).
  core::Clock& clock;
  core::HttpClient& http;
  const MetadataConfig& config;
  const PortLookup& ports;
  core::MetricsRegistry& metrics;
  NovaEndpoint nova;
  SharedSecret secret;
  std::shared_ptr<spdlog::logger> log;
  core::Histogram& duration;
  core::Counter& refusedTotal;
  core::Counter& refusedUnknown;
  core::Counter& evictedTotal;
  core::Counter& evictedBusy;
  core::Counter& evictedMemory;
  core::Counter& suppressedLines;
  core::Counter& acceptFailures;
  // By scope (Scope's order): refused at accept, closed to make room, requests that waited.
  std::array<core::Counter*, 3> refusedIn{};
  std::array<core::Counter*, 3> evictedIn{};
  std::array<core::Counter*, 3> queuedIn{};
  const Caps caps;
  const BudgetChoice budgetChoice;
  MemoryBudget budget;
  const ConnectionCap connectionCap;
  const std::size_t maxTotalConnections;
  std::size_t totalConnections = 0;
  core::Gauge& openConnections;
  core::Gauge& listenersGauge;
  core::Gauge& heldGauge;
  std::unordered_map<std::string, core::Counter*> novaErrors;
  std::unordered_map<unsigned, core::Counter*> requestsByCode;
  std::unordered_map<std::string, std::string> signatures;
  int signatureGeneration = -1;
  std::unordered_map<std::string, std::shared_ptr<Network>> networks;
  asio::steady_timer sweepTimer;
  std::chrono::milliseconds sweepInterval;
  // A request with less than this left of its deadline is answered 503 rather than sent to Nova:
  // 250 ms (a quarter of the deadline when that is shorter).
  std::chrono::milliseconds minNovaBudget = std::min<std::chrono::milliseconds>(
      std::chrono::milliseconds(250), config.limits.requestDeadline / 4);
  bool sweeping = false;
  bool stopped = false;
};

// One client connection: read a request, answer it (from Nova or locally), repeat while
// keep-alive. One request at a time, so pipelined requests are answered in order.
class Connection : public Occupant, public std::enable_shared_from_this<Connection> {
 public:
  TimePoint deadline() const { return deadline_; }
  bool closed() const { return closed_; }
  const std::string& clientIp() const { return clientIp_; }

  Connection(std::shared_ptr<MetadataServer::Impl> server, std::shared_ptr<Network> net,
             Socket socket, std::string clientIp)
      : server_(std::move(server)),
        net_(std::move(net)),
        socket_(std::move(socket)),
        clientIp_(std::move(clientIp)) {
    const auto& limits = server_->config.limits;
    // Room for a whole request: headers, body, and a pipelined request's start.
    buffer_.max_size(static_cast<std::size_t>(limits.maxRequestHeaderBytes + limits.maxBodyBytes) +
                     4096);
  }

  /** Once seated (Impl::onAccepted). */
  void start() {
    server_->openConnections.add(1);
    ++server_->totalConnections;
    deadline_ = server_->clock.now() + server_->config.limits.headerTimeout;
    server_->ensureSweep();
    waitForRequest();
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ignored;
    socket_.shutdown(Socket::shutdown_both, ignored);
    socket_.close(ignored);
    if (upstream_) {
      upstream_->cancel();
      upstream_.reset();
    }
    server_->openConnections.add(-1);
    --server_->totalConnections;
    server_->budget.drop(*this);
    server_->budget.closed();
    server_->heldGauge.set(static_cast<double>(server_->budget.held()));
    auto self = shared_from_this();
    // Its Nova slots go to the next requests, its place in a queue is left.
    net_->seats.unseat(*this);
    net_->connections.erase(self);
  }

  Network& network() const { return *net_; }

  /** Its deadline passed while it waited for a slot: 503 (Impl::sweep). */
  void expireInQueue() {
    if (!queued() || closed_) return;
    net_->seats.release(*this);
    deadline_ = server_->clock.now() + std::chrono::hours(24);
    answerLate();
  }

  /** Its request waits for a Nova slot until its deadline (the sweep answers 503 then). */
  void waitsAt(Scope scope) override {
    deadline_ = answerBy_;
    server_->queuedIn[static_cast<std::size_t>(scope)]->inc();
    server_->ensureSweep();
  }

  /** Its request holds its Nova slots; false when it cannot use them: too little is left of
   *  its deadline for Nova to answer (Impl::minNovaBudget; it is answered 503, and a hung Nova
   *  gets no more requests doomed to time out). */
  bool proceed() override {
    // A network being removed sends nothing more; its connections are being closed.
    if (closed_ || net_->removed) return false;
    deadline_ = server_->clock.now() + std::chrono::hours(24);
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(answerBy_ - server_->clock.now());
    if (left < server_->minNovaBudget) {
      // From the loop: answering may close this connection, which must not happen while the
      // slots are being handed on (Occupant::proceed).
      asio::post(server_->io, [self = shared_from_this()] {
        if (!self->closed_) self->answerLate();
      });
      return false;
    }
    // Nova gets what is left of the deadline: the VM is answered (504) before it gives up.
    novaRequest_.totalTimeout = std::min(novaRequest_.totalTimeout, left);
    novaRequest_.connectTimeout = std::min(novaRequest_.connectTimeout, left);
    core::HttpCallbacks callbacks;
    callbacks.onDone = [weak = weak_from_this()](core::Result<core::HttpResponse> result) {
      if (auto self = weak.lock()) self->onNova(std::move(result));
    };
    upstream_ = server_->http.send(std::move(novaRequest_), std::move(callbacks));
    return true;
  }

 private:
  // Deadlines are checked by the server's sweep (one timer for all connections), so moving
  // one is a store: no timer queue operation, no timerfd_settime, per request.
  void setDeadline(std::chrono::milliseconds fromNow) {
    deadline_ = server_->clock.now() + fromNow;
  }

  void waitForRequest() {
    if (buffer_.size() > 0) {
      readHeader();
      return;
    }
    // Idle until the next request's first byte (the first request gets the header timeout). The
    // client sends it only after reading this answer: wait for it without a recv that would
    // fail first (core::DrainAwareSocket).
    socket_.asyncReadSome(
        buffer_.prepare(std::min<std::size_t>(4096, buffer_.max_size())),
        [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
          if (self->closed_) return;
          if (ec) return self->close();
          self->buffer_.commit(n);
          self->readHeader();
        });
  }

  void readHeader() {
    const auto& limits = server_->config.limits;
    setDeadline(limits.headerTimeout);
    parser_.emplace(request_);
    parser_->limitHeader(static_cast<std::uint32_t>(limits.maxRequestHeaderBytes));
    parser_->body_limit(static_cast<std::uint64_t>(limits.maxBodyBytes));
    // Fast path: a small request usually arrived whole; parse it here instead of going through
    // an async read that would only complete on the next loop turn.
    while (buffer_.size() > 0 && !parser_->is_done()) {
      boost::system::error_code ec;
      const std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more) break;
      if (ec) return onReadError(ec);
      if (used == 0) break;
    }
    if (parser_->is_done()) return handleRequest();
    if (parser_->is_header_done()) return afterHeader();
    http::async_read_header(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
          if (self->closed_) return;
          if (ec) return self->onReadError(ec);
          self->afterHeader();
        });
  }

  void afterHeader() {
    if (parser_->is_done()) return handleRequest();
    if (request_.expectContinue) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(
          socket_, asio::buffer(kContinue.data(), kContinue.size()),
          [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
            if (self->closed_) return;
            if (ec) return self->close();
            self->readBody();
          });
      return;
    }
    readBody();
  }

  void readBody() {
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
                       if (self->closed_) return;
                       if (ec) return self->onReadError(ec);
                       self->handleRequest();
                     });
  }

  void onReadError(const boost::system::error_code& ec) {
    // A clean end between requests, or a peer gone: nothing to answer.
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
        ec == http::error::partial_message) {
      return close();
    }
    unsigned status = 400;
    if (ec == http::error::header_limit) status = 431;
    if (ec == http::error::body_limit) status = 413;
    if (ec == http::error::buffer_overflow) status = 431;
    if (request_.framingError != 0) status = request_.framingError;
    server_->vmLog(*net_, VmLog::BadRequest, spdlog::level::info,
                   "network {} client {}: bad request ({}), answering {} and closing", net_->id,
                   clientIp_, ec.message(), status);
    started_ = server_->clock.now();
    respond(errorResponse(status), 11, false, {}, {});
  }

  // No Nova slot came within the request's deadline: 503, so that the VM retries while it
  // still waits (cloud-init gives up after 10 s), never a late answer.
  void answerLate() {
    const auto& limits = server_->config.limits;
    server_->vmLog(*net_, VmLog::Nova, spdlog::level::warn,
                   "network {} instance {} client {} {}: no Nova slot within the {} ms deadline "
                   "(metadata.limits.requestDeadlineSeconds; {} requests per network, {} per "
                   "project, {} per VM in flight), answering 503",
                   net_->id, instanceId_, clientIp_, core::escapeForLog(path_),
                   limits.requestDeadline.count(), server_->caps.inFlightPerNetwork,
                   std::min(server_->caps.inFlightPerProject, server_->caps.inFlightPerNetwork),
                   server_->caps.inFlightPerPort);
    respond(errorResponse(503), version_, keepAlive_, instanceId_, path_);
  }

  void handleRequest() {
    started_ = server_->clock.now();
    answerBy_ = started_ + server_->config.limits.requestDeadline;
    // Nova may take its time; the HttpClient's timeout bounds it, not ours.
    deadline_ = server_->clock.now() + std::chrono::hours(24);
    const int version = request_.version;
    const bool keepAlive = parser_->keep_alive();
    if (!toOriginForm(request_.target) || !isOriginForm(request_.target))
      return respond(errorResponse(400), version, false, {}, request_.target);
    const std::string_view target = request_.target;

    const LookupResult found = server_->ports.lookup(net_->id, clientIp_);
    if (found.matches != 1) {
      server_->vmLog(*net_, VmLog::Lookup, spdlog::level::err, "{}",
                     lookupFailureMessage(net_->id, clientIp_, found));
      return respond(errorResponse(404), version, keepAlive, {}, target);
    }
    if (!found.port.problem.empty()) {
      // A Southbound value failed its check (metadata/sb_values.h): nothing of it reaches Nova.
      server_->vmLog(*net_, VmLog::Lookup, spdlog::level::warn,
                     "network {} client {}: port {} is not served: {}", net_->id, clientIp_,
                     core::escapeForLog(found.port.logicalPort), found.port.problem);
      return respond(errorResponse(404), version, keepAlive, {}, target);
    }
    if (found.port.deviceId.empty()) {
      // A port of no instance: Neutron answers 404 without asking Nova.
      server_->vmLog(*net_, VmLog::Lookup, spdlog::level::info,
                     "network {} client {}: port {} has no neutron:device_id", net_->id, clientIp_,
                     core::escapeForLog(found.port.logicalPort));
      return respond(errorResponse(404), version, keepAlive, {}, target);
    }
    auto secret = server_->secret.get(started_);
    if (!secret.ok()) {
      // Already logged (once) by SharedSecret; signing with a wrong secret would only get 403s.
      return respond(errorResponse(500), version, keepAlive, found.port.deviceId, target);
    }
    const std::string_view method = request_.method;
    instanceId_.assign(found.port.deviceId);
    path_.assign(target.substr(0, target.find('?')));
    version_ = version;
    keepAlive_ = keepAlive;
    novaRequest_ =
        buildNovaRequest(server_->nova, method, target, std::move(request_.body), clientIp_,
                         found.port, server_->signatureFor(*secret, instanceId_));
    parser_.reset();
    setActivity(Activity::Asking, started_);
    net_->seats.admit(*this);
  }

  void onNova(core::Result<core::HttpResponse> result) {
    upstream_.reset();
    net_->seats.release(*this);
    ProxyResponse response = mapNovaResponse(std::move(result));
    if (response.failure != NovaFailure::None) {
      server_->novaErrors[novaFailureLabel(response.failure)]->inc();
      server_->vmLog(*net_, VmLog::Nova, spdlog::level::warn,
                     "network {} instance {} client {} {}: {}", net_->id, instanceId_, clientIp_,
                     core::escapeForLog(path_), response.warning);
    }
    respond(std::move(response), version_, keepAlive_, instanceId_, path_);
  }

  void respond(ProxyResponse response, int version, bool keepAlive, std::string_view instanceId,
               std::string_view target) {
    const unsigned status = response.status;
    const TimePoint now = server_->clock.now();
    const double seconds = std::chrono::duration<double>(now - started_).count();
    server_->duration.observe(seconds);
    server_->requests(status).inc();
    const auto path = target.substr(0, target.find('?'));
    // Successes at debug (a VM boot makes dozens), everything else at info, rate-limited. The
    // path is the VM's bytes: escaped.
    if (status == 200) {
      if (server_->log->should_log(spdlog::level::debug))
        server_->log->debug("network {} instance {} client {} {} -> {} in {:.1f} ms", net_->id,
                            instanceId, clientIp_, core::escapeForLog(path), status,
                            seconds * 1000.0);
    } else {
      server_->vmLog(*net_, VmLog::Answer, spdlog::level::info,
                     "network {} instance {} client {} {} -> {} in {:.1f} ms", net_->id,
                     instanceId.empty() ? "-" : instanceId, clientIp_, core::escapeForLog(path),
                     status, seconds * 1000.0);
    }
    parser_.reset();
    formatResponseHead(head_, status, version, keepAlive, response.contentType,
                       response.body.size());
    // An answer to HEAD has the length of the body it does not carry (RFC 9110 9.3.2).
    if (request_.method == "HEAD") response.body.clear();
    responseBody_ = std::move(response.body);
    closeAfterWrite_ = !keepAlive;
    // A VM that does not read its answer is cut off like an idle one.
    deadline_ = now + server_->config.limits.idleTimeout;
    const std::array<asio::const_buffer, 2> answer{asio::buffer(head_),
                                                   asio::buffer(responseBody_)};
    // Usually the whole answer fits the socket's buffer: write it now and go on in this
    // handler (see core::writeNow); only a slow reader is waited for.
    boost::system::error_code ec;
    const std::size_t written = core::writeNow(socket_, answer, ec);
    if (ec) return close();
    if (written == asio::buffer_size(answer)) return afterAnswer(now);
    holdAnswer(written);
    if (!closed_) writeRest();
  }

  // The VM has not taken all of its answer: until it has, the answer is charged against the
  // memory budget (which may close this very connection) and it does nothing for Nova
  // (Impl::makeRoom, Impl::sweep).
  void holdAnswer(std::size_t written) {
    const auto now = server_->clock.now();
    setActivity(Activity::Answering, now);
    written_ = written;
    server_->budget.hold(*this, head_.capacity() + responseBody_.capacity(),
                         head_.size() + responseBody_.size(), written, now);
    server_->enforceBudget();
  }

  // Writes the rest of the answer as the VM takes it, counting what it took (the budget closes
  // first those that read least).
  void writeRest() {
    const std::array<asio::const_buffer, 2> answer{asio::buffer(head_),
                                                   asio::buffer(responseBody_)};
    beast::buffers_suffix<std::array<asio::const_buffer, 2>> rest(answer);
    rest.consume(written_);
    socket_.async_write_some(
        rest, [self = shared_from_this()](const boost::system::error_code& e, std::size_t n) {
          if (self->closed_) return;
          if (e) return self->close();
          self->written_ += n;
          if (self->written_ == self->head_.size() + self->responseBody_.size())
            return self->afterAnswer(self->server_->clock.now());
          MemoryBudget::progress(*self, self->written_);
          self->writeRest();
        });
  }

  // `now`: when the VM took the answer's last byte.
  void afterAnswer(TimePoint now) {
    if (MemoryBudget::heldBy(*this) > 0) {
      server_->budget.drop(*this);
      server_->heldGauge.set(static_cast<double>(server_->budget.held()));
    }
    // A large answer's buffer is not kept for the next one: a connection at rest holds little.
    if (responseBody_.capacity() > kKeptAnswerBytes) std::string().swap(responseBody_);
    if (closeAfterWrite_) return close();
    setActivity(Activity::Waiting, now);
    deadline_ = now + server_->config.limits.idleTimeout;
    if (buffer_.size() == 0) return waitForRequest();
    // A pipelined request is already here: answer it from the loop, so that a client that sends
    // many at once does not grow this stack (an answer written at once comes back here).
    asio::post(server_->io, [self = shared_from_this()] {
      if (!self->closed_) self->waitForRequest();
    });
  }

  std::shared_ptr<MetadataServer::Impl> server_;
  std::shared_ptr<Network> net_;
  core::DrainAwareSocket socket_;
  TimePoint deadline_{};
  std::string clientIp_;
  beast::flat_buffer buffer_;
  // The request being read and the answer being written; the strings keep their capacity
  // from one request to the next.
  RequestData request_;
  std::optional<RequestReader> parser_;
  std::string head_;
  std::string responseBody_;
  // Bytes of head_ + responseBody_ the socket has taken.
  std::size_t written_ = 0;
  core::HttpRequest novaRequest_;
  core::HttpRequestHandlePtr upstream_;
  // The request being answered (for the log line after Nova's answer).
  std::string instanceId_;
  std::string path_;
  int version_ = 11;
  bool keepAlive_ = true;
  bool closeAfterWrite_ = false;
  // When the request must be answered: its arrival + limits.requestDeadline.
  TimePoint answerBy_{};
  bool closed_ = false;
  TimePoint started_{};
};

void MetadataServer::Impl::ensureSweep() {
  if (sweeping || stopped) return;
  sweeping = true;
  sweepTimer.expires_after(sweepInterval);
  sweepTimer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    self->sweeping = false;
    if (ec || self->stopped) return;
    self->sweep();
  });
}

void MetadataServer::Impl::sweep() {
  const auto now = clock.now();
  // A connection due: `busy` when closed for doing nothing on a busy network.
  struct Due {
    std::string network;
    std::shared_ptr<Connection> connection;
    bool busy;
  };
  std::vector<Due> due;
  bool any = false;
  for (const auto& [id, net] : networks) {
    // Near its cap, a network's connections doing nothing for Nova (idle, a request still
    // arriving, an answer unread) give way sooner: one tenant's connections must not keep its
    // neighbours out.
    const bool busy = net->seats.busy();
    for (const auto& c : net->connections) {
      any = true;
      const bool overstayed = busy && overstays(*c, now, config.limits.busyIdleTimeout);
      if (c->deadline() <= now || overstayed) due.push_back({id, c, overstayed});
    }
  }
  for (const auto& [id, c, busy] : due) {
    // A request still waiting for a Nova slot at its deadline is answered; anything else that
    // is due (header, idle, write timeouts, or doing nothing on a busy network) is cut, unless
    // what an earlier one did changed that (a request handed a slot by an expired one, a
    // connection closed over the memory budget by an expired one's answer).
    if (c->closed()) continue;
    if (c->queued()) {
      c->expireInQueue();
      continue;
    }
    if (c->deadline() > now && !(busy && overstays(*c, now, config.limits.busyIdleTimeout)))
      continue;
    if (busy) evictedBusy.inc();
    log->debug("network {} client {}: connection {}, closing", id, c->clientIp(),
               busy ? "doing nothing on a busy network" : "timed out");
    c->close();
  }
  // Runs only while there are connections: an idle agent is not woken.
  if (any) ensureSweep();
}

void MetadataServer::Impl::accept(const std::shared_ptr<Network>& net, Listener& listener) {
  listener.acceptor->async_accept([self = shared_from_this(), net, &listener](
                                      const boost::system::error_code& ec, Socket socket) {
    if (net->removed || self->stopped || ec == asio::error::operation_aborted) return;
    if (ec) {
      // EMFILE and the like leave the connection in the backlog: accepting again at once would
      // fail again at once, forever. Back off, and say so at a bounded rate.
      const auto delay = core::acceptRetryDelay(++listener.failures);
      self->acceptFailures.inc();
      self->vmLog(*net, VmLog::Accept, spdlog::level::warn,
                  "network {}: accept failed: {}; retrying in {} ms", net->id, ec.message(),
                  delay.count());
      listener.retry.expires_after(delay);
      listener.retry.async_wait([self, net, &listener](const boost::system::error_code& e) {
        if (!e && !net->removed && !self->stopped) self->accept(net, listener);
      });
      return;
    }
    listener.failures = 0;
    self->onAccepted(net, std::move(socket));
    self->accept(net, listener);
  });
}

void MetadataServer::Impl::onAccepted(const std::shared_ptr<Network>& net, Socket socket) {
  boost::system::error_code ec;
  const auto peer = socket.remote_endpoint(ec);
  if (ec) return;
  std::string client = clientAddress(peer);
  // Who the client is decides its share: its port (whichever of the port's addresses it uses)
  // and the port's project. An address of no port here is not served at all.
  const LookupResult found = ports.lookup(net->id, client);
  if (found.matches != 1) {
    refusedUnknown.inc();
    vmLog(*net, VmLog::Lookup, spdlog::level::err, "{}; closing the connection",
          lookupFailureMessage(net->id, client, found));
    socket.close(ec);
    return;
  }
  const std::string port(found.port.logicalPort);
  const std::string project(found.port.projectId);
  if (!makeRoom(*net, port, project, client)) {
    socket.close(ec);
    return;
  }
  socket.set_option(tcp::no_delay(true), ec);
  // Answers are written at once where they fit (core::writeNow).
  socket.non_blocking(true, ec);
  auto conn =
      std::make_shared<Connection>(shared_from_this(), net, std::move(socket), std::move(client));
  net->connections.insert(conn);
  net->seats.seat(*conn, port, project, clock.now());
  budget.opened();
  conn->start();
  enforceBudget();
}

bool MetadataServer::Impl::makeRoom(Network& net, const std::string& port,
                                    const std::string& project, const std::string& client) {
  const std::optional<Scope> scope = net.seats.full(port, project);
  if (!scope && totalConnections < maxTotalConnections) return true;
  Occupant* victim = scope ? net.seats.leastDone(*scope, port, project) : leastDoneAnywhere();
  const char* limit = scope ? scopeLabel(*scope) : "total";
  if (victim == nullptr) {
    // Accepted and closed at once: a flood shows in the metrics, not as a SYN backlog.
    (scope ? *refusedIn[static_cast<std::size_t>(*scope)] : refusedTotal).inc();
    vmLog(net, VmLog::Refused, spdlog::level::info,
          "network {} client {}: {} connection limit reached and every connection there is "
          "with Nova, closing a new connection",
          net.id, client, limit);
    return false;
  }
  (scope ? *evictedIn[static_cast<std::size_t>(*scope)] : evictedTotal).inc();
  auto& loser = static_cast<Connection&>(*victim);
  const auto quiet =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock.now() - victim->since());
  vmLog(net, VmLog::Evicted, spdlog::level::info,
        "network {} client {}: {} connection limit reached, closing a connection of client {} "
        "that did nothing for Nova for {} ms to make room",
        net.id, client, limit, loser.clientIp(), quiet.count());
  loser.close();
  return true;
}

void MetadataServer::Impl::enforceBudget() {
  while (budget.over()) {
    Occupant* costliest = budget.costliest(clock.now());
    if (costliest == nullptr) break;
    auto& c = static_cast<Connection&>(*costliest);
    evictedMemory.inc();
    vmLog(c.network(), VmLog::Evicted, spdlog::level::warn,
          "network {} client {}: {} bytes held for VMs, over the memory budget of {} "
          "(metadata.limits.memoryBudgetBytes); closing the connection holding {} bytes of an "
          "answer its VM has taken {} bytes of",
          c.network().id, c.clientIp(), budget.held(), budget.budget(), MemoryBudget::heldBy(c),
          MemoryBudget::takenOf(c));
    c.close();
  }
  heldGauge.set(static_cast<double>(budget.held()));
}

Occupant* MetadataServer::Impl::leastDoneAnywhere() const {
  static const std::string kAny;
  Occupant* best = nullptr;
  for (const auto& [id, net] : networks) {
    Occupant* o = net->seats.leastDone(Scope::Network, kAny, kAny);
    if (o != nullptr && (best == nullptr || o->since() < best->since())) best = o;
  }
  return best;
}

void MetadataServer::Impl::closeNetwork(Network& net) {
  net.removed = true;
  for (auto& listener : net.listeners) {
    boost::system::error_code ignored;
    listener->retry.cancel();
    listener->acceptor->close(ignored);
  }
  listenersGauge.add(-static_cast<double>(net.listeners.size()));
  net.listeners.clear();
  auto connections = net.connections;
  for (const auto& c : connections) c->close();
}

MetadataServer::MetadataServer(asio::io_context& io, core::Clock& clock, core::HttpClient& http,
                               const MetadataConfig& config, const PortLookup& ports,
                               core::MetricsRegistry& metrics)
    : impl_(std::make_shared<Impl>(io, clock, http, config, ports, metrics)) {}

MetadataServer::~MetadataServer() {
  stop();
}

core::Status MetadataServer::addListener(const std::string& networkId, int fd) {
  OKNA_ASSERT_ON_LOOP();
  const auto fail = [&](const std::string& why) {
    ::close(fd);
    return core::makeError("metadata listener for network " + networkId + ": " + why);
  };
  if (impl_->stopped) return fail("the server is stopped");
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    return fail(std::string("not a socket: ") + std::strerror(errno));
  int listening = 0;
  socklen_t optionLength = sizeof listening;
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optionLength) != 0 || !listening)
    return fail("the socket is not listening");
  if (address.ss_family != AF_INET && address.ss_family != AF_INET6)
    return fail("not an IPv4 or IPv6 socket");
  // Its connections' kernel queues count against the memory budget: bound them.
  if (auto bounded = boundSocketBuffers(fd); !bounded.ok())
    return fail("cannot bound its buffers: " + bounded.error().message);

  auto& net = impl_->networks[networkId];
  if (!net) {
    net = std::make_shared<Network>(impl_->caps);
    net->id = networkId;
  }
  auto acceptor = std::make_unique<Acceptor>(impl_->io.get_executor());
  boost::system::error_code ec;
  acceptor->assign(address.ss_family == AF_INET ? tcp::v4() : tcp::v6(), fd, ec);
  if (ec) return fail("cannot adopt the socket: " + ec.message());
  acceptor->non_blocking(true, ec);
  auto listener = std::make_unique<Listener>(impl_->io, std::move(acceptor));
  Listener& ref = *listener;
  net->listeners.push_back(std::move(listener));
  impl_->listenersGauge.add(1);
  impl_->accept(net, ref);
  return {};
}

void MetadataServer::removeNetwork(const std::string& networkId) {
  OKNA_ASSERT_ON_LOOP();
  auto it = impl_->networks.find(networkId);
  if (it == impl_->networks.end()) return;
  auto net = it->second;
  impl_->networks.erase(it);
  impl_->closeNetwork(*net);
}

std::size_t MetadataServer::listenerCount(const std::string& networkId) const {
  auto it = impl_->networks.find(networkId);
  return it == impl_->networks.end() ? 0 : it->second->listeners.size();
}

std::size_t MetadataServer::connectionCount(const std::string& networkId) const {
  auto it = impl_->networks.find(networkId);
  return it == impl_->networks.end() ? 0 : it->second->connections.size();
}

void MetadataServer::stop() {
  OKNA_ASSERT_ON_LOOP();
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  impl_->sweepTimer.cancel();
  auto networks = std::move(impl_->networks);
  impl_->networks.clear();
  for (auto& [id, net] : networks) impl_->closeNetwork(*net);
}

}  // namespace okna::metadata
