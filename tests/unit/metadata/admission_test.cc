// metadata/admission.h on plain Occupants: counting per port and per project, the scope that is
// full, who makes room, and how Nova slots are taken, waited for and handed on.

#include "metadata/admission.h"

#include <gtest/gtest.h>

#include <deque>
#include <vector>

#include "metadata/config.h"

namespace okna::metadata {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using TimePoint = Occupant::TimePoint;

const TimePoint kT0 = TimePoint{} + std::chrono::hours(1);

// Records what admission asks of it.
struct FakeOccupant final : Occupant {
  bool proceed() override {
    ++proceeded;
    return canProceed;
  }
  void waitsAt(Scope scope) override { waits.push_back(scope); }
  int proceeded = 0;
  bool canProceed = true;
  std::vector<Scope> waits;
};

Caps smallCaps() {
  Caps c;
  c.connectionsPerPort = 2;
  c.connectionsPerProject = 3;
  c.connectionsPerNetwork = 5;
  c.inFlightPerPort = 1;
  c.inFlightPerProject = 2;
  c.inFlightPerNetwork = 3;
  return c;
}

TEST(AdmissionCaps, AProjectGetsItsShareOfTheNetworkNeverLessThanOneVm) {
  MetadataLimits limits;  // 64 / 16 per network, 8 / 4 per VM, share 0.5
  Caps c = Caps::from(limits);
  EXPECT_EQ(c.connectionsPerPort, 8u);
  EXPECT_EQ(c.connectionsPerProject, 32u);
  EXPECT_EQ(c.connectionsPerNetwork, 64u);
  EXPECT_EQ(c.inFlightPerPort, 4u);
  EXPECT_EQ(c.inFlightPerProject, 8u);
  EXPECT_EQ(c.inFlightPerNetwork, 16u);
  limits.projectShare = 0.01;
  c = Caps::from(limits);
  EXPECT_EQ(c.connectionsPerProject, 8u) << "at least one VM's own";
  EXPECT_EQ(c.inFlightPerProject, 4u);
  // A share that is the whole network never binds before the network: its cap is the one hit.
  limits.projectShare = 1;
  c = Caps::from(limits);
  EXPECT_EQ(c.connectionsPerProject, Caps::kUnbounded);
  EXPECT_EQ(c.inFlightPerProject, Caps::kUnbounded);
}

TEST(AdmissionSeats, CountsPerPortAndPerProjectAndForgetsThemWithTheirLastConnection) {
  Seats seats(smallCaps());
  FakeOccupant a1, a2, b1;
  seats.seat(a1, "port-a", "project-x", kT0);
  seats.seat(a2, "port-a", "project-x", kT0);
  seats.seat(b1, "port-b", "project-x", kT0);
  ASSERT_NE(seats.port("port-a"), nullptr);
  EXPECT_EQ(seats.port("port-a")->connections, 2u);
  EXPECT_EQ(seats.port("port-b")->connections, 1u);
  EXPECT_EQ(seats.project("project-x")->connections, 3u);
  EXPECT_EQ(seats.connections(), 3u);
  seats.unseat(a1);
  seats.unseat(a2);
  EXPECT_EQ(seats.port("port-a"), nullptr);
  EXPECT_EQ(seats.project("project-x")->connections, 1u);
  seats.unseat(b1);
  EXPECT_EQ(seats.project("project-x"), nullptr);
  EXPECT_EQ(seats.connections(), 0u);
  seats.unseat(b1);  // twice: nothing
  EXPECT_EQ(seats.connections(), 0u);
}

TEST(AdmissionSeats, APortWithoutAProjectIsAProjectOfItsOwn) {
  Seats seats(smallCaps());
  FakeOccupant a, b;
  seats.seat(a, "port-a", "", kT0);
  seats.seat(b, "port-b", "", kT0);
  EXPECT_EQ(seats.project("port-a")->connections, 1u);
  EXPECT_EQ(seats.project("port-b")->connections, 1u);
  seats.unseat(a);
  seats.unseat(b);
}

TEST(AdmissionSeats, FullNamesTheNarrowestScopeWithoutRoom) {
  Seats seats(smallCaps());  // 2 per port, 3 per project, 5 per network
  std::deque<FakeOccupant> os(5);
  EXPECT_FALSE(seats.full("p1", "x"));
  seats.seat(os[0], "p1", "x", kT0);
  seats.seat(os[1], "p1", "x", kT0);
  EXPECT_EQ(seats.full("p1", "x"), Scope::Port);
  EXPECT_FALSE(seats.full("p2", "x"));
  seats.seat(os[2], "p2", "x", kT0);
  EXPECT_EQ(seats.full("p2", "x"), Scope::Project);
  EXPECT_EQ(seats.full("p3", "x"), Scope::Project);
  EXPECT_FALSE(seats.full("p3", "y"));
  seats.seat(os[3], "p3", "y", kT0);
  seats.seat(os[4], "p4", "z", kT0);
  EXPECT_EQ(seats.full("p5", "w"), Scope::Network);
  EXPECT_EQ(seats.full("p1", "x"), Scope::Port) << "the narrowest first";
  for (auto& o : os) seats.unseat(o);
}

TEST(AdmissionSeats, TheConnectionThatDidLeastForTheLongestMakesRoomNeverOneWithNova) {
  Seats seats(smallCaps());
  FakeOccupant idleOld, asking, answering, arriving, other;
  seats.seat(idleOld, "p1", "x", kT0);
  seats.seat(asking, "p2", "x", kT0);
  seats.seat(answering, "p2", "x", kT0);
  seats.seat(arriving, "p3", "y", kT0);
  seats.seat(other, "p4", "z", kT0);
  asking.setActivity(Activity::Asking, kT0 - seconds(100));
  answering.setActivity(Activity::Answering, kT0 + seconds(1));  // its answer unread since then
  idleOld.setActivity(Activity::Waiting, kT0 + seconds(2));
  arriving.setActivity(Activity::Waiting, kT0 + seconds(3));  // a request's bytes arriving
  other.setActivity(Activity::Waiting, kT0 + seconds(4));
  EXPECT_EQ(seats.leastDone(Scope::Network, "p9", "q"), &answering) << "the oldest, not Asking";
  EXPECT_EQ(seats.leastDone(Scope::Project, "p1", "x"), &answering);
  EXPECT_EQ(seats.leastDone(Scope::Port, "p1", "x"), &idleOld);
  EXPECT_EQ(seats.leastDone(Scope::Project, "p3", "y"), &arriving);
  EXPECT_EQ(seats.leastDone(Scope::Port, "p9", "x"), nullptr) << "a port with no connection";
  answering.setActivity(Activity::Asking, kT0 + seconds(5));
  idleOld.setActivity(Activity::Asking, kT0 + seconds(5));
  EXPECT_EQ(seats.leastDone(Scope::Port, "p1", "x"), nullptr) << "its only one is with Nova";
  EXPECT_EQ(seats.leastDone(Scope::Project, "p2", "x"), nullptr);
  EXPECT_EQ(seats.leastDone(Scope::Network, "", ""), &arriving);
  for (FakeOccupant* o : {&idleOld, &asking, &answering, &arriving, &other}) seats.unseat(*o);
}

TEST(AdmissionSeats, OverstayingIsDoingNothingForNovaForTheLimit) {
  FakeOccupant o;
  o.setActivity(Activity::Waiting, kT0);
  EXPECT_FALSE(overstays(o, kT0 + milliseconds(1999), milliseconds(2000)));
  EXPECT_TRUE(overstays(o, kT0 + milliseconds(2000), milliseconds(2000)));
  o.setActivity(Activity::Answering, kT0);
  EXPECT_TRUE(overstays(o, kT0 + seconds(3), milliseconds(2000)));
  o.setActivity(Activity::Asking, kT0);
  EXPECT_FALSE(overstays(o, kT0 + seconds(300), milliseconds(2000)));
}

TEST(AdmissionSeats, BusyAtThreeQuartersOfTheNetworksCap) {
  Caps caps = smallCaps();
  caps.connectionsPerNetwork = 4;
  caps.connectionsPerPort = 4;
  caps.connectionsPerProject = 4;
  Seats seats(caps);
  std::deque<FakeOccupant> os(3);
  seats.seat(os[0], "p", "x", kT0);
  seats.seat(os[1], "p", "x", kT0);
  EXPECT_FALSE(seats.busy());
  seats.seat(os[2], "p", "x", kT0);
  EXPECT_TRUE(seats.busy());
  for (auto& o : os) seats.unseat(o);
}

// Slots are taken per port, then per project, then per network; a request waits at the first
// scope without one, in order, and goes on when one is handed back.
TEST(AdmissionSlots, ARequestWaitsAtTheFirstFullScopeAndGoesOnInOrder) {
  Seats seats(smallCaps());  // in flight: 1 per port, 2 per project, 3 per network
  FakeOccupant a1, a2, b1, c1, d1, e1;
  seats.seat(a1, "a", "x", kT0);
  seats.seat(a2, "a", "x", kT0);
  seats.seat(b1, "b", "x", kT0);
  seats.seat(c1, "c", "x", kT0);
  seats.seat(d1, "d", "y", kT0);
  seats.seat(e1, "e", "z", kT0);
  for (FakeOccupant* o : {&a1, &a2, &b1, &c1, &d1, &e1}) seats.admit(*o);
  EXPECT_EQ(a1.proceeded, 1);
  EXPECT_EQ(a2.waits, std::vector<Scope>{Scope::Port});
  EXPECT_EQ(b1.proceeded, 1);
  EXPECT_EQ(c1.waits, std::vector<Scope>{Scope::Project}) << "x has its 2";
  EXPECT_EQ(d1.proceeded, 1);
  EXPECT_EQ(e1.waits, std::vector<Scope>{Scope::Network}) << "the network has its 3";
  EXPECT_EQ(seats.network().inFlight, 3u);
  EXPECT_EQ(seats.project("x")->inFlight, 2u);

  // a1 done, its slots handed on widest first: the network's to e1 (first there), x's to c1
  // (which then waits for the network's), port a's to a2 (which then waits for x's).
  seats.release(a1);
  EXPECT_EQ(e1.proceeded, 1);
  EXPECT_EQ(c1.waits, (std::vector<Scope>{Scope::Project, Scope::Network}));
  EXPECT_EQ(a2.waits, (std::vector<Scope>{Scope::Port, Scope::Project}));
  EXPECT_EQ(c1.proceeded + a2.proceeded, 0);
  // b1 done: c1 gets the network's slot, a2 x's and waits for the network's; then d1 done.
  seats.release(b1);
  EXPECT_EQ(c1.proceeded, 1);
  EXPECT_EQ(a2.waits.back(), Scope::Network);
  seats.release(d1);
  EXPECT_EQ(a2.proceeded, 1);
  for (FakeOccupant* o : {&c1, &e1, &a2}) seats.release(*o);
  // Every request reached Nova exactly once, and everything is given back.
  for (FakeOccupant* o : {&a1, &a2, &b1, &c1, &d1, &e1}) EXPECT_EQ(o->proceeded, 1);
  EXPECT_EQ(seats.network().inFlight, 0u);
  EXPECT_EQ(seats.project("x")->inFlight, 0u);
  EXPECT_TRUE(seats.network().waiting.empty());
  for (FakeOccupant* o : {&a1, &a2, &b1, &c1, &d1, &e1}) seats.unseat(*o);
}

// A request that can no longer use its slots (too late) gives them to the next, however many
// in a row cannot.
TEST(AdmissionSlots, SlotsARequestCannotUseGoToTheNextHoweverManyInARowCannot) {
  Caps caps;
  caps.connectionsPerPort = caps.connectionsPerProject = caps.connectionsPerNetwork = 10000;
  caps.inFlightPerPort = caps.inFlightPerProject = 10000;
  caps.inFlightPerNetwork = 1;
  Seats seats(caps);
  FakeOccupant first;
  seats.seat(first, "p0", "x", kT0);
  seats.admit(first);
  std::deque<FakeOccupant> late(5000);
  for (std::size_t i = 0; i < late.size(); ++i) {
    seats.seat(late[i], "p" + std::to_string(i + 1), "x", kT0);
    late[i].canProceed = false;
    seats.admit(late[i]);
  }
  FakeOccupant last;
  seats.seat(last, "last", "x", kT0);
  seats.admit(last);
  seats.release(first);
  for (const auto& o : late) EXPECT_EQ(o.proceeded, 1);
  EXPECT_EQ(last.proceeded, 1) << "the slot passed over 5000 late requests";
  EXPECT_EQ(seats.network().inFlight, 1u);
  seats.release(last);
  EXPECT_EQ(seats.network().inFlight, 0u);
  EXPECT_EQ(seats.project("x")->inFlight, 0u);
  seats.unseat(first);
  seats.unseat(last);
  for (auto& o : late) seats.unseat(o);
  EXPECT_EQ(seats.project("x"), nullptr);
}

TEST(AdmissionSlots, AConnectionClosedWhileWaitingLeavesItsQueueAndItsSlotsGoOn) {
  Seats seats(smallCaps());
  FakeOccupant a1, a2, a3;
  seats.seat(a1, "a", "x", kT0);
  seats.seat(a2, "a", "x", kT0);
  seats.seat(a3, "a", "x", kT0);
  seats.admit(a1);
  seats.admit(a2);
  seats.admit(a3);
  ASSERT_TRUE(a2.queued());
  seats.unseat(a2);
  EXPECT_FALSE(a2.queued());
  EXPECT_EQ(seats.port("a")->waiting.size(), 1u);
  seats.unseat(a1);  // closed while at Nova: its slots go to a3
  EXPECT_EQ(a3.proceeded, 1);
  EXPECT_EQ(a2.proceeded, 0);
  seats.release(a3);
  EXPECT_EQ(seats.network().inFlight, 0u);
  seats.unseat(a3);
  EXPECT_EQ(seats.port("a"), nullptr);
}

}  // namespace
}  // namespace okna::metadata
