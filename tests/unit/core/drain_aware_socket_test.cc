// core::DrainAwareSocket: reads that stop Asio's speculative recv after a short read must never
// lose readiness. Every case that could hang is bounded by run_for and reported as a failure.
// Each case runs on the portable socket and, where this Boost has it, on the reactor fast path.
#include "core/drain_aware_socket.h"

#include <gtest/gtest.h>

#include <array>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

namespace okna::core {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

struct ReadResult {
  boost::system::error_code ec;
  std::string data;
};

template <typename Socket>
class DrainAwareSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tcp::acceptor acceptor(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    peer_.connect(acceptor.local_endpoint());
    socket_.emplace(acceptor.accept(io_.get_executor()));
    socket_->non_blocking(true);
  }

  // Starts a read of up to `room` bytes and runs the loop until it completed (or 5 s passed).
  std::optional<ReadResult> read(std::size_t room) {
    startRead(room);
    return finish();
  }

  void startRead(std::size_t room) {
    result_.reset();
    buffer_.assign(room, '\0');
    socket_->asyncReadSome(asio::buffer(buffer_),
                           [this](const boost::system::error_code& ec, std::size_t n) {
                             result_ = ReadResult{ec, buffer_.substr(0, n)};
                           });
  }

  std::optional<ReadResult> finish() {
    io_.restart();
    const auto until = std::chrono::steady_clock::now() + 5s;
    while (!result_ && std::chrono::steady_clock::now() < until) io_.run_one_for(50ms);
    return result_;
  }

  void peerSends(const std::string& bytes) { asio::write(peer_, asio::buffer(bytes)); }

  // Lets the reactor wait for events (and consume those of a socket no read waits on). Without
  // work, run_for would return at once without asking the kernel.
  void turnLoop() {
    auto work = asio::make_work_guard(io_);
    io_.restart();
    io_.run_for(20ms);
  }

  asio::io_context io_{1};
  tcp::socket peer_{io_};
  std::optional<Socket> socket_;
  std::string buffer_;
  std::optional<ReadResult> result_;
};

#if OKNA_DRAIN_AWARE_FAST_PATH
using Sockets = ::testing::Types<ReactorDrainAwareSocket, PortableDrainAwareSocket>;
static_assert(std::is_same_v<DrainAwareSocket, ReactorDrainAwareSocket>);
#else
using Sockets = ::testing::Types<PortableDrainAwareSocket>;
static_assert(std::is_same_v<DrainAwareSocket, PortableDrainAwareSocket>);
#endif
struct SocketName {
  template <typename Socket>
  static std::string GetName(int) {
    return Socket::kDrainAware ? "Reactor" : "Portable";
  }
};
TYPED_TEST_SUITE(DrainAwareSocketTest, Sockets, SocketName);

TYPED_TEST(DrainAwareSocketTest, ReadsWhatIsAlreadyThere) {
  this->peerSends("hello");
  this->turnLoop();
  auto r = this->read(64);
  ASSERT_TRUE(r) << "the read never completed";
  EXPECT_FALSE(r->ec) << r->ec.message();
  EXPECT_EQ(r->data, "hello");
}

TYPED_TEST(DrainAwareSocketTest, AfterAShortReadWaitsForDataSentLater) {
  this->peerSends("one");
  ASSERT_TRUE(this->read(64));
  this->startRead(64);
  // Nothing to read yet: the loop turns without completing the read.
  this->io_.restart();
  this->io_.poll();
  EXPECT_FALSE(this->result_);
  this->peerSends("two");
  auto r = this->finish();
  ASSERT_TRUE(r) << "data sent after a drained read was never read";
  EXPECT_EQ(r->data, "two");
}

TYPED_TEST(DrainAwareSocketTest, AfterAShortReadReadsDataThatCameWhileNoReadWasWaiting) {
  this->peerSends("one");
  ASSERT_TRUE(this->read(64));
  this->peerSends("two");
  // The loop sees the readiness event while no read is queued (the event is consumed).
  this->turnLoop();
  auto r = this->read(64);
  ASSERT_TRUE(r) << "readiness reported while no read waited was lost";
  EXPECT_EQ(r->data, "two");
}

TYPED_TEST(DrainAwareSocketTest, AfterAShortReadReadsDataThatCameBeforeTheLoopTurned) {
  this->peerSends("one");
  ASSERT_TRUE(this->read(64));
  this->peerSends("two");
  auto r = this->read(64);
  ASSERT_TRUE(r) << "data that arrived between two reads was never read";
  EXPECT_EQ(r->data, "two");
}

TYPED_TEST(DrainAwareSocketTest, AFullReadLeavesTheRestToTheNextRead) {
  this->peerSends("abcdefgh");
  // The arrival's event is consumed first: only the reactor's flag says there may be more.
  this->turnLoop();
  auto first = this->read(4);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->data, "abcd");
  auto second = this->read(64);
  ASSERT_TRUE(second) << "the rest after a read that filled its buffer was never read";
  EXPECT_EQ(second->data, "efgh");
}

TYPED_TEST(DrainAwareSocketTest, ManyRequestAnswerRoundsNeverStall) {
  for (int i = 0; i < 200; ++i) {
    const std::string message = "request " + std::to_string(i);
    this->peerSends(message);
    auto r = this->read(4096);
    ASSERT_TRUE(r) << "round " << i << " stalled";
    ASSERT_EQ(r->data, message);
  }
}

TYPED_TEST(DrainAwareSocketTest, ThePeerClosingIsEndOfFile) {
  this->peerSends("last");
  ASSERT_TRUE(this->read(64));
  this->peer_.close();
  auto r = this->read(64);
  ASSERT_TRUE(r) << "the peer's close was never seen";
  EXPECT_EQ(r->ec, asio::error::eof);
}

TYPED_TEST(DrainAwareSocketTest, ClosingTheSocketAbortsAWaitingRead) {
  this->startRead(64);
  this->io_.restart();
  this->io_.poll();
  ASSERT_FALSE(this->result_);
  this->socket_->close();
  auto r = this->finish();
  ASSERT_TRUE(r) << "a read waiting on a closed socket was never completed";
  EXPECT_EQ(r->ec, asio::error::operation_aborted);
}

TYPED_TEST(DrainAwareSocketTest, AClosedSocketFailsTheReadAtOnce) {
  this->socket_->close();
  auto r = this->read(64);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ec);
}

TYPED_TEST(DrainAwareSocketTest, ABlockingSocketIsReadTheUsualWay) {
  this->socket_->non_blocking(false);
  this->peerSends("plain");
  auto r = this->read(64);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->data, "plain");
}

template <typename Socket>
class DrainAwareSocketLifetime : public ::testing::Test {};
TYPED_TEST_SUITE(DrainAwareSocketLifetime, Sockets, SocketName);

TYPED_TEST(DrainAwareSocketLifetime, AReadStillWaitingWhenTheLoopIsDestroyedReleasesItsHandler) {
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> watch = token;
  bool called = false;
  {
    asio::io_context io{1};
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    tcp::socket peer(io);
    peer.connect(acceptor.local_endpoint());
    TypeParam socket(acceptor.accept(io.get_executor()));
    socket.non_blocking(true);
    std::array<char, 16> room{};
    socket.asyncReadSome(asio::buffer(room),
                         [token = std::move(token), &called](const boost::system::error_code&,
                                                             std::size_t) { called = true; });
    io.poll();
    // The socket goes first: its read is cancelled and left queued in the io_context.
  }
  EXPECT_FALSE(called);
  EXPECT_TRUE(watch.expired()) << "the handler of a read never run was not released";
}

}  // namespace
}  // namespace okna::core
