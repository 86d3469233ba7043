// Copyright 2026 The zbrokers Authors.
//
// zb's command line and JSON output.  zb_cli_test.py runs the binary
// itself against zb-broker.

#include "tools/zb/cli.h"

#include <string>
#include <vector>

#include "brokers/common/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zb::cli {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<Options> P(std::vector<const char*> args) {
  return Parse(std::span<const char* const>(args));
}

std::string Error(std::vector<const char*> args) {
  absl::StatusOr<Options> o = P(args);
  EXPECT_FALSE(o.ok());
  return o.ok() ? "" : std::string(o.status().message());
}

TEST(CliParseTest, RequestWithFlagsAnywhere) {
  absl::StatusOr<Options> o =
      P({"request", "--protocol", "ccp", "127.0.0.1:5556", "echo", "a",
         "--timeout=250ms", "--retries", "2", "--json", "-", "--", "--b"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->command, Command::kRequest);
  EXPECT_EQ(o->protocol, Protocol::kCcp);
  EXPECT_EQ(o->endpoint, "tcp://127.0.0.1:5556");
  EXPECT_EQ(o->service, "echo");
  EXPECT_THAT(o->frames, ElementsAre("a", "-", "--b"));
  EXPECT_EQ(o->timeout, milliseconds(250));
  EXPECT_EQ(o->retries, 2);
  EXPECT_TRUE(o->json);
}

TEST(CliParseTest, EndpointListsAndPolicy) {
  absl::StatusOr<Options> o =
      P({"request", "127.0.0.1:5555, tcp://127.0.0.1:5556", "echo",
         "--endpoint-policy", "spread"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->endpoint, "tcp://127.0.0.1:5555,tcp://127.0.0.1:5556");
  EXPECT_EQ(o->endpoint_policy, EndpointPolicy::kSpread);
  o = P({"ping", "--endpoint-policy=failover", "a:1,ipc:///tmp/b"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->endpoint, "tcp://a:1,ipc:///tmp/b");
  EXPECT_EQ(o->endpoint_policy, EndpointPolicy::kFailover);
  o = P({"worker", "a:1,b:2", "echo", "--echo"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->endpoint, "tcp://a:1,tcp://b:2");

  EXPECT_THAT(Error({"ping", "a:1", "--endpoint-policy", "Spread"}),
              HasSubstr("--endpoint-policy: expected failover or spread, got "
                        "\"Spread\""));
  EXPECT_THAT(Error({"ping", "a:1", "--endpoint-policy"}),
              HasSubstr("needs a value"));
  EXPECT_THAT(
      Error({"worker", "a:1", "echo", "--echo", "--endpoint-policy", "spread"}),
      HasSubstr("--endpoint-policy is for request, mmi and ping"));
  EXPECT_THAT(Error({"request", "a:1,a:1", "echo"}), HasSubstr("twice"));
  EXPECT_THAT(Error({"request", "a:1,,b:2", "echo"}),
              HasSubstr("empty endpoint"));
  EXPECT_THAT(Error({"ping", "a:99999"}), HasSubstr("out of range"));
}

TEST(CliParseTest, Defaults) {
  absl::StatusOr<Options> o = P({"ping", "ipc:///tmp/x"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->protocol, Protocol::kMdp);
  EXPECT_EQ(o->timeout, milliseconds(5000));
  EXPECT_EQ(o->retries, 0);
  EXPECT_EQ(o->endpoint, "ipc:///tmp/x");
  EXPECT_EQ(o->endpoint_policy, EndpointPolicy::kFailover);
  EXPECT_FALSE(o->curve());
  absl::StatusOr<Options> k = P({"keygen"});
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->out, "zb");
  EXPECT_FALSE(k->force);
}

TEST(CliParseTest, UsageErrors) {
  EXPECT_THAT(Error({}), HasSubstr("missing command"));
  EXPECT_THAT(Error({"frobnicate"}), HasSubstr("unknown command"));
  EXPECT_THAT(Error({"request", "tcp://x:1"}), HasSubstr("request ENDPOINT"));
  EXPECT_THAT(Error({"ping", "a", "b"}), HasSubstr("ping ENDPOINT"));
  EXPECT_THAT(Error({"request", "tcp://x:1", "s", "--timeout", "5"}),
              HasSubstr("--timeout"));
  EXPECT_THAT(Error({"request", "tcp://x:1", "s", "--retries", "-1"}),
              HasSubstr("--retries"));
  EXPECT_THAT(Error({"request", "tcp://x:1", "s", "--protocol", "http"}),
              HasSubstr("--protocol"));
  EXPECT_THAT(Error({"request", "tcp://x:1", "s", "--bogus"}),
              HasSubstr("unknown flag --bogus"));
  EXPECT_THAT(Error({"request", "tcp://x:1", "s", "--timeout"}),
              HasSubstr("needs a value"));
  EXPECT_THAT(Error({"request", "tcp://x:1", "s", "-", "-"}),
              HasSubstr("once"));
  EXPECT_THAT(Error({"mmi", "--protocol", "ccp", "tcp://x:1", "s"}),
              HasSubstr("Majordomo"));
  EXPECT_THAT(Error({"worker", "tcp://x:1", "s"}), HasSubstr("--echo"));
  EXPECT_THAT(Error({"request", "tcp://x:1", "s", "--echo"}),
              HasSubstr("zb worker"));
  EXPECT_THAT(Error({"request", "tcp://x:1", "s", "--json=1"}),
              HasSubstr("takes no value"));
}

TEST(CliParseTest, CurveNeedsBothKeys) {
  EXPECT_THAT(Error({"ping", "tcp://x:1", "--curve-server-key", "k"}),
              HasSubstr("--curve-secret-key-file"));
  EXPECT_THAT(Error({"ping", "tcp://x:1", "--curve-secret-key-file", "f"}),
              HasSubstr("--curve-server-key"));
  EXPECT_THAT(
      Error({"ping", "tcp://x:1", "--curve-server-key", "k",
             "--curve-server-key-file", "f", "--curve-secret-key-file", "s"}),
      HasSubstr("not both"));
  absl::StatusOr<Options> o =
      P({"ping", "tcp://x:1", "--curve-server-key-file", "b.pub",
         "--curve_secret_key_file", "a.secret"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->curve());
  EXPECT_EQ(o->curve_server_key_file, "b.pub");
  EXPECT_EQ(o->curve_secret_key_file, "a.secret");
}

TEST(CliParseTest, HelpNamesEveryCommandAndExitCode) {
  absl::StatusOr<Options> o = P({"--help"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->help);
  const std::string usage = Usage();
  for (const char* word :
       {"request ENDPOINT", "mmi ENDPOINT", "ping ENDPOINT", "worker ENDPOINT",
        "keygen", "--protocol", "--timeout", "--retries", "--json",
        "--curve-server-key", "--curve-secret-key-file", "Exit codes",
        "  3  no answer"}) {
    EXPECT_THAT(usage, HasSubstr(word));
  }
}

// Strings that are not frames (a failure reason a peer chose, a key file's
// path), which zb writes with JsonQuote, may hold any bytes.  Bytes that are
// not UTF-8 cannot be in a JSON text at all (RFC 8259), so they are written as
// U+FFFD, and every control byte is escaped: the same rules as the daemon's
// JSON log lines.
TEST(CliJsonTest, StringsOfAnyBytesStayValidJson) {
  EXPECT_EQ(JsonQuote("a\"b\\c\n\r\t"), "\"a\\\"b\\\\c\\n\\r\\t\"");
  EXPECT_EQ(JsonQuote(std::string("\x00\x01\x1f\x7f", 4)),
            "\"\\u0000\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(JsonQuote("caf\xc3\xa9 \xf0\x9f\x98\x80"),
            "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
  EXPECT_EQ(JsonQuote("bad:\xff\xc3("), "\"bad:\\ufffd\\ufffd(\"");
  // Overlong "/" and a UTF-16 surrogate: one U+FFFD per byte.
  EXPECT_EQ(JsonQuote("\xc0\xaf\xed\xa0\x80"),
            "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");
}

TEST(CliJsonTest, FramesAreStringsOrBase64) {
  EXPECT_EQ(JsonFrame("hi \"there\"\n"), "\"hi \\\"there\\\"\\n\"");
  EXPECT_EQ(JsonFrame("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(JsonFrame(std::string("\x00\x01", 2)), "\"\\u0000\\u0001\"");
  EXPECT_EQ(JsonFrame("\xff\xfe"), "{\"base64\": \"//4=\"}");
  EXPECT_EQ(JsonFrame("\xc0\xaf"), "{\"base64\": \"wK8=\"}");  // overlong
  EXPECT_EQ(JsonFrame(""), "\"\"");
}

}  // namespace
}  // namespace zb::cli
