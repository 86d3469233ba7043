// Copyright 2026 The zbrokers Authors.
//
// Peer-chosen bytes in log lines, in one format for every broker and the
// daemon.  A peer picks its socket identity and the service names it sends,
// so they may hold any bytes: spaces, newlines, control bytes, invalid
// UTF-8, or megabytes.  Written as they are, they could forge or break a log
// line.  These two functions make them safe and short, and both brokers use
// them so that the same peer reads the same in every line.
//
//   PrintableIdentity("worker-1")            -> worker-1
//   PrintableIdentity("\x00\x6b\x8b\x45\x67") -> 0x006b8b4567
//   PrintableIdentity("")                    -> ""
//   QuotedText("echo")                       -> "echo"
//   QuotedText("a\"b\n")                     -> "a\"b\n" (C escapes)
//
// Thread-safe (pure functions).

#ifndef ZB_BROKERS_COMMON_LOG_TEXT_H_
#define ZB_BROKERS_COMMON_LOG_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace zb {

// The most bytes of an identity shown (as text, or as hex digits for twice
// as many characters) before "..." marks the rest as cut.
inline constexpr std::size_t kMaxLoggedIdentityBytes = 32;
// The most bytes of a quoted text shown before "..." (inside the quotes).
inline constexpr std::size_t kMaxLoggedTextBytes = 256;

// A socket identity as one word: printable ASCII without spaces (0x21 to
// 0x7e) as it is, anything else -- libzmq's generated identities are five
// binary bytes starting with a zero -- as "0x" and lowercase hex.  The
// empty identity is written "".  Longer than kMaxLoggedIdentityBytes: the
// first that many bytes, then "...".
std::string PrintableIdentity(std::string_view identity);

// Peer-chosen text (a service name, a reason) in double quotes, with quotes,
// backslashes and every byte outside printable ASCII C-escaped (\n, \",
// \\, \xfe...), so it stays on its line and inside its quotes.  Longer than
// kMaxLoggedTextBytes: the first that many bytes, then "..." inside the
// closing quote.
std::string QuotedText(std::string_view text);

}  // namespace zb

#endif  // ZB_BROKERS_COMMON_LOG_TEXT_H_
