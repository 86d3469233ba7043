// Copyright 2026 The zbrokers Authors.

#include "tools/latency/options.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zb::latency {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<Options> Parse(std::vector<std::string> args) {
  return ParseOptions(args);
}

std::string ErrorOf(std::vector<std::string> args) {
  absl::StatusOr<Options> o = Parse(std::move(args));
  EXPECT_FALSE(o.ok());
  if (o.ok()) return "";
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(o.status().message());
}

TEST(OptionsTest, Defaults) {
  absl::StatusOr<Options> o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->rounds_per_step, 10000);
  EXPECT_EQ(o->max_workers, kDefaultMaxWorkers);
  EXPECT_EQ(o->step, 1);
  EXPECT_EQ(o->grow, Grow::kWorkers);
  EXPECT_EQ(o->transport, Transport::kTcp);
  EXPECT_EQ(o->placement, Placement::kThreads);
  EXPECT_EQ(o->client_wait, ClientWait::kCall);
  EXPECT_FALSE(o->baseline);
  EXPECT_TRUE(o->broker.empty());
  EXPECT_EQ(o->EffectiveWarmup(), 500);
  EXPECT_EQ(o->StepSizes().size(), static_cast<size_t>(kDefaultMaxWorkers));
}

TEST(OptionsTest, BothValueForms) {
  absl::StatusOr<Options> o =
      Parse({"--rounds-per-step=300", "--max-workers", "7", "--step=3",
             "--transport", "inproc", "--payload-bytes=0", "--baseline",
             "--csv", "a.csv", "--json=b.json", "--svg", "c.svg"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->rounds_per_step, 300);
  EXPECT_EQ(o->max_workers, 7);
  EXPECT_EQ(o->step, 3);
  EXPECT_EQ(o->transport, Transport::kInproc);
  EXPECT_EQ(o->payload_bytes, 0);
  EXPECT_TRUE(o->baseline);
  EXPECT_EQ(o->csv_path, "a.csv");
  EXPECT_EQ(o->json_path, "b.json");
  EXPECT_EQ(o->svg_path, "c.svg");
  EXPECT_THAT(o->StepSizes(), ElementsAre(1, 4, 7));
  EXPECT_EQ(o->EffectiveWarmup(), 50);
}

TEST(OptionsTest, EvictCacheTakesBytesOrAUnit) {
  absl::StatusOr<Options> o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->evict_cache_bytes, 0);
  for (const auto& [text, bytes] :
       std::vector<std::pair<std::string, std::int64_t>>{
           {"0", 0},
           {"4096", 4096},
           {"64k", 64 << 10},
           {"8M", 8 << 20},
           {"1G", std::int64_t{1} << 30}}) {
    o = Parse({"--evict-cache", text.c_str()});
    ASSERT_TRUE(o.ok()) << text << ": " << o.status();
    EXPECT_EQ(o->evict_cache_bytes, bytes) << text;
  }
  o = Parse({"--evict-cache=2m"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->evict_cache_bytes, 2 << 20);
  EXPECT_THAT(ErrorOf({"--evict-cache", "8MB"}),
              HasSubstr("--evict-cache needs a size in bytes such as 8388608 "
                        "or 8M, got '8MB'"));
  EXPECT_THAT(ErrorOf({"--evict-cache", "-1"}), HasSubstr("size in bytes"));
  EXPECT_THAT(ErrorOf({"--evict-cache", "M"}), HasSubstr("size in bytes"));
  EXPECT_THAT(ErrorOf({"--evict-cache", "2G"}),
              HasSubstr("--evict-cache must be at most 1073741824 bytes"));
  EXPECT_THAT(HelpText(), HasSubstr("--evict-cache SIZE"));
}

TEST(OptionsTest, ClientWait) {
  absl::StatusOr<Options> o = Parse({"--client-wait", "reactor"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->client_wait, ClientWait::kReactor);
  EXPECT_EQ(ClientWaitName(o->client_wait), "reactor");
  o = Parse({"--client-wait=call"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->client_wait, ClientWait::kCall);
  EXPECT_THAT(ErrorOf({"--client-wait", "poll"}),
              testing::HasSubstr("--client-wait must be 'call' or 'reactor'"));
}

TEST(OptionsTest, YieldBeforeSleepFollowsTheTransportUnlessGiven) {
  // auto: what docs/reactor.md advises, on for inproc only.
  absl::StatusOr<Options> o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->yield_before_sleep.has_value());
  EXPECT_FALSE(o->YieldBeforeSleep());  // tcp
  o = Parse({"--transport", "ipc"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->YieldBeforeSleep());
  o = Parse({"--transport", "inproc"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->YieldBeforeSleep());
  o = Parse({"--transport", "inproc", "--yield-before-sleep", "off"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->YieldBeforeSleep());
  o = Parse({"--yield-before-sleep", "on"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->YieldBeforeSleep());
  o = Parse({"--yield-before-sleep=on", "--yield-before-sleep=auto",
             "--transport=inproc"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->yield_before_sleep.has_value());
  EXPECT_TRUE(o->YieldBeforeSleep());
  EXPECT_THAT(
      ErrorOf({"--yield-before-sleep", "no"}),
      testing::HasSubstr("--yield-before-sleep must be 'on', 'off' or 'auto'"));
}

TEST(OptionsTest, BatchScheduling) {
  absl::StatusOr<Options> o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->batch_scheduling);  // zb-broker's default
  o = Parse({"--batch-scheduling", "off"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->batch_scheduling);
  o = Parse({"--batch-scheduling=on"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->batch_scheduling);
  EXPECT_THAT(ErrorOf({"--batch-scheduling", "yes"}),
              testing::HasSubstr("--batch-scheduling must be 'on' or 'off'"));
}

TEST(OptionsTest, RawOnly) {
  absl::StatusOr<Options> o = Parse({"--raw-only"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->raw_only);
  EXPECT_FALSE(o->baseline);
  EXPECT_FALSE(o->IsControl());
}

// --raw-only --baseline is the control run: raw against raw.
TEST(OptionsTest, RawOnlyWithBaselineIsTheControlRun) {
  absl::StatusOr<Options> o = Parse({"--raw-only", "--baseline"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->IsControl());
  absl::StatusOr<Options> b = Parse({"--baseline"});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_FALSE(b->IsControl());
}

TEST(OptionsTest, GrowClients) {
  absl::StatusOr<Options> o =
      Parse({"--grow", "clients", "--workers", "3", "--max-clients", "2"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->grow, Grow::kClients);
  EXPECT_EQ(o->workers, 3);
  EXPECT_THAT(o->StepSizes(), ElementsAre(1, 2));
}

TEST(OptionsTest, BrokerDecidesTransport) {
  absl::StatusOr<Options> o = Parse({"--broker", "ipc:///tmp/x.ipc"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->transport, Transport::kIpc);
  EXPECT_THAT(
      ErrorOf({"--broker", "tcp://127.0.0.1:5555", "--transport", "ipc"}),
      HasSubstr("contradicts"));
  EXPECT_THAT(ErrorOf({"--broker", "inproc://x"}), HasSubstr("tcp://"));
}

TEST(OptionsTest, HelpWins) {
  absl::StatusOr<Options> o = Parse({"--max-workers=3", "--help"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->help);
  EXPECT_THAT(HelpText(), HasSubstr("--rounds-per-step"));
  for (const char* flag : {"--max-workers", "--step", "--grow", "--transport",
                           "--placement", "--payload-bytes", "--broker",
                           "--csv", "--json", "--svg", "--baseline"}) {
    EXPECT_THAT(HelpText(), HasSubstr(flag));
  }
}

TEST(OptionsTest, BadOptionsHaveClearMessages) {
  EXPECT_THAT(ErrorOf({"--max-workers", "0"}),
              HasSubstr("--max-workers must be between 1"));
  EXPECT_THAT(ErrorOf({"--max-workers", "x"}), HasSubstr("whole number"));
  EXPECT_THAT(ErrorOf({"--max-workers=12abc"}), HasSubstr("whole number"));
  EXPECT_THAT(ErrorOf({"--transport", "udp"}),
              HasSubstr("unknown transport 'udp'"));
  EXPECT_THAT(ErrorOf({"--grow", "both"}), HasSubstr("--grow must be"));
  EXPECT_THAT(ErrorOf({"--frobnicate"}), HasSubstr("unknown option"));
  EXPECT_THAT(ErrorOf({"--csv"}), HasSubstr("needs a value"));
  EXPECT_THAT(ErrorOf({"--csv="}), HasSubstr("needs a file name"));
  EXPECT_THAT(ErrorOf({"stray"}), HasSubstr("unexpected argument"));
  EXPECT_THAT(ErrorOf({"--baseline=yes"}), HasSubstr("takes no value"));
  EXPECT_THAT(ErrorOf({"--raw-only", "--broker", "tcp://127.0.0.1:5555"}),
              HasSubstr("excludes --broker"));
  EXPECT_THAT(ErrorOf({"--placement", "processes", "--transport", "inproc"}),
              HasSubstr("cannot cross processes"));
  EXPECT_THAT(ErrorOf({"--workers", "2"}), HasSubstr("--grow clients"));
  EXPECT_THAT(ErrorOf({"--grow", "clients", "--max-workers", "2"}),
              HasSubstr("--grow workers"));
  EXPECT_THAT(ErrorOf({"--rounds-per-step", "-5"}), HasSubstr("between"));
}

TEST(OptionsTest, WorkerCountsUpToTheLimit) {
  absl::StatusOr<Options> o =
      Parse({"--max-workers", std::to_string(kMaxWorkersLimit)});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->MostWorkers(), kMaxWorkersLimit);
  EXPECT_EQ(o->MostClients(), 1);
  EXPECT_THAT(ErrorOf({"--max-workers", "1025"}),
              HasSubstr("must be between 1 and 1024"));
  EXPECT_THAT(ErrorOf({"--grow", "clients", "--workers", "1025"}),
              HasSubstr("must be between 1 and 1024"));
  o = Parse({"--grow", "clients", "--workers", "300", "--max-clients", "4",
             "--step", "2"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->MostWorkers(), 300);
  EXPECT_EQ(o->MostClients(), 3);  // steps 1, 3
}

TEST(OptionsTest, CpuLists) {
  EXPECT_THAT(*ParseCpuList("0"), ElementsAre(0));
  EXPECT_THAT(*ParseCpuList("0,1"), ElementsAre(0, 1));
  EXPECT_THAT(*ParseCpuList("0-1"), ElementsAre(0, 1));
  EXPECT_THAT(*ParseCpuList("6,0-3,2"), ElementsAre(0, 1, 2, 3, 6));
  EXPECT_THAT(*ParseCpuList("1023"), ElementsAre(1023));
  for (const char* bad : {"", ",", "0,", ",0", "a", "1-", "-1", "3-1", "0-1-2",
                          "1024", "0-1024", " 0", "0x1", "1.5"}) {
    absl::StatusOr<std::vector<int>> c = ParseCpuList(bad);
    EXPECT_FALSE(c.ok()) << "'" << bad << "'";
    if (!c.ok()) {
      EXPECT_THAT(c.status().message(), HasSubstr("--cpus"));
    }
  }
  EXPECT_EQ(FormatCpuList({0}), "0");
  EXPECT_EQ(FormatCpuList({0, 1}), "0-1");
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 6, 8, 9}), "0-3,6,8-9");
  EXPECT_EQ(FormatCpuList({}), "");

  absl::StatusOr<Options> o = Parse({"--cpus", "0-1"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_THAT(o->cpus, ElementsAre(0, 1));
  EXPECT_EQ(o->cpus_text, "0-1");
  EXPECT_TRUE(Parse({}).value().cpus.empty());
  EXPECT_THAT(ErrorOf({"--cpus"}), HasSubstr("needs a value"));
  EXPECT_THAT(ErrorOf({"--cpus=x"}), HasSubstr("'x' is not a CPU number"));
}

// --pin-roles spreads the roles over --cpus in the order broker, workers,
// clients, wrapping around; without it no role is pinned apart.
TEST(OptionsTest, PinRolesSpreadsTheRolesOverTheCpus) {
  const auto roles = [](std::vector<std::string> args) {
    absl::StatusOr<Options> o = Parse(std::move(args));
    EXPECT_TRUE(o.ok()) << o.status();
    const Options::RoleCpus r =
        o.ok() ? o->PinnedRoleCpus() : Options::RoleCpus{-2, -2, -2};
    return std::vector<int>{r.broker, r.workers, r.clients};
  };
  EXPECT_THAT(roles({"--cpus", "0-1", "--pin-roles"}), ElementsAre(0, 1, 0));
  EXPECT_THAT(roles({"--pin-roles", "--cpus=3"}), ElementsAre(3, 3, 3));
  EXPECT_THAT(roles({"--cpus", "1,4-7", "--pin-roles"}), ElementsAre(1, 4, 5));
  EXPECT_THAT(roles({"--cpus", "0-1"}), ElementsAre(-1, -1, -1));
  EXPECT_THAT(roles({}), ElementsAre(-1, -1, -1));
  EXPECT_FALSE(Parse({}).value().pin_roles);
  EXPECT_THAT(ErrorOf({"--pin-roles"}), HasSubstr("give --cpus too"));
  EXPECT_THAT(ErrorOf({"--cpus", "0", "--pin-roles=on"}),
              HasSubstr("takes no value"));
}

TEST(OptionsTest, RegistrationBoundFollowsTheRequestTimeout) {
  // Below 10 s the bound stays 10 s; a longer --timeout raises it, so
  // that one slow probe (valgrind, a loaded machine) cannot end the wait.
  EXPECT_EQ(RegistrationBound(Parse({}).value()),
            std::chrono::milliseconds(10000));
  EXPECT_EQ(RegistrationBound(Parse({"--timeout", "2000ms"}).value()),
            std::chrono::milliseconds(10000));
  EXPECT_EQ(RegistrationBound(Parse({"--timeout", "60s"}).value()),
            std::chrono::milliseconds(60000));
}

TEST(OptionsTest, TimeoutTakesADurationWithAUnit) {
  EXPECT_EQ(Parse({}).value().timeout, std::chrono::milliseconds(5000));
  absl::StatusOr<Options> o = Parse({"--timeout", "250ms"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->timeout, std::chrono::milliseconds(250));
  EXPECT_TRUE(o->warnings.empty());
  EXPECT_EQ(Parse({"--timeout=1m30s"}).value().timeout,
            std::chrono::milliseconds(90000));
  EXPECT_EQ(Parse({"--timeout", "2.5s"}).value().timeout,
            std::chrono::milliseconds(2500));
}

TEST(OptionsTest, TimeoutRefusesBareNumbersAndNonPositiveDurations) {
  // A bare number was the old flag's milliseconds: refused rather than
  // guessed, with the unit the user probably meant.
  EXPECT_THAT(ErrorOf({"--timeout", "5000"}),
              HasSubstr("--timeout needs a duration with a unit"));
  EXPECT_THAT(ErrorOf({"--timeout", "5000"}), HasSubstr("5000ms"));
  for (const char* bad : {"0s", "-1s", "inf", "soon", "", "500us"}) {
    EXPECT_THAT(ErrorOf({"--timeout", bad}), HasSubstr("--timeout")) << bad;
  }
  EXPECT_THAT(ErrorOf({"--timeout"}), HasSubstr("needs a value"));
}

TEST(OptionsTest, DeprecatedTimeoutMsStillWorksWithAWarning) {
  absl::StatusOr<Options> o = Parse({"--timeout-ms", "2000"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->timeout, std::chrono::milliseconds(2000));
  EXPECT_THAT(o->warnings,
              ElementsAre("--timeout-ms is deprecated, use --timeout "
                          "(docs/glossary.md)"));
  EXPECT_EQ(Parse({"--timeout-ms=7"}).value().timeout,
            std::chrono::milliseconds(7));
  EXPECT_THAT(ErrorOf({"--timeout-ms", "0"}),
              HasSubstr("--timeout-ms must be between 1"));
  EXPECT_THAT(ErrorOf({"--timeout-ms", "2s"}), HasSubstr("whole number"));
}

TEST(OptionsTest, TimeoutAndItsDeprecatedSpellingMustAgree) {
  absl::StatusOr<Options> same =
      Parse({"--timeout", "2s", "--timeout-ms", "2000"});
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->timeout, std::chrono::milliseconds(2000));
  EXPECT_EQ(same->warnings.size(), 1u);
  const std::string differ =
      ErrorOf({"--timeout-ms", "2000", "--timeout", "1s"});
  EXPECT_THAT(differ, HasSubstr("--timeout"));
  EXPECT_THAT(differ, HasSubstr("--timeout-ms"));
  EXPECT_THAT(differ, HasSubstr("disagree"));
}

}  // namespace
}  // namespace zb::latency
