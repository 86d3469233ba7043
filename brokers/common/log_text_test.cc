// Copyright 2026 The zbrokers Authors.

#include "brokers/common/log_text.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace zb {
namespace {

TEST(PrintableIdentityTest, KeepsPrintableAscii) {
  EXPECT_EQ(PrintableIdentity("worker-1"), "worker-1");
  EXPECT_EQ(PrintableIdentity("~!{}"), "~!{}");
}

TEST(PrintableIdentityTest, HexWithPrefixForAnythingElse) {
  // libzmq's generated identities: a zero byte and four random bytes.
  EXPECT_EQ(PrintableIdentity(std::string_view("\x00\x6b\x8b\x45\x67", 5)),
            "0x006b8b4567");
  EXPECT_EQ(PrintableIdentity("a b"), "0x612062");  // one word, always
  EXPECT_EQ(PrintableIdentity("a\nb"), "0x610a62");
  EXPECT_EQ(PrintableIdentity("\xfe\xff"), "0xfeff");
  EXPECT_EQ(PrintableIdentity(""), "\"\"");
}

TEST(PrintableIdentityTest, CutsLongIdentities) {
  EXPECT_EQ(PrintableIdentity(std::string(100, 'x')),
            std::string(kMaxLoggedIdentityBytes, 'x') + "...");
  EXPECT_EQ(PrintableIdentity(std::string(kMaxLoggedIdentityBytes, 'x')),
            std::string(kMaxLoggedIdentityBytes, 'x'));
  const std::string binary(40, '\x01');
  std::string want = "0x";
  for (std::size_t i = 0; i < kMaxLoggedIdentityBytes; ++i) want += "01";
  EXPECT_EQ(PrintableIdentity(binary), want + "...");
}

TEST(QuotedTextTest, QuotesAndEscapes) {
  EXPECT_EQ(QuotedText("echo"), "\"echo\"");
  EXPECT_EQ(QuotedText(""), "\"\"");
  EXPECT_EQ(QuotedText("a \"b\"\\\n"), "\"a \\\"b\\\"\\\\\\n\"");
  EXPECT_EQ(QuotedText("\xfe\xff bad utf8"), "\"\\xfe\\xff bad utf8\"");
}

TEST(QuotedTextTest, CutsLongText) {
  const std::string quoted = QuotedText(std::string(1000, 's'));
  EXPECT_EQ(quoted, "\"" + std::string(kMaxLoggedTextBytes, 's') + "...\"");
}

}  // namespace
}  // namespace zb
