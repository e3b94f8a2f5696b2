#pragma once
// `--dry-run --ovsdb REMOTE`: one read-only look at the local OVSDB and the Southbound through
// the OVSDB transport as the live agent runs it (ovsdb/idl_thread.h with OvsConfig::readOnly:
// the chassis and metadata participants, the same monitors and conditions, no transaction, no
// liveness keys), then the live agent's own decisions on what it saw: the chassis decision
// (chassis/chassis_decision.h: the external NIC's check with the host's real NIC facts, the
// gateway drain's step) and the metadata namespaces' (metadata/namespace_decision.h) against
// the ovnmeta-* namespaces of this host.

#include <chrono>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <set>
#include <string>

#include "core/result.h"
#include "metadata/config.h"
#include "ovsdb/config.h"

namespace okna::ovsdb {
struct Snapshot;
}
namespace okna::metadata {
struct SouthboundView;
}

namespace okna::agent {

/** What one observation saw: each participant's published view. */
struct Observation {
  // The chassis participant's (chassis/chassis_participant.h).
  std::shared_ptr<const ovsdb::Snapshot> chassis;
  // The metadata participant's (metadata/sb_participant.h); null unless asked for.
  std::shared_ptr<const metadata::SouthboundView> metadata;
};

/** Observes once: waits (at most `timeout`, blocking the caller) for the local OVSDB, and for
 *  the Southbound's chassis view when a remote and a chassis name are known (without it the
 *  gateway drain is decided as not synced, as the live agent's first decision is); with
 *  `metadata`, the Southbound metadata view must be complete (an error otherwise). */
core::Result<Observation> observeOnce(const ovsdb::OvsConfig& ovs, bool metadata,
                                      std::chrono::milliseconds timeout);

/** The ovnmeta-* namespaces on this host (read-only). */
core::Result<std::set<std::string>> listMetadataNamespaces();

/** {"chassis", "southbound": "synced" or why nothing may be removed (planner.h: no VM port
 *  bound here while VMs are on br-int), "decisions": decisionsToJson (every namespace: create,
 *  keep, remove or hold, and why), "namespaces": [{"network", "namespace", "action":
 *  "create"|"keep", "reason", "mac", "addresses", "metadataPort", "hostInterface",
 *  "vmAddresses"}], "remove": [names], "hold": [names], "warnings": [...]}: decideMetadata on
 *  the metadata participant's view and the host's ovnmeta-* namespaces (listMetadataNamespaces). */
nlohmann::json decideMetadataOnce(const metadata::SouthboundView& view,
                                  const metadata::MetadataConfig& config, bool active,
                                  const std::set<std::string>& namespaces, bool retired = false);

/** The text rendering of that JSON for --output text. */
std::string metadataPlanToText(const nlohmann::json& plan);

}  // namespace okna::agent
