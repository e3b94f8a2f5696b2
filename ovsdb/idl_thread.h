#pragma once
// The OVSDB transport: the thread that owns libopenvswitch's IDLs, the local Open_vSwitch
// database and, once its remote and this chassis' name are known, the OVN Southbound one. It
// runs OVS's own poll loop (ovsdb_idl_run / poll_block) and never touches the Asio loop's state.
// What is read and written is its participants' business (participant.h):
//   - it monitors the union of their columns and sends the Southbound the OR of their
//     conditions (again whenever those change);
//   - on every pass where something changed (a desired state, a replica, a connection, a
//     transaction ended) it lets them read the replicas into their views, collects their ops
//     into one transaction per database, and tells them how it ended;
//   - they publish their views through their own callbacks, ON THIS THREAD (their owners post
//     them to their loops); their owners hand them desired states through their own thread-safe
//     submit(), which wakes poll_block through an eventfd.
// A reconnect or a server restart re-asserts the desired states, and an operator's edit (a
// deleted port) is repaired. TRY_AGAIN (a concurrent writer) retries after the replica catches
// up; a hard error retries with backoff (1 s doubling to 30 s). It beats the "ovsdb-idl"
// heartbeat at least every second, so /healthz notices a wedged thread. Time comes from the
// injected core::Clock (now() only: the thread's waits are OVS's poll timers).
//
// The transport itself reads Open_vSwitch external_ids ovn-remote and system-id: where the
// Southbound is and which chassis it is opened for.

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "ovsdb/config.h"
#include "ovsdb/participant.h"

namespace okna::core {
class HealthRegistry;
}

namespace okna::ovsdb {

class IdlThread {
 public:
  IdlThread(OvsConfig config, core::HealthRegistry& health, core::Clock& clock);
  ~IdlThread();
  IdlThread(const IdlThread&) = delete;
  IdlThread& operator=(const IdlThread&) = delete;

  /** Before start(): a participant, called in the order added (its ops go in that order in the
   *  transaction). Shared: its owner may go before the thread has stopped. */
  void add(std::shared_ptr<Participant> participant);
  /** Starts the thread (the first OVS call happens on it). Idempotent. */
  void start();
  /** Stops and joins the thread; OVSDB is left as it is. Idempotent. */
  void stop();
  /** Asks for a pass soon. Thread-safe, never blocks. */
  void wake();

 private:
  class Loop;

  OvsConfig config_;
  core::HealthRegistry& health_;
  core::Clock& clock_;
  std::vector<std::shared_ptr<Participant>> participants_;
  int wakeFd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace okna::ovsdb
