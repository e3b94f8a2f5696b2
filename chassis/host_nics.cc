#include "chassis/host_nics.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <fstream>
#include <sstream>

namespace okna::ovsdb {

namespace {

// /proc/net/route: "Iface Destination Gateway Flags RefCnt Use Metric Mask ...", hex fields.
bool ipv4DefaultVia(const std::string& path, const std::string& nic) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string iface, dest, gateway, flags, refcnt, use, metric, mask;
    if (!(f >> iface >> dest >> gateway >> flags >> refcnt >> use >> metric >> mask)) continue;
    if (iface == nic && dest == "00000000" && mask == "00000000") return true;
  }
  return false;
}

// /proc/net/ipv6_route: "dest plen src splen nexthop metric refcnt use flags iface", no header.
bool ipv6DefaultVia(const std::string& path, const std::string& nic) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string dest, plen, src, splen, nexthop, metric, refcnt, use, flags, iface;
    if (!(f >> dest >> plen >> src >> splen >> nexthop >> metric >> refcnt >> use >> flags >>
          iface))
      continue;
    if (iface == nic && plen == "00" && dest == std::string(32, '0')) return true;
  }
  return false;
}

}  // namespace

NicFacts LinuxHostNics::facts(const std::string& nic) {
  NicFacts out;
  out.carriesDefaultRoute =
      ipv4DefaultVia(procNet_ + "/route", nic) || ipv6DefaultVia(procNet_ + "/ipv6_route", nic);
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (const ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || nic != a->ifa_name) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
      ::inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text);
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
      ::inet_ntop(AF_INET6, &sin6->sin6_addr, text, sizeof text);
    } else {
      continue;
    }
    out.addresses.emplace_back(text);
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace okna::ovsdb
