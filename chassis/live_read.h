#pragma once
// One-shot read of the local Open_vSwitch database for `--dry-run --ovsdb unix:PATH`: connects,
// waits for the first contents, returns what the reconciler would observe, writes nothing.
// Blocks the calling thread (at most `timeout`); not for the event loop.

#include <chrono>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "chassis/chassis_diff.h"
#include "core/result.h"

namespace okna::ovsdb {

core::Result<ObservedOvs> readObservedOnce(const std::string& remote,
                                           std::chrono::milliseconds timeout);

/** {"ops": ["set external_ids:...", ...], "notes": [...]} for --dry-run. */
nlohmann::json diffToJson(const ChassisOps& ops);

}  // namespace okna::ovsdb
