// MetadataServer on 127.0.0.1 with a scripted Nova (FakeHttpClient): the request Nova gets, the
// per-namespace limits, keep-alive, HTTP/1.0, pipelining and removal. The real CurlHttpClient
// against a fake Nova is in tests/integration/metadata.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "metadata/signature.h"
#include "server_fixture.h"
#include "tests/fakes/process.h"

namespace okna::metadata {
namespace {

TEST_F(ServerTest, NovaGetsOnlyNeutronsHeadersWhateverTheClientForges) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(getRequest("/openstack/latest/meta_data.json?x=1",
                                "X-Instance-ID: evil\r\nx-forwarded-for: 10.0.0.99\r\n"
                                "X-Tenant-ID: evil\r\nX-Instance-ID-Signature: evil\r\n"
                                "X-OVN-Network-ID: other-net\r\nX-Metadata-Provider: lb\r\n"
                                "Cookie: c=1\r\n")));
  auto p = nextNova();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->request.method, "GET");
  EXPECT_EQ(p->request.url, "http://10.9.9.9:8775/openstack/latest/meta_data.json?x=1");
  const std::map<std::string, std::string> expected{
      {"X-Forwarded-For", "127.0.0.1"},
      {"X-Instance-ID", std::string(kVm.deviceId)},
      {"X-Tenant-ID", std::string(kVm.projectId)},
      {"X-Instance-ID-Signature", signInstanceId("", kVm.deviceId)}};
  EXPECT_EQ(p->request.headers, expected);
  answer(p, 200, R"({"uuid": "x"})");
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headers["content-type"], "application/json");
  EXPECT_EQ(r->body, R"({"uuid": "x"})");
  EXPECT_EQ(metric("okna_metadata_requests_total{code=\"200\"}"), 1);
}

// The address was the VM's when it connected (an address of no port is not even accepted:
// server_tenant_test.cc); then the Southbound changed.
TEST_F(ServerTest, LookupMissOrAmbiguityIs404WithoutAskingNova) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(waitFor([&] { return connections() == 1; }, std::chrono::seconds(10)));
  loop_.run([&] { lookup_.set(kNet, "127.0.0.1", LookupResult{2, {}, "u1, u2"}); });
  ASSERT_TRUE(c.send(getRequest("/latest/meta-data/")));
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  loop_.run([&] { lookup_.set(kNet, "127.0.0.1", LookupResult{}); });
  ASSERT_TRUE(c.send(getRequest("/latest/meta-data/")));
  r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(loop_.run([&] { return http_.all().size(); }), 0u);
}

TEST_F(ServerTest, PostBodyForwardedAndKeepAliveReused) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(
      "POST /openstack/latest/password HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"));
  auto p = nextNova();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->request.method, "POST");
  EXPECT_EQ(p->request.body, "hello");
  answer(p, 200, "", "text/plain");
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // The same connection serves the next request.
  ASSERT_TRUE(c.send(getRequest("/latest")));
  p = nextNova();
  ASSERT_TRUE(p);
  answer(p, 404, "");
  r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(connections(), 1u);
}

TEST_F(ServerTest, ExpectContinueGetsContinue) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(
      c.send("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
             "Expect: 100-continue\r\n\r\n"));
  auto interim = c.read();
  ASSERT_TRUE(interim);
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(c.send("abc"));
  auto p = nextNova();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->request.body, "abc");
  answer(p, 200, "ok");
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(ServerTest, PipelinedRequestsAnsweredInOrder) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(getRequest("/one") + getRequest("/two")));
  auto first = nextNova();
  ASSERT_TRUE(first);
  EXPECT_NE(first->request.url.find("/one"), std::string::npos);
  answer(first, 200, "1");
  auto second = nextNova();
  ASSERT_TRUE(second);
  EXPECT_NE(second->request.url.find("/two"), std::string::npos);
  answer(second, 200, "2");
  auto r1 = c.read();
  auto r2 = c.read();
  ASSERT_TRUE(r1 && r2);
  EXPECT_EQ(r1->body, "1");
  EXPECT_EQ(r2->body, "2");
}

TEST_F(ServerTest, ARequestSentWhileTheLastIsAnsweredIsReadAfterTheAnswer) {
  // A request that arrives while Nova is still answering the last one: its readiness is
  // reported while no read is pending, and it must still be read once the answer is out.
  start();
  RawClient c(port_);
  for (int round = 0; round < 20; ++round) {
    const std::string first = "/first/" + std::to_string(round);
    const std::string second = "/second/" + std::to_string(round);
    ASSERT_TRUE(c.send(getRequest(first)));
    auto p1 = nextNova();
    ASSERT_TRUE(p1);
    EXPECT_NE(p1->request.url.find(first), std::string::npos);
    ASSERT_TRUE(c.send(getRequest(second)));
    // Let the loop see the second request arrive before the first is answered.
    for (int i = 0; i < 3; ++i) loop_.run([] {});
    answer(p1, 200, "1");
    auto p2 = nextNova();
    ASSERT_TRUE(p2) << "round " << round;
    EXPECT_NE(p2->request.url.find(second), std::string::npos);
    answer(p2, 200, "2");
    auto r1 = c.read();
    auto r2 = c.read();
    ASSERT_TRUE(r1 && r2);
    EXPECT_EQ(r1->body, "1");
    EXPECT_EQ(r2->body, "2");
  }
}

TEST_F(ServerTest, AClientGoneWhileItsRequestIsAnsweredIsClosedAfterwards) {
  start();
  std::shared_ptr<okna::testing::FakeHttpClient::Pending> p;
  {
    RawClient c(port_);
    ASSERT_TRUE(c.send(getRequest("/bye")));
    p = nextNova();
    ASSERT_TRUE(p);
    EXPECT_EQ(connections(), 1u);
  }  // closed before Nova answers
  for (int i = 0; i < 3; ++i) loop_.run([] {});
  answer(p, 200, "late");
  waitFor([&] { return connections() == 0; }, std::chrono::seconds(10));
  EXPECT_EQ(connections(), 0u);
}

TEST_F(ServerTest, ManyPipelinedAnswersWrittenAtOnceStayInOrder) {
  // Answers without Nova (lookup miss: 404) are written inside the handler that read the
  // request; the pipelined ones behind it must still come out one by one, in order.
  lookup_.setPort(kNet, "127.0.0.1", kNoInstance);
  start();
  RawClient c(port_);
  std::string burst;
  for (int i = 0; i < 300; ++i) burst += getRequest("/latest/" + std::to_string(i));
  ASSERT_TRUE(c.send(burst));
  for (int i = 0; i < 300; ++i) {
    auto r = c.read();
    ASSERT_TRUE(r) << "answer " << i;
    EXPECT_EQ(r->status, 404);
  }
  // Still the same open connection.
  ASSERT_TRUE(c.send(getRequest("/latest/again")));
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(metric("okna_metadata_requests_total{code=\"404\"}"), 301);
}

TEST_F(ServerTest, AnAnswerLargerThanTheSocketTakesIsWrittenWholeThenKeepAliveGoesOn) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(getRequest("/big")));
  auto p = nextNova();
  ASSERT_TRUE(p);
  // Far more than a socket's send buffer: the rest is written as the client reads.
  std::string big(8 << 20, 'x');
  for (std::size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>('a' + i % 26);
  answer(p, 200, big, "text/plain");
  auto r = c.read(std::chrono::seconds(30));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(r->body == big) << "body differs; got " << r->body.size() << " bytes";
  ASSERT_TRUE(c.send(getRequest("/next")));
  p = nextNova();
  ASSERT_TRUE(p);
  answer(p, 200, "small");
  r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "small");
  EXPECT_EQ(connections(), 1u);
}

TEST_F(ServerTest, Http10ClosesAfterTheAnswer) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(getRequest("/latest", "", "HTTP/1.0")));
  auto p = nextNova();
  ASSERT_TRUE(p);
  answer(p, 200, "x");
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(c.closedByPeer());
}

TEST_F(ServerTest, Http10KeepAliveStaysOpen) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(getRequest("/a", "Connection: keep-alive\r\n", "HTTP/1.0")));
  auto p = nextNova();
  ASSERT_TRUE(p);
  answer(p, 200, "x");
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->headers["connection"], "keep-alive");
  ASSERT_TRUE(c.send(getRequest("/b", "Connection: keep-alive\r\n", "HTTP/1.0")));
  p = nextNova();
  ASSERT_TRUE(p);
  answer(p, 200, "y");
  r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "y");
}

TEST_F(ServerTest, ForgedNetworkHeaderDoesNotSelectAnotherNetwork) {
  // The VM's IP is known only in another network; claiming that network in a header (as the
  // Python agent's haproxy would pass on next to its own) must not find it: the connection is
  // not even kept, as its address is no port of this network.
  lookup_.set(kNet, "127.0.0.1", LookupResult{});
  lookup_.setPort("other-network", "127.0.0.1", kVm);
  start();
  RawClient c(port_);
  c.send(getRequest("/latest", "X-OVN-Network-ID: other-network\r\n"));
  EXPECT_FALSE(c.read());
  EXPECT_EQ(loop_.run([&] { return http_.all().size(); }), 0u);
  EXPECT_EQ(metric("okna_metadata_connections_refused_total{reason=\"unknown\"}"), 1);
}

TEST_F(ServerTest, OneNetworkAtItsLimitDoesNotStarveAnother) {
  lookup_.setPort(kNet, "127.0.0.1", kNoInstance);
  lookup_.setPort("net-b", "127.0.0.1", kNoInstance);
  start();
  auto [fd, otherPort] = okna::testing::listenOnLoopback();
  ASSERT_TRUE(loop_.run([&, fd = fd] { return server_->addListener("net-b", fd); }).ok());
  RawClient a(port_), b(port_), c(port_), d(port_);
  ASSERT_TRUE(waitFor([&] { return connections() == 3; }, std::chrono::seconds(10)));
  // Network B still accepts and answers.
  RawClient other(otherPort);
  ASSERT_TRUE(other.send(getRequest("/latest")));
  auto r = other.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(loop_.run([&] { return server_->connectionCount("net-b"); }), 1u);
}

TEST_F(ServerTest, HugeHeadersAre431AndClose) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(getRequest("/x", "X-Big: " + std::string(2000, 'a') + "\r\n")));
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);
  EXPECT_TRUE(c.closedByPeer());
}

TEST_F(ServerTest, LargeBodyIs413AndClose) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(
      c.send("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'b')));
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_TRUE(c.closedByPeer());
  EXPECT_EQ(loop_.run([&] { return http_.all().size(); }), 0u);
}

TEST_F(ServerTest, GarbageIs400) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send("NOT HTTP AT ALL\r\n\r\n"));
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_TRUE(c.closedByPeer());
}

TEST_F(ServerTest, AbsoluteFormTargetIsServedAsItsPath) {
  // RFC 9112 3.2.2: a server must accept the absolute form (haproxy, Neutron's proxy, does).
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send("GET http://169.254.169.254/latest?x=1 HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto p = nextNova();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->request.url, "http://10.9.9.9:8775/latest?x=1");
  answer(p, 200, "x");
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  ASSERT_TRUE(c.send("GET HTTP://169.254.169.254 HTTP/1.1\r\nHost: x\r\n\r\n"));
  p = nextNova();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->request.url, "http://10.9.9.9:8775/");
  answer(p, 200, "y");
  ASSERT_TRUE(c.read());
  // Neither origin nor absolute form: 400.
  ASSERT_TRUE(c.send("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"));
  r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
}

// RFC 9112 6.1 and 6.3: a body whose end cannot be known is refused and the connection closed,
// never read as "no body" with the rest taken for the next request (request smuggling).
TEST_F(ServerTest, TransferEncodingsTheProxyCannotFrameAreRefusedAndClose) {
  struct Case {
    std::string head;
    int status;
  };
  const std::string smuggled = "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::vector<Case> cases{
      {"Transfer-Encoding: chunked, identity\r\n", 400},
      {"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n", 400},
      {"Transfer-Encoding: chunked, chunked\r\n", 400},
      {"Transfer-Encoding: identity\r\n", 400},
      {"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 400},
      {"Transfer-Encoding: gzip, chunked\r\n", 501},
  };
  start();
  for (const auto& c : cases) {
    RawClient client(port_);
    ASSERT_TRUE(client.send("POST /openstack/latest/password HTTP/1.1\r\nHost: x\r\n" + c.head +
                            "\r\n" + smuggled));
    auto r = client.read();
    ASSERT_TRUE(r) << c.head;
    EXPECT_EQ(r->status, c.status) << c.head;
    EXPECT_TRUE(client.closedByPeer()) << c.head;
  }
  RawClient old(port_);
  ASSERT_TRUE(old.send("POST /p HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n" + smuggled));
  auto r = old.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << "Transfer-Encoding in HTTP/1.0";
  EXPECT_EQ(loop_.run([&] { return http_.all().size(); }), 0u) << "nothing reached Nova";
  // Plain chunked still works.
  RawClient good(port_);
  ASSERT_TRUE(
      good.send("POST /openstack/latest/password HTTP/1.1\r\nHost: x\r\n"
                "Transfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"));
  auto p = nextNova();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->request.body, "abc");
  answer(p, 200, "ok");
  ASSERT_TRUE(good.read());
}

TEST_F(ServerTest, APortThatFailedItsChecksIs404AndNovaIsNotAsked) {
  start();
  loop_.run([&] {
    lookup_.setPort(kNet, "127.0.0.1",
                    {"lport-\xe2\x80\xae", "", "", "external_ids:neutron:device_id is not a UUID"});
  });
  RawClient c(port_);
  ASSERT_TRUE(c.send(getRequest("/openstack/latest/meta_data.json")));
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  // A port of no instance (empty device_id): 404 too, as Neutron answers it.
  loop_.run([&] { lookup_.setPort(kNet, "127.0.0.1", {"lport-2", "", "project-1", ""}); });
  ASSERT_TRUE(c.send(getRequest("/openstack/latest/meta_data.json")));
  r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(loop_.run([&] { return http_.all().size(); }), 0u);
}

// At its own cap a VM's newest connection takes the place of its oldest idle one (a VM that
// rebooted is not locked out by the connections it left behind); its neighbour is not touched.
TEST_F(ServerTest, OneVmAtItsConnectionLimitDoesNotStopAnother) {
  config_.limits.maxConnectionsPerClient = 2;
  lookup_.setPort(kNet, "127.0.0.1", kNoInstance);
  addVm(2, "project-2", false);
  start();
  RawClient a(port_), b(port_);
  ASSERT_TRUE(waitFor([&] { return connections() == 2; }, std::chrono::seconds(10)));
  RawClient third(port_);
  EXPECT_TRUE(a.closedByPeer());
  EXPECT_EQ(connections(), 2u);
  EXPECT_EQ(metric("okna_metadata_connections_evicted_total{reason=\"client\"}"), 1);
  ASSERT_TRUE(third.send(getRequest("/latest")));
  ASSERT_TRUE(third.read());
  // Another VM of the same network gets in and is answered.
  RawClient neighbour(port_, "127.0.0.1", "127.0.0.2");
  ASSERT_TRUE(neighbour.send(getRequest("/latest")));
  auto r = neighbour.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

TEST_F(ServerTest, OneVmAtItsInFlightLimitWaitsWhileAnotherIsServed) {
  config_.limits.maxInFlightPerNamespace = 4;
  config_.limits.maxInFlightPerClient = 1;
  lookup_.setPort(kNet, "127.0.0.2", {"lport-2", "0c7d3f7e-2f0a-4b8e-9c55-7e0b6c1d2a3b", "p2", ""});
  start();
  RawClient a1(port_), a2(port_);
  ASSERT_TRUE(a1.send(getRequest("/a1")));
  auto p1 = nextNova();
  ASSERT_TRUE(p1);
  ASSERT_TRUE(a2.send(getRequest("/a2")));
  RawClient b(port_, "127.0.0.1", "127.0.0.2");
  ASSERT_TRUE(b.send(getRequest("/b")));
  // B's request reaches Nova although A's second one came first: A has its one slot.
  auto pb = nextNova();
  ASSERT_TRUE(pb);
  EXPECT_NE(pb->request.url.find("/b"), std::string::npos) << pb->request.url;
  answer(pb, 200, "b");
  ASSERT_TRUE(b.read());
  answer(p1, 200, "a1");
  ASSERT_TRUE(a1.read());
  auto p2 = nextNova();
  ASSERT_TRUE(p2);
  EXPECT_NE(p2->request.url.find("/a2"), std::string::npos) << p2->request.url;
  answer(p2, 200, "a2");
  auto r = a2.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "a2");
}

// A benchmark's 16 connections from one address measured the VM's in-flight cap for a day
// (bench/metadata/RESULTS.md, 2026-12-04): each wait for a Nova slot is counted, by the limit
// that held the request, so an operator (and the benchmark) can see a cap at work.
TEST_F(ServerTest, WaitsForANovaSlotAreCountedByTheLimitThatHeldThem) {
  config_.limits.maxConnectionsPerNamespace = 8;
  config_.limits.maxInFlightPerNamespace = 2;
  config_.limits.maxInFlightPerClient = 1;
  lookup_.setPort(kNet, "127.0.0.2", {"lport-2", "0c7d3f7e-2f0a-4b8e-9c55-7e0b6c1d2a3b", "p2", ""});
  lookup_.setPort(kNet, "127.0.0.3", {"lport-3", "5b3f1a2c-8d4e-4f6a-9b7c-1d2e3f4a5b6c", "p3", ""});
  start();
  const std::string byClient = "okna_metadata_requests_queued_total{limit=\"client\"}";
  const std::string byNetwork = "okna_metadata_requests_queued_total{limit=\"namespace\"}";
  EXPECT_EQ(metric(byClient), 0);
  EXPECT_EQ(metric(byNetwork), 0);
  RawClient a1(port_), a2(port_);
  ASSERT_TRUE(a1.send(getRequest("/a1")));
  auto pa1 = nextNova();
  ASSERT_TRUE(pa1);
  // A's second request waits behind its first: the VM's cap.
  ASSERT_TRUE(a2.send(getRequest("/a2")));
  ASSERT_TRUE(waitFor([&] { return metric(byClient) == 1; }, std::chrono::seconds(10)));
  RawClient b(port_, "127.0.0.1", "127.0.0.2");
  ASSERT_TRUE(b.send(getRequest("/b")));
  auto pb = nextNova();
  ASSERT_TRUE(pb);
  // C has a slot of its own but the network's two are taken: the network's cap.
  RawClient c(port_, "127.0.0.1", "127.0.0.3");
  ASSERT_TRUE(c.send(getRequest("/c")));
  ASSERT_TRUE(waitFor([&] { return metric(byNetwork) == 1; }, std::chrono::seconds(10)));
  EXPECT_EQ(metric(byClient), 1);
  answer(pb, 200, "b");
  ASSERT_TRUE(b.read());
  auto pc = nextNova();
  ASSERT_TRUE(pc);
  EXPECT_NE(pc->request.url.find("/c"), std::string::npos) << pc->request.url;
  answer(pc, 200, "c");
  ASSERT_TRUE(c.read());
  answer(pa1, 200, "a1");
  ASSERT_TRUE(a1.read());
  auto pa2 = nextNova();
  ASSERT_TRUE(pa2);
  answer(pa2, 200, "a2");
  ASSERT_TRUE(a2.read());
  // Nothing waited again on the way out.
  EXPECT_EQ(metric(byClient), 1);
  EXPECT_EQ(metric(byNetwork), 1);
}

TEST_F(ServerTest, IdleConnectionsGiveWaySoonerWhenTheNetworkIsNearItsCap) {
  config_.limits.maxConnectionsPerNamespace = 4;
  config_.limits.busyIdleTimeout = std::chrono::milliseconds(100);
  lookup_.setPort(kNet, "127.0.0.1", kNoInstance);
  start();
  // Three of four: busy. A VM holding them idle (one of them after a request) loses them.
  RawClient a(port_), b(port_), c(port_);
  ASSERT_TRUE(a.send(getRequest("/x")));
  ASSERT_TRUE(a.read());
  EXPECT_TRUE(a.closedByPeer());
  EXPECT_TRUE(b.closedByPeer());
  EXPECT_TRUE(c.closedByPeer());
  EXPECT_TRUE(waitFor([&] { return connections() == 0; }, std::chrono::seconds(10)));
}

// accept() failing with EMFILE once re-posted itself at once: millions of failures and log
// lines a second, timers starved. Now it backs off, and accepts again once descriptors are free.
TEST_F(ServerTest, OutOfFileDescriptorsTheListenerBacksOffAndRecovers) {
  lookup_.setPort(kNet, "127.0.0.1", kNoInstance);
  start();
  // The clients live in a child process (its own descriptor table): it connects when told.
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(go[1]);
    char byte;
    if (::read(go[0], &byte, 1) != 1) ::_exit(1);
    int fds[3];
    for (int& fd : fds) {
      fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(static_cast<uint16_t>(port_));
      to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) ::_exit(2);
    }
    ::read(go[0], &byte, 1);  // until the parent closes the pipe
    ::_exit(0);
  }
  ::close(go[0]);
  // Fill this process's descriptor table.
  std::vector<int> filler;
  for (int fd; (fd = ::dup(0)) >= 0;) filler.push_back(fd);
  ASSERT_EQ(errno, EMFILE);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  // The loop keeps running (metric() runs on it) while accept fails. Failures 1 to 5 are
  // 10 + 20 + 40 + 80 ms apart; a listener that retried at once got there in microseconds.
  const auto failures = [&] { return metric("okna_metadata_accept_failures_total"); };
  const auto poll = std::chrono::milliseconds(1);
  const bool first = waitFor([&] { return failures() >= 1; }, std::chrono::seconds(10), poll);
  const auto firstAt = std::chrono::steady_clock::now();
  const bool fifth = waitFor([&] { return failures() >= 5; }, std::chrono::seconds(10), poll);
  const auto fifthAt = std::chrono::steady_clock::now();
  for (const int fd : filler) ::close(fd);
  ASSERT_TRUE(first && fifth) << failures();
  EXPECT_GE(fifthAt - firstAt, std::chrono::milliseconds(100));
  // Descriptors free again: the waiting connections are accepted (within the next retry).
  EXPECT_TRUE(waitFor([&] { return connections() == 3; }, std::chrono::seconds(10)));
  ::close(go[1]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(ServerTest, IdleKeepAliveConnectionIsClosed) {
  config_.limits.idleTimeout = std::chrono::milliseconds(100);
  lookup_.setPort(kNet, "127.0.0.1", kNoInstance);
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(getRequest("/x")));
  ASSERT_TRUE(c.read());
  EXPECT_TRUE(c.closedByPeer());
  EXPECT_TRUE(waitFor([&] { return connections() == 0; }, std::chrono::seconds(10)));
}

TEST_F(ServerTest, SlowHeadersAreCut) {
  config_.limits.headerTimeout = std::chrono::milliseconds(100);
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send("GET /x HTTP/1.1\r\nHost: "));
  EXPECT_TRUE(c.closedByPeer());
  // A connection that never sends a byte is cut too.
  RawClient silent(port_);
  EXPECT_TRUE(silent.closedByPeer());
}

TEST_F(ServerTest, InFlightLimitQueuesInOrder) {
  start();
  RawClient a(port_), b(port_);
  ASSERT_TRUE(a.send(getRequest("/a")));
  auto pa = nextNova();
  ASSERT_TRUE(pa);
  ASSERT_TRUE(b.send(getRequest("/b")));
  // b waits for a's slot: Nova sees nothing more until a is answered.
  ASSERT_TRUE(waitFor(
      [&] { return metric("okna_metadata_requests_queued_total{limit=\"namespace\"}") == 1; },
      std::chrono::seconds(10)));
  EXPECT_EQ(loop_.run([&] { return http_.next(); }), nullptr);
  answer(pa, 200, "a");
  auto pb = nextNova();
  ASSERT_TRUE(pb);
  EXPECT_NE(pb->request.url.find("/b"), std::string::npos);
  answer(pb, 200, "b");
  EXPECT_EQ(a.read()->body, "a");
  EXPECT_EQ(b.read()->body, "b");
}

// Issue 27, point 4: behind a hung Nova, a request queued for a Nova slot waited until a slot
// freed (16-32 s with the defaults, past cloud-init's 10 s). Its deadline counts from its
// arrival: still queued then, it gets 503; the one in flight gets only what is left of it.
TEST_F(ServerTest, AQueuedRequestGets503AtItsDeadlineWhileNovaHangs) {
  config_.limits.requestDeadline = std::chrono::milliseconds(300);
  start();
  RawClient a(port_), b(port_);
  ASSERT_TRUE(a.send(getRequest("/a")));
  auto pa = nextNova();  // never answered: Nova hangs
  ASSERT_TRUE(pa);
  EXPECT_GT(pa->request.totalTimeout.count(), 0);
  EXPECT_LE(pa->request.totalTimeout, std::chrono::milliseconds(300))
      << "Nova gets what is left of the request's deadline, not nova.timeout";
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_TRUE(b.send(getRequest("/b")));
  auto r = b.read(std::chrono::seconds(5));
  const auto took = std::chrono::steady_clock::now() - sent;
  ASSERT_TRUE(r) << "the queued request got no answer within 5 s";
  EXPECT_EQ(r->status, 503);
  EXPECT_GE(took, std::chrono::milliseconds(250)) << "not before its deadline";
  EXPECT_LT(took, std::chrono::milliseconds(1500)) << "promptly at its deadline";
  EXPECT_EQ(loop_.run([&] { return http_.next(); }), nullptr) << "b never reached Nova";
  EXPECT_EQ(metric("okna_metadata_requests_total{code=\"503\"}"), 1);
  // The connection stays open (keep-alive); its next request queues afresh and expires alone.
  ASSERT_TRUE(b.send(getRequest("/b2")));
  r = b.read(std::chrono::seconds(5));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  // Once the slot frees, the next request goes to Nova, once (no stale queue entry sends it).
  answer(pa, 200, "a");
  EXPECT_EQ(a.read()->body, "a");
  ASSERT_TRUE(b.send(getRequest("/b3")));
  auto pb = nextNova();
  ASSERT_TRUE(pb);
  EXPECT_NE(pb->request.url.find("/b3"), std::string::npos) << pb->request.url;
  answer(pb, 200, "b3");
  EXPECT_EQ(b.read()->body, "b3");
  EXPECT_EQ(loop_.run([&] { return http_.next(); }), nullptr);
}

TEST_F(ServerTest, ARequestQueuedBehindItsOwnVmGets503AtItsDeadline) {
  config_.limits.maxInFlightPerNamespace = 4;
  config_.limits.maxInFlightPerClient = 1;
  config_.limits.requestDeadline = std::chrono::milliseconds(300);
  start();
  RawClient a1(port_), a2(port_);
  ASSERT_TRUE(a1.send(getRequest("/a1")));
  auto p1 = nextNova();
  ASSERT_TRUE(p1);
  ASSERT_TRUE(a2.send(getRequest("/a2")));
  auto r = a2.read(std::chrono::seconds(5));
  ASSERT_TRUE(r) << "the request queued for its VM's slot got no answer within 5 s";
  EXPECT_EQ(r->status, 503);
  answer(p1, 200, "a1");
  EXPECT_EQ(a1.read()->body, "a1");
  EXPECT_EQ(loop_.run([&] { return http_.next(); }), nullptr) << "a2 never reached Nova";
}

TEST_F(ServerTest, ARequestThatWaitedForASlotGetsOnlyWhatIsLeftOfItsDeadline) {
  config_.limits.requestDeadline = std::chrono::seconds(5);
  config_.nova.timeout = std::chrono::seconds(8);
  start();
  RawClient a(port_), b(port_);
  ASSERT_TRUE(a.send(getRequest("/a")));
  auto pa = nextNova();
  ASSERT_TRUE(pa);
  EXPECT_LE(pa->request.totalTimeout, std::chrono::seconds(5)) << "the deadline, below 8 s";
  EXPECT_GT(pa->request.totalTimeout, std::chrono::seconds(4));
  ASSERT_TRUE(b.send(getRequest("/b")));
  ASSERT_TRUE(waitFor(
      [&] { return metric("okna_metadata_requests_queued_total{limit=\"namespace\"}") == 1; },
      std::chrono::seconds(10)));
  answer(pa, 200, "a");
  auto pb = nextNova();
  ASSERT_TRUE(pb);
  EXPECT_LT(pb->request.totalTimeout, std::chrono::seconds(5)) << "b waited for its slot";
  EXPECT_GT(pb->request.totalTimeout, std::chrono::seconds(1));
  EXPECT_LE(pb->request.connectTimeout, pb->request.totalTimeout);
  answer(pb, 200, "b");
  EXPECT_EQ(b.read()->body, "b");
}

TEST_F(ServerTest, NovaFailureMapped) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(getRequest("/x")));
  auto p = nextNova();
  ASSERT_TRUE(p);
  loop_.run([&] { p->fail("Failed to connect to 10.9.9.9 port 8775"); });
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);  // Neutron master's answer when Nova cannot be reached
  EXPECT_EQ(metric("okna_metadata_nova_errors_total{reason=\"connect\"}"), 1);
}

TEST_F(ServerTest, RemoveNetworkClosesListenerConnectionsAndCancelsNova) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(getRequest("/x")));
  auto p = nextNova();
  ASSERT_TRUE(p);
  loop_.run([&] { server_->removeNetwork(kNet); });
  EXPECT_TRUE(c.closedByPeer());
  EXPECT_TRUE(loop_.run([&] { return p->cancelled; }));
  EXPECT_EQ(loop_.run([&] { return server_->listenerCount(kNet); }), 0u);
  EXPECT_THROW(RawClient again(port_), std::runtime_error);
}

TEST_F(ServerTest, AddListenerRefusesWhatIsNotAListeningSocket) {
  start();
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  auto s = loop_.run([&] { return server_->addListener("n2", fd); });
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("not listening"), std::string::npos);
  EXPECT_EQ(loop_.run([&] { return server_->listenerCount("n2"); }), 0u);
}

TEST_F(ServerTest, Ipv6ListenerSeesTheV6Peer) {
  lookup_.setPort(kNet, "::1", kVm);
  start();
  std::pair<int, int> listener;
  try {
    listener = okna::testing::listenOnLoopback(0, AF_INET6);
  } catch (const std::exception&) {
    GTEST_SKIP() << "no IPv6 loopback on this machine";
  }
  ASSERT_TRUE(loop_.run([&] { return server_->addListener(kNet, listener.first); }).ok());
  EXPECT_EQ(loop_.run([&] { return server_->listenerCount(kNet); }), 2u);
  RawClient c(listener.second, "::1");
  ASSERT_TRUE(c.send(getRequest("/x")));
  auto p = nextNova();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->request.headers.at("X-Forwarded-For"), "::1");
  answer(p, 200, "v6");
  EXPECT_EQ(c.read()->body, "v6");
}

}  // namespace
}  // namespace okna::metadata
