// Copyright 2026 The zbrokers Authors.
//
// JSON strings from arbitrary bytes, in one way for everything zbrokers
// writes as JSON: the daemon's JSON log lines, `zb --json` and
// `zb-latency --json`.  Internal to zbrokers (not installed).
//
//   JsonQuote("a\"b\n")          -> "a\"b\n"       (JSON escapes)
//   JsonQuote("\x01\x7f")        -> "\u0001\u007f"
//   JsonQuote("caf\xc3\xa9")     -> "café"          (valid UTF-8 kept)
//   JsonQuote("bad:\xff")        -> "bad:\ufffd"    (one U+FFFD per bad byte)
//
// What is written may come from a peer (a service name, a failure reason,
// a log line quoting either) or a command line (an endpoint, a path), so it
// may hold any bytes.  JSON text must be UTF-8 (RFC 8259 section 8.1) and
// must escape U+0000 to U+001F: JsonQuote escapes quotes, backslashes and
// every control byte (\n, \r, \t by name, the rest and DEL 0x7f as \u00XX),
// keeps valid UTF-8 as it is, and writes each byte that does not start a
// valid UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF) as \ufffd.  The result is always valid JSON, whatever
// the input.
//
// Thread-safe (pure functions).

#ifndef ZB_BROKERS_COMMON_JSON_H_
#define ZB_BROKERS_COMMON_JSON_H_

#include <string>
#include <string_view>

namespace zb {

// `text` as a JSON string literal, double quotes included.
std::string JsonQuote(std::string_view text);

// True when `bytes` is valid UTF-8 (RFC 3629) throughout.
bool IsValidUtf8(std::string_view bytes);

}  // namespace zb

#endif  // ZB_BROKERS_COMMON_JSON_H_
