// Copyright 2026 The zbrokers Authors.

#include "brokers/daemon/config.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "zbrokers/consensus/broker.h"
#include "zbrokers/majordomo/broker.h"

namespace zb {
namespace {

using std::chrono::milliseconds;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

absl::StatusOr<CommandLine> Parse(std::vector<const char*> args) {
  return ParseCommandLine(std::span<const char* const>(args));
}

// The error message of a parse that must fail.
std::string ParseError(std::string_view toml) {
  absl::StatusOr<DaemonConfig> c = ParseConfigText(toml, "t.toml");
  EXPECT_FALSE(c.ok()) << "parsed: " << toml;
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(c.status().message());
}

// A temporary file removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(std::string_view text) {
    char name[] = "/tmp/zb_config_test_XXXXXX";
    const int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = name;
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

constexpr std::string_view kGoodFile = R"(
# every key
[daemon]
log_level = "debug"
stats_interval = "30s"
metrics = "127.0.0.1:9100"
grace = "2500ms"
metrics_max_services = 25

[majordomo]
endpoints = ["tcp://*:5555", "ipc:///tmp/zb-mdp"]
heartbeat_interval = "1s"
heartbeat_liveness = 5
queue_limit = 1000
queue_expiry = "1m"
max_redispatch = 2
max_services = 50
max_workers = 70
reply_timeout = "90s"
max_requests_per_client = 500
max_message_size = 1048576
worker_prefetch = 8

[consensus]
endpoints = ["tcp://127.0.0.1:5556"]
request_deadline = "3s"
client_expiry = "10m"
max_heartbeat_interval = "30s"
max_heartbeat_retries = 5
max_workers = 11
max_services = 12
max_clients = 13
max_requests_per_client = 14
max_message_size = 8192
)";

TEST(ConfigFileTest, GoodFileSetsEveryKey) {
  absl::StatusOr<DaemonConfig> c = ParseConfigText(kGoodFile, "good.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->log_level, DaemonLogLevel::kDebug);
  EXPECT_EQ(c->stats_interval, milliseconds(30'000));
  EXPECT_EQ(c->metrics, "127.0.0.1:9100");
  EXPECT_EQ(c->grace, milliseconds(2500));
  EXPECT_EQ(c->metrics_max_services, 25u);
  EXPECT_THAT(c->majordomo.endpoints,
              ElementsAre("tcp://*:5555", "ipc:///tmp/zb-mdp"));
  EXPECT_EQ(c->majordomo.heartbeat_interval, milliseconds(1000));
  EXPECT_EQ(c->majordomo.heartbeat_liveness, 5);
  EXPECT_EQ(c->majordomo.max_queue_per_service, 1000);
  EXPECT_EQ(c->majordomo.queue_expiry, milliseconds(60'000));
  EXPECT_EQ(c->majordomo.max_redispatch, 2);
  EXPECT_EQ(c->majordomo.max_services, 50);
  EXPECT_EQ(c->majordomo.max_workers, 70);
  EXPECT_EQ(c->majordomo.reply_timeout, milliseconds(90'000));
  EXPECT_EQ(c->majordomo.max_requests_per_client, 500);
  EXPECT_EQ(c->majordomo.max_message_size, 1 << 20);
  EXPECT_EQ(c->majordomo.worker_prefetch, 8);
  EXPECT_THAT(c->consensus.endpoints, ElementsAre("tcp://127.0.0.1:5556"));
  EXPECT_EQ(c->consensus.request_timeout, milliseconds(3000));
  EXPECT_EQ(c->consensus.client_idle_timeout, milliseconds(600'000));
  EXPECT_EQ(c->consensus.max_heartbeat_interval, milliseconds(30'000));
  EXPECT_EQ(c->consensus.max_heartbeat_liveness, 5);
  EXPECT_EQ(c->consensus.max_workers, 11);
  EXPECT_EQ(c->consensus.max_services, 12);
  EXPECT_EQ(c->consensus.max_clients, 13);
  EXPECT_EQ(c->consensus.max_requests_per_client, 14);
  EXPECT_EQ(c->consensus.max_message_size, 8192);
}

// Issue 11 (items 2-5): the consensus broker's bounds are flags too, named
// --consensus-<key>; 0 turns the caps off; a bad value names the flag.
TEST(CommandLineTest, ConsensusBoundsFlags) {
  absl::StatusOr<CommandLine> cli = Parse(
      {"--consensus", "tcp://*:1", "--consensus-max-heartbeat-interval=2s",
       "--consensus-max-heartbeat-retries", "4", "--consensus-max-workers", "0",
       "--consensus-max-services=3", "--consensus-max-clients", "500",
       "--consensus_max_requests_per_client", "7",
       "--consensus-max-message-size", "0"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->consensus.max_heartbeat_interval, milliseconds(2000));
  EXPECT_EQ(c->consensus.max_heartbeat_liveness, 4);
  EXPECT_EQ(c->consensus.max_workers, 0);
  EXPECT_EQ(c->consensus.max_services, 3);
  EXPECT_EQ(c->consensus.max_clients, 500);
  EXPECT_EQ(c->consensus.max_requests_per_client, 7);
  EXPECT_EQ(c->consensus.max_message_size, 0);
  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{
           {"--consensus-max-heartbeat-interval", "0s"},
           {"--consensus-max-heartbeat-retries", "0"},
           {"--consensus-max-clients", "-1"},
           {"--consensus-max-message-size", "big"}}) {
    cli = Parse({"--consensus", "tcp://*:1", flag.c_str(), value.c_str()});
    ASSERT_TRUE(cli.ok()) << cli.status();
    EXPECT_THAT(BuildConfig(*cli).status().message(), HasSubstr(flag));
  }
}

TEST(ConfigFileTest, EmptyFileKeepsDefaults) {
  absl::StatusOr<DaemonConfig> c = ParseConfigText("", "empty.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->log_level, DaemonLogLevel::kInfo);
  EXPECT_EQ(c->stats_interval, milliseconds(60'000));
  EXPECT_EQ(c->metrics, "");
  EXPECT_EQ(c->grace, milliseconds(5000));
  EXPECT_EQ(c->metrics_max_services, 1000u);
  EXPECT_TRUE(c->majordomo.endpoints.empty());
  EXPECT_FALSE(c->majordomo.heartbeat_interval.has_value());
  EXPECT_FALSE(c->majordomo.max_queue_per_service.has_value());
  EXPECT_FALSE(c->majordomo.worker_prefetch.has_value());
  EXPECT_FALSE(c->majordomo.max_workers.has_value());
  EXPECT_FALSE(c->majordomo.reply_timeout.has_value());
  EXPECT_FALSE(c->majordomo.max_requests_per_client.has_value());
  EXPECT_FALSE(c->majordomo.max_message_size.has_value());
  EXPECT_FALSE(c->consensus.request_timeout.has_value());
  // Valid TOML but no broker: the daemon must refuse to start.
  EXPECT_FALSE(ValidateConfig(*c).ok());
}

TEST(ConfigFileTest, BatchSchedulingIsABooleanOnByDefault) {
  absl::StatusOr<DaemonConfig> c = ParseConfigText("", "empty.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->batch_scheduling);
  c = ParseConfigText("[daemon]\nbatch_scheduling = false\n", "t.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->batch_scheduling);
  for (auto [text, want] : std::vector<std::pair<const char*, bool>>{
           {"false", false}, {"off", false}, {"true", true}, {"on", true}}) {
    absl::StatusOr<CommandLine> cli =
        Parse({"--majordomo", "tcp://*:1", "--batch-scheduling", text});
    ASSERT_TRUE(cli.ok()) << cli.status();
    absl::StatusOr<DaemonConfig> built = BuildConfig(*cli);
    ASSERT_TRUE(built.ok()) << built.status();
    EXPECT_EQ(built->batch_scheduling, want) << text;
  }
}

TEST(ConfigFileTest, YieldBeforeSleepIsABooleanOffByDefault) {
  absl::StatusOr<DaemonConfig> c = ParseConfigText("", "empty.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->yield_before_sleep);
  c = ParseConfigText("[daemon]\nyield_before_sleep = true\n", "t.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->yield_before_sleep);
  // A string is not a boolean: strict types, as for every key.
  EXPECT_THAT(
      ParseConfigText("[daemon]\nyield_before_sleep = \"no\"\n", "t.toml")
          .status()
          .message(),
      AllOf(HasSubstr("t.toml:2:"), HasSubstr("daemon.yield_before_sleep"),
            HasSubstr("expected true or false, got a string")));
  // The flag takes true/false or on/off, and overrides the file.
  for (auto [text, want] : std::vector<std::pair<const char*, bool>>{
           {"false", false}, {"off", false}, {"true", true}, {"on", true}}) {
    absl::StatusOr<CommandLine> cli =
        Parse({"--majordomo", "tcp://*:1", "--yield-before-sleep", text});
    ASSERT_TRUE(cli.ok()) << cli.status();
    absl::StatusOr<DaemonConfig> built = BuildConfig(*cli);
    ASSERT_TRUE(built.ok()) << built.status();
    EXPECT_EQ(built->yield_before_sleep, want) << text;
  }
  absl::StatusOr<CommandLine> cli =
      Parse({"--majordomo", "tcp://*:1", "--yield-before-sleep", "maybe"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  EXPECT_THAT(BuildConfig(*cli).status().message(),
              AllOf(HasSubstr("--yield-before-sleep"),
                    HasSubstr("expected true or false (or on or off)")));
}

TEST(ConfigFileTest, ZeroMeansOffWhereDocumented) {
  absl::StatusOr<DaemonConfig> c = ParseConfigText(
      "[daemon]\nstats_interval = \"0s\"\ngrace = \"0s\"\nmetrics = \"\"\n"
      "[majordomo]\nqueue_limit = 0\nqueue_expiry = \"0s\"\n"
      "max_redispatch = 0\nmax_services = 0\nmax_workers = 0\n"
      "reply_timeout = \"0s\"\nmax_requests_per_client = 0\n"
      "max_message_size = 0\n",
      "t.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->majordomo.max_requests_per_client, 0);
  EXPECT_EQ(c->majordomo.max_message_size, 0);
  EXPECT_EQ(c->majordomo.max_services, 0);
  EXPECT_EQ(c->majordomo.max_workers, 0);
  EXPECT_EQ(c->majordomo.reply_timeout, milliseconds(0));
  EXPECT_EQ(c->stats_interval, milliseconds(0));
  EXPECT_EQ(c->grace, milliseconds(0));
  EXPECT_EQ(c->majordomo.max_queue_per_service, 0);
  EXPECT_EQ(c->majordomo.queue_expiry, milliseconds(0));
  EXPECT_EQ(c->majordomo.max_redispatch, 0);
}

TEST(ConfigFileTest, SyntaxErrorNamesLine) {
  EXPECT_THAT(ParseError("[daemon]\nlog_level = = \"info\"\n"),
              HasSubstr("t.toml:2:"));
}

TEST(ConfigFileTest, UnknownTableIsAnError) {
  EXPECT_THAT(ParseError("[daemon]\ngrace = \"1s\"\n[majordomoo]\n"),
              AllOf(HasSubstr("t.toml:3:"), HasSubstr("majordomoo")));
}

TEST(ConfigFileTest, TopLevelKeyIsAnError) {
  EXPECT_THAT(ParseError("log_level = \"info\"\n"),
              AllOf(HasSubstr("t.toml:1:"), HasSubstr("log_level")));
}

TEST(ConfigFileTest, SectionThatIsNotATableIsAnError) {
  EXPECT_THAT(ParseError("daemon = 3\n"),
              AllOf(HasSubstr("t.toml:1:"), HasSubstr("must be a table")));
}

TEST(ConfigFileTest, UnknownKeyIsAnErrorWithItsLine) {
  const std::string msg = ParseError(
      "[majordomo]\nendpoints = [\"tcp://*:1\"]\n"
      "heartbeat_intervl = \"1s\"\n");
  EXPECT_THAT(msg, AllOf(HasSubstr("t.toml:3:"),
                         HasSubstr("majordomo.heartbeat_intervl"),
                         HasSubstr("heartbeat_interval")));  // the known keys
}

TEST(ConfigFileTest, KeyOfAnotherSectionIsUnknown) {
  EXPECT_THAT(
      ParseError("[consensus]\nqueue_limit = 3\n"),
      AllOf(HasSubstr("t.toml:2:"), HasSubstr("consensus.queue_limit")));
}

struct BadValue {
  std::string_view toml;
  std::string_view key;   // must be named in the message
  std::string_view line;  // "t.toml:N:"
};

class ConfigBadValueTest : public ::testing::TestWithParam<BadValue> {};

TEST_P(ConfigBadValueTest, NamesKeyAndLine) {
  const BadValue& bad = GetParam();
  const std::string msg = ParseError(bad.toml);
  EXPECT_THAT(msg, HasSubstr(bad.key));
  EXPECT_THAT(msg, HasSubstr(bad.line));
}

INSTANTIATE_TEST_SUITE_P(
    EachKey, ConfigBadValueTest,
    ::testing::Values(
        BadValue{"[daemon]\nlog_level = \"loud\"\n", "daemon.log_level",
                 "t.toml:2:"},
        BadValue{"[daemon]\nlog_level = 3\n", "daemon.log_level", "t.toml:2:"},
        BadValue{"[daemon]\n\nstats_interval = 60\n", "daemon.stats_interval",
                 "t.toml:3:"},
        BadValue{"[daemon]\nstats_interval = \"-5s\"\n",
                 "daemon.stats_interval", "t.toml:2:"},
        BadValue{"[daemon]\nstats_interval = \"60\"\n", "daemon.stats_interval",
                 "t.toml:2:"},
        BadValue{"[daemon]\nstats_interval = \"inf\"\n",
                 "daemon.stats_interval", "t.toml:2:"},
        BadValue{"[daemon]\nmetrics = \"localhost\"\n", "daemon.metrics",
                 "t.toml:2:"},
        BadValue{"[daemon]\nmetrics = \"127.0.0.1:70000\"\n", "daemon.metrics",
                 "t.toml:2:"},
        BadValue{"[daemon]\nmetrics = 9100\n", "daemon.metrics", "t.toml:2:"},
        BadValue{"[daemon]\ngrace = \"soon\"\n", "daemon.grace", "t.toml:2:"},
        BadValue{"[majordomo]\nendpoints = \"tcp://*:5555\"\n",
                 "majordomo.endpoints", "t.toml:2:"},
        BadValue{"[majordomo]\nendpoints = [\n  \"tcp://*:5555\",\n  5,\n]\n",
                 "majordomo.endpoints", "t.toml:4:"},
        BadValue{"[majordomo]\nendpoints = [\"*:5555\"]\n",
                 "majordomo.endpoints", "t.toml:2:"},
        BadValue{"[majordomo]\nheartbeat_interval = \"0s\"\n",
                 "majordomo.heartbeat_interval", "t.toml:2:"},
        BadValue{"[majordomo]\nheartbeat_liveness = 0\n",
                 "majordomo.heartbeat_liveness", "t.toml:2:"},
        BadValue{"[majordomo]\nheartbeat_liveness = 2.5\n",
                 "majordomo.heartbeat_liveness", "t.toml:2:"},
        BadValue{"[majordomo]\nqueue_limit = -1\n", "majordomo.queue_limit",
                 "t.toml:2:"},
        BadValue{"[majordomo]\nqueue_expiry = true\n", "majordomo.queue_expiry",
                 "t.toml:2:"},
        BadValue{"[majordomo]\nmax_redispatch = \"1\"\n",
                 "majordomo.max_redispatch", "t.toml:2:"},
        BadValue{"[majordomo]\nmax_services = -3\n", "majordomo.max_services",
                 "t.toml:2:"},
        BadValue{"[majordomo]\nmax_workers = -1\n", "majordomo.max_workers",
                 "t.toml:2:"},
        BadValue{"[majordomo]\nmax_requests_per_client = -5\n",
                 "majordomo.max_requests_per_client", "t.toml:2:"},
        BadValue{"[majordomo]\nmax_message_size = \"16MiB\"\n",
                 "majordomo.max_message_size", "t.toml:2:"},
        BadValue{"[majordomo]\n\nmax_message_size = 4294967296\n",
                 "majordomo.max_message_size", "t.toml:3:"},
        BadValue{"[majordomo]\nmax_workers = \"10\"\n", "majordomo.max_workers",
                 "t.toml:2:"},
        BadValue{"[majordomo]\n\nreply_timeout = 60\n",
                 "majordomo.reply_timeout", "t.toml:3:"},
        BadValue{"[majordomo]\nreply_timeout = \"-1s\"\n",
                 "majordomo.reply_timeout", "t.toml:2:"},
        BadValue{"[majordomo]\nheartbeat_liveness = 4294967296\n",
                 "majordomo.heartbeat_liveness", "t.toml:2:"},
        BadValue{"[majordomo]\nworker_prefetch = 0\n",
                 "majordomo.worker_prefetch", "t.toml:2:"},
        BadValue{"[majordomo]\n\nworker_prefetch = 1001\n",
                 "majordomo.worker_prefetch", "t.toml:3:"},
        BadValue{"[majordomo]\nworker_prefetch = \"4\"\n",
                 "majordomo.worker_prefetch", "t.toml:2:"},
        BadValue{"[consensus]\nendpoints = [\"tcp:/x\"]\n",
                 "consensus.endpoints", "t.toml:2:"},
        BadValue{"[consensus]\nrequest_deadline = \"0ms\"\n",
                 "consensus.request_deadline", "t.toml:2:"},
        BadValue{"[consensus]\nclient_expiry = \"5 minutes\"\n",
                 "consensus.client_expiry", "t.toml:2:"}));

TEST(CommandLineTest, ParsesEveryFlagBothWays) {
  absl::StatusOr<CommandLine> cli =
      Parse({"--majordomo", "tcp://*:1", "--consensus=tcp://*:2",
             "--majordomo=tcp://*:3", "--config", "f.toml", "--log-level=warn",
             "--grace", "1s", "--metrics", "127.0.0.1:0"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  EXPECT_FALSE(cli->help);
  EXPECT_EQ(cli->config_file, "f.toml");
  EXPECT_THAT(cli->majordomo, ElementsAre("tcp://*:1", "tcp://*:3"));
  EXPECT_THAT(cli->consensus, ElementsAre("tcp://*:2"));
  EXPECT_EQ(cli->overrides.size(), 3u);
}

TEST(CommandLineTest, CommaSeparatedEndpointsUnderscoresAndAliases) {
  absl::StatusOr<CommandLine> cli =
      Parse({"--consensus", "tcp://*:1,ipc:///tmp/x", "--consensus=tcp://*:2",
             "--log_level", "debug", "--consensus_timeout=2s",
             "--consensus_client_idle", "1m"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  EXPECT_THAT(cli->consensus,
              ElementsAre("tcp://*:1", "ipc:///tmp/x", "tcp://*:2"));
  absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->log_level, DaemonLogLevel::kDebug);
  EXPECT_EQ(c->consensus.request_timeout, milliseconds(2000));
  EXPECT_EQ(c->consensus.client_idle_timeout, milliseconds(60'000));
  // An error names the flag as the user typed it.
  cli = Parse({"--consensus", "tcp://*:1", "--consensus_timeout", "0s"});
  ASSERT_TRUE(cli.ok());
  c = BuildConfig(*cli);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("--consensus_timeout"));
}

TEST(CommandLineTest, HelpAndVersion) {
  absl::StatusOr<CommandLine> cli = Parse({"--help"});
  ASSERT_TRUE(cli.ok());
  EXPECT_TRUE(cli->help);
  cli = Parse({"-h"});
  ASSERT_TRUE(cli.ok());
  EXPECT_TRUE(cli->help);
  cli = Parse({"--version"});
  ASSERT_TRUE(cli.ok());
  EXPECT_TRUE(cli->version);
  EXPECT_THAT(UsageText(),
              AllOf(HasSubstr("--majordomo"), HasSubstr("--consensus"),
                    HasSubstr("--config"), HasSubstr("--grace")));
}

TEST(CommandLineTest, UnknownFlagIsAnError) {
  absl::StatusOr<CommandLine> cli =
      Parse({"--majordomo", "tcp://*:1", "--frobnicate"});
  ASSERT_FALSE(cli.ok());
  EXPECT_THAT(cli.status().message(), HasSubstr("--frobnicate"));
}

TEST(CommandLineTest, MissingValueIsAnError) {
  absl::StatusOr<CommandLine> cli = Parse({"--majordomo"});
  ASSERT_FALSE(cli.ok());
  EXPECT_THAT(cli.status().message(), HasSubstr("--majordomo needs a value"));
}

TEST(CommandLineTest, PositionalArgumentIsAnError) {
  absl::StatusOr<CommandLine> cli = Parse({"tcp://*:5555"});
  ASSERT_FALSE(cli.ok());
  EXPECT_THAT(cli.status().message(), HasSubstr("tcp://*:5555"));
}

TEST(CommandLineTest, BadFlagValueNamesTheFlag) {
  struct Case {
    std::vector<const char*> args;
    std::string_view flag;
  };
  const std::vector<Case> cases = {
      {{"--majordomo", "nonsense"}, "--majordomo"},
      {{"--consensus", "tcp://*:1", "--log-level", "chatty"}, "--log-level"},
      {{"--consensus", "tcp://*:1", "--grace", "5"}, "--grace"},
      {{"--consensus", "tcp://*:1", "--metrics", "9100"}, "--metrics"},
      {{"--consensus", "tcp://*:1", "--heartbeat-liveness", "x"},
       "--heartbeat-liveness"},
      {{"--consensus", "tcp://*:1", "--queue-limit=-2"}, "--queue-limit"},
      {{"--consensus", "tcp://*:1", "--request-deadline", "0s"},
       "--request-deadline"},
      {{"--consensus", "tcp://*:1", "--worker-prefetch", "0"},
       "--worker-prefetch"},
      {{"--consensus", "tcp://*:1", "--worker_prefetch=1001"},
       "--worker_prefetch"},
      {{"--consensus", "tcp://*:1", "--reply-timeout", "5"}, "--reply-timeout"},
      {{"--consensus", "tcp://*:1", "--max-workers", "-1"}, "--max-workers"},
      {{"--consensus", "tcp://*:1", "--max-services", "many"},
       "--max-services"},
      {{"--consensus", "tcp://*:1", "--max-requests-per-client", "-1"},
       "--max-requests-per-client"},
      {{"--consensus", "tcp://*:1", "--max-message-size=1.5"},
       "--max-message-size"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<CommandLine> cli = Parse(c.args);
    ASSERT_TRUE(cli.ok()) << cli.status();
    absl::StatusOr<DaemonConfig> config = BuildConfig(*cli);
    ASSERT_FALSE(config.ok()) << c.flag;
    EXPECT_THAT(config.status().message(), HasSubstr(c.flag));
  }
}

TEST(BuildConfigTest, NoBrokerIsAnError) {
  absl::StatusOr<CommandLine> cli = Parse({"--log-level", "debug"});
  ASSERT_TRUE(cli.ok());
  absl::StatusOr<DaemonConfig> config = BuildConfig(*cli);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("no broker"));
}

TEST(BuildConfigTest, ClientLimitAndMessageSizeFlagsOverrideTheFile) {
  TempFile file(kGoodFile);
  absl::StatusOr<CommandLine> cli =
      Parse({"--config", file.path().c_str(), "--max-requests-per-client", "9",
             "--max-message-size", "4096"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->majordomo.max_requests_per_client, 9);  // the file says 500
  EXPECT_EQ(c->majordomo.max_message_size, 4096);      // the file says 1 MiB
  EXPECT_EQ(c->consensus.max_message_size, 4096);      // every broker's: 8 KiB
  cli = Parse(
      {"--config", file.path().c_str(), "--consensus-max-message-size", "100"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  c = BuildConfig(*cli);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->consensus.max_message_size, 100);
  EXPECT_EQ(c->majordomo.max_message_size, 1 << 20);  // the file's
}

TEST(BuildConfigTest, FlagsOverrideTheFile) {
  TempFile file(kGoodFile);
  absl::StatusOr<CommandLine> cli =
      Parse({"--config", file.path().c_str(), "--majordomo", "tcp://*:7000",
             "--log-level", "error", "--queue-limit", "7", "--grace=0s",
             "--metrics=", "--worker-prefetch", "16", "--reply-timeout=2s",
             "--max-workers", "3", "--max-services=4", "--metrics-max-services",
             "3"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
  ASSERT_TRUE(c.ok()) << c.status();
  // Overridden.
  EXPECT_THAT(c->majordomo.endpoints, ElementsAre("tcp://*:7000"));
  EXPECT_EQ(c->log_level, DaemonLogLevel::kError);
  EXPECT_EQ(c->majordomo.max_queue_per_service, 7);
  EXPECT_EQ(c->grace, milliseconds(0));
  EXPECT_EQ(c->metrics, "");
  EXPECT_EQ(c->majordomo.worker_prefetch, 16);  // the file says 8
  EXPECT_EQ(c->majordomo.reply_timeout, milliseconds(2000));
  EXPECT_EQ(c->majordomo.max_workers, 3);
  EXPECT_EQ(c->majordomo.max_services, 4);
  EXPECT_EQ(c->metrics_max_services, 3u);  // the file says 25
  // Kept from the file.
  EXPECT_THAT(c->consensus.endpoints, ElementsAre("tcp://127.0.0.1:5556"));
  EXPECT_EQ(c->majordomo.heartbeat_liveness, 5);
  EXPECT_EQ(c->stats_interval, milliseconds(30'000));
}

TEST(ConfigFileTest, WorkerPrefetchBoundsAndMessage) {
  absl::StatusOr<DaemonConfig> c =
      ParseConfigText("[majordomo]\nworker_prefetch = 1000\n", "t.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->majordomo.worker_prefetch, 1000);
  c = ParseConfigText("[majordomo]\nworker_prefetch = 1\n", "t.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->majordomo.worker_prefetch, 1);
  EXPECT_EQ(ParseError("[majordomo]\nworker_prefetch = 1001\n"),
            "t.toml:2:19: majordomo.worker_prefetch: expected an integer from "
            "1 to 1000, got 1001");
}

TEST(BuildConfigTest, FlagsAloneSuffice) {
  absl::StatusOr<CommandLine> cli =
      Parse({"--consensus", "tcp://*:5556", "--stats-interval", "1m30s"});
  ASSERT_TRUE(cli.ok());
  absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->consensus.endpoints, ElementsAre("tcp://*:5556"));
  EXPECT_EQ(c->stats_interval, milliseconds(90'000));
}

TEST(BuildConfigTest, BadFileNamesPathKeyAndLine) {
  TempFile file(
      "[consensus]\nendpoints = [\"tcp://*:1\"]\n"
      "request_deadline = 5\n");
  absl::StatusOr<CommandLine> cli = Parse({"--config", file.path().c_str()});
  ASSERT_TRUE(cli.ok());
  absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              AllOf(HasSubstr(file.path() + ":3:"),
                    HasSubstr("consensus.request_deadline")));
}

TEST(BuildConfigTest, MissingFileIsAnError) {
  absl::StatusOr<CommandLine> cli =
      Parse({"--config", "/nonexistent/zb.toml", "--consensus", "tcp://*:1"});
  ASSERT_TRUE(cli.ok());
  absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              AllOf(HasSubstr("--config"), HasSubstr("/nonexistent/zb.toml")));
}

TEST(BuildConfigTest, ExampleFileIsValid) {
  const char* path = std::getenv("ZB_EXAMPLE_CONFIG");
  if (path == nullptr) GTEST_SKIP() << "ZB_EXAMPLE_CONFIG not set";
  absl::StatusOr<DaemonConfig> c = LoadConfigFile(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(ValidateConfig(*c).ok());
}

TEST(DurationTest, ParseAndFormat) {
  EXPECT_EQ(*ParseDurationText("250ms"), milliseconds(250));
  EXPECT_EQ(*ParseDurationText("1m30s"), milliseconds(90'000));
  EXPECT_EQ(*ParseDurationText("0"), milliseconds(0));
  EXPECT_FALSE(ParseDurationText("5").ok());
  EXPECT_FALSE(ParseDurationText("").ok());
  EXPECT_FALSE(ParseDurationText("-1s").ok());
  EXPECT_EQ(FormatDuration(milliseconds(2500)), "2.5s");
  EXPECT_EQ(FormatDuration(milliseconds(0)), "0s");
}

TEST(LogLevelTest, RoundTrip) {
  for (DaemonLogLevel l :
       {DaemonLogLevel::kTrace, DaemonLogLevel::kDebug, DaemonLogLevel::kInfo,
        DaemonLogLevel::kWarn, DaemonLogLevel::kError,
        DaemonLogLevel::kCritical, DaemonLogLevel::kOff}) {
    EXPECT_EQ(*ParseLogLevel(LogLevelName(l)), l);
  }
  EXPECT_EQ(*ParseLogLevel("WARNING"), DaemonLogLevel::kWarn);
  EXPECT_FALSE(ParseLogLevel("verbose").ok());
}

// libzmq 4.3 binds "tcp://127.0.0.1:99999" as port 34463 without a word, so
// the daemon refuses a port out of range before it binds anything.
TEST(ConfigEndpointTest, PortOutOfRangeIsAnError) {
  EXPECT_EQ(ParseError("[majordomo]\nendpoints = [\n  \"tcp://*:5555\",\n  "
                       "\"tcp://127.0.0.1:99999\",\n]\n"),
            "t.toml:4:3: majordomo.endpoints: tcp port \"99999\" in "
            "\"tcp://127.0.0.1:99999\" is out of range (0 to 65535, or * for "
            "any free port)");
  EXPECT_THAT(ParseError("[consensus]\nendpoints = [\"tcp://*:-1\"]\n"),
              HasSubstr("t.toml:2:"));
  for (const char* ep : {"tcp://127.0.0.1:99999", "tcp://[::1]:65536",
                         "tcp://127.0.0.1:", "tcp://*:5555x"}) {
    absl::StatusOr<CommandLine> cli = Parse({"--consensus", ep});
    ASSERT_TRUE(cli.ok()) << cli.status();
    absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
    ASSERT_FALSE(c.ok()) << ep;
    EXPECT_THAT(c.status().message(),
                AllOf(HasSubstr("--consensus: "), HasSubstr(ep)));
  }
  // In range, wildcards and IPv6 literals are fine.
  absl::StatusOr<CommandLine> cli =
      Parse({"--majordomo", "tcp://127.0.0.1:65535,tcp://[::1]:*,tcp://*:0",
             "--consensus", "ipc:///tmp/x:99999"});
  ASSERT_TRUE(cli.ok());
  EXPECT_TRUE(BuildConfig(*cli).ok()) << BuildConfig(*cli).status();
}

// The description of `flag` in the usage text: its line and the
// continuation lines below it (indented, not starting with "-").
std::string UsageLine(const std::string& text, std::string_view flag) {
  std::size_t at = 0;
  while ((at = text.find(flag, at)) != std::string::npos) {
    const std::size_t begin = text.rfind('\n', at) + 1;
    if (text.find_first_not_of(' ', begin) == at &&
        text.compare(at + flag.size(), 1, " ") == 0) {
      std::size_t end = text.find('\n', at);
      while (end != std::string::npos && end + 1 < text.size()) {
        const std::size_t next = text.find_first_not_of(' ', end + 1);
        if (next == std::string::npos || next - (end + 1) < 10 ||
            text[next] == '-' || text[next] == '\n') {
          break;
        }
        end = text.find('\n', next);
      }
      return text.substr(begin, end - begin);
    }
    at += flag.size();
  }
  return "";
}

// --help printed "(default: the broker's own)" instead of the values; the
// values now come from the brokers' own Options, so they cannot drift.
TEST(UsageTest, PrintsEveryDefault) {
  const std::string usage = UsageText();
  EXPECT_THAT(usage, Not(HasSubstr("broker's own")));
  const MajordomoBroker::Options mdp;
  const ConsensusBroker::Options ccp;
  auto ms = [](auto d) {
    return "[" + FormatDuration(std::chrono::duration_cast<milliseconds>(d)) +
           "]";
  };
  const std::vector<std::pair<std::string_view, std::string>> expected = {
      {"--log-level", "[info]"},
      {"--log-format", "[text]"},
      {"--stats-interval", "[1m]"},
      {"--metrics", "[off]"},
      {"--grace", "[5s]"},
      {"--heartbeat-interval", ms(mdp.heartbeat_interval)},
      {"--heartbeat-liveness", absl::StrCat("[", mdp.heartbeat_liveness, "]")},
      {"--queue-limit", absl::StrCat("[", mdp.max_queue_per_service, "]")},
      {"--queue-expiry", ms(mdp.queue_expiry)},
      {"--max-redispatch", absl::StrCat("[", mdp.max_redispatch, "]")},
      {"--reply-timeout", ms(mdp.reply_timeout)},
      {"--max-services", absl::StrCat("[", mdp.max_services, "]")},
      {"--max-workers", absl::StrCat("[", mdp.max_workers, "]")},
      {"--worker-prefetch", absl::StrCat("[", mdp.worker_prefetch, "]")},
      {"--request-deadline", ms(ccp.request_timeout)},
      {"--client-expiry", ms(ccp.client_idle_timeout)},
      {"--consensus-max-heartbeat-interval", ms(ccp.max_heartbeat_interval)},
      {"--consensus-max-heartbeat-retries",
       absl::StrCat("[", ccp.max_heartbeat_liveness, "]")},
      {"--consensus-max-workers", absl::StrCat("[", ccp.max_workers, "]")},
      {"--consensus-max-services", absl::StrCat("[", ccp.max_services, "]")},
      {"--consensus-max-clients", absl::StrCat("[", ccp.max_clients, "]")},
      {"--consensus-max-requests-per-client",
       absl::StrCat("[", ccp.max_requests_per_client, "]")},
      {"--consensus-max-message-size",
       absl::StrCat("[", ccp.max_message_size, "]")},
  };
  for (const auto& [flag, value] : expected) {
    EXPECT_THAT(UsageLine(usage, flag), HasSubstr(value)) << flag;
  }
  EXPECT_THAT(UsageLine(usage, "--check-config"), Not(IsEmpty()));
  EXPECT_THAT(usage, HasSubstr("SIGHUP"));
}

TEST(ConfigFileTest, LogFormat) {
  absl::StatusOr<DaemonConfig> c =
      ParseConfigText("[daemon]\nlog_format = \"json\"\n", "t.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->log_format, LogFormat::kJson);
  EXPECT_EQ(DaemonConfig().log_format, LogFormat::kText);
  EXPECT_EQ(ParseError("[daemon]\nlog_format = \"xml\"\n"),
            "t.toml:2:14: daemon.log_format: unknown log format \"xml\" "
            "(expected text or json)");
  absl::StatusOr<CommandLine> cli =
      Parse({"--consensus", "tcp://*:1", "--log-format=json"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  c = BuildConfig(*cli);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->log_format, LogFormat::kJson);
  cli = Parse({"--consensus", "tcp://*:1", "--log-format", "yaml"});
  ASSERT_TRUE(cli.ok());
  EXPECT_THAT(BuildConfig(*cli).status().message(),
              HasSubstr("--log-format: unknown log format \"yaml\""));
}

TEST(CommandLineTest, CheckConfigFlag) {
  absl::StatusOr<CommandLine> cli =
      Parse({"--check-config", "--consensus", "tcp://*:1"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  EXPECT_TRUE(cli->check_config);
  EXPECT_FALSE(Parse({"--consensus", "tcp://*:1"})->check_config);
}

// What --check-config prints: every key with the value the daemon will use
// (the brokers' defaults filled in), as TOML that reads back the same.
TEST(FormatConfigTest, PrintsEffectiveValuesThatParseBack) {
  absl::StatusOr<DaemonConfig> c = ParseConfigText(kGoodFile, "good.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  const std::string text = FormatConfig(*c);
  absl::StatusOr<DaemonConfig> back = ParseConfigText(text, "printed.toml");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
  EXPECT_EQ(FormatConfig(*back), text);
  EXPECT_THAT(text, HasSubstr("heartbeat_liveness = 5\n"));
  EXPECT_THAT(text, HasSubstr("endpoints = [\"tcp://*:5555\", "
                              "\"ipc:///tmp/zb-mdp\"]\n"));

  // An empty file: every tuning key shows the broker's own default.
  c = ParseConfigText("[consensus]\nendpoints = [\"tcp://*:1\"]\n", "t");
  ASSERT_TRUE(c.ok());
  const std::string defaults = FormatConfig(*c);
  const MajordomoBroker::Options mdp;
  const ConsensusBroker::Options ccp;
  EXPECT_THAT(defaults, HasSubstr(absl::StrCat("heartbeat_liveness = ",
                                               mdp.heartbeat_liveness, "\n")));
  EXPECT_THAT(defaults, HasSubstr(absl::StrCat("max_queue_per_service = ",
                                               mdp.max_queue_per_service)));
  EXPECT_THAT(defaults, HasSubstr("request_timeout = \"" +
                                  FormatDuration(ccp.request_timeout) + "\""));
  EXPECT_THAT(defaults, HasSubstr("log_format = \"text\""));
  EXPECT_THAT(defaults, HasSubstr("metrics = \"\""));
  EXPECT_THAT(defaults, HasSubstr("endpoints = []"));  // no Majordomo
  back = ParseConfigText(defaults, "printed.toml");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << defaults;
  EXPECT_EQ(back->majordomo.heartbeat_liveness, mdp.heartbeat_liveness);
  // A string that needs escaping stays TOML.
  DaemonConfig odd;
  odd.consensus.endpoints = {"ipc:///tmp/a \"quoted\" \\ path"};
  back = ParseConfigText(FormatConfig(odd), "odd.toml");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << FormatConfig(odd);
  EXPECT_EQ(back->consensus.endpoints, odd.consensus.endpoints);
}

// The example used 127.0.0.1:9100, node_exporter's port; 9100-9999 is the
// range Prometheus exporters have taken.
TEST(BuildConfigTest, ExampleMetricsPortIsOutsideTheExporterRange) {
  const char* path = std::getenv("ZB_EXAMPLE_CONFIG");
  ASSERT_NE(path, nullptr) << "ZB_EXAMPLE_CONFIG not set (meson sets it)";
  absl::StatusOr<DaemonConfig> c = LoadConfigFile(path);
  ASSERT_TRUE(c.ok()) << c.status();
  const std::string& addr = c->metrics;
  ASSERT_FALSE(addr.empty());
  const int port = std::atoi(addr.substr(addr.rfind(':') + 1).c_str());
  EXPECT_TRUE(port < 9100 || port > 9999) << addr;
  EXPECT_EQ(addr, "127.0.0.1:5580");  // what docs/daemon.md says
}

// --- CURVE keys --------------------------------------------------------------

// A key pair and an allowlist in a temporary directory.
class CurveFilesFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/zb_config_curve_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    absl::StatusOr<WrittenKeyPair> server =
        WriteCurveKeyPairFiles(dir_ + "/server");
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *server;
    absl::StatusOr<WrittenKeyPair> client =
        WriteCurveKeyPairFiles(dir_ + "/client");
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *client;
  }
  void TearDown() override {
    const std::string cmd = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
  std::string File(std::string_view name, std::string_view text) {
    const std::string p = dir_ + "/" + std::string(name);
    std::ofstream(p) << text;
    return p;
  }

  std::string dir_;
  WrittenKeyPair server_, client_;
};

TEST_F(CurveFilesFixture, FileKeysAndFlags) {
  const std::string toml =
      File("zb.toml",
           "[daemon]\ncurve_secret_key_file = \"" + server_.secret_key_file +
               "\"\ncurve_allowlist = \"" + client_.public_key_file +
               "\"\n[majordomo]\nendpoints = [\"tcp://127.0.0.1:1\"]\n"
               "curve_endpoints = [\"tcp://127.0.0.1:2\"]\n"
               "[consensus]\ncurve_endpoints = [\"ipc:///tmp/zb-c\"]\n");
  absl::StatusOr<CommandLine> cli = Parse({"--config", toml.c_str()});
  ASSERT_TRUE(cli.ok());
  absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->curve_secret_key_file, server_.secret_key_file);
  EXPECT_EQ(c->curve_allowlist, client_.public_key_file);
  EXPECT_THAT(c->majordomo.curve_endpoints, ElementsAre("tcp://127.0.0.1:2"));
  EXPECT_THAT(c->consensus.curve_endpoints, ElementsAre("ipc:///tmp/zb-c"));
  EXPECT_TRUE(HasCurveEndpoints(*c));
  EXPECT_EQ(c->OriginOf("daemon.curve_allowlist"), toml + ":3:19");
  absl::StatusOr<CurveFiles> files = LoadCurveFiles(*c);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(files->public_key, server_.public_key);
  EXPECT_TRUE(files->allowlist.Contains(client_.public_key));
  EXPECT_EQ(files->secret_key_warning, "");

  // Flags: the same words; repeatable and comma lists for the endpoints.
  cli = Parse({"--curve-secret-key-file", server_.secret_key_file.c_str(),
               "--curve-allowlist", dir_.c_str(), "--majordomo-curve",
               "tcp://127.0.0.1:3,tcp://127.0.0.1:4", "--consensus_curve",
               "tcp://127.0.0.1:5"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  c = BuildConfig(*cli);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->majordomo.curve_endpoints,
              ElementsAre("tcp://127.0.0.1:3", "tcp://127.0.0.1:4"));
  EXPECT_THAT(c->consensus.curve_endpoints, ElementsAre("tcp://127.0.0.1:5"));
  EXPECT_TRUE(c->majordomo.endpoints.empty());  // a CURVE-only broker runs
  files = LoadCurveFiles(*c);
  ASSERT_TRUE(files.ok()) << files.status();
  // The directory: both *.pub files.
  EXPECT_EQ(files->allowlist.size(), 2u);
}

TEST_F(CurveFilesFixture, CurveEndpointsNeedBothFiles) {
  absl::StatusOr<CommandLine> cli =
      Parse({"--majordomo-curve", "tcp://127.0.0.1:1"});
  ASSERT_TRUE(cli.ok());
  absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("daemon.curve_secret_key_file"));
  cli = Parse({"--majordomo-curve", "tcp://127.0.0.1:1",
               "--curve-secret-key-file", server_.secret_key_file.c_str()});
  ASSERT_TRUE(cli.ok());
  c = BuildConfig(*cli);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("daemon.curve_allowlist"));
  // A secret key without an allowlist is refused even with no CURVE
  // endpoint: it would have no effect.
  cli = Parse({"--majordomo", "tcp://127.0.0.1:1", "--curve-secret-key-file",
               server_.secret_key_file.c_str()});
  ASSERT_TRUE(cli.ok());
  c = BuildConfig(*cli);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("daemon.curve_allowlist"));
}

TEST_F(CurveFilesFixture, BadKeyFilesNameKeyAndLine) {
  const std::string bad_secret = File("bad.secret", "# x\nnot a key\n");
  const std::string toml =
      File("zb.toml", "[daemon]\ncurve_secret_key_file = \"" + bad_secret +
                          "\"\ncurve_allowlist = \"" + dir_ +
                          "\"\n[consensus]\ncurve_endpoints = "
                          "[\"tcp://127.0.0.1:1\"]\n");
  absl::StatusOr<CommandLine> cli = Parse({"--config", toml.c_str()});
  ASSERT_TRUE(cli.ok());
  absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              AllOf(HasSubstr(toml + ":2:25"),
                    HasSubstr("daemon.curve_secret_key_file"),
                    HasSubstr(bad_secret + ":2:")));

  cli = Parse({"--consensus-curve", "tcp://127.0.0.1:1",
               "--curve-secret-key-file", server_.secret_key_file.c_str(),
               "--curve-allowlist", "/nonexistent/clients"});
  ASSERT_TRUE(cli.ok());
  c = BuildConfig(*cli);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), AllOf(HasSubstr("--curve-allowlist"),
                                          HasSubstr("/nonexistent/clients")));
}

TEST_F(CurveFilesFixture, CurveEndpointRules) {
  auto error = [&](std::vector<const char*> args) {
    std::vector<const char*> all = {
        "--curve-secret-key-file", server_.secret_key_file.c_str(),
        "--curve-allowlist", client_.public_key_file.c_str()};
    all.insert(all.end(), args.begin(), args.end());
    absl::StatusOr<CommandLine> cli = Parse(all);
    EXPECT_TRUE(cli.ok());
    absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
    EXPECT_FALSE(c.ok());
    return c.ok() ? std::string() : std::string(c.status().message());
  };
  EXPECT_THAT(error({"--majordomo-curve", "inproc://x"}),
              AllOf(HasSubstr("--majordomo-curve"), HasSubstr("inproc")));
  EXPECT_THAT(error({"--consensus", "tcp://127.0.0.1:9", "--consensus-curve",
                     "tcp://127.0.0.1:9"}),
              HasSubstr("also a plaintext endpoint"));
  EXPECT_THAT(
      ParseError("[majordomo]\ncurve_endpoints = \"tcp://*:1\"\n"),
      AllOf(HasSubstr("t.toml:2:"), HasSubstr("majordomo.curve_endpoints")));
  EXPECT_THAT(ParseError("[daemon]\ncurve_allowlist = 3\n"),
              AllOf(HasSubstr("t.toml:2:"), HasSubstr("daemon.curve_allowlist"),
                    HasSubstr("expected a path string")));
  // "" is "not set" (what --check-config prints for an unset path).
  absl::StatusOr<DaemonConfig> unset =
      ParseConfigText("[daemon]\ncurve_allowlist = \"\"\n", "t.toml");
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_EQ(unset->curve_allowlist, "");
}

TEST(CommandLineTest, UsageNamesTheCurveFlags) {
  const std::string usage = UsageText();
  for (const char* flag : {"--majordomo-curve", "--consensus-curve",
                           "--curve-secret-key-file", "--curve-allowlist"}) {
    EXPECT_THAT(usage, HasSubstr(flag));
  }
}

// --- Deprecated names (docs/glossary.md) -----------------------------------

// An old name, its one name, and a value that is not the default.
struct Renamed {
  const char* section;
  const char* old_key;
  const char* new_key;
  const char* toml_value;
};
constexpr Renamed kRenamedKeys[] = {
    {"majordomo", "queue_limit", "max_queue_per_service", "7"},
    {"consensus", "request_deadline", "request_timeout", "\"2s\""},
    {"consensus", "client_expiry", "client_idle_timeout", "\"1m\""},
    {"consensus", "max_heartbeat_retries", "max_heartbeat_liveness", "4"},
};

struct RenamedFlag {
  const char* old_flag;
  const char* new_flag;
  const char* value;
};
constexpr RenamedFlag kRenamedFlags[] = {
    {"--queue-limit", "--max-queue-per-service", "7"},
    {"--request-deadline", "--request-timeout", "2s"},
    {"--consensus-timeout", "--request-timeout", "2s"},
    {"--consensus_timeout", "--request-timeout", "2s"},
    {"--client-expiry", "--client-idle-timeout", "1m"},
    {"--consensus-client-idle", "--client-idle-timeout", "1m"},
    {"--consensus_client_idle", "--client-idle-timeout", "1m"},
    {"--consensus-max-heartbeat-retries", "--consensus-max-heartbeat-liveness",
     "4"},
};

std::string OneKeyFile(const char* section, const char* key,
                       const char* value) {
  return absl::StrCat("[", section, "]\n", key, " = ", value, "\n");
}

TEST(DeprecatedNamesTest, EveryOldKeyStillWorksAndWarnsOnce) {
  const auto defaults = ConfigValues(DaemonConfig{});
  for (const Renamed& r : kRenamedKeys) {
    SCOPED_TRACE(r.old_key);
    absl::StatusOr<DaemonConfig> old_config =
        ParseConfigText(OneKeyFile(r.section, r.old_key, r.toml_value), "t");
    absl::StatusOr<DaemonConfig> new_config =
        ParseConfigText(OneKeyFile(r.section, r.new_key, r.toml_value), "t");
    ASSERT_TRUE(old_config.ok()) << old_config.status();
    ASSERT_TRUE(new_config.ok()) << new_config.status();
    // The old name sets exactly what the new one does, and that is not
    // the default (the value really went somewhere).
    EXPECT_EQ(ConfigValues(*old_config), ConfigValues(*new_config));
    EXPECT_NE(ConfigValues(*old_config), defaults);
    // One warning, naming where, the old key and the new one.
    EXPECT_THAT(
        old_config->warnings,
        ElementsAre(AllOf(HasSubstr("t:2:"),
                          HasSubstr(absl::StrCat(r.section, ".", r.old_key,
                                                 " is deprecated, use ",
                                                 r.section, ".", r.new_key)))));
    EXPECT_THAT(new_config->warnings, IsEmpty());
    // --check-config prints the new name only.
    const std::string printed = FormatConfig(*old_config);
    EXPECT_THAT(printed, HasSubstr(absl::StrCat("\n", r.new_key, " = ")));
    EXPECT_THAT(printed, Not(HasSubstr(absl::StrCat("\n", r.old_key, " = "))));
  }
}

TEST(DeprecatedNamesTest, OldKeyInAnotherTableIsStillUnknown) {
  EXPECT_THAT(ParseError("[consensus]\nqueue_limit = 3\n"),
              HasSubstr("unknown key \"consensus.queue_limit\""));
  EXPECT_THAT(ParseError("[majordomo]\nrequest_deadline = \"1s\"\n"),
              HasSubstr("unknown key \"majordomo.request_deadline\""));
}

TEST(DeprecatedNamesTest, OldKeyWithABadValueNamesTheOldKey) {
  EXPECT_THAT(ParseError("[majordomo]\nqueue_limit = -4\n"),
              AllOf(HasSubstr("t.toml:2:"), HasSubstr("majordomo.queue_limit:"),
                    HasSubstr("got -4")));
}

TEST(DeprecatedNamesTest, OldAndNewKeyWithDifferentValuesIsAnError) {
  for (const Renamed& r : kRenamedKeys) {
    SCOPED_TRACE(r.old_key);
    const std::string other =
        std::string_view(r.toml_value).starts_with('"') ? "\"3s\"" : "9";
    // Both orders: the error names both keys and both places.
    for (const bool old_first : {true, false}) {
      const std::string text =
          old_first
              ? absl::StrCat("[", r.section, "]\n", r.old_key, " = ",
                             r.toml_value, "\n", r.new_key, " = ", other, "\n")
              : absl::StrCat("[", r.section, "]\n", r.new_key, " = ", other,
                             "\n", r.old_key, " = ", r.toml_value, "\n");
      const std::string error = ParseError(text);
      EXPECT_THAT(
          error,
          AllOf(
              HasSubstr(absl::StrCat(r.section, ".", r.old_key, " = ")),
              HasSubstr(absl::StrCat(r.section, ".", r.new_key, " = ")),
              HasSubstr("t.toml:2:"), HasSubstr("t.toml:3:"),
              HasSubstr("conflicts with"),
              HasSubstr(absl::StrCat("keep only ", r.section, ".", r.new_key))))
          << text;
    }
    // The same value under both names is no conflict (but still warns).
    absl::StatusOr<DaemonConfig> same = ParseConfigText(
        absl::StrCat("[", r.section, "]\n", r.old_key, " = ", r.toml_value,
                     "\n", r.new_key, " = ", r.toml_value, "\n"),
        "t.toml");
    ASSERT_TRUE(same.ok()) << same.status();
    EXPECT_EQ(same->warnings.size(), 1u);
  }
  // "5000ms" and "5s" are the same duration.
  absl::StatusOr<DaemonConfig> same = ParseConfigText(
      "[consensus]\nrequest_deadline = \"5000ms\"\n"
      "request_timeout = \"5s\"\n",
      "t.toml");
  EXPECT_TRUE(same.ok()) << same.status();
}

TEST(DeprecatedNamesTest, EveryOldFlagStillWorksAndWarnsOnce) {
  for (const RenamedFlag& r : kRenamedFlags) {
    SCOPED_TRACE(r.old_flag);
    // Typed twice, and once as --flag=value: still one warning.
    const std::string joined = absl::StrCat(r.old_flag, "=", r.value);
    absl::StatusOr<CommandLine> old_cli = Parse(
        {"--consensus", "tcp://*:1", r.old_flag, r.value, joined.c_str()});
    absl::StatusOr<CommandLine> new_cli =
        Parse({"--consensus", "tcp://*:1", r.new_flag, r.value});
    ASSERT_TRUE(old_cli.ok()) << old_cli.status();
    ASSERT_TRUE(new_cli.ok()) << new_cli.status();
    absl::StatusOr<DaemonConfig> old_config = BuildConfig(*old_cli);
    absl::StatusOr<DaemonConfig> new_config = BuildConfig(*new_cli);
    ASSERT_TRUE(old_config.ok()) << old_config.status();
    ASSERT_TRUE(new_config.ok()) << new_config.status();
    EXPECT_EQ(ConfigValues(*old_config), ConfigValues(*new_config));
    EXPECT_NE(ConfigValues(*old_config),
              ConfigValues(*BuildConfig(*Parse({"--consensus", "tcp://*:1"}))));
    EXPECT_THAT(old_config->warnings,
                ElementsAre(HasSubstr(absl::StrCat(
                    r.old_flag, " is deprecated, use ", r.new_flag))));
    EXPECT_THAT(new_config->warnings, IsEmpty());
  }
}

TEST(DeprecatedNamesTest, OldAndNewFlagWithDifferentValuesIsAnError) {
  for (const RenamedFlag& r : kRenamedFlags) {
    SCOPED_TRACE(r.old_flag);
    const char* other = std::string_view(r.value).ends_with('s') ||
                                std::string_view(r.value).ends_with('m')
                            ? "3s"
                            : "9";
    for (const bool old_first : {true, false}) {
      absl::StatusOr<CommandLine> cli =
          old_first ? Parse({"--consensus", "tcp://*:1", r.old_flag, r.value,
                             r.new_flag, other})
                    : Parse({"--consensus", "tcp://*:1", r.new_flag, other,
                             r.old_flag, r.value});
      ASSERT_TRUE(cli.ok()) << cli.status();
      absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
      ASSERT_FALSE(c.ok());
      EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(c.status().message(),
                  AllOf(HasSubstr(absl::StrCat(r.old_flag, " ", r.value)),
                        HasSubstr(absl::StrCat(r.new_flag, " ", other)),
                        HasSubstr("conflicts with"),
                        HasSubstr(absl::StrCat("give only ", r.new_flag))));
    }
    // The same value twice is fine.
    absl::StatusOr<CommandLine> cli = Parse(
        {"--consensus", "tcp://*:1", r.old_flag, r.value, r.new_flag, r.value});
    ASSERT_TRUE(cli.ok());
    EXPECT_TRUE(BuildConfig(*cli).ok()) << BuildConfig(*cli).status();
  }
}

// Flags override the file whatever names either uses: the file's old key
// and the command line's new flag are no conflict.
TEST(DeprecatedNamesTest, NewFlagOverridesOldKeyOfTheFile) {
  TempFile file(
      "[consensus]\nendpoints = [\"tcp://*:1\"]\n"
      "request_deadline = \"2s\"\n");
  absl::StatusOr<CommandLine> cli =
      Parse({"--config", file.path().c_str(), "--request-timeout", "3s"});
  ASSERT_TRUE(cli.ok());
  absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->consensus.request_timeout, milliseconds(3000));
  EXPECT_THAT(c->warnings,
              ElementsAre(HasSubstr("consensus.request_deadline is "
                                    "deprecated, use "
                                    "consensus.request_timeout")));
}

TEST(DeprecatedNamesTest, ExampleConfigUsesOnlyNewNames) {
  const char* path = std::getenv("ZB_EXAMPLE_CONFIG");
  if (path == nullptr) GTEST_SKIP() << "ZB_EXAMPLE_CONFIG not set";
  absl::StatusOr<DaemonConfig> c = LoadConfigFile(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->warnings, IsEmpty());
  // Not even in a comment: the example is what people copy.
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  for (const Renamed& r : kRenamedKeys) {
    EXPECT_THAT(text, Not(HasSubstr(std::string(r.old_key)))) << r.old_key;
  }
}

TEST(DeprecatedNamesTest, UsageListsNewFlagsAndTheirOldNames) {
  const std::string usage = UsageText();
  const MajordomoBroker::Options mdp;
  const ConsensusBroker::Options ccp;
  EXPECT_THAT(UsageLine(usage, "--max-queue-per-service"),
              HasSubstr(absl::StrCat("[", mdp.max_queue_per_service, "]")));
  EXPECT_THAT(UsageLine(usage, "--request-timeout"),
              HasSubstr("[" + FormatDuration(ccp.request_timeout) + "]"));
  EXPECT_THAT(UsageLine(usage, "--client-idle-timeout"),
              HasSubstr("[" + FormatDuration(ccp.client_idle_timeout) + "]"));
  EXPECT_THAT(UsageLine(usage, "--consensus-max-heartbeat-liveness"),
              HasSubstr(absl::StrCat("[", ccp.max_heartbeat_liveness, "]")));
  for (const RenamedFlag& r : kRenamedFlags) {
    if (std::string_view(r.old_flag).find('_') != std::string_view::npos) {
      continue;  // underscores are a spelling, not a name
    }
    EXPECT_THAT(UsageLine(usage, r.old_flag), HasSubstr(r.new_flag))
        << r.old_flag;
  }
}

// zb-broker itself: --check-config logs the warning (stderr, through the
// daemon's logger) and prints only the new names (stdout).
TEST(DeprecatedNamesTest, CheckConfigPrintsTheWarning) {
  const char* zb = std::getenv("ZB_BROKER");
  if (zb == nullptr) GTEST_SKIP() << "ZB_BROKER not set";
  TempFile file(
      "[consensus]\nendpoints = [\"tcp://127.0.0.1:1\"]\n"
      "client_expiry = \"1m\"\n");
  TempFile out(""), err("");
  const std::string command = absl::StrCat(
      "timeout 30 '", zb, "' --check-config --config '", file.path(),
      "' --request-deadline 2s --request-deadline=2s >'", out.path(), "' 2>'",
      err.path(), "'");
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)),
                       std::istreambuf_iterator<char>());
  };
  const std::string printed = read(out.path()), log = read(err.path());
  EXPECT_THAT(printed, HasSubstr("request_timeout = \"2s\"\n"));
  EXPECT_THAT(printed, HasSubstr("client_idle_timeout = \"1m\"\n"));
  EXPECT_THAT(printed, Not(HasSubstr("deprecated")));
  EXPECT_THAT(log,
              AllOf(HasSubstr("warning"),
                    HasSubstr(absl::StrCat(file.path(),
                                           ":3:17: consensus.client_expiry is "
                                           "deprecated, use "
                                           "consensus.client_idle_timeout")),
                    HasSubstr("--request-deadline is deprecated, use "
                              "--request-timeout")));
  // One line per alias, although --request-deadline was given twice.
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = log.find("deprecated", at)) != log.npos;
       ++at) {
    ++lines;
  }
  EXPECT_EQ(lines, 2u) << log;
}

// --- [ha]: the fail-over pair (docs/ha.md) -----------------------------------

TEST(HaConfigTest, FileKeysFlagsAndDefaults) {
  absl::StatusOr<DaemonConfig> c = ParseConfigText(
      "[consensus]\nendpoints = [\"tcp://*:1\"]\n"
      "[ha]\nrole = \"backup\"\nstate_endpoint = \"tcp://*:5570\"\n"
      "peer_state_endpoint = \"tcp://10.0.0.1:5570\"\n"
      "heartbeat_interval = \"250ms\"\npeer_expiry = \"1s\"\n",
      "ha.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->ha.role.has_value());
  EXPECT_EQ(*c->ha.role, HaRole::kBackup);
  EXPECT_EQ(c->ha.state_endpoint, "tcp://*:5570");
  EXPECT_EQ(c->ha.peer_state_endpoint, "tcp://10.0.0.1:5570");
  EXPECT_EQ(c->ha.heartbeat_interval, milliseconds(250));
  EXPECT_EQ(c->ha.peer_expiry, milliseconds(1000));
  EXPECT_TRUE(ValidateConfig(*c).ok());
  // Printed back, it reads the same.
  const std::string text = FormatConfig(*c);
  EXPECT_THAT(text, HasSubstr("[ha]\nrole = \"backup\"\n"));
  absl::StatusOr<DaemonConfig> back = ParseConfigText(text, "printed.toml");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
  EXPECT_EQ(FormatConfig(*back), text);

  // Without [ha]: no role, the documented defaults.
  const DaemonConfig d;
  EXPECT_FALSE(d.ha.role.has_value());
  EXPECT_EQ(d.ha.heartbeat_interval, milliseconds(1000));
  EXPECT_EQ(d.ha.peer_expiry, milliseconds(2000));
  EXPECT_THAT(FormatConfig(d), HasSubstr("[ha]\nrole = \"\"\n"));

  // The flags are the same words in kebab-case, and override the file.
  TempFile file(
      "[majordomo]\nendpoints = [\"tcp://*:1\"]\n[ha]\nrole = \"backup\"\n"
      "state_endpoint = \"tcp://*:5570\"\n"
      "peer_state_endpoint = \"tcp://10.0.0.1:5570\"\n");
  absl::StatusOr<CommandLine> cli =
      Parse({"--config", file.path().c_str(), "--ha-role", "primary",
             "--ha-peer-state-endpoint=tcp://10.0.0.2:5570",
             "--ha-state-endpoint", "tcp://*:5571", "--ha-heartbeat-interval",
             "100ms", "--ha_peer_expiry", "300ms"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  c = BuildConfig(*cli);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c->ha.role, HaRole::kPrimary);
  EXPECT_EQ(c->ha.state_endpoint, "tcp://*:5571");
  EXPECT_EQ(c->ha.peer_state_endpoint, "tcp://10.0.0.2:5570");
  EXPECT_EQ(c->ha.heartbeat_interval, milliseconds(100));
  EXPECT_EQ(c->ha.peer_expiry, milliseconds(300));
}

TEST(HaConfigTest, BadValuesNameTheKeyAndLine) {
  EXPECT_THAT(ParseError("[ha]\nrole = \"leader\"\n"),
              AllOf(HasSubstr("t.toml:2:"), HasSubstr("ha.role"),
                    HasSubstr("\"primary\" or \"backup\"")));
  EXPECT_THAT(ParseError("[ha]\nrole = 1\n"), HasSubstr("ha.role"));
  EXPECT_THAT(ParseError("[ha]\nstate_endpoint = \"5570\"\n"),
              AllOf(HasSubstr("t.toml:2:"), HasSubstr("ha.state_endpoint")));
  EXPECT_THAT(
      ParseError("[ha]\npeer_state_endpoint = \"tcp://10.0.0.1:99999\"\n"),
      AllOf(HasSubstr("ha.peer_state_endpoint"), HasSubstr("out of range")));
  EXPECT_THAT(ParseError("[ha]\nheartbeat_interval = \"0s\"\n"),
              HasSubstr("ha.heartbeat_interval"));
  EXPECT_THAT(ParseError("[ha]\npeer_expiry = \"soon\"\n"),
              HasSubstr("ha.peer_expiry"));
  EXPECT_THAT(ParseError("[ha]\nrol = \"primary\"\n"), HasSubstr("rol"));
  absl::StatusOr<CommandLine> cli =
      Parse({"--consensus", "tcp://*:1", "--ha-role", "master"});
  ASSERT_TRUE(cli.ok());
  absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("--ha-role"));
}

TEST(HaConfigTest, ValidationSaysWhatIsMissing) {
  auto error = [](std::string_view ha) {
    absl::StatusOr<DaemonConfig> c = ParseConfigText(
        absl::StrCat("[consensus]\nendpoints = [\"tcp://*:1\"]\n[ha]\n",
                     std::string(ha)),
        "t.toml");
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) return std::string();
    absl::Status s = ValidateConfig(*c);
    EXPECT_FALSE(s.ok()) << ha;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    return std::string(s.message());
  };
  EXPECT_THAT(error("role = \"primary\"\n"
                    "peer_state_endpoint = \"tcp://b:5570\"\n"),
              AllOf(HasSubstr("ha.state_endpoint is not set"),
                    HasSubstr("--ha-state-endpoint")));
  EXPECT_THAT(error("role = \"backup\"\nstate_endpoint = \"tcp://*:5570\"\n"),
              HasSubstr("ha.peer_state_endpoint is not set"));
  EXPECT_THAT(error("state_endpoint = \"tcp://*:5570\"\n"),
              AllOf(HasSubstr("t.toml:4:"), HasSubstr("ha.role is not")));
  EXPECT_THAT(error("role = \"primary\"\nstate_endpoint = \"tcp://a:1\"\n"
                    "peer_state_endpoint = \"tcp://a:1\"\n"),
              HasSubstr("must be the other broker's"));
  EXPECT_THAT(error("role = \"primary\"\nstate_endpoint = \"tcp://a:1\"\n"
                    "peer_state_endpoint = \"tcp://b:1\"\n"
                    "heartbeat_interval = \"2s\"\n"),
              AllOf(HasSubstr("ha.peer_expiry (2s) must be longer than "
                              "ha.heartbeat_interval (2s)")));
}

// Titanic in a pair (docs/titanic.md, "Titanic in a fail-over pair"):
// each daemon runs its own Titanic on its own store, reached over the
// Majordomo broker's internal endpoint, which the pair never gates; so the
// combination needs no key and is refused only for what [titanic] always
// needs, a Majordomo broker.
TEST(HaConfigTest, TitanicInAPairNeedsNoKeyOfItsOwn) {
  const std::string ha =
      "[ha]\nrole = \"primary\"\nstate_endpoint = \"tcp://*:5570\"\n"
      "peer_state_endpoint = \"tcp://10.0.0.2:5570\"\n";
  absl::StatusOr<DaemonConfig> c = ParseConfigText(
      absl::StrCat("[majordomo]\nendpoints = [\"tcp://*:5555\"]\n"
                   "[titanic]\nstore_path = \"/var/lib/zb/titanic.db\"\n",
                   ha),
      "pair.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(ValidateConfig(*c).ok()) << ValidateConfig(*c);
  // --check-config prints both tables.
  const std::string text = FormatConfig(*c);
  EXPECT_THAT(text, HasSubstr("[titanic]\nstore_path = "
                              "\"/var/lib/zb/titanic.db\"\n"));
  EXPECT_THAT(text, HasSubstr("[ha]\nrole = \"primary\"\n"));

  // Without a Majordomo broker, the error is [titanic]'s own, with the
  // line of the key.
  c = ParseConfigText(
      absl::StrCat("[consensus]\nendpoints = [\"tcp://*:5556\"]\n"
                   "[titanic]\nstore_path = \"t.db\"\n",
                   ha),
      "pair.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  const absl::Status s = ValidateConfig(*c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("pair.toml:4:"), HasSubstr("titanic.store_path"),
                    HasSubstr("majordomo.endpoints")));
}

TEST(HaConfigTest, UsageListsTheFlagsWithTheirDefaults) {
  const std::string usage = UsageText();
  EXPECT_THAT(usage, HasSubstr("--ha-role ROLE"));
  EXPECT_THAT(usage, HasSubstr("--ha-state-endpoint ENDPOINT"));
  EXPECT_THAT(usage, HasSubstr("--ha-peer-state-endpoint ENDPOINT"));
  EXPECT_THAT(usage, HasSubstr("state [1s]"));
  EXPECT_THAT(usage, HasSubstr("(above the heartbeat interval) [2s]"));
}

}  // namespace
}  // namespace zb
