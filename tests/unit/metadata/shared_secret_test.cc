#include "metadata/shared_secret.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace okna::metadata {
namespace {

namespace fs = std::filesystem;

class SharedSecretTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("okna-secret-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
  fs::path dir_;
};

TEST_F(SharedSecretTest, NoFileMeansTheEmptySecret) {
  SharedSecret s("");
  auto v = s.get(SharedSecret::Clock::now());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "");
}

TEST_F(SharedSecretTest, TrailingNewlineStripped) {
  write(dir_ / "secret", "s3cr3t\n");
  SharedSecret s((dir_ / "secret").string());
  auto v = s.get(SharedSecret::Clock::now());
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, "s3cr3t");
}

TEST_F(SharedSecretTest, SurroundingWhitespaceStrippedAsOsloConfigDoes) {
  // A trailing space (an editor, a copy from a terminal) made every request 403: Nova's own
  // option is read through oslo.config, which strips the value.
  for (const std::string text : {"s3cr3t \n", " \ts3cr3t\r\n", "s3cr3t\t", "\n\ns3cr3t  \n\n"}) {
    write(dir_ / "secret", text);
    SharedSecret s((dir_ / "secret").string());
    auto v = s.get(SharedSecret::Clock::now());
    ASSERT_TRUE(v.ok()) << v.error().message;
    EXPECT_EQ(*v, "s3cr3t") << "file held [" << text << "]";
  }
  // Inner spaces are part of the secret.
  write(dir_ / "secret", " two words \n");
  SharedSecret s((dir_ / "secret").string());
  EXPECT_EQ(*s.get(SharedSecret::Clock::now()), "two words");
}

TEST_F(SharedSecretTest, MissingFileIsAnErrorUntilItAppears) {
  const auto path = dir_ / "secret";
  const auto t0 = SharedSecret::Clock::now();
  SharedSecret s(path.string(), std::chrono::seconds(1));
  auto v = s.get(t0);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("metadata.sharedSecretFile"), std::string::npos);
  write(path, "late\n");
  // Within the recheck period the file is not looked at again...
  EXPECT_FALSE(s.get(t0).ok());
  // ...after it, it is.
  auto later = s.get(t0 + std::chrono::seconds(2));
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(*later, "late");
}

TEST_F(SharedSecretTest, RotationPickedUpAfterRecheck) {
  const auto path = dir_ / "secret";
  write(path, "one\n");
  const auto t0 = SharedSecret::Clock::now();
  SharedSecret s(path.string(), std::chrono::seconds(1));
  EXPECT_EQ(*s.get(t0), "one");
  // Kubernetes swaps a symlink; here a rename onto the path gives the same new inode.
  write(dir_ / "next", "two-longer\n");
  fs::rename(dir_ / "next", path);
  EXPECT_EQ(*s.get(t0), "one");
  EXPECT_EQ(*s.get(t0 + std::chrono::milliseconds(1500)), "two-longer");
  EXPECT_EQ(s.loads(), 2);
  // Unchanged file: no re-read.
  EXPECT_EQ(*s.get(t0 + std::chrono::seconds(5)), "two-longer");
  EXPECT_EQ(s.loads(), 2);
}

TEST_F(SharedSecretTest, BrokenFileKeepsTheLastGoodSecret) {
  const auto path = dir_ / "secret";
  write(path, "good");
  const auto t0 = SharedSecret::Clock::now();
  SharedSecret s(path.string(), std::chrono::seconds(1));
  EXPECT_EQ(*s.get(t0), "good");
  fs::remove(path);
  auto v = s.get(t0 + std::chrono::seconds(2));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "good");
}

}  // namespace
}  // namespace okna::metadata
