// stepGatewayDrain: when a planned gateway failover starts, holds, ends (drained, timed out,
// no chassis), is cancelled, resumes from the record, and which steps are announced, so that a
// node where nothing is bound sees no GatewayDrainStarted / GatewayDrained pair.
#include "chassis/gateway_drain.h"

#include <gtest/gtest.h>

namespace okna::ovsdb {
namespace {

using What = GatewayDrainStep::What;
using namespace std::chrono_literals;

constexpr std::int64_t kNow = 1'700'000'000;

// The role just went; the record holds the flag; gateways are bound here; SB synced.
GatewayDrainInputs boundHere() {
  GatewayDrainInputs in;
  in.ownsGatewayItem = true;
  in.hasChassis = true;
  in.sbSynced = true;
  in.gatewayPorts = {"cr-lrp-1"};
  in.now = kNow;
  in.timeout = 120s;
  return in;
}

TEST(GatewayDrain, NothingWhileTheRoleIsWanted) {
  auto in = boundHere();
  in.gatewayWanted = true;
  const auto step = stepGatewayDrain({}, in);
  EXPECT_EQ(step.what, What::None);
  EXPECT_FALSE(step.holdOwned());
  EXPECT_EQ(step.state, GatewayDrainState{});
}

TEST(GatewayDrain, NothingWhenTheFlagIsNotTheAgents) {
  auto in = boundHere();
  in.ownsGatewayItem = false;
  const auto step = stepGatewayDrain({}, in);
  EXPECT_EQ(step.what, What::None);
  EXPECT_FALSE(step.holdOwned());
}

TEST(GatewayDrain, StartsWhenGatewaysAreBoundHereAndHoldsTheNetwork) {
  const auto step = stepGatewayDrain({}, boundHere());
  EXPECT_EQ(step.what, What::Started);
  EXPECT_TRUE(step.holdOwned());
  EXPECT_EQ(step.state.since, kNow);
  EXPECT_TRUE(step.state.announced);
  EXPECT_EQ(step.deadline(120s), kNow + 120);
  // The next step with the same inputs holds quietly, with the same start.
  auto in = boundHere();
  in.now = kNow + 30;
  in.ownsGatewayItem = false;  // the flag is gone; the drain lives on in the record
  in.recordedSince = kNow;
  const auto next = stepGatewayDrain(step.state, in);
  EXPECT_EQ(next.what, What::None);
  EXPECT_TRUE(next.holdOwned());
  EXPECT_EQ(next.state.since, kNow);
}

TEST(GatewayDrain, NotNeededWithoutAnyReasonToWait) {
  struct Case {
    const char* name;
    void (*change)(GatewayDrainInputs&);
    const char* why;
  };
  const Case cases[] = {
      {"timeout 0", [](GatewayDrainInputs& in) { in.timeout = 0s; }, "drainTimeoutSeconds is 0"},
      {"no chassis", [](GatewayDrainInputs& in) { in.hasChassis = false; }, "no chassis name"},
      {"nothing bound", [](GatewayDrainInputs& in) { in.gatewayPorts.clear(); },
       "no router gateway is bound"},
  };
  for (const auto& c : cases) {
    auto in = boundHere();
    c.change(in);
    const auto step = stepGatewayDrain({}, in);
    EXPECT_EQ(step.what, What::NotNeeded) << c.name;
    EXPECT_NE(step.why.find(c.why), std::string::npos) << c.name << ": " << step.why;
    EXPECT_FALSE(step.holdOwned()) << c.name;
    EXPECT_TRUE(step.state.done) << c.name;
    // Done: the record still showing the flag (transaction in flight) starts nothing.
    const auto again = stepGatewayDrain(step.state, boundHere());
    EXPECT_EQ(again.what, What::None) << c.name;
    EXPECT_FALSE(again.holdOwned()) << c.name;
  }
}

TEST(GatewayDrain, UnsyncedSouthboundWaitsQuietlyThenDecides) {
  auto in = boundHere();
  in.sbSynced = false;
  in.gatewayPorts.clear();
  const auto waiting = stepGatewayDrain({}, in);
  EXPECT_EQ(waiting.what, What::Waiting);
  EXPECT_TRUE(waiting.holdOwned());
  EXPECT_FALSE(waiting.state.announced);

  // Synced, nothing bound: ends without having been announced (no Started/Drained pair).
  in.sbSynced = true;
  in.now += 1;
  const auto none = stepGatewayDrain(waiting.state, in);
  EXPECT_EQ(none.what, What::Drained);
  EXPECT_FALSE(none.wasAnnounced);
  EXPECT_FALSE(none.holdOwned());

  // Synced, bound: announced then.
  in.gatewayPorts = {"cr-lrp-1"};
  const auto started = stepGatewayDrain(waiting.state, in);
  EXPECT_EQ(started.what, What::Started);
  EXPECT_TRUE(started.state.announced);
  EXPECT_EQ(started.state.since, kNow);
}

TEST(GatewayDrain, EndsWhenTheGatewaysLeave) {
  const auto started = stepGatewayDrain({}, boundHere());
  auto in = boundHere();
  in.ownsGatewayItem = false;
  in.recordedSince = kNow;
  in.gatewayPorts.clear();
  in.now = kNow + 7;
  const auto step = stepGatewayDrain(started.state, in);
  EXPECT_EQ(step.what, What::Drained);
  EXPECT_TRUE(step.wasAnnounced);
  EXPECT_EQ(step.elapsed, 7);
  EXPECT_FALSE(step.holdOwned());
  EXPECT_TRUE(step.state.done);
  // The record still shows the drain until the transaction lands: no new drain.
  in.gatewayPorts = {"cr-lrp-2"};
  EXPECT_EQ(stepGatewayDrain(step.state, in).what, What::None);
  EXPECT_FALSE(stepGatewayDrain(step.state, in).holdOwned());
}

TEST(GatewayDrain, EndsWhenTheChassisNameGoes) {
  const auto started = stepGatewayDrain({}, boundHere());
  auto in = boundHere();
  in.hasChassis = false;
  const auto step = stepGatewayDrain(started.state, in);
  EXPECT_EQ(step.what, What::Drained);
  EXPECT_NE(step.why.find("system-id"), std::string::npos);
}

TEST(GatewayDrain, TimesOut) {
  const auto started = stepGatewayDrain({}, boundHere());
  auto in = boundHere();
  in.now = kNow + 119;
  EXPECT_TRUE(stepGatewayDrain(started.state, in).holdOwned());
  in.now = kNow + 120;
  const auto step = stepGatewayDrain(started.state, in);
  EXPECT_EQ(step.what, What::TimedOut);
  EXPECT_EQ(step.elapsed, 120);
  EXPECT_FALSE(step.holdOwned());
}

TEST(GatewayDrain, RoleBackCancels) {
  const auto started = stepGatewayDrain({}, boundHere());
  auto in = boundHere();
  in.gatewayWanted = true;
  const auto step = stepGatewayDrain(started.state, in);
  EXPECT_EQ(step.what, What::Cancelled);
  EXPECT_FALSE(step.holdOwned());
  EXPECT_EQ(step.state, GatewayDrainState{});
  // A finished drain is forgotten too: losing the role again drains again.
  auto done = started.state;
  done = stepGatewayDrain(done,
                          [] {
                            auto i = boundHere();
                            i.gatewayPorts.clear();
                            return i;
                          }())
             .state;
  EXPECT_TRUE(done.done);
  EXPECT_EQ(stepGatewayDrain(done, in).state, GatewayDrainState{});
}

TEST(GatewayDrain, ANewProcessContinuesTheRecordedDrain) {
  auto in = boundHere();
  in.ownsGatewayItem = false;
  in.recordedSince = kNow - 100;
  const auto step = stepGatewayDrain({}, in);
  EXPECT_TRUE(step.holdOwned());
  EXPECT_EQ(step.state.since, kNow - 100);
  EXPECT_TRUE(step.state.resumed);
  EXPECT_EQ(step.what, What::Started);  // gateways are bound here: say so once
  EXPECT_EQ(step.elapsed, 100);
  EXPECT_EQ(step.deadline(120s), kNow + 20);
  // Past the recorded deadline: times out at once.
  in.recordedSince = kNow - 121;
  EXPECT_EQ(stepGatewayDrain({}, in).what, What::TimedOut);
  // Not synced yet: waits quietly.
  in.recordedSince = kNow - 10;
  in.sbSynced = false;
  EXPECT_EQ(stepGatewayDrain({}, in).what, What::Waiting);
}

TEST(GatewayDrain, ARecordedStartInTheFutureCountsFromNow) {
  auto in = boundHere();
  in.ownsGatewayItem = false;
  in.recordedSince = kNow + 1'000'000;
  const auto step = stepGatewayDrain({}, in);
  EXPECT_EQ(step.state.since, kNow);
  EXPECT_EQ(step.deadline(120s), kNow + 120);
}

}  // namespace
}  // namespace okna::ovsdb
