// Copyright 2026 The zbrokers Authors.

#include "brokers/common/log_text.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace zb {

std::string PrintableIdentity(std::string_view identity) {
  if (identity.empty()) return "\"\"";
  const bool truncated = identity.size() > kMaxLoggedIdentityBytes;
  if (truncated) identity = identity.substr(0, kMaxLoggedIdentityBytes);
  bool printable = true;
  for (char c : identity) printable = printable && c >= 0x21 && c <= 0x7e;
  std::string out;
  if (printable) {
    out.assign(identity);
  } else {
    out = absl::StrCat("0x", absl::BytesToHexString(absl::string_view(
                                 identity.data(), identity.size())));
  }
  if (truncated) out += "...";
  return out;
}

std::string QuotedText(std::string_view text) {
  const bool truncated = text.size() > kMaxLoggedTextBytes;
  if (truncated) text = text.substr(0, kMaxLoggedTextBytes);
  return absl::StrCat(
      "\"", absl::CHexEscape(absl::string_view(text.data(), text.size())),
      truncated ? "...\"" : "\"");
}

}  // namespace zb
