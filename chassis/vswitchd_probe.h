#pragma once
// Whether ovs-vswitchd, the daemon that makes the datapath follow OVSDB, is running. OVSDB alone
// cannot tell: a dead ovs-vswitchd leaves every Interface's ofport and the bridges in the
// database as they were, so the chassis looks configured while nothing forwards.
//
// The probe reads ovs-vswitchd's pid file in its run directory (<runDir>/ovs-vswitchd.pid, as
// ovs-appctl -t ovs-vswitchd does) and connects to its unixctl socket
// (<runDir>/ovs-vswitchd.<pid>.ctl, else <runDir>/ovs-vswitchd.ctl for a daemon started with
// --unixctl=<runDir>/ovs-vswitchd.ctl). A connection accepted means the process holds its
// listening socket; refused (a SIGKILLed daemon leaves its files behind) or no pid file / socket
// (a clean stop, or a crash its fatal-signal handler cleaned up after) means it is gone.
// A socket the agent may not connect to (EACCES) is taken for running: a permission mistake
// must not hold every node unready (the detail says it was not checked).
// Robust in a container: only the run directory is shared (the chart mounts the host's
// /run/openvswitch); the pid is a name in it, never signalled: kill(pid, 0) would look in the
// pod's own PID namespace, where the host's pid means nothing.

#include <memory>
#include <string>

#include "ovsdb/config.h"  // runDirOfRemote

namespace okna::ovsdb {

struct VswitchdStatus {
  bool running = false;
  // What was found: "pid 123, unixctl /run/openvswitch/ovs-vswitchd.123.ctl", or why it is
  // taken for gone ("/run/openvswitch/ovs-vswitchd.123.ctl: Connection refused").
  std::string detail;
  bool operator==(const VswitchdStatus&) const = default;
};

class VswitchdProbe {
 public:
  virtual ~VswitchdProbe() = default;
  /** Looks now; never blocks (a non-blocking connect on a local socket). */
  virtual VswitchdStatus check() = 0;
};

/** The probe of the run directory `runDir` (OvsConfig::vswitchdRunDir). */
class UnixctlVswitchdProbe final : public VswitchdProbe {
 public:
  explicit UnixctlVswitchdProbe(std::string runDir) : runDir_(std::move(runDir)) {}
  // VswitchdProbe
  VswitchdStatus check() override;

 private:
  std::string runDir_;
};

// runDirOfRemote: ovsdb/config.h (where the remote is the transport's).

}  // namespace okna::ovsdb
