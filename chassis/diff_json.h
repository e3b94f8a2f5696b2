#pragma once
// The chassis diff as `--dry-run --ovsdb` prints it. The dry run observes through the live
// agent's own transport and participants (agent/dry_run_metadata.h, observeOnce), so there is no
// reader of its own to drift from the agent's.

#include <nlohmann/json_fwd.hpp>

#include "chassis/chassis_diff.h"

namespace okna::ovsdb {

/** {"ops": ["set external_ids:...", ...], "notes": [...]} for --dry-run. */
nlohmann::json diffToJson(const ChassisOps& ops);

}  // namespace okna::ovsdb
