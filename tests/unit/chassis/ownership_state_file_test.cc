// The ownership record's copy on disk: round trip (owning nothing included), a missing file is
// "no copy", a file that is not the format is "unreadable" and says why.
#include "chassis/ownership_state_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace okna::ovsdb {
namespace {

class OwnershipStateFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("okc8-state-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path() const { return (dir_ / "sub" / "ovs-ownership.json").string(); }

  std::filesystem::path dir_;
};

TEST_F(OwnershipStateFileTest, RoundTripsCreatingTheDirectory) {
  OwnershipStateFile file(path());
  EXPECT_EQ(file.load().state, OwnershipCopy::State::None);
  OwnershipRecord r;
  r.cmsItems = {"enable-chassis-as-gw"};
  r.ports = {{"br-ex", "bond1"}};
  ASSERT_TRUE(file.save(r).ok());
  OwnershipCopy copy = file.load();
  EXPECT_EQ(copy.state, OwnershipCopy::State::Known);
  EXPECT_EQ(copy.record, r);
  EXPECT_NE(copy.where.find(path()), std::string::npos);
  // Owning nothing is a known state too (not "no copy").
  ASSERT_TRUE(file.save({}).ok());
  copy = file.load();
  EXPECT_EQ(copy.state, OwnershipCopy::State::Known);
  EXPECT_TRUE(copy.record.empty());
  EXPECT_FALSE(std::filesystem::exists(path() + ".tmp"));
}

TEST_F(OwnershipStateFileTest, AnythingElseIsUnreadableWithTheReason) {
  std::filesystem::create_directories(std::filesystem::path(path()).parent_path());
  for (const std::string text :
       {"", "garbage", "{}", R"({"v":2,"record":null})", R"({"v":1,"record":{"v":1,"cms":"x"}})"}) {
    std::ofstream(path(), std::ios::trunc) << text;
    const OwnershipCopy copy = OwnershipStateFile(path()).load();
    EXPECT_EQ(copy.state, OwnershipCopy::State::Unreadable) << text;
    EXPECT_FALSE(copy.error.empty()) << text;
  }
}

TEST(OwnershipStateFile, NoPathIsNoCopyAndSavesNothing) {
  OwnershipStateFile file("");
  EXPECT_TRUE(file.save({}).ok());
  EXPECT_EQ(file.load().state, OwnershipCopy::State::None);
}

}  // namespace
}  // namespace okna::ovsdb
