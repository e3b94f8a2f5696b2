#include "ovsdb/idl_thread.h"

#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include "core/health.h"
#include "core/logging.h"
#include "ovsdb/ovs_chassis_glue.h"
#include "ovsdb/ovs_idl_glue.h"
#include "ovsdb/ovs_log.h"
#include "ovsdb/ovs_metadata_glue.h"
#include "ovsdb/ovs_monitor_glue.h"
#include "ovsdb/string_map.h"

namespace okna::ovsdb {

namespace {

using TimePoint = core::Clock::TimePoint;
constexpr const char* kHeartbeat = "ovsdb-idl";
constexpr auto kMaxSilence = std::chrono::seconds(10);
// poll_block wakes at least this often, to beat the heartbeat.
constexpr long long kTickMs = 1000;
// After TRY_AGAIN with no replica change yet, retry anyway after this long.
constexpr auto kTryAgainFallback = std::chrono::milliseconds(500);
// During a burst of OVS database changes the replica is re-read at most this often; the first
// change after a quiet period is read at once. A read is O(ports) (with 1,000 metadata
// namespaces and their VMs, 2,000 ports); ovs-vswitchd and ovn-controller write several times
// per new port, so a cold start re-read it thousands of times (most of the IDL thread's CPU).
constexpr auto kBurstReadInterval = std::chrono::milliseconds(50);
constexpr auto kErrorBackoffMin = std::chrono::seconds(1);
constexpr auto kErrorBackoffMax = std::chrono::seconds(30);

okna_ovs_op_kind toGlue(OvsOp::Kind kind) {
  switch (kind) {
    case OvsOp::Kind::SetExternalId:
      return OKNA_OVS_SET_EXTERNAL_ID;
    case OvsOp::Kind::DeleteExternalId:
      return OKNA_OVS_DEL_EXTERNAL_ID;
    case OvsOp::Kind::AddBridge:
      return OKNA_OVS_ADD_BRIDGE;
    case OvsOp::Kind::AddPort:
      return OKNA_OVS_ADD_PORT;
    case OvsOp::Kind::DeletePort:
      return OKNA_OVS_DEL_PORT;
    case OvsOp::Kind::DeleteBridge:
      return OKNA_OVS_DEL_BRIDGE;
    case OvsOp::Kind::AddIfacePort:
      return OKNA_OVS_ADD_IFACE_PORT;
    case OvsOp::Kind::SetIfaceExternalIds:
      return OKNA_OVS_SET_IFACE_EXTERNAL_ID;
    case OvsOp::Kind::SetBridgeDatapathType:
      return OKNA_OVS_SET_BRIDGE_DATAPATH_TYPE;
  }
  return OKNA_OVS_SET_EXTERNAL_ID;
}

TxnOutcome outcomeOf(okna_txn_status status) {
  switch (status) {
    case OKNA_TXN_SUCCESS:
      return TxnOutcome::Success;
    case OKNA_TXN_UNCHANGED:
      return TxnOutcome::Unchanged;
    case OKNA_TXN_TRY_AGAIN:
      return TxnOutcome::TryAgain;
    default:
      return TxnOutcome::Error;
  }
}

// The union of the participants' columns for one database, table by table.
std::map<std::string, std::set<std::string>> mergeColumns(const std::vector<ColumnSet>& sets) {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& s : sets) out[s.table].insert(s.columns.begin(), s.columns.end());
  return out;
}

// The transport's own reads: where the Southbound is and which chassis this is.
const std::vector<ColumnSet> kTransportOvsColumns = {{"Open_vSwitch", {"external_ids"}}};

}  // namespace

// Everything that lives on the IDL thread.
class IdlThread::Loop {
 public:
  explicit Loop(IdlThread& owner) : owner_(owner), log_(core::logger("ovsdb")) {}

  void run() {
    applySsl();
    ovs_ = okna_ovs_idl_open_empty(owner_.config_.remote.c_str());
    std::vector<ColumnSet> columns = kTransportOvsColumns;
    for (const auto& p : owner_.participants_) {
      const Monitors m = p->monitors();
      columns.insert(columns.end(), m.openVswitch.begin(), m.openVswitch.end());
    }
    for (const auto& [table, cols] : mergeColumns(columns))
      for (const auto& c : cols)
        if (!okna_ovs_idl_add_column(ovs_, table.c_str(), c.c_str()))
          throw std::logic_error("Open_vSwitch schema has no column " + table + "." + c);
    while (!owner_.stopping_.load()) {
      owner_.health_.beat(kHeartbeat);
      drainWakeFd();
      takeDesired();
      pass();
      waitForWork();
    }
    if (txn_) okna_ovs_txn_destroy(txn_);
    if (sbTxn_) okna_sb_txn_destroy(sbTxn_);
    okna_sb_idl_close(sb_);
    okna_ovs_idl_close(ovs_);
  }

 private:
  TimePoint now() const { return owner_.clock_.now(); }

  void drainWakeFd() {
    std::uint64_t n = 0;
    while (::read(owner_.wakeFd_, &n, sizeof n) > 0) {
    }
  }

  void takeDesired() {
    for (const auto& p : owner_.participants_) {
      if (!p->takeDesired()) continue;
      // A new desired state deserves an attempt now, whatever the last error was, and a diff
      // from a fresh read (the burst interval must not delay what a caller just asked for;
      // callers hand on at most every 25 ms during a burst).
      retryAt_ = TimePoint{};
      forceRead_ = true;
    }
  }

  // libopenvswitch's stream-ssl is process-wide (both IDLs share it) and re-reads a file whose
  // mtime changed: called on every pass, a rotated certificate is picked up within a second.
  void applySsl() {
    const OvsSslConfig& ssl = owner_.config_.ssl;
    if (!ssl.configured()) return;
    std::string problem;
    for (const auto& [name, path] : {std::pair{"privateKeyFile", &ssl.privateKeyFile},
                                     std::pair{"certificateFile", &ssl.certificateFile},
                                     std::pair{"caCertFile", &ssl.caCertFile}}) {
      if (::access(path->c_str(), R_OK) == 0) continue;
      problem = std::string("ovs.ssl.") + name + " " + *path + ": " + std::strerror(errno);
      break;
    }
    if (problem != status_.tlsError && !problem.empty()) log_->error("{}", problem);
    status_.tlsError = problem;
    if (problem.empty())
      okna_ovsdb_set_ssl_files(ssl.privateKeyFile.c_str(), ssl.certificateFile.c_str(),
                               ssl.caCertFile.c_str());
  }

  void pass() {
    applySsl();
    okna_ovs_idl_run(ovs_);
    if (sb_) okna_sb_idl_run(sb_);
    noteOvsConnection();
    if (txn_) finishTxn();

    PassContext pass;
    pass.ovs = ovs_;
    pass.status = &status_;
    pass.readOnly = owner_.config_.readOnly;
    pass.now = now();
    const unsigned seqno = okna_ovs_idl_seqno(ovs_);
    // A replica newer than what the participants read that is not read yet: no diff from stale
    // data.
    stale_ = false;
    if (seqno != seqno_ && pass.now < nextReadAt_ && !forceRead_) {
      stale_ = true;
    } else if (seqno != seqno_ || forceRead_) {
      forceRead_ = false;
      nextReadAt_ = pass.now + kBurstReadInterval;
      seqno_ = seqno;
      pass.ovsChanged = true;
      readTransportKeys();
    }
    manageSb(pass);
    for (const auto& p : owner_.participants_) p->observe(pass);
    if (sb_) setConditions(pass);
    for (const auto& p : owner_.participants_) p->settle(pass);

    if (sbTxn_) finishSbTxn();
    if (!sbTxn_ && sb_ && now() >= sbRetryAt_) startSbTxn(pass);

    if (!stale_ && !txn_ && status_.connected && okna_ovs_idl_has_root(ovs_) && now() >= retryAt_ &&
        (seqno_ != tryAgainSeqno_ || now() >= tryAgainUntil_))
      reconcile(pass);
    for (const auto& p : owner_.participants_) p->publish(pass);
  }

  void noteOvsConnection() {
    const bool connected = okna_ovs_idl_is_connected(ovs_) != 0;
    if (connected && !connected_) {
      if (everConnected_) {
        ++status_.stats.reconnects;
        log_->info("reconnected to {}: re-asserting the desired state", owner_.config_.remote);
      }
      everConnected_ = true;
    } else if (!connected && connected_) {
      ++status_.stats.losses;
      log_->warn("lost the connection to {}; reconnecting with backoff", owner_.config_.remote);
    }
    connected_ = connected;
    status_.connected = connected;
    status_.connectionError = connected ? "" : okna_ovs_idl_connection_error(ovs_);
  }

  void readTransportKeys() {
    std::map<std::string, std::string> ids;
    okna_ovs_idl_foreach_external_id(
        ovs_,
        [](void* ctx, const char* k, const char* v) {
          if (std::strcmp(k, "system-id") == 0 || std::strcmp(k, "ovn-remote") == 0)
            (*static_cast<std::map<std::string, std::string>*>(ctx))[k] = v;
        },
        &ids);
    status_.chassisName = valueIn(ids, "system-id");
    ovnRemote_ = valueIn(ids, "ovn-remote");
  }

  void reconcile(const PassContext& pass) {
    // The participants' ops in the order they were added (the chassis before the metadata
    // ports): one transaction, verified where any of them asks.
    std::vector<OvsOp> ops;
    bool verifyExternalIds = false;
    bool verifyBridges = false;
    txnReadBack_ = false;
    txnParticipants_.clear();
    for (const auto& p : owner_.participants_) {
      OvsOps mine = p->ovsOps(pass);
      if (mine.ops.empty()) continue;
      verifyExternalIds |= mine.verifyExternalIds;
      verifyBridges |= mine.verifyBridges;
      txnReadBack_ |= mine.readBackAtOnce;
      txnParticipants_.push_back(p.get());
      ops.insert(ops.end(), std::make_move_iterator(mine.ops.begin()),
                 std::make_move_iterator(mine.ops.end()));
    }
    if (ops.empty() || pass.readOnly) return;
    std::vector<okna_ovs_op> glueOps;
    for (const auto& op : ops) {
      log_->debug("ovsdb op: {}", describe(op));
      glueOps.push_back({toGlue(op.kind), op.a.c_str(), op.b.c_str(), op.c.c_str()});
    }
    txn_ = okna_ovs_txn_start(ovs_, glueOps.data(), glueOps.size(), verifyExternalIds,
                              verifyBridges, "openkeel-node-agent: OVN chassis configuration");
    if (!txn_) {
      // The replica changed under the diff; the next change retries.
      for (auto* p : txnParticipants_) p->ovsTxnEnded(TxnOutcome::NotSent);
      return;
    }
    txnSeqno_ = seqno_;
    txnOps_.clear();
    for (const auto& op : ops) txnOps_.push_back(describe(op));
    finishTxn();
  }

  void finishTxn() {
    const okna_txn_status status = okna_ovs_txn_commit(txn_);
    if (status == OKNA_TXN_INCOMPLETE) return;
    if (txnReadBack_) forceRead_ = true;
    switch (status) {
      case OKNA_TXN_SUCCESS:
        ++status_.stats.success;
        for (const auto& op : txnOps_) log_->info("{}", op);
        status_.lastError.clear();
        errorBackoff_ = {};
        break;
      case OKNA_TXN_UNCHANGED:
        ++status_.stats.unchanged;
        break;
      case OKNA_TXN_TRY_AGAIN:
        // Retry once the replica has moved past what the diff saw (or after a short while).
        ++status_.stats.conflicts;
        log_->debug("transaction: try again (concurrent change or reconnect)");
        tryAgainSeqno_ = txnSeqno_;
        tryAgainUntil_ = now() + kTryAgainFallback;
        break;
      default:
        ++status_.stats.errors;
        status_.lastError = okna_ovs_txn_error(txn_);
        errorBackoff_ = std::clamp(errorBackoff_ * 2, std::chrono::milliseconds(kErrorBackoffMin),
                                   std::chrono::milliseconds(kErrorBackoffMax));
        retryAt_ = now() + errorBackoff_;
        log_->error("OVSDB transaction failed: {}; retrying in {} ms", status_.lastError,
                    errorBackoff_.count());
        break;
    }
    for (auto* p : txnParticipants_) p->ovsTxnEnded(outcomeOf(status));
    txnParticipants_.clear();
    okna_ovs_txn_destroy(txn_);
    txn_ = nullptr;
  }

  // The SB IDL follows the SB remote and the chassis name: reopened when either changes.
  void manageSb(PassContext& pass) {
    std::string remote = owner_.config_.sbRemote;
    if (remote.empty()) remote = ovnRemote_;
    const std::string chassis = status_.chassisName;
    if (remote != status_.sbRemote || chassis != sbChassis_ || !sbOpenedOnce_) {
      sbOpenedOnce_ = true;
      if (sbTxn_) okna_sb_txn_destroy(sbTxn_);
      sbTxn_ = nullptr;
      okna_sb_idl_close(sb_);
      sb_ = nullptr;
      status_.sbRemote = remote;
      sbChassis_ = chassis;
      status_.sbConnected = status_.sbSynced = false;
      status_.sbConnectionError.clear();
      sbSeqno_ = 0;
      sbConnected_ = sbEverConnected_ = false;  // a new connection, not a lost one
      conditions_.clear();
      for (const auto& p : owner_.participants_) p->southboundReopened();
      if (!remote.empty() && !chassis.empty()) openSb(remote, chassis);
    }
    pass.sb = sb_;
    if (!sb_) return;
    status_.sbConnected = okna_sb_idl_is_connected(sb_) != 0;
    status_.sbConnectionError = status_.sbConnected ? "" : okna_sb_idl_connection_error(sb_);
    noteSbConnection();
    const bool synced = okna_sb_idl_has_ever_connected(sb_) != 0;
    const unsigned seqno = okna_sb_idl_seqno(sb_);
    if (synced && (!status_.sbSynced || seqno != sbSeqno_)) {
      pass.sbChanged = true;
      sbSeqno_ = seqno;
    }
    status_.sbSynced = synced;
  }

  void openSb(const std::string& remote, const std::string& chassis) {
    log_->info("watching chassis {} in the Southbound DB at {}", chassis, remote);
    sb_ = okna_sb_idl_open_empty(remote.c_str(), chassis.c_str());
    std::vector<ColumnSet> columns;
    for (const auto& p : owner_.participants_) {
      const Monitors m = p->monitors();
      columns.insert(columns.end(), m.southbound.begin(), m.southbound.end());
    }
    for (const auto& [table, cols] : mergeColumns(columns))
      for (const auto& c : cols)
        if (!okna_sb_idl_add_column(sb_, table.c_str(), c.c_str()))
          throw std::logic_error("OVN_Southbound schema has no column " + table + "." + c);
    // Before the first connection, so that the first monitor request carries the conditions
    // (ovsdb-cs acks them without a monitor_cond_change): once synced, the replica holds
    // exactly the rows they select.
    PassContext none;
    setConditions(none);
    okna_sb_idl_run(sb_);
  }

  // The OR of the participants' clauses, table by table; sent only when it changed.
  void setConditions(PassContext& pass) {
    std::map<std::string, TableCondition> merged;
    for (const auto& p : owner_.participants_) {
      for (auto& c : p->southboundConditions(sbChassis_)) {
        TableCondition& m = merged[c.table];
        m.table = c.table;
        m.allRows |= c.allRows;
        m.anyOf.insert(m.anyOf.end(), std::make_move_iterator(c.anyOf.begin()),
                       std::make_move_iterator(c.anyOf.end()));
      }
    }
    for (auto& [table, c] : merged) {
      std::sort(c.anyOf.begin(), c.anyOf.end());
      c.anyOf.erase(std::unique(c.anyOf.begin(), c.anyOf.end()), c.anyOf.end());
      if (c.allRows) c.anyOf.clear();
    }
    if (merged != conditions_ || !conditionsSent_) {
      unsigned expected = 0;
      for (const auto& [table, c] : merged) {
        std::vector<okna_clause> clauses;
        for (const auto& clause : c.anyOf)
          clauses.push_back({clause.column.c_str(),
                             clause.function == Clause::Function::Includes ? OKNA_CLAUSE_INCLUDES
                                                                           : OKNA_CLAUSE_EQ,
                             clause.value.c_str()});
        expected = std::max(expected, okna_sb_idl_set_condition(sb_, table.c_str(), c.allRows,
                                                                clauses.data(), clauses.size()));
      }
      if (const auto bad = okna_sb_idl_bad_clauses(sb_); bad != badClauses_) {
        log_->error("{} Southbound condition clause(s) could not be encoded (left out)", bad);
        badClauses_ = bad;
      }
      conditions_ = std::move(merged);
      conditionsSent_ = true;
      expectedConditionSeqno_ = expected;
    }
    pass.sbConditionsAcked = okna_sb_idl_condition_seqno(sb_) == expectedConditionSeqno_;
  }

  // Each loss of the Southbound and each recovery is logged and counted once: the IDL retries
  // with backoff in between, and the connection is down all along.
  void noteSbConnection() {
    const bool connected = status_.sbConnected;
    if (connected && !sbConnected_) {
      if (sbEverConnected_) {
        ++status_.stats.sbReconnects;
        log_->info("reconnected to the Southbound DB at {} after {} s", status_.sbRemote,
                   std::chrono::duration_cast<std::chrono::seconds>(now() - sbLostAt_).count());
      }
      sbEverConnected_ = true;
    } else if (!connected && sbConnected_) {
      ++status_.stats.sbLosses;
      sbLostAt_ = now();
      log_->warn("lost the connection to the Southbound DB at {} ({}); reconnecting with backoff",
                 status_.sbRemote, status_.sbConnectionError);
    }
    sbConnected_ = connected;
  }

  void startSbTxn(const PassContext& pass) {
    SbOps ops;
    sbTxnParticipants_.clear();
    for (const auto& p : owner_.participants_) {
      SbOps mine = p->southboundOps(pass);
      if (mine.empty()) continue;
      sbTxnParticipants_.push_back(p.get());
      ops.setChassisPrivateIds.insert(mine.setChassisPrivateIds.begin(),
                                      mine.setChassisPrivateIds.end());
      ops.deleteChassisPrivateIds.insert(ops.deleteChassisPrivateIds.end(),
                                         mine.deleteChassisPrivateIds.begin(),
                                         mine.deleteChassisPrivateIds.end());
      ops.what += (ops.what.empty() ? "" : ", ") + mine.what;
    }
    if (ops.empty()) return;
    std::vector<const char*> kv;
    for (const auto& [k, v] : ops.setChassisPrivateIds) {
      kv.push_back(k.c_str());
      kv.push_back(v.c_str());
    }
    std::vector<const char*> del;
    for (const auto& k : ops.deleteChassisPrivateIds) del.push_back(k.c_str());
    sbTxn_ =
        okna_sb_txn_set_chassis_private_ids(sb_, kv.data(), kv.size() / 2, del.data(), del.size());
    if (!sbTxn_) {
      // The row went: recomputed with the next change.
      for (auto* p : sbTxnParticipants_) p->southboundTxnEnded(TxnOutcome::NotSent);
      sbTxnParticipants_.clear();
      return;
    }
    sbTxnWhat_ = ops.what;
    finishSbTxn();
  }

  void finishSbTxn() {
    const okna_txn_status status = okna_sb_txn_commit(sbTxn_);
    if (status == OKNA_TXN_INCOMPLETE) return;
    if (status == OKNA_TXN_ERROR) {
      log_->warn("Southbound transaction ({}) failed: {}", sbTxnWhat_, okna_sb_txn_error(sbTxn_));
      sbRetryAt_ = now() + kErrorBackoffMin;
    } else if (status == OKNA_TXN_TRY_AGAIN) {
      sbRetryAt_ = now() + kTryAgainFallback;
    }
    for (auto* p : sbTxnParticipants_) p->southboundTxnEnded(outcomeOf(status));
    sbTxnParticipants_.clear();
    okna_sb_txn_destroy(sbTxn_);
    sbTxn_ = nullptr;
  }

  void waitForWork() {
    okna_ovs_idl_wait(ovs_);
    if (sb_) okna_sb_idl_wait(sb_);
    if (txn_) okna_ovs_txn_wait(txn_);
    if (sbTxn_) okna_sb_txn_wait(sbTxn_);
    okna_poll_fd_wait(owner_.wakeFd_);
    long long ms = kTickMs;
    const auto t = now();
    std::vector<TimePoint> wakes = {retryAt_, tryAgainUntil_, sbRetryAt_, stale_ ? nextReadAt_ : t};
    for (const auto& p : owner_.participants_)
      if (const auto at = p->wakeAt()) wakes.push_back(*at);
    for (const auto at : wakes)
      if (at > t)
        ms = std::min<long long>(
            ms, std::chrono::duration_cast<std::chrono::milliseconds>(at - t).count() + 1);
    okna_poll_timer_wait(ms);
    okna_poll_block();
  }

  IdlThread& owner_;
  std::shared_ptr<spdlog::logger> log_;
  TransportStatus status_;
  okna_ovs_idl* ovs_ = nullptr;
  okna_sb_idl* sb_ = nullptr;
  okna_ovs_txn* txn_ = nullptr;
  okna_sb_txn* sbTxn_ = nullptr;
  // The participants whose ops the running transactions carry, and what the SB one is.
  std::vector<Participant*> txnParticipants_;
  std::vector<Participant*> sbTxnParticipants_;
  std::string sbTxnWhat_;
  bool txnReadBack_ = false;
  std::vector<std::string> txnOps_;
  TimePoint sbRetryAt_{};
  bool connected_ = false;
  bool everConnected_ = false;
  unsigned seqno_ = 0;
  bool forceRead_ = false;
  bool stale_ = false;
  TimePoint nextReadAt_{};
  unsigned txnSeqno_ = 0;
  // After TRY_AGAIN: wait for the replica to leave this seqno, or for tryAgainUntil_.
  unsigned tryAgainSeqno_ = ~0U;
  TimePoint tryAgainUntil_{};
  TimePoint retryAt_{};
  std::chrono::milliseconds errorBackoff_{0};
  std::string ovnRemote_;
  std::string sbChassis_;
  bool sbOpenedOnce_ = false;
  unsigned sbSeqno_ = 0;
  bool sbConnected_ = false;
  bool sbEverConnected_ = false;
  TimePoint sbLostAt_{};
  // The merged conditions last sent, and the condition seqno that acknowledges them.
  std::map<std::string, TableCondition> conditions_;
  bool conditionsSent_ = false;
  unsigned expectedConditionSeqno_ = 0;
  std::size_t badClauses_ = 0;
};

IdlThread::IdlThread(OvsConfig config, core::HealthRegistry& health, core::Clock& clock)
    : config_(std::move(config)), health_(health), clock_(clock) {
  wakeFd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakeFd_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
}

IdlThread::~IdlThread() {
  stop();
  ::close(wakeFd_);
}

void IdlThread::add(std::shared_ptr<Participant> participant) {
  if (thread_.joinable()) throw std::logic_error("IdlThread::add after start");
  participant->attach([this] { wake(); });
  participants_.push_back(std::move(participant));
}

void IdlThread::start() {
  if (thread_.joinable()) return;
  stopping_ = false;
  health_.addHeartbeat(kHeartbeat, kMaxSilence);
  health_.beat(kHeartbeat);
  // libopenvswitch's own log goes to the "ovs" logger (ovs_log.h), never raw to stderr.
  routeOvsLogs();
  thread_ = std::thread([this] {
    // Asynchronous signals are the loop thread's business (Asio signal_set); OVS's
    // fatal-signal code must never run them here.
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    pthread_setname_np(pthread_self(), "okna-ovsdb");  // for top and perf
    // The thread's boundary: what escapes it is logged and makes /healthz fail at once.
    try {
      Loop(*this).run();
    } catch (const std::exception& e) {
      core::logger("ovsdb")->critical("OVSDB thread stopped: {}", e.what());
      health_.stopped(kHeartbeat, e.what());
    }
  });
}

void IdlThread::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wakeFd_, &one, sizeof one);
}

void IdlThread::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  wake();
  thread_.join();
}

}  // namespace okna::ovsdb
