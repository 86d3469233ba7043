// Copyright 2026 The zbrokers Authors.

#include "zbrokers/security/curve.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zb {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A fresh directory under TMPDIR, removed with its files at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl =
        std::string(std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR")
                                                     : "/tmp") +
        "/zb_curve_test.XXXXXX";
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) {
      // Nothing to do in a destructor; the directory is under TMPDIR.
    }
  }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::string path_;
};

mode_t ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(CurveTest, LibzmqHasCurve) {
  // Every other test here needs it; Debian's libzmq5 is built with
  // libsodium.  Failing loudly beats skipping silently.
  ASSERT_TRUE(CurveAvailable()) << "libzmq was built without CURVE";
}

TEST(CurveTest, Z85RoundTripAndValidation) {
  absl::StatusOr<CurveKeyPair> pair = GenerateCurveKeyPair();
  ASSERT_TRUE(pair.ok()) << pair.status();
  const std::string text = Z85(pair->public_key);
  EXPECT_EQ(text.size(), kZ85KeySize);
  EXPECT_TRUE(IsZ85Key(text));
  absl::StatusOr<CurveKey> back = ParseZ85Key(text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, pair->public_key);

  EXPECT_FALSE(ParseZ85Key(text.substr(1)).ok());
  std::string bad = text;
  bad[5] = ' ';  // not in the alphabet
  absl::StatusOr<CurveKey> r = ParseZ85Key(bad);
  ASSERT_FALSE(r.ok());
  // The error never repeats the text: it may be a secret key.
  EXPECT_THAT(std::string(r.status().message()),
              Not(HasSubstr(text.substr(6))));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("Z85"));
}

TEST(CurveTest, PublicKeyIsDerivedFromSecret) {
  absl::StatusOr<CurveKeyPair> pair = GenerateCurveKeyPair();
  ASSERT_TRUE(pair.ok());
  absl::StatusOr<CurveKey> pub = CurvePublicKey(pair->secret_key);
  ASSERT_TRUE(pub.ok());
  EXPECT_EQ(*pub, pair->public_key);

  absl::StatusOr<CurveKeyPair> server = GenerateCurveKeyPair();
  ASSERT_TRUE(server.ok());
  absl::StatusOr<CurveClientKeys> keys =
      MakeCurveClientKeys(Z85(server->public_key), Z85(pair->secret_key));
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(keys->public_key, pair->public_key);
  EXPECT_EQ(keys->server_public_key, server->public_key);
  absl::StatusOr<CurveClientKeys> bad =
      MakeCurveClientKeys("short", Z85(pair->secret_key));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("server public key"));
}

TEST(CurveTest, KeyTextCommentsLabelsAndErrors) {
  absl::StatusOr<CurveKeyPair> a = GenerateCurveKeyPair();
  absl::StatusOr<CurveKeyPair> b = GenerateCurveKeyPair();
  ASSERT_TRUE(a.ok() && b.ok());
  // '#' is in the Z85 alphabet: a key may contain it (never as its first
  // character, which encodes the top of a 32-bit value: at most index 82
  // of 85, and '#' is the last one).
  CurveKey hash_key{};
  std::string hash_text;
  for (int i = 0; i < 10000 && hash_text.empty(); ++i) {
    absl::StatusOr<CurveKeyPair> p = GenerateCurveKeyPair();
    ASSERT_TRUE(p.ok());
    const std::string z = Z85(p->public_key);
    ASSERT_NE(z.front(), '#');
    if (z.find('#') != std::string::npos) {
      hash_key = p->public_key;
      hash_text = z;
    }
  }
  ASSERT_FALSE(hash_text.empty());
  const std::string text = "# clients\n\n   \n" + Z85(a->public_key) + "\n\t" +
                           Z85(b->public_key) + "   # bob  \n" + hash_text +
                           " carol\n#" + Z85(a->public_key) +
                           "x\n";  // a comment: 41 characters
  absl::StatusOr<std::vector<CurveKeyEntry>> entries =
      ParseCurveKeyText(text, "list.txt");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].key, a->public_key);
  EXPECT_EQ((*entries)[0].label, "");
  EXPECT_EQ((*entries)[0].where, "list.txt:4");
  EXPECT_EQ((*entries)[1].key, b->public_key);
  EXPECT_EQ((*entries)[1].label, "bob");
  EXPECT_EQ((*entries)[2].key, hash_key);
  EXPECT_EQ((*entries)[2].label, "carol");

  absl::StatusOr<std::vector<CurveKeyEntry>> bad =
      ParseCurveKeyText("# ok\n" + Z85(a->public_key) + "\nnot-a-key\n", "f");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("f:3:"));
}

TEST(CurveTest, WriteKeyPairFilesModesAndNoOverwrite) {
  TempDir dir;
  const mode_t old_umask = umask(0);  // the secret must be 0600 regardless
  absl::StatusOr<WrittenKeyPair> w =
      WriteCurveKeyPairFiles(dir.path() + "/alice");
  umask(old_umask);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->public_key_file, dir.path() + "/alice.pub");
  EXPECT_EQ(w->secret_key_file, dir.path() + "/alice.secret");
  EXPECT_EQ(ModeOf(w->secret_key_file), 0600u);
  EXPECT_EQ(ModeOf(w->public_key_file), 0644u);

  absl::StatusOr<CurveKey> pub = ReadCurveKeyFile(w->public_key_file);
  ASSERT_TRUE(pub.ok()) << pub.status();
  EXPECT_EQ(*pub, w->public_key);
  std::string warning = "unset";
  absl::StatusOr<CurveKey> sec =
      ReadCurveSecretKeyFile(w->secret_key_file, &warning);
  ASSERT_TRUE(sec.ok()) << sec.status();
  EXPECT_EQ(warning, "");
  absl::StatusOr<CurveKey> derived = CurvePublicKey(*sec);
  ASSERT_TRUE(derived.ok());
  EXPECT_EQ(*derived, w->public_key);

  // A second keygen does not clobber the first.
  absl::StatusOr<WrittenKeyPair> again =
      WriteCurveKeyPairFiles(dir.path() + "/alice");
  ASSERT_FALSE(again.ok());
  EXPECT_THAT(std::string(again.status().message()), HasSubstr("alice.secret"));
  absl::StatusOr<CurveKey> still = ReadCurveKeyFile(w->public_key_file);
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(*still, w->public_key);

  // Unless asked to; an existing file's loose mode is tightened.
  ASSERT_EQ(chmod(w->secret_key_file.c_str(), 0644), 0);
  absl::StatusOr<WrittenKeyPair> forced =
      WriteCurveKeyPairFiles(dir.path() + "/alice", /*overwrite=*/true);
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_NE(forced->public_key, w->public_key);
  EXPECT_EQ(ModeOf(forced->secret_key_file), 0600u);
}

TEST(CurveTest, SecretKeyFileReadableByOthersWarns) {
  TempDir dir;
  absl::StatusOr<CurveKeyPair> p = GenerateCurveKeyPair();
  ASSERT_TRUE(p.ok());
  const std::string path = dir.Write("s.secret", Z85(p->secret_key) + "\n");
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  std::string warning;
  absl::StatusOr<CurveKey> sec = ReadCurveSecretKeyFile(path, &warning);
  ASSERT_TRUE(sec.ok());
  EXPECT_THAT(warning, HasSubstr("0644"));
  EXPECT_THAT(warning, Not(HasSubstr(Z85(p->secret_key))));
}

TEST(CurveTest, KeyFileErrorsNameTheFile) {
  TempDir dir;
  absl::StatusOr<CurveKey> missing = ReadCurveKeyFile(dir.path() + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("nope"));

  absl::StatusOr<CurveKeyPair> p = GenerateCurveKeyPair();
  ASSERT_TRUE(p.ok());
  const std::string two = dir.Write(
      "two.pub", Z85(p->public_key) + "\n" + Z85(p->secret_key) + "\n");
  absl::StatusOr<CurveKey> r = ReadCurveKeyFile(two);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("exactly one"));
  const std::string empty = dir.Write("empty.pub", "# nothing\n");
  EXPECT_FALSE(ReadCurveKeyFile(empty).ok());
}

// The defence in depth of ListenerSecurityScope: a CURVE listener whose
// context has no ZAP handler must refuse clients rather than let them in
// unauthenticated (ZMQ_ZAP_ENFORCE_DOMAIN).  Were the option ignored by
// this libzmq, the message below would arrive.
TEST(CurveTest, CurveListenerWithoutZapHandlerLetsNobodyIn) {
  zmq::context_t ctx;
  absl::StatusOr<CurveKeyPair> server = GenerateCurveKeyPair();
  absl::StatusOr<CurveKeyPair> client = GenerateCurveKeyPair();
  ASSERT_TRUE(server.ok() && client.ok());
  zmq::socket_t router(ctx, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  {
    ListenerSecurityScope scope(
        router, {.curve_secret_key = server->secret_key, .zap_domain = "t"});
    ASSERT_TRUE(scope.status().ok()) << scope.status();
    router.bind("tcp://127.0.0.1:*");
  }
  const std::string ep = router.get(zmq::sockopt::last_endpoint);
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  absl::StatusOr<CurveClientKeys> keys =
      MakeCurveClientKeys(server->public_key, client->secret_key);
  ASSERT_TRUE(keys.ok());
  ASSERT_TRUE(ApplyCurveClient(dealer, *keys).ok());
  dealer.connect(ep);
  dealer.send(zmq::str_buffer("hello"), zmq::send_flags::dontwait);
  zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
  EXPECT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(700)), 0)
      << "a CURVE client got through without a ZAP handler";
}

TEST(CurveTest, ScopeNeedsADomainAndRestoresPlaintext) {
  zmq::context_t ctx;
  absl::StatusOr<CurveKeyPair> server = GenerateCurveKeyPair();
  ASSERT_TRUE(server.ok());
  zmq::socket_t router(ctx, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  {
    ListenerSecurityScope scope(
        router, {.curve_secret_key = server->secret_key, .zap_domain = ""});
    EXPECT_FALSE(scope.status().ok());
  }
  {
    ListenerSecurityScope scope(
        router, {.curve_secret_key = server->secret_key, .zap_domain = "d"});
    ASSERT_TRUE(scope.status().ok());
    EXPECT_EQ(router.get(zmq::sockopt::mechanism), ZMQ_CURVE);
    EXPECT_EQ(router.get(zmq::sockopt::zap_domain), "d");
  }
  EXPECT_EQ(router.get(zmq::sockopt::mechanism), ZMQ_NULL);
  {
    ListenerSecurityScope plain(router, {});
    EXPECT_TRUE(plain.status().ok());
    EXPECT_EQ(router.get(zmq::sockopt::mechanism), ZMQ_NULL);
  }
}

}  // namespace
}  // namespace zb
