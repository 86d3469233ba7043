/* Copyright 2026 The zbrokers Authors.
 *
 * A C program built by install_test.py with nothing but
 * `pkg-config --cflags --libs zbrokers` against an installed tree: a
 * consensus broker, one worker and one client on one reactor, one request.
 * Exits 0 when the answer is right, 1 otherwise; a timer bounds it. */

#include <stdio.h>
#include <string.h>
#include <zb.h>

static int outcome = -1; /* -1: no answer yet, 0: right, 1: wrong */

static void echo(void* user, zb_responder_t* responder, size_t count,
                 const void* const* data, const size_t* sizes) {
  (void)user;
  zb_responder_succeed(responder, count, data, sizes);
}

static void on_reply(void* user, int result, int failed_by, const char* reason,
                     int attempts, size_t count, const void* const* data,
                     const size_t* sizes) {
  zb_reactor_t* reactor = user;
  (void)failed_by;
  (void)attempts;
  if (result == ZB_RESULT_SUCCESS && count == 1 && sizes[0] == 5 &&
      memcmp(data[0], "hello", 5) == 0) {
    outcome = 0;
  } else {
    fprintf(stderr, "external_app.c: result %d reason '%s' frames %zu\n",
            result, reason, count);
    outcome = 1;
  }
  zb_reactor_stop(reactor);
}

static void give_up(void* user) { zb_reactor_stop(user); }

static int check(int rc, const char* what) {
  if (rc != ZB_OK) {
    fprintf(stderr, "external_app.c: %s: %s (%s)\n", what, zb_strerror(rc),
            zb_last_error());
  }
  return rc;
}

int main(void) {
  zb_reactor_t* reactor = NULL;
  zb_consensus_broker_t* broker = NULL;
  zb_consensus_worker_t* worker = NULL;
  zb_consensus_client_t* client = NULL;
  char endpoint[256];
  const void* data[1] = {"hello"};
  size_t sizes[1] = {5};
  if (check(zb_reactor_new(&reactor), "reactor") != ZB_OK) return 1;
  /* The reactor owns what is created on it and destroys it. */
  if (check(zb_consensus_broker_new(reactor, 0, &broker), "broker") ||
      check(zb_consensus_broker_bind(broker, "tcp://127.0.0.1:*", endpoint,
                                     sizeof endpoint),
            "bind") ||
      check(zb_consensus_worker_new(reactor, endpoint, "echo", 4, 200000, 0,
                                    echo, NULL, NULL, &worker),
            "worker") ||
      check(zb_consensus_client_new(reactor, endpoint, &client), "client") ||
      /* The worker may not have registered yet: retry "zb:no-workers". */
      check(zb_consensus_client_request_flags(
                client, "echo", 4, 1, data, sizes, 10000000, 0,
                ZB_REQUEST_RETRY_NO_WORKERS, on_reply, reactor, NULL),
            "request") ||
      check(zb_reactor_after(reactor, 30000000, give_up, reactor, NULL, NULL),
            "timer") ||
      check(zb_reactor_run(reactor), "run")) {
    zb_reactor_destroy(reactor);
    return 1;
  }
  zb_reactor_destroy(reactor);
  if (outcome != 0) {
    if (outcome < 0) fprintf(stderr, "external_app.c: no answer in 30 s\n");
    return 1;
  }
  printf("external C program (zbrokers %s): ok\n", zb_version());
  return 0;
}
