#include "metadata/sb_values.h"

#include "core/http_fields.h"

namespace okna::ovsdb {

namespace {

// neutron-lib's limits: device_id and project_id 255, names 255. A port's mac column holds the
// MAC and every fixed IP; neutron:cidrs every fixed IP with its prefix: room for hundreds.
constexpr std::size_t kMaxId = 255;
constexpr std::size_t kMaxAddressList = 8192;

bool isHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Printable ASCII; spaces only where the column is a space-separated list.
std::string badBytes(std::string_view value, bool spaces) {
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) return "holds a control character";
    if (c >= 0x80) return "holds a byte outside printable ASCII";
    if (c == ' ' && !spaces) return "holds a space";
  }
  return "";
}

std::string check(std::string_view what, std::string_view value, std::size_t max, bool spaces) {
  if (value.size() > max) return std::string(what) + " is longer than " + std::to_string(max);
  if (auto bad = badBytes(value, spaces); !bad.empty()) return std::string(what) + " " + bad;
  return "";
}

}  // namespace

bool isUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !isHex(s[i])) return false;
  }
  return true;
}

bool isProjectId(std::string_view s) {
  return s.size() <= kMaxId && core::isHttpToken(s);
}

std::string sbPortProblem(const SbPort& port) {
  const std::pair<const char*, std::string_view> ids[] = {
      {"logical_port", port.logicalPort},
      {"type", port.type},
      {"external_ids:neutron:device_id", port.deviceId},
      {"external_ids:neutron:project_id", port.projectId}};
  for (const auto& [what, value] : ids)
    if (auto p = check(what, value, kMaxId, false); !p.empty()) return p;
  if (auto p = check("mac", port.mac0, kMaxAddressList, true); !p.empty()) return p;
  if (auto p = check("external_ids:neutron:cidrs", port.cidrs, kMaxAddressList, true); !p.empty())
    return p;
  const bool vif = port.type.empty() || port.type == "external";
  if (!vif || port.deviceId.empty()) return "";
  if (!isUuid(port.deviceId)) return "external_ids:neutron:device_id is not a UUID";
  if (!isProjectId(port.projectId))
    return port.projectId.empty() ? "external_ids:neutron:project_id is empty"
                                  : "external_ids:neutron:project_id is not a token";
  return "";
}

bool isSafeNetworkId(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (const char c : id) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace okna::ovsdb
