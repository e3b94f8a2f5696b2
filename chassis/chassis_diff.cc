#include "chassis/chassis_diff.h"

#include <algorithm>
#include <functional>
#include <set>

namespace okna::ovsdb {

namespace {

template <typename T>
bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// ovn-controller and Neutron split these lists on ',' and compare trimmed items; matching the
// same way keeps " enable-chassis-as-gw" (written by someone else) from being added twice.
std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// Empty tokens (",,") are kept: they are someone else's bytes.
std::vector<std::string> splitList(const std::string& value) {
  std::vector<std::string> out;
  if (value.empty()) return out;
  size_t start = 0;
  for (;;) {
    const size_t comma = value.find(',', start);
    out.push_back(value.substr(start, comma == std::string::npos ? value.npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out;
}

// The part of an item that must be unique in its list: "availability-zones" of
// "availability-zones=az1", "physnet1" of "physnet1:br-ex".
std::string itemKey(const std::string& item, char separator) {
  return item.substr(0, item.find(separator));
}

struct KeyChanges {
  std::vector<OvsOp> sets;
  std::vector<OvsOp> deletes;
};

// Merges the agent's `desired` items into the observed list at `key`. `ownedBefore` are the items
// the record says the agent added; the items it owns afterwards are written to `ownedAfter`.
// `held(item)`: an owned item no longer desired stays (a gateway drain is running, or its input
// is malformed), and a desired item with the same key waits. Desired items not added (a foreign
// or held item has their key) are appended to `deferred`.
void mergeList(const std::string& key, char separator, const std::vector<std::string>& desired,
               const std::vector<std::string>& ownedBefore,
               const std::function<bool(const std::string&)>& held, const ObservedOvs& observed,
               const OwnershipRecord& before, std::vector<std::string>& ownedAfter, ChassisOps& out,
               KeyChanges& changes, std::vector<std::string>& deferred) {
  const auto it = observed.externalIds.find(key);
  const bool exists = it != observed.externalIds.end();
  const std::vector<std::string> tokens =
      exists ? splitList(it->second) : std::vector<std::string>{};
  std::vector<std::string> trimmed;
  for (const auto& t : tokens) trimmed.push_back(trim(t));

  std::vector<std::string> result;
  std::set<std::string> placed;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = trimmed[i];
    if (contains(desired, t)) {
      result.push_back(tokens[i]);
      placed.insert(t);
      if (contains(ownedBefore, t) && !contains(ownedAfter, t)) ownedAfter.push_back(t);
    } else if (contains(ownedBefore, t) && held(t)) {
      result.push_back(tokens[i]);
      if (!contains(ownedAfter, t)) ownedAfter.push_back(t);
    } else if (contains(ownedBefore, t)) {
      // Ours and no longer wanted: replaced in place by the wanted item with the same key, if any.
      for (const auto& d : desired) {
        if (itemKey(d, separator) != itemKey(t, separator) || placed.count(d) ||
            contains(trimmed, d))
          continue;
        result.push_back(d);
        placed.insert(d);
        ownedAfter.push_back(d);
        break;
      }
    } else {
      result.push_back(tokens[i]);
    }
  }
  for (const auto& d : desired) {
    if (placed.count(d)) continue;
    std::string foreign;
    std::string kept;
    for (const auto& r : result) {
      const std::string t = trim(r);
      if (itemKey(t, separator) != itemKey(d, separator)) continue;
      (contains(ownedAfter, t) ? kept : foreign) = t;
    }
    if (!kept.empty()) {
      out.notes.push_back(key + ": keeping \"" + kept +
                          "\" (gateway drain or malformed input); \"" + d + "\" replaces it then");
      deferred.push_back(d);
      continue;
    }
    if (!foreign.empty()) {
      out.notes.push_back(key + ": \"" + foreign + "\" was set by someone else; not adding \"" + d +
                          "\"");
      deferred.push_back(d);
      continue;
    }
    result.push_back(d);
    placed.insert(d);
    ownedAfter.push_back(d);
  }

  bool created = contains(before.createdKeys, key);
  const std::string value = join(result);
  if (!exists) {
    if (result.empty()) return;
    changes.sets.push_back({OvsOp::Kind::SetExternalId, key, value});
    created = true;
  } else if (result.empty() && created) {
    changes.deletes.push_back({OvsOp::Kind::DeleteExternalId, key, ""});
    created = false;
  } else if (value != it->second) {
    changes.sets.push_back({OvsOp::Kind::SetExternalId, key, value});
  }
  if (created) out.owned.createdKeys.push_back(key);
}

const DesiredBridge* findBridge(const DesiredChassis& d, const std::string& name) {
  for (const auto& b : d.bridges)
    if (b.name == name) return &b;
  return nullptr;
}

std::vector<std::string> trimmedItems(const ObservedOvs& observed, const std::string& key) {
  std::vector<std::string> out;
  if (const auto it = observed.externalIds.find(key); it != observed.externalIds.end())
    for (const auto& t : splitList(it->second)) out.push_back(trim(t));
  return out;
}

// What the Node asks for that is present in OVSDB, with the gateway items even without the
// role (an enable-chassis-as-gw nobody owns is what a lost record leaves behind).
OwnershipRecord presentWanted(const DesiredChassis& d, const ObservedOvs& observed) {
  OwnershipRecord r;
  const auto cms = trimmedItems(observed, kCmsOptions);
  for (const auto& item : d.gatewayCmsItems)
    if (contains(cms, item)) r.cmsItems.push_back(item);
  const auto mappings = trimmedItems(observed, kBridgeMappings);
  for (const auto& m : d.bridgeMappings)
    if (contains(mappings, m.item())) r.mappings.push_back(m.item());
  for (const auto& b : d.bridges) {
    const auto obs = observed.bridges.find(b.name);
    if (obs == observed.bridges.end()) continue;
    r.bridges.push_back(b.name);
    for (const auto& port : b.ports)
      if (contains(obs->second.ports, port)) r.ports.emplace_back(b.name, port);
  }
  return r;
}

// `present` minus what `owned` already lists.
OwnershipRecord notOwned(const OwnershipRecord& present, const OwnershipRecord& owned) {
  OwnershipRecord r;
  for (const auto& i : present.cmsItems)
    if (!contains(owned.cmsItems, i)) r.cmsItems.push_back(i);
  for (const auto& m : present.mappings)
    if (!contains(owned.mappings, m)) r.mappings.push_back(m);
  for (const auto& b : present.bridges)
    if (!contains(owned.bridges, b)) r.bridges.push_back(b);
  for (const auto& p : present.ports)
    if (!contains(owned.ports, p)) r.ports.push_back(p);
  return r;
}

void adopt(OwnershipRecord& owned, const OwnershipRecord& more) {
  const OwnershipRecord add = notOwned(more, owned);
  owned.cmsItems.insert(owned.cmsItems.end(), add.cmsItems.begin(), add.cmsItems.end());
  owned.mappings.insert(owned.mappings.end(), add.mappings.begin(), add.mappings.end());
  owned.bridges.insert(owned.bridges.end(), add.bridges.begin(), add.bridges.end());
  owned.ports.insert(owned.ports.end(), add.ports.begin(), add.ports.end());
}

std::string describeItems(const OwnershipRecord& r) {
  std::vector<std::string> parts;
  for (const auto& i : r.cmsItems) parts.push_back(std::string(kCmsOptions) + " item " + i);
  for (const auto& m : r.mappings) parts.push_back("bridge mapping " + m);
  for (const auto& b : r.bridges) parts.push_back("bridge " + b);
  for (const auto& [b, p] : r.ports) parts.push_back("port " + b + "/" + p);
  if (parts.empty()) return "nothing the Node asks for";
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// What the agent owns before this diff: the record in OVSDB; else (deleted, or unreadable) its
// copy; else nothing, and the loss is marked in the record (lost) when there is evidence of one:
// an unreadable record, or no record and an unreadable copy. (No record and no copy cannot be
// told from a first start on a node configured by hand: nothing is reported.)
// A loss lasts until the operator answers it (desired.adoptOwnership).
OwnershipRecord resolveOwnership(const DesiredChassis& desired, const ObservedOvs& observed,
                                 const OwnershipCopy& copy, OwnershipOutcome& outcome) {
  using Kind = OwnershipOutcome::Kind;
  const std::string name = std::string("external_ids:") + kOwnershipKey;
  const bool copyKnown = copy.state == OwnershipCopy::State::Known;
  const std::string noCopy = copy.state == OwnershipCopy::State::Unreadable
                                 ? copy.where + " is unreadable (" + copy.error + ")"
                                 : "there is no copy (" + copy.where + " is missing)";
  OwnershipRecord before;
  std::string lostWhy;
  if (const auto it = observed.externalIds.find(kOwnershipKey); it != observed.externalIds.end()) {
    auto parsed = parseOwnership(it->second);
    if (parsed) {
      before = std::move(*parsed);
    } else if (copyKnown) {
      before = copy.record;
      outcome = {Kind::Recovered, name + " is unreadable (" + parsed.error().message +
                                      "); recovered from " + copy.where};
    } else {
      lostWhy = name + " is unreadable (" + parsed.error().message + ") and " + noCopy;
    }
  } else if (copyKnown) {
    before = copy.record;
    if (!before.empty())
      outcome = {Kind::Recovered, name + " was deleted; recovered from " + copy.where};
  } else if (copy.state == OwnershipCopy::State::Unreadable) {
    // No copy at all is a first start (items already there are an operator's); an unreadable
    // one is a loss.
    lostWhy = name + " is missing and " + noCopy;
  }
  if (!lostWhy.empty()) before.lost = true;
  if (!before.lost) return before;

  const OwnershipRecord unowned = notOwned(presentWanted(desired, observed), before);
  switch (desired.adoptOwnership) {
    case AdoptOwnership::Adopt:
      adopt(before, unowned);
      // A key holding only adopted items is taken as created by the agent too: it goes with
      // its last item, as it would have had the record not been lost.
      for (const auto& [key, owned] : {std::pair{kCmsOptions, &before.cmsItems},
                                       std::pair{kBridgeMappings, &before.mappings}}) {
        const auto items = trimmedItems(observed, key);
        if (!items.empty() && !contains(before.createdKeys, std::string(key)) &&
            std::all_of(items.begin(), items.end(),
                        [&](const std::string& i) { return contains(*owned, i); }))
          before.createdKeys.push_back(key);
      }
      before.lost = false;
      outcome = {Kind::Adopted,
                 "ownership adopted as the annotation " + std::string(kAdoptOwnershipKey) +
                     "=true asks: " + describeItems(unowned) + " are now the agent's"};
      break;
    case AdoptOwnership::Disown:
      before.lost = false;
      outcome = {Kind::Disowned, "ownership loss acknowledged (annotation " +
                                     std::string(kAdoptOwnershipKey) +
                                     "=none): " + describeItems(unowned) + " stay someone else's"};
      break;
    case AdoptOwnership::No:
      outcome = {Kind::Lost,
                 (lostWhy.empty() ? name + " says the ownership was lost" : lostWhy) +
                     ": what the agent applied before is unknown, so it treats " +
                     describeItems(unowned) +
                     " as someone else's and will never remove them. If the agent put them "
                     "there, annotate the Node " +
                     kAdoptOwnershipKey + "=true to adopt them (=none to leave them)"};
      break;
  }
  return before;
}

}  // namespace

ChassisOps diffChassis(const DesiredChassis& desired, const ObservedOvs& observed) {
  return diffChassis(desired, observed, desired.ownershipCopy);
}

ChassisOps diffChassis(const DesiredChassis& desired, const ObservedOvs& observed,
                       const OwnershipCopy& copy) {
  ChassisOps out;
  if (!observed.hasRoot) {
    out.notes.push_back("the Open_vSwitch table has no row yet (ovs-vsctl init)");
    return out;
  }
  const auto recordIt = observed.externalIds.find(kOwnershipKey);
  OwnershipRecord before = resolveOwnership(desired, observed, copy, out.ownership);
  KeyChanges keys;
  // The gateway flag is never held (Neutron moves the gateways only once it is gone); the zone
  // item is, while the zone label is malformed and the node is still a gateway.
  std::vector<std::string> deferred;
  const bool keepZone = desired.keepOwnedZone && desired.gateway;
  mergeList(
      kCmsOptions, '=', desired.cmsItems(), before.cmsItems,
      [&](const std::string& item) {
        return keepZone && itemKey(item, '=') == "availability-zones";
      },
      observed, before, out.owned.cmsItems, out, keys, deferred);
  std::vector<std::string> mappingItems;
  for (const auto& m : desired.bridgeMappings) mappingItems.push_back(m.item());
  const bool keepMappings = desired.holdOwned || desired.keepOwnedMappings;
  deferred.clear();
  mergeList(
      kBridgeMappings, ':', mappingItems, before.mappings,
      [&](const std::string&) { return keepMappings; }, observed, before, out.owned.mappings, out,
      keys, deferred);
  // A bridge wanted only for mappings that were not added (a foreign entry or a held item has
  // their physnet) is not created: it would serve no physnet.
  std::set<std::string> blocked;
  for (const auto& m : desired.bridgeMappings)
    if (contains(deferred, m.item())) blocked.insert(m.bridge);
  for (const auto& m : desired.bridgeMappings)
    if (!contains(deferred, m.item())) blocked.erase(m.bridge);
  const bool keepBridges = keepMappings || desired.keepOwnedPorts;
  const bool keepPorts = desired.holdOwned || desired.keepOwnedPorts;
  out.verifyExternalIds = !keys.sets.empty() || !keys.deletes.empty();

  // Same datapath as the integration bridge: a netdev (DPDK/userspace) chassis needs netdev
  // bridges. ovn-controller creates br-int with external_ids:ovn-bridge-datapath-type; else the
  // integration bridge's own (external_ids:ovn-bridge, default br-int).
  std::string datapathType;
  if (const auto it = observed.externalIds.find("ovn-bridge-datapath-type");
      it != observed.externalIds.end()) {
    datapathType = it->second;
  } else {
    const auto name = observed.externalIds.find("ovn-bridge");
    const auto brInt =
        observed.bridges.find(name == observed.externalIds.end() ? "br-int" : name->second);
    if (brInt != observed.bridges.end()) datapathType = brInt->second.datapathType;
  }
  const auto sameDatapath = [](const std::string& a, const std::string& b) {
    return a == b || ((a.empty() || a == "system") && (b.empty() || b == "system"));
  };
  const auto bridgeOfPort = [&](const std::string& port) -> std::string {
    for (const auto& [name, b] : observed.bridges)
      if (contains(b.ports, port)) return name;
    return "";
  };

  std::vector<OvsOp> adds;
  for (const auto& b : desired.bridges) {
    const auto obs = observed.bridges.find(b.name);
    const bool exists = obs != observed.bridges.end();
    if (!exists && blocked.count(b.name)) {
      out.notes.push_back("not creating bridge " + b.name +
                          ": its bridge mapping was not applied (see above)");
      continue;
    }
    if (!exists) {
      adds.push_back({OvsOp::Kind::AddBridge, b.name, datapathType});
      out.owned.bridges.push_back(b.name);
      out.verifyBridges = true;
    } else if (contains(before.bridges, b.name)) {
      out.owned.bridges.push_back(b.name);
      if (!sameDatapath(obs->second.datapathType, datapathType)) {
        adds.push_back({OvsOp::Kind::SetBridgeDatapathType, b.name, datapathType});
        out.verifyBridges = true;
      }
    }
    for (const auto& port : b.ports) {
      const std::pair<std::string, std::string> key{b.name, port};
      if (exists && contains(obs->second.ports, port)) {
        if (contains(before.ports, key)) out.owned.ports.push_back(key);
        continue;
      }
      if (const std::string other = bridgeOfPort(port); !other.empty()) {
        out.notes.push_back("port " + port + " is on bridge " + other + "; not moving it to " +
                            b.name);
        continue;
      }
      adds.push_back({OvsOp::Kind::AddPort, b.name, port});
      out.owned.ports.push_back(key);
    }
  }

  std::vector<OvsOp> bridgeDeletes;
  std::set<std::string> deletedBridges;
  for (const auto& name : before.bridges) {
    if (findBridge(desired, name)) continue;
    const auto obs = observed.bridges.find(name);
    if (obs == observed.bridges.end()) continue;  // already gone: forget it
    if (keepBridges) {
      out.owned.bridges.push_back(name);
      continue;
    }
    std::vector<std::string> foreign;
    for (const auto& port : obs->second.ports)
      if (port != name && !contains(before.ports, std::pair{name, port})) foreign.push_back(port);
    if (foreign.empty()) {
      bridgeDeletes.push_back({OvsOp::Kind::DeleteBridge, name, ""});
      deletedBridges.insert(name);
    } else {
      // ovn-controller removes its patch ports once the mapping is gone; the bridge goes on a
      // later pass. A port an operator added keeps it (and this note) until they remove it.
      out.owned.bridges.push_back(name);
      out.notes.push_back("bridge " + name + " is no longer wanted but has ports the agent did " +
                          "not add (" + join(foreign) + "); not deleting it");
    }
  }
  std::vector<OvsOp> portDeletes;
  for (const auto& [bridge, port] : before.ports) {
    const DesiredBridge* d = findBridge(desired, bridge);
    if ((d && contains(d->ports, port)) || deletedBridges.count(bridge)) continue;
    const auto obs = observed.bridges.find(bridge);
    if (obs == observed.bridges.end() || !contains(obs->second.ports, port)) continue;
    if (keepPorts) {
      out.owned.ports.emplace_back(bridge, port);
    } else {
      portDeletes.push_back({OvsOp::Kind::DeletePort, bridge, port});
    }
  }

  out.owned.drainSince = desired.drainSince;
  out.owned.lost = before.lost;
  out.ops = std::move(adds);
  for (auto* group : {&keys.sets, &portDeletes, &bridgeDeletes, &keys.deletes})
    out.ops.insert(out.ops.end(), group->begin(), group->end());
  if (out.owned.empty()) {
    if (recordIt != observed.externalIds.end())
      out.ops.push_back({OvsOp::Kind::DeleteExternalId, kOwnershipKey, ""});
  } else if (const std::string record = formatOwnership(out.owned);
             recordIt == observed.externalIds.end() || recordIt->second != record) {
    out.ops.push_back({OvsOp::Kind::SetExternalId, kOwnershipKey, record});
  }
  if (!out.ops.empty() && !out.verifyExternalIds) out.verifyExternalIds = true;
  return out;
}

std::vector<std::string> failedInterfaces(const DesiredChassis& desired,
                                          const ObservedOvs& observed) {
  std::vector<std::string> out;
  for (const auto& b : desired.bridges) {
    const auto obs = observed.bridges.find(b.name);
    if (obs == observed.bridges.end()) continue;
    std::vector<std::string> wanted{b.name};
    wanted.insert(wanted.end(), b.ports.begin(), b.ports.end());
    for (const auto& port : wanted) {
      const auto f = obs->second.failedPorts.find(port);
      if (f != obs->second.failedPorts.end())
        out.push_back("bridge " + b.name + " port " + port + ": " + f->second);
    }
  }
  return out;
}

}  // namespace okna::ovsdb
