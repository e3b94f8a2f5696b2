#include "netns/types.h"

#include <arpa/inet.h>

#include <cctype>
#include <cstdio>

namespace okna::netns {
namespace {

constexpr size_t kMaxNetworkIdLength = 200;
constexpr size_t kVethIdChars = 10;

std::string vethBase(const std::string& networkId) {
  return "tap" + networkId.substr(0, kVethIdChars);
}

}  // namespace

core::Result<std::string> canonicalCidr(const std::string& cidr) {
  const auto slash = cidr.find('/');
  if (slash == std::string::npos) {
    return core::makeError("address '" + cidr + "': missing /prefix", EINVAL);
  }
  const std::string ip = cidr.substr(0, slash);
  const std::string prefixText = cidr.substr(slash + 1);
  unsigned char buf[16];
  int family = AF_INET;
  int maxPrefix = 32;
  if (inet_pton(AF_INET, ip.c_str(), buf) != 1) {
    if (inet_pton(AF_INET6, ip.c_str(), buf) != 1) {
      return core::makeError("address '" + cidr + "': not an IPv4 or IPv6 address", EINVAL);
    }
    family = AF_INET6;
    maxPrefix = 128;
  }
  if (prefixText.empty() || prefixText.size() > 3 ||
      prefixText.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(prefixText) > maxPrefix) {
    return core::makeError(
        "address '" + cidr + "': prefix length must be 0.." + std::to_string(maxPrefix), EINVAL);
  }
  char text[INET6_ADDRSTRLEN];
  inet_ntop(family, buf, text, sizeof(text));
  return std::string(text) + "/" + std::to_string(std::stoi(prefixText));
}

core::Result<std::string> canonicalMac(const std::string& mac) {
  const auto bad = [&] {
    return core::makeError("mac '" + mac + "': expected six hex octets like fa:16:3e:00:00:01",
                           EINVAL);
  };
  if (mac.size() != 17) return bad();
  std::string out = mac;
  for (size_t i = 0; i < out.size(); ++i) {
    const auto c = static_cast<unsigned char>(out[i]);
    if (i % 3 == 2) {
      if (c != ':') return bad();
    } else {
      if (!std::isxdigit(c)) return bad();
      out[i] = static_cast<char>(std::tolower(c));
    }
  }
  return out;
}

std::string eui64LinkLocal(const std::string& mac) {
  unsigned int o[6];
  if (std::sscanf(mac.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x", &o[0], &o[1], &o[2], &o[3], &o[4],
                  &o[5]) != 6) {
    return "";
  }
  unsigned char a[16] = {0xfe, 0x80};
  a[8] = static_cast<unsigned char>(o[0] ^ 0x02);  // flip the universal/local bit
  a[9] = static_cast<unsigned char>(o[1]);
  a[10] = static_cast<unsigned char>(o[2]);
  a[11] = 0xff;
  a[12] = 0xfe;
  a[13] = static_cast<unsigned char>(o[3]);
  a[14] = static_cast<unsigned char>(o[4]);
  a[15] = static_cast<unsigned char>(o[5]);
  char text[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, a, text, sizeof(text));
  return std::string(text) + "/64";
}

std::string hostIfaceForNamespace(const std::string& name) {
  const std::string prefix = kMetadataPrefix;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return "";
  return vethBase(name.substr(prefix.size())) + "0";
}

core::Result<DesiredNamespace> metadataNamespaceFor(const std::string& networkId,
                                                    const std::string& mac,
                                                    const std::vector<std::string>& addresses) {
  if (networkId.empty()) return core::makeError("network id: must not be empty", EINVAL);
  if (networkId.size() > kMaxNetworkIdLength) {
    return core::makeError(
        "network id: longer than " + std::to_string(kMaxNetworkIdLength) + " characters", EINVAL);
  }
  if (networkId.find('/') != std::string::npos || networkId.find('\0') != std::string::npos) {
    return core::makeError("network id '" + networkId + "': must not contain '/' or NUL", EINVAL);
  }
  for (char c : networkId.substr(0, kVethIdChars)) {
    // The first characters name the veth ends, and the kernel refuses these in interface names.
    if (std::isspace(static_cast<unsigned char>(c)) || c == ':') {
      return core::makeError("network id '" + networkId +
                                 "': whitespace or ':' in the first 10 characters (veth names)",
                             EINVAL);
    }
  }
  if (networkId == "." || networkId == "..") {
    return core::makeError("network id '" + networkId + "': not usable as a file name", EINVAL);
  }
  auto canonical = canonicalMac(mac);
  if (!canonical) return canonical.error();
  DesiredNamespace d;
  d.name = kMetadataPrefix + networkId;
  d.hostIface = vethBase(networkId) + "0";
  d.innerIface = vethBase(networkId) + "1";
  d.mac = *canonical;
  for (const auto& a : addresses) {
    auto c = canonicalCidr(a);
    if (!c) return c.error();
    bool duplicate = false;
    for (const auto& have : d.addresses) duplicate = duplicate || have == *c;
    if (!duplicate) d.addresses.push_back(*c);
  }
  return d;
}

}  // namespace okna::netns
