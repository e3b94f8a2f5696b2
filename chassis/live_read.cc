#include "chassis/live_read.h"

#include <memory>
#include <nlohmann/json.hpp>

#include "chassis/observed_read.h"
#include "ovsdb/ovs_chassis_glue.h"
#include "ovsdb/ovs_log.h"

namespace okna::ovsdb {

core::Result<ObservedOvs> readObservedOnce(const std::string& remote,
                                           std::chrono::milliseconds timeout) {
  // libopenvswitch's log through the agent's logger, as in the daemon: setting vlog levels here
  // would turn its console output back on in a process that already routed it.
  routeOvsLogs();
  std::unique_ptr<okna_ovs_idl, void (*)(okna_ovs_idl*)> idl(
      okna_ovs_idl_open_chassis(remote.c_str()), okna_ovs_idl_close);
  if (!idl) return core::makeError("--ovsdb " + remote + ": cannot open");
  if (okna_ovs_idl_wait_synced(idl.get(), static_cast<int>(timeout.count())) != OKNA_OVSDB_OK)
    return core::makeError("--ovsdb " + remote + ": not connected after " +
                           std::to_string(timeout.count()) + " ms (" +
                           okna_ovs_idl_last_error(idl.get()) + ")");
  okna_ovs_idl_run(idl.get());
  return readObserved(idl.get());
}

nlohmann::json diffToJson(const ChassisOps& ops) {
  nlohmann::json out{{"ops", nlohmann::json::array()}, {"notes", ops.notes}};
  for (const auto& op : ops.ops) out["ops"].push_back(describe(op));
  return out;
}

}  // namespace okna::ovsdb
