#pragma once
// What the agent observes of the local Open_vSwitch database, read from a synced IDL replica.
// The one reader for both the IDL thread and the dry run's one-shot read (live_read.h), so that
// the dry run's diff sees what the reconciler sees. Call it on the thread that owns the IDL.

#include "chassis/chassis_diff.h"
#include "ovsdb/ovs_idl_glue.h"

namespace okna::ovsdb {

ObservedOvs readObserved(okna_ovs_idl* idl);

}  // namespace okna::ovsdb
