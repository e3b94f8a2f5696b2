#include "placement/clouds_yaml.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace okna::placement {

namespace {

std::string scalar(const YAML::Node& map, const char* key) {
  const YAML::Node v = map[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

// openstacksdk spells the same auth plugin several ways.
std::string authType(const std::string& t, const YAML::Node& auth) {
  if (t.empty())
    return scalar(auth, "application_credential_id").empty() &&
                   scalar(auth, "application_credential_name").empty()
               ? "password"
               : "v3applicationcredential";
  if (t == "password" || t == "v3password") return "password";
  if (t == "v3applicationcredential" || t == "applicationcredential" ||
      t == "application_credential")
    return "v3applicationcredential";
  if (t == "none" || t == "noauth") return "none";
  return "unsupported:" + t;
}

}  // namespace

std::vector<std::string> cloudsYamlSearchPath(const std::string& explicitPath) {
  if (!explicitPath.empty()) return {explicitPath};
  std::vector<std::string> out;
  if (const char* env = std::getenv("OS_CLIENT_CONFIG_FILE"); env != nullptr && *env != '\0')
    out.emplace_back(env);
  out.emplace_back("clouds.yaml");
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    out.push_back(std::string(home) + "/.config/openstack/clouds.yaml");
  out.emplace_back("/etc/openstack/clouds.yaml");
  return out;
}

core::Result<std::string> readSecretFile(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) return core::makeError(what + " " + path + ": cannot be read", errno);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
  if (line.empty()) return core::makeError(what + " " + path + ": empty");
  return line;
}

core::Result<ResolvedAuth> loadCloud(const std::string& name, const std::string& explicitPath) {
  std::string tried;
  for (const auto& path : cloudsYamlSearchPath(explicitPath)) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    YAML::Node doc;
    try {
      doc = YAML::LoadFile(path);
    } catch (const YAML::Exception& e) {
      return core::makeError(path + ": invalid YAML: " + e.what());
    }
    const YAML::Node cloud = doc["clouds"] ? doc["clouds"][name] : YAML::Node();
    if (!cloud || !cloud.IsMap()) {
      tried += (tried.empty() ? "" : ", ") + path + " (no cloud " + name + ")";
      continue;
    }
    ResolvedAuth r;
    r.source = "clouds.yaml " + path + " cloud " + name;
    const YAML::Node auth = cloud["auth"] ? cloud["auth"] : YAML::Node(YAML::NodeType::Map);
    AuthConfig& a = r.auth;
    a.type = authType(scalar(cloud, "auth_type"), auth);
    if (a.type.starts_with("unsupported:"))
      return core::makeError(r.source + ": auth_type " + a.type.substr(12) +
                             " is not supported (password, v3applicationcredential, none)");
    a.authUrl = scalar(auth, "auth_url");
    a.username = scalar(auth, "username");
    a.userId = scalar(auth, "user_id");
    a.password = scalar(auth, "password");
    a.projectName = scalar(auth, "project_name");
    a.projectId = scalar(auth, "project_id");
    a.applicationCredentialId = scalar(auth, "application_credential_id");
    a.applicationCredentialName = scalar(auth, "application_credential_name");
    a.applicationCredentialSecret = scalar(auth, "application_credential_secret");
    a.systemScope = scalar(auth, "system_scope");
    // domain_name/domain_id set both user and project domains, as in keystoneauth.
    const std::string domainName = scalar(auth, "domain_name");
    const std::string domainId = scalar(auth, "domain_id");
    a.userDomainName = scalar(auth, "user_domain_name");
    a.userDomainId = scalar(auth, "user_domain_id");
    a.projectDomainName = scalar(auth, "project_domain_name");
    a.projectDomainId = scalar(auth, "project_domain_id");
    if (a.userDomainName.empty() && a.userDomainId.empty()) {
      a.userDomainName = domainName;
      a.userDomainId = domainId;
    }
    if (a.projectDomainName.empty() && a.projectDomainId.empty()) {
      a.projectDomainName = domainName;
      a.projectDomainId = domainId;
    }
    if (a.userDomainName.empty() && a.userDomainId.empty()) a.userDomainName = "Default";
    if (a.projectDomainName.empty() && a.projectDomainId.empty()) a.projectDomainName = "Default";
    r.regionName = scalar(cloud, "region_name");
    if (auto i = scalar(cloud, "interface"); !i.empty()) r.interface = i;
    r.endpointOverride = scalar(cloud, "placement_endpoint_override");
    r.tls.caFile = scalar(cloud, "cacert");
    if (auto v = scalar(cloud, "verify"); v == "false" || v == "False" || v == "no")
      r.tls.insecureSkipVerify = true;
    if (a.type != "none" && a.authUrl.empty())
      return core::makeError(r.source + ": auth.auth_url is missing");
    if (a.type == "none" && r.endpointOverride.empty())
      return core::makeError(r.source + ": auth_type none needs placement_endpoint_override");
    return r;
  }
  return core::makeError("cloud " + name + " not found in any clouds.yaml (tried: " + tried + ")");
}

core::Result<ResolvedAuth> resolveAuth(const PlacementConfig& config) {
  std::string cloud = config.cloud;
  if (cloud.empty())
    if (const char* env = std::getenv("OS_CLOUD"); env != nullptr) cloud = env;
  ResolvedAuth r;
  if (!cloud.empty()) {
    auto loaded = loadCloud(cloud, config.cloudsFile);
    if (!loaded) return loaded.error();
    r = std::move(*loaded);
  } else {
    r.auth = config.auth;
    r.source = "agent config placement.auth";
    if (r.auth.type != "none" && r.auth.authUrl.empty())
      return core::makeError(
          "placement: no credentials (set placement.cloud or $OS_CLOUD for a clouds.yaml, or "
          "placement.auth)");
  }
  // The agent config fills what the cloud leaves out; an explicit override always wins.
  if (r.regionName.empty()) r.regionName = config.regionName;
  if (cloud.empty()) r.interface = config.interface;
  if (!config.endpointOverride.empty()) r.endpointOverride = config.endpointOverride;
  if (r.tls.caFile.empty()) r.tls.caFile = config.cacert;
  if (!config.verify) r.tls.insecureSkipVerify = true;
  if (r.auth.type == "none" && r.endpointOverride.empty())
    return core::makeError("placement: auth type none needs placement.endpointOverride");
  return r;
}

}  // namespace okna::placement
