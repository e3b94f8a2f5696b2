#pragma once
// `--dry-run --ovsdb REMOTE` for the metadata service: one read-only look at the local OVSDB and
// the Southbound (the same conditional monitor as the live agent, no transaction, no liveness
// keys), planned by the same pure planner, against the ovnmeta-* namespaces of this host.

#include <chrono>
#include <nlohmann/json_fwd.hpp>

#include "core/result.h"
#include "metadata/config.h"
#include "ovsdb/config.h"

namespace okna::agent {

/** {"chassis", "southbound": "synced" or why nothing may be removed (planner.h: no VM port
 *  bound here while VMs are on br-int), "namespaces": [{"network", "namespace", "action":
 *  "create"|"keep", "mac", "addresses", "metadataPort", "vmAddresses"}], "remove": [names],
 *  "warnings": [...]}. Blocks the caller at most `timeout`. */
core::Result<nlohmann::json> readMetadataPlanOnce(const ovsdb::OvsConfig& ovs,
                                                  const metadata::MetadataConfig& config,
                                                  std::chrono::milliseconds timeout);

/** The text rendering of that JSON for --output text. */
std::string metadataPlanToText(const nlohmann::json& plan);

}  // namespace okna::agent
