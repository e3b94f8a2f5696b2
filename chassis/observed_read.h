#pragma once
// What the agent observes of the local Open_vSwitch database, read from a synced IDL replica.
// The chassis participant's reader, on the transport's thread (the dry run observes through the
// same participant on a read-only transport, so it sees what the reconciler sees).

#include "chassis/chassis_diff.h"
#include "ovsdb/ovs_idl_glue.h"

namespace okna::ovsdb {

ObservedOvs readObserved(okna_ovs_idl* idl);

}  // namespace okna::ovsdb
