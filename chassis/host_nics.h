#pragma once
// What the host says about a network interface, for guardExternalNic (chassis_desired.h): the
// applier side of the external NIC's safety check, behind an interface so the reconciler can be
// tested with a fake. The Linux implementation reads the agent's own network namespace (the
// agent runs with hostNetwork, where ovs-vswitchd plugs the NIC).

#include <memory>
#include <string>

#include "chassis/chassis_desired.h"

namespace okna::ovsdb {

class HostNics {
 public:
  virtual ~HostNics() = default;
  /** The NIC's addresses and whether the default route (IPv4 or IPv6) goes out of it. A NIC that
   *  does not exist has neither. */
  virtual NicFacts facts(const std::string& nic) = 0;
};

/** getifaddrs(3) for the addresses; /proc/net/route and /proc/net/ipv6_route (under `procNet`)
 *  for the default routes. */
class LinuxHostNics final : public HostNics {
 public:
  explicit LinuxHostNics(std::string procNet = "/proc/net") : procNet_(std::move(procNet)) {}
  // HostNics
  NicFacts facts(const std::string& nic) override;

 private:
  std::string procNet_;
};

}  // namespace okna::ovsdb
