#pragma once
// Where the agent's OpenStack credentials come from: a cloud of a clouds.yaml (the OpenStack
// client convention: --os-cloud / $OS_CLOUD, $OS_CLIENT_CONFIG_FILE, ./clouds.yaml,
// ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml), or the agent config's
// `placement.auth` with its secrets in files.

#include <string>
#include <vector>

#include "core/http_client.h"
#include "core/result.h"
#include "placement/config.h"

namespace okna::placement {

/** Everything needed to get a token and find Placement. Holds secrets: never log it whole. */
struct ResolvedAuth {
  AuthConfig auth;
  std::string regionName;
  std::string interface = "public";
  std::string endpointOverride;
  // Nova's compute API (availability zones), bypassing the catalog's "compute" service.
  std::string computeEndpointOverride;
  core::TlsOptions tls;
  // "clouds.yaml /etc/openstack/clouds.yaml cloud openkeel" or "agent config": for messages.
  std::string source;
};

/** The clouds.yaml files tried, in order (only existing files matter). */
std::vector<std::string> cloudsYamlSearchPath(const std::string& explicitPath);

/** The cloud `name` from the first clouds.yaml of the search path that defines it. */
core::Result<ResolvedAuth> loadCloud(const std::string& name, const std::string& explicitPath);

/** config.cloud (or $OS_CLOUD) from clouds.yaml if set, else config.auth. */
core::Result<ResolvedAuth> resolveAuth(const PlacementConfig& config);

/** The first line of a secret file, without its line ending; the error names the file only. */
core::Result<std::string> readSecretFile(const std::string& path, const std::string& what);

}  // namespace okna::placement
