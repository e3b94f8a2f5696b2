#pragma once
// A PortLookup from a table the test fills (the agent's real one is the SB index).

#include <map>
#include <string>
#include <utility>

#include "metadata/lookup.h"

namespace okna::metadata {

class StaticLookup final : public PortLookup {
 public:
  void set(const std::string& networkId, const std::string& ip, LookupResult result) {
    table_[{networkId, ip}] = std::move(result);
  }
  void setPort(const std::string& networkId, const std::string& ip, InstancePort port) {
    set(networkId, ip, LookupResult{1, std::move(port), ""});
  }
  // PortLookup
  LookupResult lookup(const std::string& networkId, const std::string& clientIp) const override {
    ++calls;
    auto it = table_.find({networkId, clientIp});
    return it == table_.end() ? LookupResult{} : it->second;
  }
  mutable int calls = 0;

 private:
  std::map<std::pair<std::string, std::string>, LookupResult> table_;
};

}  // namespace okna::metadata
