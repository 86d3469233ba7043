// Copyright 2026 The zbrokers Authors.
//
// CURVE (zb.h): zb_has_curve, key generation, and the keys a client or
// worker is given (CurveFromC, for zb_consensus.cc and zb_majordomo.cc).

#include <algorithm>
#include <cstring>

#include "bindings/c/zb.h"
#include "bindings/c/zb_internal.h"

namespace zb::capi {

int CurveFromC(absl::string_view where, const zb_curve_keys_t* keys,
               std::optional<zb::CurveClientKeys>& out) {
  if (keys == nullptr) return ZB_OK;
  if (keys->server_public_key == nullptr || keys->secret_key == nullptr) {
    return Fail(ZB_ERR_INVALID,
                absl::StrCat(where,
                             ": CURVE needs server_public_key and "
                             "secret_key"));
  }
  absl::StatusOr<zb::CurveClientKeys> k =
      zb::MakeCurveClientKeys(keys->server_public_key, keys->secret_key);
  if (!k.ok()) {
    return Fail(
        absl::IsFailedPrecondition(k.status()) ? ZB_ERR_STATE : ZB_ERR_INVALID,
        absl::StrCat(where, ": ", k.status().message()));
  }
  if (keys->public_key != nullptr) {
    absl::StatusOr<zb::CurveKey> given = zb::ParseZ85Key(keys->public_key);
    if (!given.ok() || *given != k->public_key) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(where,
                               ": public_key is not the public key of "
                               "secret_key (pass NULL to derive it)"));
    }
  }
  out = *k;
  return ZB_OK;
}

extern "C" int zb_has_curve(void) { return zb::CurveAvailable() ? 1 : 0; }

extern "C" int zb_curve_keypair(char* public_key, char* secret_key) {
  return Guard("zb_curve_keypair", [&]() -> int {
    if (public_key == nullptr || secret_key == nullptr) {
      return Fail(ZB_ERR_INVALID, "zb_curve_keypair: NULL buffer");
    }
    absl::StatusOr<zb::CurveKeyPair> pair = zb::GenerateCurveKeyPair();
    if (!pair.ok()) {
      return Fail(ZB_ERR_STATE,
                  absl::StrCat("zb_curve_keypair: ", pair.status().message()));
    }
    const std::string pub = zb::Z85(pair->public_key);
    std::string sec = zb::Z85(pair->secret_key);
    std::memcpy(public_key, pub.c_str(), pub.size() + 1);
    std::memcpy(secret_key, sec.c_str(), sec.size() + 1);
    std::fill(sec.begin(), sec.end(), '\0');
    return ZB_OK;
  });
}

extern "C" int zb_curve_public(const char* secret_key, char* public_key) {
  return Guard("zb_curve_public", [&]() -> int {
    if (secret_key == nullptr || public_key == nullptr) {
      return Fail(ZB_ERR_INVALID, "zb_curve_public: NULL argument");
    }
    absl::StatusOr<zb::CurveKey> secret = zb::ParseZ85Key(secret_key);
    if (!secret.ok()) {
      return Fail(ZB_ERR_INVALID, absl::StrCat("zb_curve_public: secret key: ",
                                               secret.status().message()));
    }
    absl::StatusOr<zb::CurveKey> pub = zb::CurvePublicKey(*secret);
    if (!pub.ok()) {
      return Fail(ZB_ERR_STATE,
                  absl::StrCat("zb_curve_public: ", pub.status().message()));
    }
    const std::string text = zb::Z85(*pub);
    std::memcpy(public_key, text.c_str(), text.size() + 1);
    return ZB_OK;
  });
}

}  // namespace zb::capi
