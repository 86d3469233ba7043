// Copyright 2026 The zbrokers Authors.
//
// Whole multipart messages as strings on any zmq socket, for tests that
// drive a raw peer by hand.  Blocking: a send waits for the high-water
// mark, a receive for the socket's ZMQ_RCVTIMEO.

#ifndef TEST_TESTING_SOCKET_IO_H_
#define TEST_TESTING_SOCKET_IO_H_

#include <string>
#include <vector>
#include <zmq.hpp>

namespace zb::test {

// Sends `frames` as one multipart message (a test failure if it cannot).
void SendAll(zmq::socket_t& s, const std::vector<std::string>& frames);

// The next message's frames; empty after the socket's ZMQ_RCVTIMEO.
std::vector<std::string> RecvAll(zmq::socket_t& s);

}  // namespace zb::test

#endif  // TEST_TESTING_SOCKET_IO_H_
