#include "metadata/signature.h"

#include <gtest/gtest.h>

namespace okna::metadata {
namespace {

constexpr const char* kInstance = "4b1a0cc0-7c2d-4e6a-9a9b-1a2b3c4d5e6f";

TEST(SignatureTest, IssueVectors) {
  EXPECT_EQ(signInstanceId("secret", kInstance),
            "5f3904eb12f72ded92c6bd5f9146976c3adeba4f3c91f17f78ffe5b6fde7453a");
  EXPECT_EQ(signInstanceId("", kInstance),
            "9705324989619af3cd12d060ffbcc43c3e087ddce274198f25a532fa261a7c88");
  EXPECT_EQ(signInstanceId("sécret-ключ-秘密", kInstance),
            "047384a64557a570ee0473878ceb82413e7d1009f2a9120829a5aa350e2d4462");
}

TEST(SignatureTest, Rfc4231Case2) {
  // RFC 4231 test case 2 ("Jefe"): checks the HMAC itself, not only our vectors.
  EXPECT_EQ(signInstanceId("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(SignatureTest, KeyLongerThanBlockAndBinaryBytes) {
  const std::string longKey(131, '\xaa');  // RFC 4231 case 6
  EXPECT_EQ(signInstanceId(longKey, "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  const std::string withNul("a\0b", 3);
  EXPECT_NE(signInstanceId(withNul, kInstance), signInstanceId("a", kInstance));
}

TEST(SignatureTest, LowercaseHex) {
  const auto s = signInstanceId("k", "i");
  ASSERT_EQ(s.size(), 64u);
  for (char c : s) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << s;
}

}  // namespace
}  // namespace okna::metadata
