#pragma once
// The contract between the OVSDB transport (idl_thread.h) and the concerns that read and write
// the databases through it, in the spirit of ovn-controller's engine nodes (lib/inc-proc-eng.h):
// each participant says what it monitors, turns the rows it sees into its own immutable view
// (published to its owner by its own callback; the owner hops to its loop), and turns its
// desired state plus that view into operations for the one transaction per database the
// transport builds. The transport holds no policy of its own: it runs the IDLs, merges the
// participants' monitor requests, calls them in the order they were added, commits, retries,
// counts and reconnects.
//
// Every method but wake() runs on the transport's thread, one participant at a time, in this
// order within a pass:
//   takeDesired -> observe -> southboundConditions -> settle -> southboundOps / ovsOps -> publish
// Participants today: chassis/chassis_participant.h and metadata/sb_participant.h.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ovsdb/ovs_ops.h"

struct okna_ovs_idl;
struct okna_sb_idl;

namespace okna::ovsdb {

/** The columns of one table a participant reads (names as in the schema). */
struct ColumnSet {
  std::string table;
  std::vector<std::string> columns;
  bool operator==(const ColumnSet&) const = default;
};

/** What a participant monitors, per database. Asked once per IDL the transport opens. */
struct Monitors {
  std::vector<ColumnSet> openVswitch;
  std::vector<ColumnSet> southbound;
};

/** One clause of a Southbound condition (RFC 7047 5.1). */
struct Clause {
  enum class Function { Equal, Includes };
  // A column of the table; "_uuid" selects the row by its UUID.
  std::string column;
  Function function = Function::Equal;
  // A string, or a UUID for a reference column.
  std::string value;
  auto operator<=>(const Clause&) const = default;
};

/** The rows of a Southbound table a participant wants: all of them, or those any clause selects
 *  (none: no row). The transport sends the OR of every participant's clauses for the table; a
 *  table no participant gives a condition for is monitored whole. */
struct TableCondition {
  std::string table;
  bool allRows = false;
  std::vector<Clause> anyOf;
  bool operator==(const TableCondition&) const = default;
};

/** A participant's share of the Open_vSwitch transaction. */
struct OvsOps {
  std::vector<OvsOp> ops;
  // Prerequisites: the column still has the value the ops were computed from (a concurrent
  // writer -> TRY_AGAIN -> every participant recomputes from the new replica).
  bool verifyExternalIds = false;
  bool verifyBridges = false;
  // The replica is re-read as soon as the transaction ends, never held back by the burst
  // interval (the owner decides from what it wrote, e.g. a gateway drain from its record).
  bool readBackAtOnce = false;
};

/** A participant's share of the Southbound transaction: keys of this chassis's Chassis_Private
 *  external_ids to set and to delete (the only Southbound write the agent makes). */
struct SbOps {
  std::map<std::string, std::string> setChassisPrivateIds;
  std::vector<std::string> deleteChassisPrivateIds;
  // What the write is, for the log line of a failure ("metadata agent liveness").
  std::string what;
  bool empty() const { return setChassisPrivateIds.empty() && deleteChassisPrivateIds.empty(); }
};

/** How a transaction carrying a participant's ops ended. */
enum class TxnOutcome {
  Success,
  Unchanged,
  // A verified column changed under it, or the connection dropped: recomputed after the next
  // change of the replica (or a short while).
  TryAgain,
  Error,
  // Not sent: the replica no longer has a row the ops name (recomputed after the next change).
  NotSent,
};

/** Counters since the transport started; owners turn deltas into metrics. */
struct IdlStats {
  std::uint64_t success = 0;
  std::uint64_t unchanged = 0;
  // TRY_AGAIN: a verified column changed under the transaction (or the connection dropped).
  std::uint64_t conflicts = 0;
  std::uint64_t errors = 0;
  // Connections to the local Open_vSwitch DB re-established after having been connected, and
  // connections lost (each once, however many reconnection attempts fail in between).
  std::uint64_t reconnects = 0;
  std::uint64_t losses = 0;
  // The same for the OVN Southbound DB (a new remote or chassis name is neither).
  std::uint64_t sbReconnects = 0;
  std::uint64_t sbLosses = 0;
  bool operator==(const IdlStats&) const = default;
};

/** What the transport knows of its connections, for the participants' views. */
struct TransportStatus {
  bool connected = false;
  // Why the local OVSDB is not connected ("" when it is), e.g. "Protocol error" (TLS).
  std::string connectionError;
  // An ovs.ssl file that cannot be read ("ovs.ssl.caCertFile /x: No such file or directory").
  std::string tlsError;
  // The last error of an Open_vSwitch transaction ("" after a success).
  std::string lastError;
  // external_ids:system-id, the chassis name ("" when ovn-controller was never set up).
  std::string chassisName;
  // The SB remote in use: OvsConfig::sbRemote, else external_ids:ovn-remote; "" = unknown.
  std::string sbRemote;
  bool sbConnected = false;
  std::string sbConnectionError;
  // The first contents for the conditions arrived (the conditions are sent with the first
  // request, so the replica then holds exactly what they select).
  bool sbSynced = false;
  IdlStats stats;
};

/** One pass of the transport, as a participant sees it. */
struct PassContext {
  using TimePoint = std::chrono::steady_clock::time_point;
  okna_ovs_idl* ovs = nullptr;
  // The Open_vSwitch replica moved on (or a participant asked for a fresh read): read it now.
  bool ovsChanged = false;
  // Null while no Southbound connection is configured (no remote or no chassis name).
  okna_sb_idl* sb = nullptr;
  // The Southbound replica moved on, or synced for the first time: read it now.
  bool sbChanged = false;
  // The server applied the current merged conditions (valid from settle() on).
  bool sbConditionsAcked = false;
  const TransportStatus* status = nullptr;
  TimePoint now;
  // ovs.readOnly: ops are computed (convergence, notes) but never sent.
  bool readOnly = false;
};

class Participant {
 public:
  virtual ~Participant() = default;

  /** For log lines ("chassis", "metadata"). */
  virtual const char* name() const = 0;
  /** The columns it reads, per database. */
  virtual Monitors monitors() const = 0;

  /** A new desired state arrived since the last call (the transport then attempts at once, from
   *  a fresh read of the replica). */
  virtual bool takeDesired() = 0;
  /** The Southbound connection was (re)opened for another remote or chassis: the view of the
   *  old one is gone. */
  virtual void southboundReopened() {}
  /** Reads what changed into its view (ovsChanged / sbChanged; its own reasons too). */
  virtual void observe(const PassContext& pass) = 0;
  /** The Southbound rows it wants, from its view (asked every pass while connected; the
   *  transport sends the merged conditions only when they change). */
  virtual std::vector<TableCondition> southboundConditions(const std::string& chassisName) const {
    (void)chassisName;
    return {};
  }
  /** After the conditions: pass.sbConditionsAcked says whether the replica holds what they
   *  select. */
  virtual void settle(const PassContext& pass) { (void)pass; }
  /** Its share of a Southbound transaction (asked while none is in flight and no error backoff
   *  runs). */
  virtual SbOps southboundOps(const PassContext& pass) {
    (void)pass;
    return {};
  }
  virtual void southboundTxnEnded(TxnOutcome outcome) { (void)outcome; }
  /** Its share of an Open_vSwitch transaction; asked only when a diff may be made (connected,
   *  the root row there, the replica read, no transaction in flight, no backoff running). */
  virtual OvsOps ovsOps(const PassContext& pass) = 0;
  /** How the transaction that carried its (non-empty) ops ended. */
  virtual void ovsTxnEnded(TxnOutcome outcome) { (void)outcome; }
  /** Publishes its view to its owner when it changed. */
  virtual void publish(const PassContext& pass) = 0;
  /** The next time it needs a pass although nothing changes (nullopt: none). */
  virtual std::optional<PassContext::TimePoint> wakeAt() const { return std::nullopt; }

  /** Called by the transport when the participant is added: wake() asks for a pass soon.
   *  Thread-safe. */
  void attach(std::function<void()> wake) { wake_ = std::move(wake); }

 protected:
  /** For the owner's submit(): any thread. */
  void wake() const {
    if (wake_) wake_();
  }

 private:
  std::function<void()> wake_;
};

}  // namespace okna::ovsdb
