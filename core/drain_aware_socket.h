#pragma once
// A TCP socket on the agent's io_context whose reads tell Asio's reactor when they drained the
// socket, so that the next read waits for the kernel's readiness event instead of first trying
// a recv that fails with EAGAIN.
//
// Why: Asio 1.74 starts every async read with a speculative recv. On the metadata proxy's hot
// path the next request (or Nova's answer) is never there yet when the read starts, so ~1.8 of
// the 5.8 syscalls per proxied request were EAGAIN recvs, and every kernel entry is dear on a
// virtual machine. Waiting with async_wait instead does not help: Asio re-arms the descriptor
// with EPOLL_CTL_MOD on every such wait (tried, bench/metadata/RESULTS.md). nginx reads only
// after a readiness event and treats a short read as "drained"; this does the same inside Asio's
// own reactor.
//
// How: the read is a reactor operation (Asio's extension point for socket operations, in its
// detail namespace: pinned to Boost 1.74's epoll reactor) whose recv reports
// `done_and_exhausted` when it returned fewer bytes than asked. The reactor then clears the
// descriptor's "try speculatively" flag, as it does itself after a short write. Data that
// arrives later always produces an edge-triggered event, which sets the flag again (or performs
// a queued read), so no readiness is ever lost; the socket is registered edge-triggered, and
// the reactor's flag is only read and written on the loop thread.

//
// Any other Boost (Debian 12's 1.81, Debian 13's 1.83), a reactor other than epoll, or
// -DOKNA_PORTABLE_SOCKET=ON (CMakeLists.txt) builds the portable socket instead: the same
// interface, every read a plain async_read_some (an EAGAIN recv more per idle read, nothing
// else). Both are compiled and unit-tested wherever the fast path applies
// (tests/unit/core/drain_aware_socket_test.cc); tests/run-all.sh also compiles core/ and its unit
// tests against Boost 1.81.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/version.hpp>
#include <type_traits>
#include <utility>

#if BOOST_VERSION == 107400 && defined(BOOST_ASIO_HAS_EPOLL) && !defined(OKNA_PORTABLE_SOCKET)
#define OKNA_DRAIN_AWARE_FAST_PATH 1
#else
#define OKNA_DRAIN_AWARE_FAST_PATH 0
#endif

#if OKNA_DRAIN_AWARE_FAST_PATH
#include <sys/socket.h>

#include <boost/asio/error.hpp>
// After the public headers, which complete the types these use.
#include <boost/asio/detail/handler_alloc_helpers.hpp>
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <cerrno>
#include <cstddef>
#include <new>
#endif

namespace okna::core {

using DrainAwareSocketBase =
    boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

/** The portable socket: the same interface, every read the usual way (any Boost, any reactor). */
class PortableDrainAwareSocket : public DrainAwareSocketBase {
 public:
  static constexpr bool kDrainAware = false;

  explicit PortableDrainAwareSocket(boost::asio::io_context& io)
      : DrainAwareSocketBase(io.get_executor()) {}
  /** Adopts an accepted socket. */
  explicit PortableDrainAwareSocket(DrainAwareSocketBase&& socket)
      : DrainAwareSocketBase(std::move(socket)) {}

  /** async_read_some: `handler(error_code, bytes)` is called through the io_context. */
  template <typename Handler>
  void asyncReadSome(boost::asio::mutable_buffer buffer, Handler&& handler) {
    DrainAwareSocketBase::async_read_some(buffer, std::forward<Handler>(handler));
  }
};

#if OKNA_DRAIN_AWARE_FAST_PATH

namespace drain_aware_detail {

template <typename Handler>
class RecvOp : public boost::asio::detail::reactor_op {
 public:
  RecvOp(int fd, boost::asio::mutable_buffer buffer, Handler&& handler)
      : reactor_op(boost::system::error_code(), &RecvOp::perform, &RecvOp::complete),
        fd_(fd),
        buffer_(buffer),
        handler_(std::move(handler)) {}

 private:
  static status perform(reactor_op* base) {
    auto* op = static_cast<RecvOp*>(base);
    for (;;) {
      const ssize_t n = ::recv(op->fd_, op->buffer_.data(), op->buffer_.size(), 0);
      if (n > 0) {
        op->bytes_transferred_ = static_cast<std::size_t>(n);
        // Less than asked: the socket held no more. The reactor stops reading speculatively.
        return op->bytes_transferred_ < op->buffer_.size() ? done_and_exhausted : done;
      }
      if (n == 0) {
        op->ec_ = boost::asio::error::eof;
        return done_and_exhausted;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return not_done;
      op->ec_ = boost::system::error_code(errno, boost::asio::error::get_system_category());
      return done;
    }
  }

  // Called by the scheduler with the op's result, or with no owner when the io_context is
  // destroyed with the op still queued (then the handler is released, not called).
  static void complete(void* owner, boost::asio::detail::scheduler_operation* base,
                       const boost::system::error_code& /*unused: the result is in ec_*/,
                       std::size_t /*unused*/) {
    auto* op = static_cast<RecvOp*>(base);
    Handler handler(std::move(op->handler_));
    const boost::system::error_code ec = op->ec_;
    const std::size_t n = op->bytes_transferred_;
    destroy(op, handler);
    if (owner) handler(ec, n);
  }

 public:
  // Memory from Asio's per-thread recycling of small operation blocks, as its own operations
  // use: no malloc per read.
  static RecvOp* create(int fd, boost::asio::mutable_buffer buffer, Handler&& handler) {
    void* memory = boost_asio_handler_alloc_helpers::allocate(sizeof(RecvOp), handler);
    return new (memory) RecvOp(fd, buffer, std::move(handler));
  }

 private:
  static void destroy(RecvOp* op, Handler& handler) {
    op->~RecvOp();
    boost_asio_handler_alloc_helpers::deallocate(op, sizeof(RecvOp), handler);
  }

  int fd_;
  boost::asio::mutable_buffer buffer_;
  Handler handler_;
};

}  // namespace drain_aware_detail

/** The fast path: reads that tell the epoll reactor when they drained the socket. */
class ReactorDrainAwareSocket : public DrainAwareSocketBase {
  using Base = DrainAwareSocketBase;

 public:
  static constexpr bool kDrainAware = true;

  explicit ReactorDrainAwareSocket(boost::asio::io_context& io)
      : Base(io.get_executor()), reactor_(&reactorOf(io)) {}
  /** Adopts an accepted socket. */
  explicit ReactorDrainAwareSocket(Base&& socket)
      : Base(std::move(socket)), reactor_(&reactorOf(this->get_executor().context())) {}

  /**
   * Like async_read_some, for a socket in non-blocking mode (non_blocking(true)), from the loop
   * thread of a one-thread io_context. `handler(error_code, bytes)` is called through the
   * io_context, never from inside this call.
   */
  template <typename Handler>
  void asyncReadSome(boost::asio::mutable_buffer buffer, Handler&& handler) {
    if (buffer.size() == 0 || !this->non_blocking()) {
      Base::async_read_some(buffer, std::forward<Handler>(handler));
      return;
    }
    using Op = drain_aware_detail::RecvOp<std::decay_t<Handler>>;
    auto& impl = this->impl_.get_implementation();
    auto* op =
        Op::create(impl.socket_, buffer, std::decay_t<Handler>(std::forward<Handler>(handler)));
    reactor_->start_op(boost::asio::detail::reactor::read_op, impl.socket_, impl.reactor_data_, op,
                       /*is_continuation=*/false, /*allow_speculative=*/true);
  }

 private:
  static boost::asio::detail::reactor& reactorOf(boost::asio::execution_context& context) {
    return boost::asio::use_service<boost::asio::detail::reactor>(context);
  }

  boost::asio::detail::reactor* reactor_;
};

using DrainAwareSocket = ReactorDrainAwareSocket;

#else

using DrainAwareSocket = PortableDrainAwareSocket;

#endif

}  // namespace okna::core
