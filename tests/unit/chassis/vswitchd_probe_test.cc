// The ovs-vswitchd liveness probe against real unix sockets in a temp dir (no daemon): a pid file
// and a listening unixctl socket are "running"; the socket of a killed daemon (still on disk,
// nobody listening), or no pid file, are "not running".
#include "chassis/vswitchd_probe.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace okna::ovsdb {
namespace {

class VswitchdProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/okna-vsd.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (listener_ >= 0) ::close(listener_);
    std::filesystem::remove_all(dir_);
  }
  void writePid(const std::string& text) { std::ofstream(dir_ + "/ovs-vswitchd.pid") << text; }
  // A listening socket at `name` in the dir, as ovs-vswitchd's unixctl server.
  void listenAt(const std::string& name) {
    listener_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(listener_, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    const std::string path = dir_ + "/" + name;
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    ASSERT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(listener_, 1), 0);
  }
  // What a SIGKILLed daemon leaves: the socket file, nobody listening.
  void dieKeepingTheFile() {
    ::close(listener_);
    listener_ = -1;
  }

  std::string dir_;
  int listener_ = -1;
};

TEST_F(VswitchdProbeTest, ThePidsUnixctlSocketAnsweringIsRunning) {
  writePid("4242\n");
  listenAt("ovs-vswitchd.4242.ctl");
  const VswitchdStatus s = UnixctlVswitchdProbe(dir_).check();
  EXPECT_TRUE(s.running) << s.detail;
  EXPECT_NE(s.detail.find("ovs-vswitchd.4242.ctl"), std::string::npos) << s.detail;
}

TEST_F(VswitchdProbeTest, AnExplicitUnixctlNameIsFoundToo) {
  writePid("4242\n");
  listenAt("ovs-vswitchd.ctl");  // --unixctl=<dir>/ovs-vswitchd.ctl
  EXPECT_TRUE(UnixctlVswitchdProbe(dir_).check().running);
}

TEST_F(VswitchdProbeTest, AKilledDaemonsLeftoverSocketIsNotRunning) {
  writePid("4242\n");
  listenAt("ovs-vswitchd.4242.ctl");
  dieKeepingTheFile();
  const VswitchdStatus s = UnixctlVswitchdProbe(dir_).check();
  EXPECT_FALSE(s.running);
  EXPECT_NE(s.detail.find("Connection refused"), std::string::npos) << s.detail;
}

TEST_F(VswitchdProbeTest, NoPidFileOrNoSocketIsNotRunning) {
  VswitchdStatus s = UnixctlVswitchdProbe(dir_).check();
  EXPECT_FALSE(s.running);
  EXPECT_NE(s.detail.find("ovs-vswitchd.pid"), std::string::npos) << s.detail;
  writePid("4242\n");
  s = UnixctlVswitchdProbe(dir_).check();
  EXPECT_FALSE(s.running);
  EXPECT_NE(s.detail.find("no unixctl socket"), std::string::npos) << s.detail;
  writePid("garbage");
  EXPECT_FALSE(UnixctlVswitchdProbe(dir_).check().running);
}

TEST(VswitchdRunDirTest, TheDirectoryOfAUnixRemoteElseNone) {
  EXPECT_EQ(runDirOfRemote("unix:/var/run/openvswitch/db.sock"), "/var/run/openvswitch");
  EXPECT_EQ(runDirOfRemote("tcp:127.0.0.1:6640"), "");
  EXPECT_EQ(runDirOfRemote("ssl:10.0.0.1:6640"), "");
}

}  // namespace
}  // namespace okna::ovsdb
