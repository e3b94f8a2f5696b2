#pragma once
// libopenvswitch's own log (vlog: reconnects, TLS handshakes, IDL protocol errors) into the
// agent's logger "ovs", with its level, so that `logging.format: json` stays JSON: vlog's
// console and syslog destinations are turned off and its "file" destination is a pipe, one
// line per message in the fixed pattern "LEVEL|MODULE|MESSAGE", read by a small thread.
//
// Levels: vlog EMER/ERR/WARN/INFO/DBG -> critical/error/warning/info/debug. vlog is asked for
// what the "ovs" component's level shows, except that its INFO chatter (every connect and
// reconnect) needs the component at debug, and its DBG (protocol traces) at trace.

#include <spdlog/common.h>

#include <optional>
#include <string>

namespace okna::ovsdb {

/** Starts the routing once per process (later calls do nothing); the reader thread lives until
 *  the process exits. Call after core::setupLogging. */
void routeOvsLogs();

struct OvsLogLine {
  spdlog::level::level_enum level;
  std::string module;
  std::string message;
  bool operator==(const OvsLogLine&) const = default;
};

/** "WARN|reconnect|unix:/x: connection failed" -> {warn, "reconnect", "unix:/x: ..."}; nullopt
 *  for anything else (a continuation line of a multi-line message). */
std::optional<OvsLogLine> parseOvsLogLine(const std::string& line);

/** The vlog level (0 off, 1 emer, 2 err, 3 warn, 4 info, 5 dbg) for the component's level. */
int vlogLevelFor(spdlog::level::level_enum componentLevel);

}  // namespace okna::ovsdb
