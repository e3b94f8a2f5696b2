#pragma once
// Neutron's liveness keys on this chassis's Chassis_Private row, as Neutron master's OVN
// metadata agent keeps them (neutron/agent/ovn/metadata/agent.py), decided without I/O: the IDL
// thread (idl_thread.cc) reads the row, asks this planner what to write, and writes it.
//
//   neutron:ovn-metadata-id      uuid5 of the chassis name (written once, never overwritten)
//   neutron:ovn-bridge           the integration bridge (Neutron master's VIF bridge)
//   neutron:ovn-metadata-sb-cfg  SB_Global.nb_cfg; the first echo of a process (or of a
//                                re-created row) at once, each later one after a random delay
//                                (Neutron: 0 to max(min(agent_down_time // 3, 10), 3) s), so that
//                                a fleet does not answer one nb_cfg bump in one burst; a bump
//                                while an echo is pending is carried by it
//   neutron:ovn-neutron-agent-*  the OVN Neutron agent's keys, which neutron-server reads before
//   neutron:description-neutron-agent   the metadata agent's: removed (a host taken over from
//                                neutron-ovn-agent would otherwise look dead)

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace okna::ovsdb {

inline constexpr const char* kNeutronMetadataIdKey = "neutron:ovn-metadata-id";
inline constexpr const char* kNeutronSbCfgKey = "neutron:ovn-metadata-sb-cfg";
inline constexpr const char* kNeutronOvnBridgeKey = "neutron:ovn-bridge";
inline constexpr const char* kOvnNeutronAgentKeys[] = {"neutron:ovn-neutron-agent-sb-cfg",
                                                       "neutron:ovn-neutron-agent-id",
                                                       "neutron:description-neutron-agent"};

/** What the planner remembers between passes (the IDL thread keeps it). */
struct NeutronLivenessState {
  using TimePoint = std::chrono::steady_clock::time_point;
  // nb_cfg was echoed once since the process started or the row was re-created.
  bool echoed = false;
  // When the pending echo is due; unset: none pending.
  std::optional<TimePoint> echoDueAt;
  bool operator==(const NeutronLivenessState&) const = default;
};

struct NeutronLivenessInputs {
  // The row's external_ids as the replica has them.
  std::map<std::string, std::string> ids;
  // SB_Global.nb_cfg; negative: unknown (nothing to echo).
  long long nbCfg = -1;
  std::string chassisName;
  // external_ids:ovn-bridge of the local Open_vSwitch row ("" -> br-int).
  std::string bridge;
  NeutronLivenessState::TimePoint now;
  // The delay a newly scheduled echo gets (drawn by the caller: 0 to the configured maximum).
  std::chrono::milliseconds randomDelay{0};
};

struct NeutronLivenessPlan {
  // Keys to set and keys to remove, in one transaction; both empty: nothing to write now.
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<std::string> remove;
  // The write echoes nb_cfg.
  bool echoesNbCfg = false;
  // An echo was scheduled in this pass, after this delay (for the log).
  std::optional<std::chrono::milliseconds> scheduled;
  // The state once the write (if any) is sent.
  NeutronLivenessState next;
};

NeutronLivenessPlan planNeutronLiveness(const NeutronLivenessInputs& in,
                                        const NeutronLivenessState& state);

}  // namespace okna::ovsdb
