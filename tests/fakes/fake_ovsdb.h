#pragma once
// An in-memory stand-in for the local Open_vSwitch database and the Southbound view, behind the
// chassis reconciler's OvsdbApplier seam. A submitted desired state is diffed with the real
// diffChassis and its ops applied to the in-memory row (so the ownership record is the one the
// agent writes), then a snapshot is published as the IDL thread would. The test sets what
// ovn-controller and the Southbound would say (system-id, gateway ports bound here) and can hold
// writes back to look at the state in between.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chassis/chassis_diff.h"
#include "chassis/chassis_participant.h"
#include "chassis/ovsdb_applier.h"

namespace okna::testing {

class FakeOvsdb {
 public:
  FakeOvsdb() {
    state_->snapshot.connected = true;
    state_->snapshot.ovs.mutableCopy().hasRoot = true;
  }

  /** For the ChassisReconciler constructor. */
  ovsdb::OvsdbApplierFactory factory() {
    return [state = state_](ovsdb::OvsdbApplier::SnapshotCallback publish) {
      state->publish = std::move(publish);
      return std::make_unique<Applier>(state);
    };
  }

  bool started() const { return state_->started; }
  /** Every desired state submitted, in order. */
  const std::vector<ovsdb::DesiredChassis>& submitted() const { return state_->submitted; }
  const ovsdb::Snapshot& snapshot() const { return state_->snapshot; }
  ovsdb::OwnershipRecord record() const {
    const auto& ids = state_->snapshot.ovs->externalIds;
    const auto it = ids.find(ovsdb::kOwnershipKey);
    if (it == ids.end()) return {};
    auto r = ovsdb::parseOwnership(it->second);
    return r ? *r : ovsdb::OwnershipRecord{};
  }
  std::string externalId(const std::string& key) const {
    const auto& ids = state_->snapshot.ovs->externalIds;
    const auto it = ids.find(key);
    return it == ids.end() ? "" : it->second;
  }
  bool hasBridge(const std::string& name) const {
    return state_->snapshot.ovs->bridges.count(name) != 0;
  }

  /** What ovn-controller and the Southbound say; published at once. */
  void setChassis(const std::string& systemId) {
    state_->snapshot.systemId = systemId;
    publish();
  }
  void setGatewayPorts(std::vector<std::string> ports, bool synced = true) {
    state_->snapshot.sb.synced = synced;
    state_->snapshot.sb.gatewayPorts = std::move(ports);
    publish();
  }
  void setConnected(bool connected) {
    state_->snapshot.connected = connected;
    publish();
  }
  /** Holds the agent's writes back: each desired state is recorded but neither applied nor
   *  published until releaseWrites(), as when the agent's transaction is committed in OVSDB (and
   *  seen by ovn-controller) but its reply is not yet read by the agent's IDL thread. */
  void holdWrites() { state_->holding = true; }
  void releaseWrites() {
    state_->holding = false;
    for (const auto& [desired, generation] : std::exchange(state_->held, {}))
      Applier::commit(*state_, desired, generation);
  }
  /** Publishes the current state (as the IDL thread does after any change). */
  void publish() { state_->publishSnapshot(); }

 private:
  struct State {
    bool started = false;
    ovsdb::OvsdbApplier::SnapshotCallback publish;
    std::vector<ovsdb::DesiredChassis> submitted;
    ovsdb::Snapshot snapshot;
    bool holding = false;
    std::vector<std::pair<ovsdb::DesiredChassis, std::uint64_t>> held;
    void publishSnapshot() {
      if (started && publish) publish(std::make_shared<const ovsdb::Snapshot>(snapshot));
    }
  };

  class Applier : public ovsdb::OvsdbApplier {
   public:
    explicit Applier(std::shared_ptr<State> state) : state_(std::move(state)) {}
    void start() override {
      state_->started = true;
      state_->publishSnapshot();
    }
    void submit(const ovsdb::DesiredChassis& desired, std::uint64_t generation) override {
      state_->submitted.push_back(desired);
      if (state_->holding)
        state_->held.emplace_back(desired, generation);
      else
        commit(*state_, desired, generation);
    }
    static void commit(State& state, const ovsdb::DesiredChassis& desired,
                       std::uint64_t generation) {
      apply(state, ovsdb::diffChassis(desired, *state.snapshot.ovs));
      state.snapshot.convergedGeneration = generation;
      state.publishSnapshot();
    }
    void stop() override { state_->started = false; }

   private:
    static void apply(State& state, const ovsdb::ChassisOps& ops) {
      using Kind = ovsdb::OvsOp::Kind;
      auto& ovs = state.snapshot.ovs.mutableCopy();
      for (const auto& op : ops.ops) {
        switch (op.kind) {
          case Kind::SetExternalId:
            ovs.externalIds[op.a] = op.b;
            break;
          case Kind::DeleteExternalId:
            ovs.externalIds.erase(op.a);
            break;
          case Kind::AddBridge:
            ovs.bridges[op.a] = {op.b, {op.a}};
            break;
          case Kind::AddPort:
          case Kind::AddIfacePort:
            ovs.bridges[op.a].ports.push_back(op.b);
            break;
          case Kind::DeletePort: {
            auto& p = ovs.bridges[op.a].ports;
            p.erase(std::remove(p.begin(), p.end(), op.b), p.end());
            break;
          }
          case Kind::DeleteBridge:
            ovs.bridges.erase(op.a);
            break;
          case Kind::SetBridgeDatapathType:
            ovs.bridges[op.a].datapathType = op.b;
            break;
          case Kind::SetIfaceExternalIds:
            break;
        }
      }
    }
    std::shared_ptr<State> state_;
  };

  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace okna::testing
