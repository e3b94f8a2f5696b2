#pragma once
// Southbound rows for the planner's tests: a datapath's metadata port (localport).
#include <string>

#include "metadata/metadata_ports.h"

namespace okna::metadata::sb_rows {

inline ovsdb::SbPort localport(const std::string& dp, const std::string& mac0,
                               const std::string& cidrs) {
  ovsdb::SbPort p;
  p.uuid = "lp-" + dp;
  p.logicalPort = "md-" + dp;
  p.type = "localport";
  p.datapath = dp;
  p.mac0 = mac0;
  p.cidrs = cidrs;
  p.deviceOwner = "network:distributed";
  return p;
}

}  // namespace okna::metadata::sb_rows
