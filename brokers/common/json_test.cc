// Copyright 2026 The zbrokers Authors.

#include "brokers/common/json.h"

#include <gtest/gtest.h>

#include <string>

namespace zb {
namespace {

TEST(JsonQuoteTest, EscapesQuotesBackslashesAndEveryControlByte) {
  EXPECT_EQ(JsonQuote(""), "\"\"");
  EXPECT_EQ(JsonQuote("a\"b\\c/d"), "\"a\\\"b\\\\c/d\"");
  EXPECT_EQ(JsonQuote("\n\r\t"), "\"\\n\\r\\t\"");
  std::string controls;
  std::string expected = "\"";
  for (int c = 0; c < 0x20; ++c) {
    if (c == '\n' || c == '\r' || c == '\t') continue;
    controls.push_back(static_cast<char>(c));
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\u%04x", c);
    expected += buf;
  }
  controls.push_back('\x7f');
  expected += "\\u007f\"";
  EXPECT_EQ(JsonQuote(controls), expected);
}

TEST(JsonQuoteTest, KeepsValidUtf8) {
  const std::string text =
      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf";  // U+10FFFF
  EXPECT_EQ(JsonQuote(text), "\"" + text + "\"");
  EXPECT_TRUE(IsValidUtf8(text));
}

TEST(JsonQuoteTest, WritesEachByteThatIsNotUtf8AsReplacement) {
  const struct {
    const char* bytes;
    const char* quoted;
  } cases[] = {
      {"\xff", "\"\\ufffd\""},
      {"\x80", "\"\\ufffd\""},                        // lone continuation
      {"\xc3(", "\"\\ufffd(\""},                      // truncated
      {"\xc3", "\"\\ufffd\""},                        // at the end
      {"\xc0\xaf", "\"\\ufffd\\ufffd\""},             // overlong "/"
      {"\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\""},  // overlong, 3 bytes
      {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},  // surrogate U+D800
      {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},  // > U+10FFFF
      {"\xf5\x80", "\"\\ufffd\\ufffd\""},
      {"ok\xe2\x82", "\"ok\\ufffd\\ufffd\""},  // cut short
  };
  for (const auto& c : cases) {
    EXPECT_EQ(JsonQuote(c.bytes), c.quoted) << c.quoted;
    EXPECT_FALSE(IsValidUtf8(c.bytes)) << c.quoted;
  }
}

TEST(JsonQuoteTest, KeepsNulBytes) {
  EXPECT_EQ(JsonQuote(std::string("a\0b", 3)), "\"a\\u0000b\"");
  EXPECT_TRUE(IsValidUtf8(std::string("a\0b", 3)));
}

}  // namespace
}  // namespace zb
