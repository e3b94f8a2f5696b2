#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>

namespace okna::core {

// Writes what a non-blocking socket takes at once, for callers that then continue in the same
// handler. asio::async_write would write just as fast (it tries the send first) but always
// completes through the scheduler's queue, which costs an extra epoll_wait per write: a third
// of the proxy's syscalls per request (and each kernel entry is dear on a virtual machine).
//
// Returns the bytes written. Waiting for room is not an error (fewer bytes, `ec` clear); a
// failed send sets `ec`. The socket must be in non-blocking mode (socket.non_blocking(true)).
template <typename Socket, typename ConstBuffers>
std::size_t writeNow(Socket& socket, const ConstBuffers& buffers, boost::system::error_code& ec) {
  ec.clear();
  const std::size_t total = boost::asio::buffer_size(buffers);
  boost::beast::buffers_suffix<ConstBuffers> rest(buffers);
  std::size_t written = 0;
  while (written < total) {
    const std::size_t n = socket.write_some(rest, ec);
    if (ec == boost::asio::error::interrupted) continue;
    if (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again) {
      ec.clear();
      break;
    }
    if (ec) break;
    written += n;
    rest.consume(n);
  }
  return written;
}

}  // namespace okna::core
