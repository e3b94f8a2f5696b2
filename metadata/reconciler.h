#pragma once
// Keeps one ovnmeta namespace, its veth, addresses, OVS port and listener per network that the
// planner (planner.h) says needs metadata on this chassis. Runs on the agent's loop; the blocking
// plumbing (netlink, setns, bind inside a namespace) runs on a worker thread and its results come
// back by posting to the loop.
//
// Per network: ensure the namespace (an existing correct one is adopted with no change, so a
// restarted agent causes no outage), open the listeners inside it (SO_REUSEPORT: a new process
// binds while the old one still serves), hand them to the HTTP server, then plug the host veth
// into the integration bridge (through the IDL thread). A network that no longer needs metadata
// loses its listeners, its OVS port and its namespace. Nothing is torn down while the Southbound
// view is not synced; on the first synced view (start-up, and again after each SB reconnect)
// every ovnmeta-* namespace the plan does not want is removed. "No longer needs" is proven, not
// inferred from the Southbound's silence: each plan is made from the view, the previous plan
// and the VM interfaces on br-int (planner.h, LocalEvidence), so a network whose VM ports the
// Southbound lost while their interfaces are still on br-int is kept, and served as before.
//
// Readiness component "metadata": the view synced, nothing the Southbound lost is still on
// br-int, and every planned network serving.
// Metrics: okna_metadata_namespaces{state=wanted|ready}, okna_metadata_plumbing_total{op,result}.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/keyed_retry.h"
#include "core/result.h"
#include "core/shared_value.h"
#include "metadata/metadata_ports.h"
#include "metadata/namespace_decision.h"
#include "metadata/planner.h"

namespace okna::core {
class HealthRegistry;
class MetricsRegistry;
}  // namespace okna::core

namespace okna::metadata {

/** The blocking host side, called on the worker thread only. */
class Plumbing {
 public:
  virtual ~Plumbing() = default;
  struct Ensured {
    // What was changed, for the log ("" = an existing correct namespace was adopted as is).
    std::string changes;
    // The namespace or its veth was (re-)created: listeners opened before are dead.
    bool namespaceCreated = false;
    // Non-empty: the kernel has IPv6 off (ipv6.disable=1, disable_ipv6) and refused
    // fe80::a9fe:a9fe; the namespace serves IPv4 only and no IPv6 listener is opened.
    std::string ipv6Unavailable;
  };
  /** Namespace, veth pair, MAC, addresses, offloads. */
  virtual core::Result<Ensured> ensure(const NetworkPlan& network) = 0;
  /**
   * Called (on the worker, before their ensure()) with the networks of one reconcile pass that
   * have no listener yet, when there are several: may do at once the host-visible part of
   * their set-up (see netns::NamespaceApplier::prepare). Best effort; ensure() stays the judge
   * and reports what was created, here or there.
   */
  virtual void prepare(const std::vector<std::shared_ptr<const NetworkPlan>>& networks) {
    (void)networks;
  }
  virtual core::Status remove(const std::string& namespaceName) = 0;
  /** The ovnmeta-* namespaces on the host. */
  virtual core::Result<std::vector<std::string>> list() = 0;
  /** A listening TCP socket on address:port inside the network's namespace. */
  virtual core::Result<int> listen(const NetworkPlan& network, const std::string& address,
                                   int port) = 0;
};

/** The HTTP side, on the loop. */
class Listeners {
 public:
  virtual ~Listeners() = default;
  virtual core::Status addListener(const std::string& networkId, int fd) = 0;
  virtual void removeNetwork(const std::string& networkId) = 0;
};

struct ReconcilerOptions {
  bool ipv6 = true;
  int port = 80;
  std::chrono::milliseconds retryMin{500};
  std::chrono::milliseconds retryMax{30000};
  // Every serving network is re-ensured this often (0: never), so that a namespace or veth
  // deleted behind the agent's back is rebuilt rather than reported ready while dead.
  std::chrono::milliseconds verifyInterval{60000};
  // While networks come up in a burst (a cold start with hundreds), the wanted OVS ports and
  // the readiness detail are handed on at most this often; the first change after a quiet
  // period goes at once, so one new network is not delayed. Each hand-over is O(networks) and
  // each OVS transaction makes ovs-vswitchd and ovn-controller walk every port. 0: every time.
  std::chrono::milliseconds outputInterval{25};
  // The wanted OVS ports' window doubles after each hand-over that had to wait for it (a
  // burst), up to this, and is back at outputInterval after one that did not. Every OVS transaction
  // on the integration bridge costs ovs-vswitchd and ovn-controller work in proportion to all its
  // ports: during a cold start with 1,000 namespaces they burnt far more CPU than the agent, one
  // transaction per 25 ms. Fewer, larger transactions: ~40 in a 20 s burst instead of ~800.
  std::chrono::milliseconds outputIntervalMax{500};
  // Once at least this many networks were set up and every wanted network serves, the burst
  // has settled and onSettled is called (the agent returns the burst's freed heap to the
  // system). 0: never.
  std::size_t settledAfter = 64;
};

class Reconciler {
  using TimePoint = core::Clock::TimePoint;

 public:
  /** Runs a job on the worker thread (in order). */
  using RunOnWorker = std::function<void(std::function<void()>)>;
  /** Hands the wanted metadata ports to the IDL thread (shared: the reconciler keeps them). */
  using SubmitOvs = std::function<void(std::shared_ptr<const ovsdb::DesiredMetadataOvs>)>;

  Reconciler(boost::asio::io_context& io, core::Clock& clock, ReconcilerOptions options,
             Plumbing& plumbing, RunOnWorker runOnWorker, Listeners& listeners, SubmitOvs submitOvs,
             core::MetricsRegistry& metrics, core::HealthRegistry& health);
  ~Reconciler();
  Reconciler(const Reconciler&) = delete;
  Reconciler& operator=(const Reconciler&) = delete;

  /** Active with the compute or network role (and metadata.enabled). Inactive, no namespace is
   * created, but the existing ones keep serving until their network has no VM bound here any more:
   *  losing the role (or a typo in the label) never cuts metadata from running VMs. */
  void setActive(bool active);
  bool active() const { return active_; }
  /** Whether the Southbound metadata rows are still needed (active, or namespaces remain). */
  bool wantsSouthbound() const { return active_ || !networks_.empty(); }
  /** For good: no role of the node serves metadata any more and the agent leaves it (agent/
   *  departure.h, --cleanup). Every ovnmeta-* namespace on the host and every port the agent
   *  marked on the integration bridge goes, with the Southbound synced or not. */
  void retire();
  bool retired() const { return retired_; }
  /** Retired, the host listed since, and every namespace removed. */
  bool retirementDone() const { return retired_ && retireListed_ && networks_.empty(); }
  /** Why IPv6 metadata is not served (the kernel has IPv6 off); "" while it is or was never tried.
   */
  const std::string& ipv6Unavailable() const { return ipv6UnavailableReported_; }
  /** A new Southbound view, the integration bridge name, the ports now on that bridge in the
   *  database and those of them ovs-vswitchd has created (ofport set; from the IDL thread's
   *  snapshot; shared, so that an unchanged set costs no comparison). A network serves once
   *  its port is created: in the database alone, no packet reaches it yet (during a cold start
   *  with 1,000 networks ovs-vswitchd creates the ports seconds after they are written). */
  /** `vmIfaceIds`: the iface-ids of the VM interfaces on that bridge
   *  (ovsdb::vmIfaceIdsOf), what the planner judges the Southbound's silence by. */
  void update(const ovsdb::SbMetadataView& view, const std::string& integrationBridge,
              const core::SharedValue<std::set<std::string>>& bridgePorts,
              const core::SharedValue<std::set<std::string>>& createdPorts,
              const core::SharedValue<std::set<std::string>>& vmIfaceIds = {});
  /** The same, every port in the database taken as created and no VM interface on the bridge
   *  (tests without ovs-vswitchd). */
  void update(const ovsdb::SbMetadataView& view, const std::string& integrationBridge,
              const core::SharedValue<std::set<std::string>>& bridgePorts) {
    update(view, integrationBridge, bridgePorts, bridgePorts, {});
  }
  void stop();
  /** Called with the number of networks set up, when a burst of at least
   *  options.settledAfter of them has settled (every wanted network serving). */
  void setOnSettled(std::function<void(std::size_t networks)> onSettled) {
    onSettled_ = std::move(onSettled);
  }

  /**
   * The bound VIFs of that network that list the client IP: 0, 1 or several. Rows of the
   * current plan: valid until the next update() (the event loop's next turn), not copied, so
   * a request's lookup allocates nothing.
   */
  std::span<const ovsdb::SbPort* const> lookup(const std::string& networkId,
                                               const std::string& clientIp) const;
  const MetadataPlan& plan() const { return plan_; }
  /** Checks (and repairs) every serving network now; the verify timer calls it. */
  void verifyAll();
  /** Networks serving: namespace and listeners up as planned, and the port on the bridge. */
  std::set<std::string> readyNetworks() const;
  /** What it decides now for each network (namespace_decision.h), from the plan, whether it is
   *  active, the namespaces it has in hand and those it last listed on the host (it lists them
   *  once per synced period: before that, strays are not shown). */
  std::vector<NamespaceDecision> decisions() const;
  /** For /debug/plan: {"southbound": "synced"|reason, "decisions": decisionsToJson(decisions()),
   *  "networks": [{"network", "namespace",
   *  "state": "serving"|"setting up"|"error"|"removing", "error", "vmAddresses",
   *  "lost": what the Southbound lost of it that br-int still has}]}. */
  nlohmann::json debugJson() const;

 private:
  struct NetworkState {
    std::shared_ptr<const NetworkPlan> applied;  // what the last successful ensure made
    bool listening = false;
    bool busy = false;  // a worker job is in flight
    bool removing = false;
    bool verify = false;  // re-ensure although applied (the periodic check)
    // The veth was re-created under an OVS port of the same name: ovs-vswitchd keeps the old
    // device open (the userspace datapath at least), so the port is removed, then added again.
    bool replug = false;
    std::string lastError;
  };

  // Looks at the networks marked dirty (or all of them after markAll()), then hands on the
  // OVS ports and readiness if they may have changed. Events mark only what they concern, so a
  // burst of N set-ups costs O(N log N) here, not O(N^2).
  void reconcile();
  void markAll() { allDirty_ = true; }
  void markDirty(const std::string& networkId) { dirty_.insert(networkId); }
  void reconcileNetwork(const std::string& id, std::optional<TimePoint>& nextRetry);
  // decideNamespace for that network with what this reconciler knows of its namespace.
  NamespaceDecision decide(const std::string& networkId) const;
  // One reconcile() for a burst of worker completions.
  void requestReconcile();
  // submitPorts() and updateHealth(), at most once per outputInterval during a burst.
  void flushOutputs();
  void startEnsure(const std::shared_ptr<const NetworkPlan>& network);
  // Hands the ensures of one pass to the worker, preceded by one prepare() of the new ones.
  void flushEnsures();
  void onEnsured(const std::shared_ptr<const NetworkPlan>& planned,
                 core::Result<Plumbing::Ensured> ensured, std::vector<core::Result<int>> fds);
  void startRemove(const std::string& networkId, const std::string& namespaceName);
  void pruneStrays();
  // Hands the wanted ports to the IDL thread if they changed; true if it did.
  bool submitPorts();
  void updateHealth();
  // Namespace, veth, addresses and listeners as planned (the port may not be plugged yet).
  bool isSetUp(const NetworkPlan& planned, const NetworkState& st) const;
  // Set up and its host veth on the integration bridge: VMs can reach it.
  bool isServing(const NetworkPlan& planned, const NetworkState& st) const;
  void scheduleRetry(TimePoint at);
  void scheduleVerify();

  boost::asio::io_context& io_;
  core::Clock& clock_;
  ReconcilerOptions options_;
  // The networks whose ensure or removal failed, each waiting its own backoff (retryMin,
  // doubling up to retryMax; forgotten on success).
  core::KeyedRetry<std::string> retries_;
  Plumbing& plumbing_;
  RunOnWorker runOnWorker_;
  // Ensures started by the current reconcile pass, not yet handed to the worker.
  std::vector<std::function<void()>> pendingEnsures_;
  std::vector<std::shared_ptr<const NetworkPlan>> pendingNew_;
  Listeners& listeners_;
  SubmitOvs submitOvs_;
  core::MetricsRegistry& metrics_;
  core::HealthRegistry& health_;
  std::shared_ptr<bool> alive_;
  bool active_ = false;
  bool retired_ = false;
  // The host's namespaces were listed (and the strays among them removed) since retire().
  bool retireListed_ = false;
  // The kernel's reason the first time a namespace could not have IPv6 (logged once).
  std::string ipv6UnavailableReported_;
  std::string bridge_ = "br-int";
  core::SharedValue<std::set<std::string>> bridgePorts_;
  core::SharedValue<std::set<std::string>> createdPorts_;
  core::SharedValue<std::set<std::string>> vmIfaceIds_;
  MetadataPlan plan_;
  std::uint64_t viewVersion_ = ~0ULL;
  bool viewSynced_ = false;
  std::string viewNotSyncedReason_;
  // Strays are pruned once per synced period (start-up, each SB reconnect).
  bool prunedThisSync_ = false;
  std::map<std::string, NetworkState> networks_;
  // The ovnmeta-* namespaces the last listing found (pruneStrays), less those it removed.
  std::set<std::string> listed_;
  std::vector<std::string> reportedWarnings_;
  std::unique_ptr<core::Timer> retryTimer_;
  std::unique_ptr<core::Timer> verifyTimer_;
  bool verifyScheduled_ = false;
  bool reconcilePending_ = false;
  std::set<std::string> dirty_;
  bool allDirty_ = true;
  // What flushOutputs() must hand on, and when it last did.
  bool portsDirty_ = true;
  bool healthDirty_ = true;
  bool outputTimerArmed_ = false;
  std::shared_ptr<const ovsdb::DesiredMetadataOvs> submitted_;
  std::optional<TimePoint> lastPortsOutput_;  // never yet: the first goes at once
  std::chrono::milliseconds portsInterval_{0};
  // The ports changed inside the window and wait for it to close.
  bool portsWaited_ = false;
  std::optional<TimePoint> lastHealthOutput_;
  std::function<void(std::size_t)> onSettled_;
  std::size_t setUpSinceSettled_ = 0;
  std::unique_ptr<core::Timer> outputTimer_;
};

}  // namespace okna::metadata
