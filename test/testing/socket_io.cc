// Copyright 2026 The zbrokers Authors.

#include "test/testing/socket_io.h"

#include <gtest/gtest.h>

#include <iterator>
#include <zmq_addon.hpp>

namespace zb::test {

void SendAll(zmq::socket_t& s, const std::vector<std::string>& frames) {
  std::vector<zmq::const_buffer> parts;
  for (const std::string& f : frames) parts.push_back(zmq::buffer(f));
  ASSERT_TRUE(zmq::send_multipart(s, parts));
}

std::vector<std::string> RecvAll(zmq::socket_t& s) {
  std::vector<zmq::message_t> frames;
  if (!zmq::recv_multipart(s, std::back_inserter(frames))) return {};
  std::vector<std::string> out;
  for (const zmq::message_t& m : frames) out.push_back(m.to_string());
  return out;
}

}  // namespace zb::test
