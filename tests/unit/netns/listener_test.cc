// Name checks and openListener in the calling thread's own namespace ("" = no setns), which
// needs no privileges: loopback only.

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "netns/enter.h"
#include "netns/netlink.h"

namespace okna::netns {
namespace {

TEST(NamespaceName, OnlyPlainFileNames) {
  EXPECT_TRUE(isNamespaceName("ovnmeta-abc"));
  EXPECT_FALSE(isNamespaceName(""));
  EXPECT_FALSE(isNamespaceName("."));
  EXPECT_FALSE(isNamespaceName(".."));
  EXPECT_FALSE(isNamespaceName("../etc"));
  EXPECT_FALSE(isNamespaceName(std::string("a\0b", 3)));
}

TEST(OpenListener, RejectsPathsAsNamespaceNames) {
  auto fd = openListener("../../etc/passwd", "127.0.0.1", 0, 16, false);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().code, EINVAL);
}

TEST(OpenListener, InOwnNamespaceIsNonBlockingAndCloexec) {
  auto fd = openListener("", "127.0.0.1", 0, 16, true);
  ASSERT_TRUE(fd.ok()) << fd.error().message;
  EXPECT_TRUE(::fcntl(*fd, F_GETFL) & O_NONBLOCK);
  EXPECT_TRUE(::fcntl(*fd, F_GETFD) & FD_CLOEXEC);
  ::close(*fd);
}

TEST(OpenListener, BadAddressesNameTheListener) {
  auto junk = openListener("", "not-an-ip", 80, 16, false);
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(junk.error().code, EINVAL);
  EXPECT_NE(junk.error().message.find("listener not-an-ip port 80"), std::string::npos)
      << junk.error().message;
  auto unscoped = openListener("", "fe80::1", 80, 16, false);
  ASSERT_FALSE(unscoped.ok());
  EXPECT_NE(unscoped.error().message.find("scope"), std::string::npos);
  auto noIface = openListener("", "fe80::1%oktn-nosuchif", 80, 16, false);
  ASSERT_FALSE(noIface.ok());
  EXPECT_NE(noIface.error().message.find("oktn-nosuchif"), std::string::npos);
}

TEST(RunInNamespace, EmptyNameRunsInPlace) {
  bool ran = false;
  auto st = runInNamespace("", [&] {
    ran = true;
    return core::Status();
  });
  EXPECT_TRUE(st.ok());
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace okna::netns
