/* Copyright 2026 The zbrokers Authors.
 *
 * Exercises libzbrokers.so through zb.h from plain C (C11): the header must
 * compile as C and the library must link and work without any C++ on the
 * caller's side.  Each test_* function returns only when its checks passed;
 * the first failed check prints where and exits non-zero.
 */

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zb.h"

/* Atomic: the threads the tests start (replies and discards from another
 * thread) CHECK too.  ThreadSanitizer found the plain int racing. */
static atomic_int g_checks = 0;

#define CHECK(cond)                                                           \
  do {                                                                        \
    ++g_checks;                                                               \
    if (!(cond)) {                                                            \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, \
              __LINE__, #cond, zb_last_error());                              \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

#define CHECK_OK(call) CHECK((call) == ZB_OK)

/* Runs the reactor until *done is non-zero or `seconds` pass; returns *done.
 * Bounds every wait so that a bug fails the test instead of hanging it. */
static int run_until(zb_reactor_t* r, const int* done, double seconds) {
  const int64_t deadline = zb_now_us() + (int64_t)(seconds * 1e6);
  while (!*done && zb_now_us() < deadline) {
    CHECK_OK(zb_reactor_run_once(r, 50 * 1000, NULL));
  }
  return *done;
}

/* ---- Errors ----------------------------------------------------------------
 */

static void test_errors(void) {
  zb_reactor_t* r = NULL;
  CHECK(zb_reactor_new(NULL) == ZB_ERR_INVALID);
  CHECK(strstr(zb_last_error(), "zb_reactor_new") != NULL);
  CHECK(strcmp(zb_strerror(ZB_ERR_ZMQ), "ZB_ERR_ZMQ") == 0);
  CHECK(strcmp(zb_strerror(12345), "unknown") == 0);
  CHECK(zb_version()[0] != '\0');
  CHECK_OK(zb_reactor_destroy(NULL));

  CHECK_OK(zb_reactor_new(&r));
  zb_socket_t* s = NULL;
  CHECK(zb_socket_new_named(r, "NOPE", &s) == ZB_ERR_INVALID);
  CHECK(strstr(zb_last_error(), "NOPE") != NULL);
  CHECK(s == NULL);
  CHECK(zb_socket_new(r, 99, &s) == ZB_ERR_INVALID);
  CHECK_OK(zb_socket_new_named(r, "dealer", &s));

  /* A malformed endpoint fails with ZeroMQ's message and names it. */
  CHECK(zb_socket_connect(s, "bogus://x") == ZB_ERR_ZMQ);
  CHECK(strstr(zb_last_error(), "bogus://x") != NULL);
  CHECK(zb_socket_bind(s, "tcp://not-an-address:zz") == ZB_ERR_ZMQ);
  CHECK(zb_socket_send(s, 0, NULL, NULL) == ZB_ERR_INVALID);

  /* Timers: bad arguments, unknown ids. */
  zb_timer_id id = 0;
  CHECK(zb_reactor_after(r, -1, NULL, NULL, NULL, &id) == ZB_ERR_INVALID);
  CHECK(zb_reactor_every(r, 0, NULL, NULL, NULL, &id) == ZB_ERR_INVALID);
  CHECK(zb_reactor_cancel(r, 777) == ZB_ERR_NOT_FOUND);

  /* A getter with a too-small buffer reports the needed size. */
  char small[4];
  CHECK_OK(zb_socket_last_endpoint(s, small, sizeof small)); /* not bound */
  CHECK(small[0] == '\0');
  CHECK_OK(zb_socket_bind(s, "tcp://127.0.0.1:*"));
  CHECK(zb_socket_last_endpoint(s, small, sizeof small) == ZB_ERR_RANGE);
  CHECK_OK(zb_socket_set_bytes(s, ZB_OPT_ROUTING_ID, "abcdef", 6));
  size_t n = 0;
  CHECK(zb_socket_get_bytes(s, ZB_OPT_ROUTING_ID, small, sizeof small, &n) ==
        ZB_ERR_RANGE);
  CHECK(n == 6);
  char id_buf[16];
  CHECK_OK(
      zb_socket_get_bytes(s, ZB_OPT_ROUTING_ID, id_buf, sizeof id_buf, &n));
  CHECK(n == 6 && memcmp(id_buf, "abcdef", 6) == 0);

  /* Integer options round-trip; out-of-range values are refused. */
  int64_t v = -1;
  CHECK_OK(zb_socket_set_int(s, ZB_OPT_SNDHWM, 1234));
  CHECK_OK(zb_socket_get_int(s, ZB_OPT_SNDHWM, &v));
  CHECK(v == 1234);
  CHECK_OK(zb_socket_get_int(s, ZB_OPT_LINGER, &v));
  CHECK(v == 0);
  CHECK(zb_socket_set_int(s, ZB_OPT_SNDHWM, (int64_t)1 << 40) ==
        ZB_ERR_INVALID);
  CHECK_OK(zb_socket_set_int(s, ZB_OPT_MAXMSGSIZE, (int64_t)1 << 40));
  CHECK_OK(zb_socket_get_int(s, ZB_OPT_MAXMSGSIZE, &v));
  CHECK(v == (int64_t)1 << 40);
  CHECK(zb_socket_set_int(s, 9999, 1) == ZB_ERR_ZMQ);

  CHECK_OK(zb_socket_close(s));
  CHECK_OK(zb_reactor_destroy(r));
}

/* ---- Timers
 * ------------------------------------------------------------------ */

typedef struct {
  zb_reactor_t* r;
  int fired;
  int freed;
  int order[8];
  int n_order;
  zb_timer_id self;
  int done;
} timer_state;

static void count_free(void* user) { ((timer_state*)user)->freed++; }

static void on_once(void* user) {
  timer_state* t = (timer_state*)user;
  t->fired++;
  if (t->n_order < 8) t->order[t->n_order++] = 1;
}

static void on_periodic(void* user) {
  timer_state* t = (timer_state*)user;
  t->fired++;
  if (t->fired == 3) {
    /* A periodic timer cancels itself from its own callback. */
    CHECK_OK(zb_reactor_cancel(t->r, t->self));
    t->done = 1;
  }
}

static void on_never(void* user) {
  (void)user;
  fprintf(stderr, "a cancelled timer fired\n");
  exit(1);
}

static void test_timers(void) {
  timer_state once = {0}, periodic = {0}, never = {0}, at = {0};
  zb_reactor_t* r;
  CHECK_OK(zb_reactor_new(&r));
  once.r = periodic.r = never.r = at.r = r;

  zb_timer_id id;
  CHECK_OK(zb_reactor_after(r, 1000, on_once, &once, count_free, &id));
  CHECK(id != 0);
  CHECK_OK(zb_reactor_every(r, 2000, on_periodic, &periodic, count_free,
                            &periodic.self));
  CHECK_OK(zb_reactor_after(r, 5000, on_never, &never, count_free, &id));
  CHECK_OK(zb_reactor_cancel(r, id));
  CHECK(never.freed == 1); /* released at once by cancel */
  CHECK(zb_reactor_cancel(r, id) == ZB_ERR_NOT_FOUND);
  CHECK_OK(
      zb_reactor_at(r, zb_now_us() + 3000, on_once, &at, count_free, NULL));

  CHECK(run_until(r, &periodic.done, 10.0));
  CHECK(periodic.fired == 3);
  CHECK(periodic.freed == 1); /* released after its own callback returned */
  int done_once = 0;
  while (!(once.fired && at.fired)) {
    CHECK_OK(zb_reactor_run_once(r, 10 * 1000, NULL));
    if (++done_once > 1000) break;
  }
  CHECK(once.fired == 1 && once.freed == 1);
  CHECK(at.fired == 1 && at.freed == 1);

  /* A periodic timer still armed when the reactor goes is released too. */
  timer_state left = {0};
  CHECK_OK(zb_reactor_every(r, 1000 * 1000, on_never, &left, count_free, NULL));
  CHECK_OK(zb_reactor_destroy(r));
  CHECK(left.freed == 1 && left.fired == 0);
}

/* ---- run_for, stop, post ----------------------------------------------------
 */

typedef struct {
  zb_reactor_t* r;
  int posted;
  int freed;
  int wrong_thread_rc;
  int done;
} post_state;

static void on_posted(void* user) {
  post_state* p = (post_state*)user;
  p->posted++;
}

static void free_posted(void* user) { ((post_state*)user)->freed++; }

static void* poster(void* arg) {
  post_state* p = (post_state*)arg;
  /* Owner-only calls from this thread fail cleanly instead of aborting. */
  zb_timer_id id;
  p->wrong_thread_rc = zb_reactor_after(p->r, 1, on_posted, p, NULL, &id);
  for (int i = 0; i < 100; ++i) {
    if (zb_reactor_post(p->r, on_posted, p, free_posted) != ZB_OK) return NULL;
  }
  zb_reactor_stop(p->r);
  return NULL;
}

static void stop_from_callback(void* user) {
  zb_reactor_stop((zb_reactor_t*)user);
}

static void try_destroy_inside(void* user) {
  post_state* p = (post_state*)user;
  p->wrong_thread_rc = zb_reactor_destroy(p->r);
  p->done = 1;
}

static void test_run_post_stop(void) {
  zb_reactor_t* r;
  CHECK_OK(zb_reactor_new(&r));

  /* run_for returns on time-out with stopped == 0 ... */
  int stopped = -1;
  const int64_t t0 = zb_now_us();
  CHECK_OK(zb_reactor_run_for(r, 20 * 1000, &stopped));
  CHECK(stopped == 0);
  CHECK(zb_now_us() - t0 >= 19 * 1000);

  /* ... and on a stop from a callback with stopped == 1. */
  CHECK_OK(zb_reactor_after(r, 1000, stop_from_callback, r, NULL, NULL));
  CHECK_OK(zb_reactor_run_for(r, 10 * 1000 * 1000, &stopped));
  CHECK(stopped == 1);

  /* A stop before run makes run return at once. */
  CHECK_OK(zb_reactor_stop(r));
  CHECK_OK(zb_reactor_run(r));

  /* Posts from another thread run on this one, in order; stop from there. */
  post_state p = {0};
  p.r = r;
  pthread_t th;
  CHECK(pthread_create(&th, NULL, poster, &p) == 0);
  CHECK_OK(zb_reactor_run(r));
  CHECK(pthread_join(th, NULL) == 0);
  /* run() may have returned before the last posts ran; drain them. */
  for (int i = 0; i < 100 && p.posted < 100; ++i) {
    CHECK_OK(zb_reactor_run_once(r, 10 * 1000, NULL));
  }
  CHECK(p.posted == 100);
  CHECK(p.freed == 100);
  CHECK(p.wrong_thread_rc == ZB_ERR_WRONG_THREAD);

  /* Destroying or re-running the reactor from a callback is refused. */
  post_state q = {0};
  q.r = r;
  CHECK_OK(zb_reactor_post(r, try_destroy_inside, &q, NULL));
  CHECK(run_until(r, &q.done, 5.0));
  CHECK(q.wrong_thread_rc == ZB_ERR_STATE);

  /* Tasks that never ran are released when the reactor goes. */
  post_state late = {0};
  CHECK_OK(zb_reactor_post(r, on_posted, &late, free_posted));
  CHECK_OK(zb_reactor_destroy(r));
  CHECK(late.posted == 0 && late.freed == 1);
}

/* ---- Sockets
 * ----------------------------------------------------------------- */

typedef struct {
  zb_socket_t* sock;
  int received;
  int limit;
  size_t last_frames;
  char last[64];
  int freed;
  int done;
} ping_state;

static void free_ping(void* user) { ((ping_state*)user)->freed++; }

/* Echoes every message back with its counter incremented in frame 1. */
static void pong(void* user, size_t count, const void* const* data,
                 const size_t* sizes) {
  ping_state* st = (ping_state*)user;
  st->received++;
  st->last_frames = count;
  CHECK(count == 2 && sizes[0] == 4 && memcmp(data[0], "ping", 4) == 0);
  int n = 0;
  memcpy(&n, data[1], sizeof n);
  ++n;
  if (n >= st->limit) {
    st->done = 1;
    return;
  }
  const void* out[2] = {"ping", &n};
  const size_t out_sizes[2] = {4, sizeof n};
  CHECK_OK(zb_socket_send(st->sock, 2, out, out_sizes));
}

static void test_pair_ping_pong(void) {
  zb_reactor_t* r;
  CHECK_OK(zb_reactor_new(&r));
  zb_socket_t *a, *b;
  CHECK_OK(zb_socket_new(r, ZB_PAIR, &a));
  CHECK_OK(zb_socket_new(r, ZB_PAIR, &b));
  CHECK_OK(zb_socket_bind(a, "inproc://zb_c_test_pair"));
  CHECK_OK(zb_socket_connect(b, "inproc://zb_c_test_pair"));
  ping_state sa = {0}, sb = {0};
  sa.sock = a;
  sb.sock = b;
  sa.limit = sb.limit = 1000;
  CHECK_OK(zb_socket_on_readable(a, pong, &sa, free_ping));
  CHECK_OK(zb_socket_on_readable(b, pong, &sb, free_ping));
  int n = 0;
  const void* out[2] = {"ping", &n};
  const size_t sizes[2] = {4, sizeof n};
  CHECK_OK(zb_socket_send(a, 2, out, sizes));
  int either = 0;
  const int64_t deadline = zb_now_us() + 10 * 1000 * 1000;
  while (!either && zb_now_us() < deadline) {
    CHECK_OK(zb_reactor_run_once(r, 50 * 1000, NULL));
    either = sa.done || sb.done;
  }
  CHECK(either);
  CHECK(sa.received + sb.received == 1000);
  CHECK(sa.received == 500 && sb.received == 500);

  /* Replacing a callback releases the old one; NULL stops watching. */
  CHECK_OK(zb_socket_on_readable(a, NULL, NULL, NULL));
  CHECK(sa.freed == 1);
  CHECK_OK(zb_socket_close(a));
  CHECK_OK(zb_reactor_destroy(r)); /* closes b and releases its callback */
  CHECK(sb.freed == 1);
}

typedef struct {
  zb_socket_t* router;
  zb_socket_t* dealer;
  int replies;
  int closed_inside;
  int done;
} rd_state;

/* ROUTER: answers [identity, "", body] with [identity, "", body + "!"]. */
static void router_echo(void* user, size_t count, const void* const* data,
                        const size_t* sizes) {
  rd_state* st = (rd_state*)user;
  CHECK(count == 3 && sizes[1] == 0);
  char body[64];
  CHECK(sizes[2] + 1 < sizeof body);
  memcpy(body, data[2], sizes[2]);
  body[sizes[2]] = '!';
  const void* out[3] = {data[0], "", body};
  const size_t out_sizes[3] = {sizes[0], 0, sizes[2] + 1};
  CHECK_OK(zb_socket_send(st->router, 3, out, out_sizes));
}

static void dealer_reply(void* user, size_t count, const void* const* data,
                         const size_t* sizes) {
  rd_state* st = (rd_state*)user;
  CHECK(count == 2 && sizes[0] == 0);
  CHECK(sizes[1] == 6 && memcmp(data[1], "hello!", 6) == 0);
  st->replies++;
  /* Closing a socket from inside its own callback is allowed. */
  CHECK_OK(zb_socket_close(st->dealer));
  st->closed_inside = 1;
  st->done = 1;
}

static void test_dealer_router(void) {
  zb_reactor_t* r;
  CHECK_OK(zb_reactor_new(&r));
  rd_state st = {0};
  CHECK_OK(zb_socket_new_named(r, "ROUTER", &st.router));
  CHECK_OK(zb_socket_set_int(st.router, ZB_OPT_ROUTER_MANDATORY, 1));
  CHECK_OK(zb_socket_bind(st.router, "tcp://127.0.0.1:*"));
  char endpoint[256];
  CHECK_OK(zb_socket_last_endpoint(st.router, endpoint, sizeof endpoint));
  CHECK(strncmp(endpoint, "tcp://127.0.0.1:", 16) == 0);
  CHECK(strchr(endpoint, '*') == NULL);

  /* An unknown peer with ROUTER_MANDATORY is an error, not a silent drop. */
  const void* bad[3] = {"nobody", "", "x"};
  const size_t bad_sizes[3] = {6, 0, 1};
  CHECK(zb_socket_send(st.router, 3, bad, bad_sizes) == ZB_ERR_UNREACHABLE);

  CHECK_OK(zb_socket_new_named(r, "Dealer", &st.dealer));
  CHECK_OK(zb_socket_connect(st.dealer, endpoint));
  CHECK_OK(zb_socket_on_readable(st.router, router_echo, &st, NULL));
  CHECK_OK(zb_socket_on_readable(st.dealer, dealer_reply, &st, NULL));
  const void* req[2] = {"", "hello"};
  const size_t req_sizes[2] = {0, 5};
  CHECK_OK(zb_socket_send(st.dealer, 2, req, req_sizes));
  CHECK(run_until(r, &st.done, 10.0));
  CHECK(st.replies == 1 && st.closed_inside);
  CHECK_OK(zb_reactor_destroy(r));
}

/* ---- Consensus
 * --------------------------------------------------------------- */

typedef struct {
  int calls;
  int result;
  int failed_by;
  char reason[64];
  int attempts;
  size_t count;
  char frames[4][64];
  int freed;
} reply_state;

static void on_reply(void* user, int result, int failed_by, const char* reason,
                     int attempts, size_t count, const void* const* data,
                     const size_t* sizes) {
  reply_state* st = (reply_state*)user;
  st->calls++;
  st->result = result;
  st->failed_by = failed_by;
  snprintf(st->reason, sizeof st->reason, "%s", reason);
  st->attempts = attempts;
  st->count = count;
  for (size_t i = 0; i < count && i < 4; ++i) {
    const size_t n = sizes[i] < 63 ? sizes[i] : 63;
    memcpy(st->frames[i], data[i], n);
    st->frames[i][n] = '\0';
  }
}

static void free_reply(void* user) { ((reply_state*)user)->freed++; }

/* Worker "echo-a": answers at once with "a:" + payload. */
static void handle_now(void* user, zb_responder_t* responder, size_t count,
                       const void* const* data, const size_t* sizes) {
  (void)user;
  CHECK(count == 1);
  char out[64];
  const int n =
      snprintf(out, sizeof out, "a:%.*s", (int)sizes[0], (const char*)data[0]);
  const void* frames[1] = {out};
  const size_t out_sizes[1] = {(size_t)n};
  CHECK_OK(zb_responder_succeed(responder, 1, frames, out_sizes));
}

/* Worker "echo-b": answers from another thread, later. */
typedef struct {
  zb_responder_t* responder;
  char payload[64];
} later_job;

static void* answer_later(void* arg) {
  later_job* job = (later_job*)arg;
  char out[80];
  const int n = snprintf(out, sizeof out, "b:%s", job->payload);
  const void* frames[1] = {out};
  const size_t sizes[1] = {(size_t)n};
  zb_responder_succeed(job->responder, 1, frames, sizes);
  free(job);
  return NULL;
}

static void handle_later(void* user, zb_responder_t* responder, size_t count,
                         const void* const* data, const size_t* sizes) {
  (void)user;
  CHECK(count == 1 && sizes[0] < 64);
  later_job* job = (later_job*)calloc(1, sizeof *job);
  CHECK(job != NULL);
  job->responder = responder;
  memcpy(job->payload, data[0], sizes[0]);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, answer_later, job) == 0);
  CHECK(pthread_detach(th) == 0);
}

static void handle_fail(void* user, zb_responder_t* responder, size_t count,
                        const void* const* data, const size_t* sizes) {
  (void)user;
  (void)count;
  (void)data;
  (void)sizes;
  const void* frames[2] = {"bad input", "details"};
  const size_t out_sizes[2] = {9, 7};
  CHECK_OK(zb_responder_fail(responder, 2, frames, out_sizes));
}

/* Keeps the token without answering (so the client times out). */
static zb_responder_t* g_kept[8];
static int g_n_kept = 0;
static void handle_never(void* user, zb_responder_t* responder, size_t count,
                         const void* const* data, const size_t* sizes) {
  (void)user;
  (void)count;
  (void)data;
  (void)sizes;
  CHECK(g_n_kept < 8);
  g_kept[g_n_kept++] = responder;
}

typedef struct {
  int calls;
  int code;
} ping_result;

static void on_ping(void* user, int code, const char* message) {
  (void)message;
  ping_result* p = (ping_result*)user;
  p->calls++;
  p->code = code;
}

static size_t worker_count(zb_consensus_broker_t* b, const char* service) {
  size_t n = 0;
  CHECK_OK(zb_consensus_broker_worker_count(b, service, strlen(service), &n));
  return n;
}

typedef struct {
  zb_consensus_client_t* client;
  int calls;
} destroy_inside_state;

static void destroy_in_reply(void* user, int result, int failed_by,
                             const char* reason, int attempts, size_t count,
                             const void* const* data, const size_t* sizes) {
  (void)result, (void)failed_by, (void)reason, (void)attempts, (void)count,
      (void)data, (void)sizes;
  destroy_inside_state* st = (destroy_inside_state*)user;
  st->calls++;
  CHECK_OK(zb_consensus_client_destroy(st->client));
}

/* Makes a client on `endpoint` whose reply callback (for a service nobody
 * serves) destroys it, and runs `r` until that callback ran. */
static void run_self_destroying_client(zb_reactor_t* r, const char* endpoint,
                                       destroy_inside_state* ds) {
  const void* d[1] = {"x"};
  const size_t z[1] = {1};
  CHECK_OK(zb_consensus_client_new(r, endpoint, &ds->client));
  CHECK_OK(zb_consensus_client_request(ds->client, "nobody", 6, 1, d, z,
                                       5 * 1000 * 1000, 0, destroy_in_reply, ds,
                                       NULL));
  CHECK(run_until(r, &ds->calls, 10.0));
}

static int request(zb_reactor_t* r, zb_consensus_client_t* c,
                   const char* service, const char* payload, int64_t timeout_us,
                   int retries, reply_state* st) {
  memset(st, 0, sizeof *st);
  const void* data[1] = {payload};
  const size_t sizes[1] = {strlen(payload)};
  CHECK_OK(zb_consensus_client_request(c, service, strlen(service), 1, data,
                                       sizes, timeout_us, retries, on_reply, st,
                                       free_reply));
  return run_until(r, &st->calls, 10.0);
}

static void test_consensus(void) {
  zb_reactor_t* r;
  CHECK_OK(zb_reactor_new(&r));

  zb_consensus_broker_t* broker;
  CHECK_OK(zb_consensus_broker_new(r, 0, &broker));
  char endpoint[256];
  CHECK_OK(zb_consensus_broker_bind(broker, "tcp://127.0.0.1:*", endpoint,
                                    sizeof endpoint));
  CHECK(strncmp(endpoint, "tcp://127.0.0.1:", 16) == 0);
  CHECK(zb_consensus_broker_bind(broker, "tcp://256.0.0.1:1", NULL, 0) ==
        ZB_ERR_ZMQ);

  /* Bad endpoints fail at creation with the endpoint in the message. */
  zb_consensus_client_t* bad_client = NULL;
  CHECK(zb_consensus_client_new(r, "nonsense", &bad_client) == ZB_ERR_ZMQ);
  CHECK(strstr(zb_last_error(), "nonsense") != NULL);
  CHECK(bad_client == NULL);
  zb_consensus_worker_t* bad_worker = NULL;
  CHECK(zb_consensus_worker_new(r, "nonsense", "x", 1, 0, 0, handle_now, NULL,
                                NULL, &bad_worker) == ZB_ERR_ZMQ);

  zb_consensus_worker_t *wa, *wb, *wf, *wn;
  const int64_t hb = 200 * 1000;
  CHECK_OK(zb_consensus_worker_new(r, endpoint, "echo", 4, hb, 3, handle_now,
                                   NULL, NULL, &wa));
  CHECK_OK(zb_consensus_worker_new(r, endpoint, "echo", 4, hb, 3, handle_later,
                                   NULL, NULL, &wb));
  CHECK_OK(zb_consensus_worker_new(r, endpoint, "fail", 4, hb, 3, handle_fail,
                                   NULL, NULL, &wf));
  CHECK_OK(zb_consensus_worker_new(r, endpoint, "never", 5, hb, 3, handle_never,
                                   NULL, NULL, &wn));
  const int64_t deadline = zb_now_us() + 10 * 1000 * 1000;
  while ((worker_count(broker, "echo") < 2 ||
          worker_count(broker, "fail") < 1 ||
          worker_count(broker, "never") < 1) &&
         zb_now_us() < deadline) {
    CHECK_OK(zb_reactor_run_once(r, 20 * 1000, NULL));
  }
  CHECK(worker_count(broker, "echo") == 2);

  zb_consensus_client_t* c;
  CHECK_OK(zb_consensus_client_new(r, endpoint, &c));

  ping_result ping = {0, 1};
  CHECK_OK(zb_consensus_client_ping(c, 5 * 1000 * 1000, on_ping, &ping, NULL));
  CHECK(run_until(r, &ping.calls, 10.0));
  CHECK(ping.code == ZB_OK);

  /* Round trips: both workers answer, one of them from another thread. */
  reply_state st;
  for (int i = 0; i < 20; ++i) {
    char payload[32];
    snprintf(payload, sizeof payload, "hello %d", i);
    CHECK(request(r, c, "echo", payload, 5 * 1000 * 1000, 0, &st));
    CHECK(st.result == ZB_RESULT_SUCCESS && st.failed_by == ZB_FAILED_BY_NONE);
    CHECK(st.reason[0] == '\0' && st.attempts == 1);
    CHECK(st.count == 2);
    char want_a[48], want_b[48];
    snprintf(want_a, sizeof want_a, "a:%s", payload);
    snprintf(want_b, sizeof want_b, "b:%s", payload);
    CHECK((strcmp(st.frames[0], want_a) == 0 &&
           strcmp(st.frames[1], want_b) == 0) ||
          (strcmp(st.frames[0], want_b) == 0 &&
           strcmp(st.frames[1], want_a) == 0));
    CHECK(st.freed == 1);
  }

  /* A worker's failure: its payload as sent, its first frame as reason. */
  CHECK(request(r, c, "fail", "x", 5 * 1000 * 1000, 0, &st));
  CHECK(st.result == ZB_RESULT_FAILURE && st.failed_by == ZB_FAILED_BY_WORKER);
  CHECK(strcmp(st.reason, "bad input") == 0);
  CHECK(st.count == 2 && strcmp(st.frames[1], "details") == 0);

  /* The broker's failure: no workers for the service. */
  CHECK(request(r, c, "nobody", "x", 5 * 1000 * 1000, 0, &st));
  CHECK(st.result == ZB_RESULT_FAILURE && st.failed_by == ZB_FAILED_BY_BROKER);
  CHECK(strcmp(st.reason, "zb:no-workers") == 0);
  CHECK(st.count == 2 && strcmp(st.frames[0], "zb:no-workers") == 0);

  /* A timeout after one retry: two attempts. */
  CHECK(request(r, c, "never", "x", 50 * 1000, 1, &st));
  CHECK(st.result == ZB_RESULT_TIMEOUT && st.attempts == 2);
  CHECK(strcmp(st.reason, "timeout") == 0 && st.count == 0);

  /* Bad arguments. */
  const void* d[1] = {"x"};
  const size_t z[1] = {1};
  CHECK(zb_consensus_client_request(c, "echo", 4, 1, d, z, 0, 0, on_reply, &st,
                                    NULL) == ZB_ERR_INVALID);
  CHECK(zb_consensus_client_request(c, "echo", 4, 1, NULL, NULL, 1000, 0,
                                    on_reply, &st, NULL) == ZB_ERR_INVALID);

  /* Destroying a client ends its open requests with "client closed". */
  reply_state open_st = {0};
  CHECK_OK(zb_consensus_client_request(c, "never", 5, 1, d, z, 5 * 1000 * 1000,
                                       0, on_reply, &open_st, free_reply));
  size_t open = 0;
  CHECK_OK(zb_consensus_client_open_requests(c, &open));
  CHECK(open == 1);
  CHECK_OK(zb_consensus_client_destroy(c));
  CHECK(open_st.calls == 1 && open_st.freed == 1);
  CHECK(open_st.result == ZB_RESULT_FAILURE &&
        open_st.failed_by == ZB_FAILED_BY_CLIENT);
  CHECK(strcmp(open_st.reason, "zb:client-closed") == 0);

  /* Issue 10.8: an immediate failure (here an empty service name) belongs to
   * the client, which delivers it before its destruction returns.  It used to
   * be posted to the reactor with the client's handle inside, so the next
   * run_once called back through a freed client (heap-use-after-free under
   * ASan). */
  {
    zb_consensus_client_t* doomed;
    CHECK_OK(zb_consensus_client_new(r, endpoint, &doomed));
    reply_state immediate = {0};
    CHECK_OK(zb_consensus_client_request(doomed, "", 0, 1, d, z,
                                         5 * 1000 * 1000, 0, on_reply,
                                         &immediate, free_reply));
    CHECK(immediate.calls == 0); /* never inside the request call */
    CHECK_OK(zb_consensus_client_destroy(doomed));
    CHECK(immediate.calls == 1 && immediate.freed == 1);
    CHECK(immediate.result == ZB_RESULT_FAILURE &&
          immediate.failed_by == ZB_FAILED_BY_CLIENT);
    CHECK(strcmp(immediate.reason, "zb:invalid-request") == 0);
    CHECK_OK(zb_reactor_run_once(r, 10 * 1000, NULL));
    CHECK(immediate.calls == 1 && immediate.freed == 1);
  }

  /* Issue 10.3: with ZB_REQUEST_RETRY_NO_WORKERS a request sent before any
   * worker registered is resent until one has, within its timeout. */
  {
    zb_consensus_client_t* c2;
    CHECK_OK(zb_consensus_client_new(r, endpoint, &c2));
    reply_state late = {0};
    CHECK_OK(zb_consensus_client_request_flags(
        c2, "late", 4, 1, d, z, 5 * 1000 * 1000, 0, ZB_REQUEST_RETRY_NO_WORKERS,
        on_reply, &late, free_reply));
    CHECK(zb_consensus_client_request_flags(c2, "late", 4, 1, d, z, 1000, 0,
                                            0x100, on_reply, &late,
                                            free_reply) == ZB_ERR_INVALID);
    /* Let the broker answer "zb:no-workers" (there is no worker yet) and
     * the client resend a few times. */
    const int64_t until = zb_now_us() + 150 * 1000;
    while (zb_now_us() < until) {
      CHECK_OK(zb_reactor_run_once(r, 10 * 1000, NULL));
    }
    CHECK(late.calls == 0);
    zb_consensus_worker_t* lw;
    CHECK_OK(zb_consensus_worker_new(r, endpoint, "late", 4, 0, 0, handle_now,
                                     NULL, NULL, &lw));
    CHECK(run_until(r, &late.calls, 10.0));
    CHECK(late.result == ZB_RESULT_SUCCESS);
    CHECK(late.attempts >= 2);
    CHECK(late.freed == 1);
    CHECK_OK(zb_consensus_worker_destroy(lw));
    CHECK_OK(zb_consensus_client_destroy(c2));
  }

  /* A client destroyed from inside its own callback. */
  destroy_inside_state ds = {0};
  run_self_destroying_client(r, endpoint, &ds);
  CHECK_OK(zb_reactor_run_once(r, 10 * 1000, NULL)); /* finishes it */

  /* Tokens kept past their requests are safe to answer late. */
  for (int i = 0; i < g_n_kept; ++i) {
    if (i % 2 == 0) {
      CHECK_OK(zb_responder_succeed(g_kept[i], 1, d, z));
    } else {
      CHECK_OK(zb_responder_discard(g_kept[i]));
    }
  }
  CHECK(g_n_kept >= 2); /* both attempts of the timed-out request */
  CHECK_OK(zb_reactor_run_once(r, 10 * 1000, NULL));

  CHECK_OK(zb_consensus_worker_destroy(wf));
  (void)wa, (void)wb, (void)wn; /* the reactor destroys the rest */
  CHECK_OK(zb_consensus_broker_destroy(broker));
  CHECK_OK(zb_reactor_destroy(r));
}

/* ---- Majordomo
 * ----------------------------------------------------------------- */

typedef struct {
  int calls;
  int code;
  size_t count;
  char frames[4][64];
  int freed;
} mdp_reply_state;

static void on_mdp_reply(void* user, int code, const char* message,
                         size_t count, const void* const* data,
                         const size_t* sizes) {
  (void)message;
  mdp_reply_state* st = (mdp_reply_state*)user;
  st->calls++;
  st->code = code;
  st->count = count;
  for (size_t i = 0; i < count && i < 4; ++i) {
    const size_t n = sizes[i] < 63 ? sizes[i] : 63;
    memcpy(st->frames[i], data[i], n);
    st->frames[i][n] = '\0';
  }
}

static void free_mdp_reply(void* user) { ((mdp_reply_state*)user)->freed++; }

typedef struct {
  zb_mdp_replier_t* replier;
  char body[64];
} mdp_job;

static void* mdp_reply_later(void* arg) {
  mdp_job* job = (mdp_job*)arg;
  char out[80];
  const int n = snprintf(out, sizeof out, "echo:%s", job->body);
  const void* frames[1] = {out};
  const size_t sizes[1] = {(size_t)n};
  zb_mdp_reply(job->replier, 1, frames, sizes);
  free(job);
  return NULL;
}

/* Answers every other request from another thread. */
static void mdp_echo(void* user, zb_mdp_replier_t* replier, size_t count,
                     const void* const* data, const size_t* sizes) {
  int* n = (int*)user;
  CHECK(count == 1 && sizes[0] < 64);
  if ((*n)++ % 2 == 0) {
    char out[80];
    const int len = snprintf(out, sizeof out, "echo:%.*s", (int)sizes[0],
                             (const char*)data[0]);
    const void* frames[1] = {out};
    const size_t out_sizes[1] = {(size_t)len};
    CHECK_OK(zb_mdp_reply(replier, 1, frames, out_sizes));
    return;
  }
  mdp_job* job = (mdp_job*)calloc(1, sizeof *job);
  CHECK(job != NULL);
  job->replier = replier;
  memcpy(job->body, data[0], sizes[0]);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, mdp_reply_later, job) == 0);
  CHECK(pthread_detach(th) == 0);
}

static int mdp_request(zb_reactor_t* r, zb_mdp_client_t* c, const char* service,
                       const char* body, int64_t timeout_us,
                       mdp_reply_state* st) {
  memset(st, 0, sizeof *st);
  const void* data[1] = {body};
  const size_t sizes[1] = {strlen(body)};
  CHECK_OK(zb_mdp_client_request(c, service, strlen(service), 1, data, sizes,
                                 timeout_us, on_mdp_reply, st, free_mdp_reply));
  return run_until(r, &st->calls, 10.0);
}

static void test_majordomo(void) {
  zb_reactor_t* r;
  CHECK_OK(zb_reactor_new(&r));
  const int64_t hb = 200 * 1000;
  zb_mdp_broker_t* broker;
  CHECK_OK(zb_mdp_broker_new(r, hb, 3, &broker));
  char endpoint[256];
  CHECK_OK(zb_mdp_broker_bind(broker, "tcp://127.0.0.1:*", endpoint,
                              sizeof endpoint));
  CHECK(zb_mdp_broker_bind(broker, "bogus", NULL, 0) == ZB_ERR_ZMQ);

  zb_mdp_client_t* bad = NULL;
  CHECK(zb_mdp_client_new(r, "nonsense", 0, 0, &bad) == ZB_ERR_ZMQ);
  CHECK(strstr(zb_last_error(), "nonsense") != NULL);

  int handled = 0;
  zb_mdp_worker_t* w;
  CHECK_OK(zb_mdp_worker_new(r, endpoint, "echo", 4, hb, 3, 50 * 1000, mdp_echo,
                             &handled, NULL, &w));
  const int64_t deadline = zb_now_us() + 10 * 1000 * 1000;
  size_t workers = 0;
  while (workers == 0 && zb_now_us() < deadline) {
    CHECK_OK(zb_reactor_run_once(r, 20 * 1000, NULL));
    CHECK_OK(zb_mdp_broker_worker_count(broker, "echo", 4, &workers));
  }
  CHECK(workers == 1);

  zb_mdp_client_t* c;
  CHECK_OK(zb_mdp_client_new(r, endpoint, 5 * 1000 * 1000, 0, &c));
  mdp_reply_state st;
  for (int i = 0; i < 20; ++i) {
    char body[32];
    snprintf(body, sizeof body, "req %d", i);
    CHECK(mdp_request(r, c, "echo", body, 0, &st));
    CHECK(st.code == ZB_OK && st.count == 1 && st.freed == 1);
    char want[48];
    snprintf(want, sizeof want, "echo:%s", body);
    CHECK(strcmp(st.frames[0], want) == 0);
  }
  CHECK(handled == 20);

  /* MMI: the broker itself answers whether a service exists. */
  CHECK(mdp_request(r, c, "mmi.service", "echo", 0, &st));
  CHECK(st.code == ZB_OK && strcmp(st.frames[0], "200") == 0);
  CHECK(mdp_request(r, c, "mmi.service", "nope", 0, &st));
  CHECK(st.code == ZB_OK && strcmp(st.frames[0], "404") == 0);

  /* No worker: the request waits in the broker; the client times out. */
  CHECK(mdp_request(r, c, "nobody", "x", 50 * 1000, &st));
  CHECK(st.code == ZB_ERR_TIMEOUT && st.count == 0 && st.freed == 1);

  /* Destroying the client cancels what is outstanding. */
  mdp_reply_state open_st = {0};
  const void* d[1] = {"x"};
  const size_t z[1] = {1};
  CHECK_OK(zb_mdp_client_request(c, "nobody", 6, 1, d, z, 0, on_mdp_reply,
                                 &open_st, free_mdp_reply));
  size_t outstanding = 0;
  CHECK_OK(zb_mdp_client_outstanding(c, &outstanding));
  CHECK(outstanding == 1);
  CHECK_OK(zb_mdp_client_destroy(c));
  CHECK(open_st.calls == 1 && open_st.code == ZB_ERR_CANCELLED);
  CHECK(open_st.freed == 1);

  CHECK_OK(zb_mdp_worker_destroy(w));
  CHECK_OK(zb_reactor_destroy(r)); /* and the broker with it */
}

/* Discards the token the first time it sees the body "drop" (on the reactor
 * thread) and "drop-elsewhere" (on another thread); echoes everything else,
 * and those bodies when they come again. */
static void* discard_later(void* arg) {
  CHECK_OK(zb_mdp_replier_discard((zb_mdp_replier_t*)arg));
  return NULL;
}

static void mdp_dropper(void* user, zb_mdp_replier_t* replier, size_t count,
                        const void* const* data, const size_t* sizes) {
  int* dropped = (int*)user;
  CHECK(count == 1);
  const int elsewhere = sizes[0] > 4;
  if (sizes[0] >= 4 && memcmp(data[0], "drop", 4) == 0 &&
      *dropped == elsewhere) {
    (*dropped)++;
    if (elsewhere) {
      pthread_t th;
      CHECK(pthread_create(&th, NULL, discard_later, replier) == 0);
      CHECK(pthread_join(th, NULL) == 0);
    } else {
      CHECK_OK(zb_mdp_replier_discard(replier));
    }
    return;
  }
  CHECK_OK(zb_mdp_reply(replier, count, data, sizes));
}

/* Issue 10 item 6: a discarded token gives the request back.  The worker
 * sends DISCONNECT and reconnects; the broker redispatches the request, the
 * (reconnected) worker answers it the second time, and the client gets its
 * reply.  Before the fix the worker stayed registered but never got work
 * again, and the client timed out. */
static void test_majordomo_discard_gives_back(void) {
  zb_reactor_t* r;
  CHECK_OK(zb_reactor_new(&r));
  const int64_t hb = 200 * 1000;
  zb_mdp_broker_t* broker;
  CHECK_OK(zb_mdp_broker_new(r, hb, 3, &broker));
  char endpoint[256];
  CHECK_OK(zb_mdp_broker_bind(broker, "tcp://127.0.0.1:*", endpoint,
                              sizeof endpoint));
  int dropped = 0;
  zb_mdp_worker_t* w;
  CHECK_OK(zb_mdp_worker_new(r, endpoint, "drops", 5, hb, 3, 20 * 1000,
                             mdp_dropper, &dropped, NULL, &w));
  zb_mdp_client_t* c;
  CHECK_OK(zb_mdp_client_new(r, endpoint, 5 * 1000 * 1000, 0, &c));
  mdp_reply_state st;
  CHECK(mdp_request(r, c, "drops", "drop", 0, &st));
  CHECK(dropped == 1);
  CHECK(st.code == ZB_OK && st.count == 1 && strcmp(st.frames[0], "drop") == 0);
  CHECK(mdp_request(r, c, "drops", "drop-elsewhere", 0, &st));
  CHECK(dropped == 2);
  CHECK(st.code == ZB_OK && strcmp(st.frames[0], "drop-elsewhere") == 0);
  CHECK_OK(zb_mdp_client_destroy(c));
  CHECK_OK(zb_mdp_worker_destroy(w));
  CHECK_OK(zb_reactor_destroy(r));
}

/* ---- Destroying a handle from inside its own callback -----------------------
 * The destroy is deferred until nothing of the handle is on the stack: the
 * handle is closed to callers at once (another call on it is ZB_ERR_STATE)
 * and freed, its user released, on a later iteration or with its reactor.
 * Run under ASan, this is where a use-after-free would show. */

typedef struct {
  zb_consensus_worker_t* cw;
  zb_mdp_worker_t* mw;
  zb_mdp_client_t* mc;
  int calls;
  int freed;    /* the worker's user, or the request's */
  int again_rc; /* a second destroy from the same callback */
} inside_state;

static void free_inside(void* user) { ((inside_state*)user)->freed++; }

static void consensus_worker_destroys_itself(void* user,
                                             zb_responder_t* responder,
                                             size_t count,
                                             const void* const* data,
                                             const size_t* sizes) {
  inside_state* st = (inside_state*)user;
  st->calls++;
  CHECK_OK(zb_responder_succeed(responder, count, data, sizes));
  CHECK_OK(zb_consensus_worker_destroy(st->cw));
  st->again_rc = zb_consensus_worker_destroy(st->cw);
  CHECK(st->freed == 0); /* not while its handler runs */
}

static void mdp_worker_destroys_itself(void* user, zb_mdp_replier_t* replier,
                                       size_t count, const void* const* data,
                                       const size_t* sizes) {
  inside_state* st = (inside_state*)user;
  st->calls++;
  CHECK_OK(zb_mdp_reply(replier, count, data, sizes));
  CHECK_OK(zb_mdp_worker_destroy(st->mw));
  st->again_rc = zb_mdp_worker_destroy(st->mw);
  CHECK(st->freed == 0);
}

static void mdp_client_destroys_itself(void* user, int code,
                                       const char* message, size_t count,
                                       const void* const* data,
                                       const size_t* sizes) {
  (void)code, (void)message, (void)count, (void)data, (void)sizes;
  inside_state* st = (inside_state*)user;
  st->calls++;
  CHECK_OK(zb_mdp_client_destroy(st->mc));
  st->again_rc = zb_mdp_client_destroy(st->mc);
  size_t n = 0;
  CHECK(zb_mdp_client_outstanding(st->mc, &n) == ZB_ERR_STATE);
  CHECK(st->freed == 0); /* the request's user goes after its callback */
}

static void wait_for_worker(zb_reactor_t* r, zb_consensus_broker_t* b,
                            const char* service) {
  const int64_t deadline = zb_now_us() + 10 * 1000 * 1000;
  while (worker_count(b, service) == 0 && zb_now_us() < deadline) {
    CHECK_OK(zb_reactor_run_once(r, 10 * 1000, NULL));
  }
  CHECK(worker_count(b, service) == 1);
}

typedef struct {
  zb_consensus_broker_t* cb;
  zb_mdp_broker_t* mb;
  int lines;
  int destroy_rc;
  int again_rc; /* a second destroy from the same callback */
  int freed;    /* the log sink's user */
} broker_log_state;

static void free_broker_log(void* user) { ((broker_log_state*)user)->freed++; }

/* Destroys its broker at the first line (a worker joining). */
static void broker_log_destroys(void* user, int level, const char* line) {
  (void)level, (void)line;
  broker_log_state* st = (broker_log_state*)user;
  if (st->lines++ > 0) return;
  if (st->cb != NULL) {
    st->destroy_rc = zb_consensus_broker_destroy(st->cb);
    st->again_rc = zb_consensus_broker_destroy(st->cb);
  } else {
    st->destroy_rc = zb_mdp_broker_destroy(st->mb);
    st->again_rc = zb_mdp_broker_destroy(st->mb);
  }
  CHECK(st->freed == 0); /* not while its own callback runs */
}

/* Keeps the reply token it gets (one request at a time). */
static void keep_responder(void* user, zb_responder_t* responder, size_t count,
                           const void* const* data, const size_t* sizes) {
  (void)count, (void)data, (void)sizes;
  *(zb_responder_t**)user = responder;
}

static void keep_mdp_replier(void* user, zb_mdp_replier_t* replier,
                             size_t count, const void* const* data,
                             const size_t* sizes) {
  (void)count, (void)data, (void)sizes;
  *(zb_mdp_replier_t**)user = replier;
}

typedef struct {
  zb_responder_t* responders[2];
  zb_mdp_replier_t* repliers[2];
} late_tokens;

/* Consumes every kind of token the way a late application thread would. */
static void* consume_late(void* arg) {
  late_tokens* t = (late_tokens*)arg;
  const void* d[1] = {"late"};
  const size_t z[1] = {4};
  CHECK_OK(zb_responder_succeed(t->responders[0], 1, d, z));
  CHECK_OK(zb_responder_discard(t->responders[1]));
  CHECK_OK(zb_mdp_reply(t->repliers[0], 1, d, z));
  CHECK_OK(zb_mdp_replier_discard(t->repliers[1]));
  return NULL;
}

/* Reply tokens outlive their workers and their reactor: consumed on another
 * thread after zb_reactor_destroy(), each answer is dropped (through the
 * worker's zb::ReplyChannel, closed when the worker was destroyed) and
 * nothing freed is touched (run under ASan). */
static void test_tokens_outlive_the_reactor(void) {
  late_tokens t;
  memset(&t, 0, sizeof t);
  for (int i = 0; i < 2; ++i) {
    zb_reactor_t* r;
    CHECK_OK(zb_reactor_new(&r));
    zb_consensus_broker_t* cb;
    CHECK_OK(zb_consensus_broker_new(r, 5 * 1000 * 1000, &cb));
    char ccp[256];
    CHECK_OK(
        zb_consensus_broker_bind(cb, "tcp://127.0.0.1:*", ccp, sizeof ccp));
    zb_consensus_worker_t* cw;
    CHECK_OK(zb_consensus_worker_new(r, ccp, "keep", 4, 0, 0, keep_responder,
                                     &t.responders[i], NULL, &cw));
    zb_mdp_broker_t* mb;
    CHECK_OK(zb_mdp_broker_new(r, 200 * 1000, 3, &mb));
    char mdp[256];
    CHECK_OK(zb_mdp_broker_bind(mb, "tcp://127.0.0.1:*", mdp, sizeof mdp));
    zb_mdp_worker_t* mw;
    CHECK_OK(zb_mdp_worker_new(r, mdp, "keep", 4, 200 * 1000, 3, 50 * 1000,
                               keep_mdp_replier, &t.repliers[i], NULL, &mw));
    const int64_t deadline = zb_now_us() + 10 * 1000 * 1000;
    while (worker_count(cb, "keep") < 1 && zb_now_us() < deadline) {
      CHECK_OK(zb_reactor_run_once(r, 50 * 1000, NULL));
    }
    zb_consensus_client_t* cc;
    CHECK_OK(zb_consensus_client_new(r, ccp, &cc));
    zb_mdp_client_t* mc;
    CHECK_OK(zb_mdp_client_new(r, mdp, 5 * 1000 * 1000, 0, &mc));
    const void* d[1] = {"x"};
    const size_t z[1] = {1};
    reply_state cst;
    memset(&cst, 0, sizeof cst);
    CHECK_OK(zb_consensus_client_request(
        cc, "keep", 4, 1, d, z, 5 * 1000 * 1000, 0, on_reply, &cst, NULL));
    mdp_reply_state mst;
    memset(&mst, 0, sizeof mst);
    CHECK_OK(zb_mdp_client_request(mc, "keep", 4, 1, d, z, 5 * 1000 * 1000,
                                   on_mdp_reply, &mst, NULL));
    while ((t.responders[i] == NULL || t.repliers[i] == NULL) &&
           zb_now_us() < deadline) {
      CHECK_OK(zb_reactor_run_once(r, 50 * 1000, NULL));
    }
    CHECK(t.responders[i] != NULL && t.repliers[i] != NULL);
    /* Everything goes with the reactor; the clients' requests end
     * (cancelled) while the tokens are still out. */
    CHECK_OK(zb_reactor_destroy(r));
    CHECK(cst.calls == 1 && mst.calls == 1);
  }
  pthread_t th;
  CHECK(pthread_create(&th, NULL, consume_late, &t) == 0);
  CHECK(pthread_join(th, NULL) == 0);
}

static void test_destroy_inside_callbacks(void) {
  const void* d[1] = {"x"};
  const size_t z[1] = {1};

  /* Consensus: a worker destroys itself in its handler, after answering;
   * then a client destroys itself in its reply callback and the reactor is
   * destroyed before the deferred destroy ran (posts run before sockets, so
   * it is still pending when run_until returns). */
  {
    zb_reactor_t* r;
    CHECK_OK(zb_reactor_new(&r));
    zb_consensus_broker_t* b;
    CHECK_OK(zb_consensus_broker_new(r, 0, &b));
    char ep[256];
    CHECK_OK(zb_consensus_broker_bind(b, "tcp://127.0.0.1:*", ep, sizeof ep));
    inside_state st = {0};
    CHECK_OK(zb_consensus_worker_new(r, ep, "self", 4, 0, 0,
                                     consensus_worker_destroys_itself, &st,
                                     free_inside, &st.cw));
    wait_for_worker(r, b, "self");
    zb_consensus_client_t* c;
    CHECK_OK(zb_consensus_client_new(r, ep, &c));
    reply_state rs;
    CHECK(request(r, c, "self", "x", 5 * 1000 * 1000, 0, &rs));
    CHECK(st.calls == 1 && st.again_rc == ZB_ERR_STATE);
    CHECK(run_until(r, &st.freed, 5.0));
    CHECK(st.freed == 1 && st.calls == 1);
    CHECK_OK(zb_consensus_client_destroy(c));

    destroy_inside_state ds = {0};
    run_self_destroying_client(r, ep, &ds);
    CHECK(zb_consensus_client_destroy(ds.client) == ZB_ERR_STATE);
    CHECK_OK(zb_reactor_destroy(r)); /* frees the client, drops the post */
    CHECK(ds.calls == 1);
  }

  /* Majordomo: a worker destroys itself in its handler, after replying;
   * then a client destroys itself in the callback of a request that times
   * out, and the reactor is destroyed while that destroy is pending. */
  {
    zb_reactor_t* r;
    CHECK_OK(zb_reactor_new(&r));
    zb_mdp_broker_t* b;
    CHECK_OK(zb_mdp_broker_new(r, 200 * 1000, 3, &b));
    char ep[256];
    CHECK_OK(zb_mdp_broker_bind(b, "tcp://127.0.0.1:*", ep, sizeof ep));

    inside_state ws = {0};
    CHECK_OK(zb_mdp_worker_new(r, ep, "self", 4, 200 * 1000, 3, 0,
                               mdp_worker_destroys_itself, &ws, free_inside,
                               &ws.mw));
    zb_mdp_client_t* c;
    CHECK_OK(zb_mdp_client_new(r, ep, 0, 0, &c));
    mdp_reply_state rs;
    CHECK(mdp_request(r, c, "self", "x", 2 * 1000 * 1000, &rs));
    CHECK(ws.calls == 1 && ws.again_rc == ZB_ERR_STATE);
    CHECK(run_until(r, &ws.freed, 5.0));
    CHECK(ws.freed == 1 && ws.calls == 1);
    CHECK_OK(zb_mdp_client_destroy(c));

    inside_state cs = {0};
    CHECK_OK(zb_mdp_client_new(r, ep, 0, 0, &cs.mc));
    CHECK_OK(zb_mdp_client_request(cs.mc, "nobody", 6, 1, d, z, 50 * 1000,
                                   mdp_client_destroys_itself, &cs,
                                   free_inside));
    CHECK(run_until(r, &cs.calls, 10.0));
    CHECK(cs.calls == 1 && cs.again_rc == ZB_ERR_STATE && cs.freed == 1);
    CHECK_OK(zb_reactor_destroy(r)); /* frees the client, drops the post */
    CHECK(cs.calls == 1 && cs.freed == 1);
  }

  /* A broker destroyed from inside its own log callback (here at the line
   * for a worker joining), while the broker's code that logged is still on
   * the stack.  It was freed at once: heap-use-after-free under ASan when
   * that code went on. */
  for (int mdp = 0; mdp <= 1; ++mdp) {
    zb_reactor_t* r;
    CHECK_OK(zb_reactor_new(&r));
    broker_log_state st = {0};
    char ep[256];
    if (mdp) {
      CHECK_OK(zb_mdp_broker_new(r, 200 * 1000, 3, &st.mb));
      CHECK_OK(zb_mdp_broker_bind(st.mb, "tcp://127.0.0.1:*", ep, sizeof ep));
      CHECK_OK(zb_mdp_broker_set_log(st.mb, broker_log_destroys, &st,
                                     free_broker_log));
      zb_mdp_worker_t* w;
      CHECK_OK(zb_mdp_worker_new(r, ep, "svc", 3, 200 * 1000, 3, 0, mdp_echo,
                                 &st.lines, NULL, &w));
    } else {
      CHECK_OK(zb_consensus_broker_new(r, 0, &st.cb));
      CHECK_OK(
          zb_consensus_broker_bind(st.cb, "tcp://127.0.0.1:*", ep, sizeof ep));
      CHECK_OK(zb_consensus_broker_set_log(st.cb, broker_log_destroys, &st,
                                           free_broker_log));
      zb_consensus_worker_t* w;
      CHECK_OK(zb_consensus_worker_new(r, ep, "svc", 3, 0, 0, handle_now, NULL,
                                       NULL, &w));
    }
    CHECK(run_until(r, &st.freed, 10.0));
    CHECK(st.destroy_rc == ZB_OK && st.again_rc == ZB_ERR_STATE);
    CHECK(st.freed == 1);
    CHECK_OK(zb_reactor_destroy(r)); /* and the worker */
  }
}

/* ---- CURVE ------------------------------------------------------------------
 */

typedef struct {
  int messages;
  char last[64];
} curve_server_state;

/* A raw CURVE server (a ROUTER with ZMQ_CURVE_SERVER set through the socket
 * options) records what reaches it. */
static void curve_server_got(void* user, size_t count, const void* const* data,
                             const size_t* sizes) {
  curve_server_state* st = (curve_server_state*)user;
  st->messages++;
  /* [identity] [""] ["MDPC01"] [service] [body] */
  if (count == 5 && sizes[4] < sizeof st->last) {
    memcpy(st->last, data[4], sizes[4]);
    st->last[sizes[4]] = '\0';
  }
}

static void ignore_reply(void* user, int code, const char* message,
                         size_t count, const void* const* data,
                         const size_t* sizes) {
  (void)user, (void)code, (void)message, (void)count, (void)data, (void)sizes;
}

static void test_curve(void) {
  CHECK(zb_has_curve() == 1);
  char server_pub[41], server_sec[41], client_pub[41], client_sec[41];
  char derived[41];
  CHECK_OK(zb_curve_keypair(server_pub, server_sec));
  CHECK_OK(zb_curve_keypair(client_pub, client_sec));
  CHECK(strlen(server_pub) == 40 && strlen(server_sec) == 40);
  CHECK(strcmp(server_pub, client_pub) != 0);
  CHECK_OK(zb_curve_public(client_sec, derived));
  CHECK(strcmp(derived, client_pub) == 0);
  CHECK(zb_curve_public("short", derived) == ZB_ERR_INVALID);
  CHECK(zb_curve_keypair(NULL, derived) == ZB_ERR_INVALID);

  zb_reactor_t* r;
  CHECK_OK(zb_reactor_new(&r));
  zb_socket_t* server;
  CHECK_OK(zb_socket_new(r, ZB_ROUTER, &server));
  CHECK_OK(zb_socket_set_int(server, 47 /* ZMQ_CURVE_SERVER */, 1));
  CHECK_OK(zb_socket_set_bytes(server, 49 /* ZMQ_CURVE_SECRETKEY */, server_sec,
                               41));
  CHECK_OK(zb_socket_bind(server, "tcp://127.0.0.1:*"));
  char endpoint[256];
  CHECK_OK(zb_socket_last_endpoint(server, endpoint, sizeof endpoint));
  curve_server_state st = {0};
  CHECK_OK(zb_socket_on_readable(server, curve_server_got, &st, NULL));

  /* Bad keys are refused at construction; the message names no key. */
  zb_mdp_client_t* c = NULL;
  zb_curve_keys_t bad = {server_pub, NULL, "not-a-key"};
  CHECK(zb_mdp_client_new_curve(r, endpoint, 0, 0, &bad, &c) == ZB_ERR_INVALID);
  CHECK(strstr(zb_last_error(), "secret key") != NULL);
  CHECK(c == NULL);
  zb_curve_keys_t mismatch = {server_pub, server_pub, client_sec};
  CHECK(zb_mdp_client_new_curve(r, endpoint, 0, 0, &mismatch, &c) ==
        ZB_ERR_INVALID);
  CHECK(strstr(zb_last_error(), client_sec) == NULL);
  zb_curve_keys_t missing = {NULL, NULL, client_sec};
  CHECK(zb_mdp_client_new_curve(r, endpoint, 0, 0, &missing, &c) ==
        ZB_ERR_INVALID);

  /* A plaintext client gets nothing to a CURVE server ... */
  zb_mdp_client_t* plain;
  CHECK_OK(zb_mdp_client_new_curve(r, endpoint, 0, 0, NULL, &plain));
  const void* body[1] = {"plain"};
  const size_t body_sizes[1] = {5};
  CHECK_OK(zb_mdp_client_request(plain, "svc", 3, 1, body, body_sizes, 0,
                                 ignore_reply, NULL, NULL));
  const int never = 0;
  run_until(r, &never, 0.5);
  CHECK(st.messages == 0);
  /* ... a CURVE client with the server's public key gets through. */
  zb_curve_keys_t keys = {server_pub, client_pub, client_sec};
  CHECK_OK(zb_mdp_client_new_curve(r, endpoint, 0, 0, &keys, &c));
  const void* body2[1] = {"over-curve"};
  const size_t body2_sizes[1] = {10};
  CHECK_OK(zb_mdp_client_request(c, "svc", 3, 1, body2, body2_sizes, 0,
                                 ignore_reply, NULL, NULL));
  CHECK(run_until(r, &st.messages, 10.0));
  CHECK(strcmp(st.last, "over-curve") == 0);

  /* The other constructors take the same keys. */
  zb_consensus_client_t* cc;
  CHECK_OK(zb_consensus_client_new_curve(r, endpoint, &keys, &cc));
  zb_consensus_worker_t* cw;
  CHECK_OK(zb_consensus_worker_new_curve(r, endpoint, "w", 1, 0, 0, &keys,
                                         handle_now, NULL, NULL, &cw));
  zb_mdp_worker_t* mw;
  CHECK_OK(zb_mdp_worker_new_curve(r, endpoint, "w", 1, 0, 0, -1, &keys,
                                   mdp_echo, NULL, NULL, &mw));
  CHECK(zb_consensus_worker_new_curve(r, endpoint, "w", 1, 0, 0, &bad,
                                      handle_now, NULL, NULL,
                                      &cw) == ZB_ERR_INVALID);
  CHECK_OK(zb_reactor_destroy(r));
}

/* ---- Driving a reactor from an outside loop (zb_reactor_fd) ---------------
 * A host loop: poll() on the reactor's one descriptor for at most
 * zb_reactor_next_timeout_us(), then zb_reactor_run_once(r, 0).  Returns
 * whether the descriptor (not the timeout) woke it. */
static int host_step(zb_reactor_t* r, int fd, int cap_ms) {
  int64_t us = -1;
  CHECK_OK(zb_reactor_next_timeout_us(r, &us));
  int ms = cap_ms;
  if (us >= 0 && (us + 999) / 1000 < cap_ms) ms = (int)((us + 999) / 1000);
  struct pollfd p = {fd, POLLIN, 0};
  const int n = poll(&p, 1, ms);
  CHECK(n >= 0);
  CHECK_OK(zb_reactor_run_once(r, 0, NULL));
  return n > 0;
}

typedef struct {
  int received;
  char last[32];
} sink_state;

static void sink(void* user, size_t count, const void* const* data,
                 const size_t* sizes) {
  sink_state* st = (sink_state*)user;
  st->received++;
  CHECK(count == 1 && sizes[0] < sizeof st->last);
  memcpy(st->last, data[0], sizes[0]);
  st->last[sizes[0]] = '\0';
}

static void test_external_loop(void) {
  zb_reactor_t* r;
  CHECK_OK(zb_reactor_new(&r));
  int fd = -1, fd2 = -1;
  CHECK(zb_reactor_fd(r, NULL) == ZB_ERR_INVALID);
  CHECK_OK(zb_reactor_fd(r, &fd));
  CHECK(fd >= 0);
  CHECK_OK(zb_reactor_fd(r, &fd2));
  CHECK(fd2 == fd); /* one descriptor for the reactor's life */
  int64_t us = 0;
  CHECK_OK(zb_reactor_run_once(r, 0, NULL));
  CHECK_OK(zb_reactor_next_timeout_us(r, &us));
  CHECK(us == -1); /* nothing to wait for */

  /* A timer: the host sleeps until it, in a few steps, not a spin. */
  timer_state t = {0};
  CHECK_OK(zb_reactor_after(r, 100 * 1000, on_once, &t, count_free, NULL));
  CHECK_OK(zb_reactor_next_timeout_us(r, &us));
  CHECK(us == 0); /* the call outside a callback kicked the loop */
  int steps = 0;
  while (!t.fired && steps < 50) {
    host_step(r, fd, 5000);
    ++steps;
  }
  CHECK(t.fired == 1);
  CHECK(steps <= 4);

  /* Messages, and the edge-triggered ZMQ_FD: a message arrives at b, then
   * a send on b from outside a callback consumes b's signal.  The loop must
   * still wake and deliver it. */
  zb_socket_t *a, *b;
  CHECK_OK(zb_socket_new(r, ZB_PAIR, &a));
  CHECK_OK(zb_socket_new(r, ZB_PAIR, &b));
  CHECK_OK(zb_socket_bind(a, "inproc://zb_c_test_external"));
  CHECK_OK(zb_socket_connect(b, "inproc://zb_c_test_external"));
  sink_state sa = {0}, sb = {0};
  CHECK_OK(zb_socket_on_readable(a, sink, &sa, NULL));
  CHECK_OK(zb_socket_on_readable(b, sink, &sb, NULL));
  steps = 0;
  do { /* settle: nothing pending, the descriptor quiet */
    host_step(r, fd, 0);
    CHECK_OK(zb_reactor_next_timeout_us(r, &us));
  } while (us != -1 && ++steps < 10);
  CHECK(us == -1);
  const void* hello[1] = {"hello"};
  const size_t hello_size[1] = {5};
  CHECK_OK(zb_socket_send(a, 1, hello, hello_size));
  struct pollfd p = {fd, POLLIN, 0};
  CHECK(poll(&p, 1, 5000) == 1); /* the kick, or the arrival */
  const void* back[1] = {"back"};
  const size_t back_size[1] = {4};
  CHECK_OK(zb_socket_send(b, 1, back, back_size)); /* eats b's signal */
  steps = 0;
  while ((sb.received == 0 || sa.received == 0) && steps < 20) {
    CHECK(host_step(r, fd, 5000)); /* woken, never timed out */
    ++steps;
  }
  CHECK(sb.received == 1 && strcmp(sb.last, "hello") == 0);
  CHECK(sa.received == 1 && strcmp(sa.last, "back") == 0);
  CHECK(steps <= 6);

  /* A NULL reactor is refused. */
  CHECK(zb_reactor_next_timeout_us(NULL, &us) == ZB_ERR_INVALID);
  CHECK_OK(zb_reactor_destroy(r)); /* closes the descriptor too */
  CHECK(fcntl(fd, F_GETFD) == -1);
}

/* ---- One worker, many brokers (issue 14) -----------------------------------
 * The endpoint argument of the worker constructors may be a comma-separated
 * list: the worker registers with every broker in it and answers each
 * request to the broker it came from. */

static void test_worker_many_brokers(void) {
  zb_reactor_t* r;
  CHECK_OK(zb_reactor_new(&r));
  const int64_t hb = 200 * 1000;

  /* Consensus: two brokers, one worker on both. */
  zb_consensus_broker_t *ca, *cb;
  CHECK_OK(zb_consensus_broker_new(r, 0, &ca));
  CHECK_OK(zb_consensus_broker_new(r, 0, &cb));
  char ea[128], eb[128], list[300];
  CHECK_OK(zb_consensus_broker_bind(ca, "tcp://127.0.0.1:*", ea, sizeof ea));
  CHECK_OK(zb_consensus_broker_bind(cb, "tcp://127.0.0.1:*", eb, sizeof eb));
  snprintf(list, sizeof list, "%s,%s", ea, eb);
  zb_consensus_worker_t* cw;
  CHECK_OK(zb_consensus_worker_new(r, list, "echo", 4, hb, 3, handle_now, NULL,
                                   NULL, &cw));
  int64_t deadline = zb_now_us() + 10 * 1000 * 1000;
  while ((worker_count(ca, "echo") < 1 || worker_count(cb, "echo") < 1) &&
         zb_now_us() < deadline) {
    CHECK_OK(zb_reactor_run_once(r, 20 * 1000, NULL));
  }
  CHECK(worker_count(ca, "echo") == 1 && worker_count(cb, "echo") == 1);
  zb_consensus_client_t *cla, *clb;
  CHECK_OK(zb_consensus_client_new(r, ea, &cla));
  CHECK_OK(zb_consensus_client_new(r, eb, &clb));
  reply_state st;
  CHECK(request(r, cla, "echo", "via-a", 5 * 1000 * 1000, 0, &st));
  CHECK(st.result == ZB_RESULT_SUCCESS && st.count == 1);
  CHECK(strcmp(st.frames[0], "a:via-a") == 0);
  CHECK(request(r, clb, "echo", "via-b", 5 * 1000 * 1000, 0, &st));
  CHECK(st.result == ZB_RESULT_SUCCESS && st.count == 1);
  CHECK(strcmp(st.frames[0], "a:via-b") == 0);
  /* Destroying the worker says DISCONNECT to both brokers. */
  CHECK_OK(zb_consensus_worker_destroy(cw));
  deadline = zb_now_us() + 10 * 1000 * 1000;
  while ((worker_count(ca, "echo") > 0 || worker_count(cb, "echo") > 0) &&
         zb_now_us() < deadline) {
    CHECK_OK(zb_reactor_run_once(r, 20 * 1000, NULL));
  }
  CHECK(worker_count(ca, "echo") == 0 && worker_count(cb, "echo") == 0);
  /* A bad list fails at creation, naming what is wrong. */
  char dup[300];
  snprintf(dup, sizeof dup, "%s,%s", ea, ea);
  zb_consensus_worker_t* bad = NULL;
  CHECK(zb_consensus_worker_new(r, dup, "echo", 4, hb, 3, handle_now, NULL,
                                NULL, &bad) == ZB_ERR_ZMQ);
  CHECK(strstr(zb_last_error(), "twice") != NULL);
  CHECK(bad == NULL);
  CHECK_OK(zb_consensus_client_destroy(cla));
  CHECK_OK(zb_consensus_client_destroy(clb));

  /* Majordomo: the same. */
  zb_mdp_broker_t *ma, *mb;
  CHECK_OK(zb_mdp_broker_new(r, hb, 3, &ma));
  CHECK_OK(zb_mdp_broker_new(r, hb, 3, &mb));
  CHECK_OK(zb_mdp_broker_bind(ma, "tcp://127.0.0.1:*", ea, sizeof ea));
  CHECK_OK(zb_mdp_broker_bind(mb, "tcp://127.0.0.1:*", eb, sizeof eb));
  snprintf(list, sizeof list, " %s , %s ", ea, eb); /* spaces are ignored */
  int handled = 0;
  zb_mdp_worker_t* mw;
  CHECK_OK(zb_mdp_worker_new(r, list, "echo", 4, hb, 3, 50 * 1000, mdp_echo,
                             &handled, NULL, &mw));
  size_t na = 0, nb = 0;
  deadline = zb_now_us() + 10 * 1000 * 1000;
  while ((na == 0 || nb == 0) && zb_now_us() < deadline) {
    CHECK_OK(zb_reactor_run_once(r, 20 * 1000, NULL));
    CHECK_OK(zb_mdp_broker_worker_count(ma, "echo", 4, &na));
    CHECK_OK(zb_mdp_broker_worker_count(mb, "echo", 4, &nb));
  }
  CHECK(na == 1 && nb == 1);
  zb_mdp_client_t *mca, *mcb;
  CHECK_OK(zb_mdp_client_new(r, ea, 5 * 1000 * 1000, 0, &mca));
  CHECK_OK(zb_mdp_client_new(r, eb, 5 * 1000 * 1000, 0, &mcb));
  mdp_reply_state ms;
  for (int i = 0; i < 4; ++i) { /* mdp_echo answers every other one later */
    CHECK(mdp_request(r, i % 2 ? mcb : mca, "echo", i % 2 ? "b" : "a", 0, &ms));
    CHECK(ms.code == ZB_OK && ms.count == 1);
    CHECK(strcmp(ms.frames[0], i % 2 ? "echo:b" : "echo:a") == 0);
  }
  CHECK(handled == 4);
  CHECK_OK(zb_mdp_worker_destroy(mw));
  deadline = zb_now_us() + 10 * 1000 * 1000;
  while ((na > 0 || nb > 0) && zb_now_us() < deadline) {
    CHECK_OK(zb_reactor_run_once(r, 20 * 1000, NULL));
    CHECK_OK(zb_mdp_broker_worker_count(ma, "echo", 4, &na));
    CHECK_OK(zb_mdp_broker_worker_count(mb, "echo", 4, &nb));
  }
  CHECK(na == 0 && nb == 0);
  zb_mdp_worker_t* mbad = NULL;
  snprintf(list, sizeof list, "%s,", ea);
  CHECK(zb_mdp_worker_new(r, list, "echo", 4, hb, 3, 0, mdp_echo, &handled,
                          NULL, &mbad) == ZB_ERR_ZMQ);
  CHECK(mbad == NULL);
  CHECK_OK(zb_mdp_client_destroy(mca));
  CHECK_OK(zb_mdp_client_destroy(mcb));
  CHECK_OK(zb_reactor_destroy(r)); /* and the brokers with it */
}

/* ---- Client endpoint lists and the endpoint policy -------------------------
 */

/* Consensus worker that counts what it served (user: int*) and echoes. */
static void handle_count(void* user, zb_responder_t* responder, size_t count,
                         const void* const* data, const size_t* sizes) {
  (*(int*)user)++;
  CHECK_OK(zb_responder_succeed(responder, count, data, sizes));
}

/* MDP worker that counts what it served (user: int*) and echoes. */
static void mdp_count(void* user, zb_mdp_replier_t* replier, size_t count,
                      const void* const* data, const size_t* sizes) {
  (*(int*)user)++;
  CHECK_OK(zb_mdp_reply(replier, count, data, sizes));
}

/* An endpoint where nobody listens: a port the system handed out to a
 * broker that is gone again. */
static void dead_consensus_endpoint(zb_reactor_t* r, char* out, size_t cap) {
  zb_consensus_broker_t* b;
  CHECK_OK(zb_consensus_broker_new(r, 0, &b));
  CHECK_OK(zb_consensus_broker_bind(b, "tcp://127.0.0.1:*", out, cap));
  CHECK_OK(zb_consensus_broker_destroy(b));
}

static void test_client_options(void) {
  zb_client_options_t o;
  memset(&o, 0x5a, sizeof o);
  CHECK_OK(zb_client_options_init(&o));
  CHECK(o.size == sizeof o);
  CHECK(o.endpoint_policy == ZB_ENDPOINT_FAILOVER);
  CHECK(o.curve == NULL);
  CHECK(zb_client_options_init(NULL) == ZB_ERR_INVALID);

  int policy = -1;
  CHECK_OK(zb_endpoint_policy_parse("spread", &policy));
  CHECK(policy == ZB_ENDPOINT_SPREAD);
  CHECK_OK(zb_endpoint_policy_parse("failover", &policy));
  CHECK(policy == ZB_ENDPOINT_FAILOVER);
  policy = 7;
  CHECK(zb_endpoint_policy_parse("Spread", &policy) == ZB_ERR_INVALID);
  CHECK(strstr(zb_last_error(), "Spread") != NULL);
  CHECK(strstr(zb_last_error(), "failover") != NULL);
  CHECK(policy == 7); /* out-parameters are untouched on failure */
  CHECK(zb_endpoint_policy_parse(NULL, &policy) == ZB_ERR_INVALID);
  CHECK(strcmp(zb_endpoint_policy_name(ZB_ENDPOINT_FAILOVER), "failover") == 0);
  CHECK(strcmp(zb_endpoint_policy_name(ZB_ENDPOINT_SPREAD), "spread") == 0);
  CHECK(zb_endpoint_policy_name(2) == NULL);

  zb_reactor_t* r;
  CHECK_OK(zb_reactor_new(&r));
  const char* ep = "tcp://127.0.0.1:5999";
  zb_consensus_client_t* c = NULL;
  zb_mdp_client_t* m = NULL;
  /* An unknown policy, a size from no init, a bad list. */
  CHECK_OK(zb_client_options_init(&o));
  o.endpoint_policy = 2;
  CHECK(zb_consensus_client_new_ex(r, ep, &o, &c) == ZB_ERR_INVALID);
  CHECK(strstr(zb_last_error(), "endpoint_policy 2") != NULL);
  CHECK(zb_mdp_client_new_ex(r, ep, 0, 0, &o, &m) == ZB_ERR_INVALID);
  CHECK_OK(zb_client_options_init(&o));
  o.size = sizeof(size_t);
  CHECK(zb_consensus_client_new_ex(r, ep, &o, &c) == ZB_ERR_INVALID);
  CHECK(strstr(zb_last_error(), "zb_client_options_init") != NULL);
  CHECK(zb_mdp_client_new_ex(r, ep, 0, 0, &o, &m) == ZB_ERR_INVALID);
  CHECK(c == NULL && m == NULL);
  /* A caller from a later zb.h: unknown bytes at 0 are fine, set ones are
   * refused. */
  struct {
    zb_client_options_t known;
    int later_field;
  } bigger;
  memset(&bigger, 0, sizeof bigger);
  CHECK_OK(zb_client_options_init(&bigger.known));
  bigger.known.size = sizeof bigger;
  bigger.known.endpoint_policy = ZB_ENDPOINT_SPREAD;
  CHECK_OK(zb_consensus_client_new_ex(r, ep, &bigger.known, &c));
  CHECK_OK(zb_consensus_client_destroy(c));
  bigger.later_field = 1;
  c = NULL;
  CHECK(zb_consensus_client_new_ex(r, ep, &bigger.known, &c) == ZB_ERR_INVALID);
  CHECK(c == NULL);
  char dup[128];
  snprintf(dup, sizeof dup, "%s,%s", ep, ep);
  CHECK(zb_consensus_client_new_ex(r, dup, NULL, &c) == ZB_ERR_ZMQ);
  CHECK(strstr(zb_last_error(), "twice") != NULL);
  CHECK(zb_mdp_client_new(r, "tcp://127.0.0.1:5999,", 0, 0, &m) == ZB_ERR_ZMQ);
  /* A later broker of a failover list that libzmq refuses fails here, not
   * at the client's first failover. */
  CHECK(zb_consensus_client_new(r, "tcp://127.0.0.1:5999,bogus://x", &c) ==
        ZB_ERR_ZMQ);
  CHECK(strstr(zb_last_error(), "bogus://x") != NULL);
  CHECK(zb_mdp_client_new(r, "tcp://127.0.0.1:5999,bogus://x", 0, 0, &m) ==
        ZB_ERR_ZMQ);
  CHECK(c == NULL && m == NULL);
  /* NULL options are the defaults. */
  CHECK_OK(zb_mdp_client_new_ex(r, ep, 0, 0, NULL, &m));
  uint64_t failovers = 99;
  CHECK_OK(zb_mdp_client_failovers(m, &failovers));
  CHECK(failovers == 0);
  CHECK(zb_mdp_client_failovers(m, NULL) == ZB_ERR_INVALID);
  CHECK_OK(zb_mdp_client_destroy(m));
  CHECK(zb_consensus_client_failovers(NULL, &failovers) == ZB_ERR_INVALID);
  CHECK_OK(zb_reactor_destroy(r));
}

/* kFailover: the first broker of the list is dead; requests with retries
 * reach the second one, and the client counts the move. */
static void test_client_failover(void) {
  zb_reactor_t* r;
  CHECK_OK(zb_reactor_new(&r));
  const int64_t hb = 200 * 1000;
  char dead[128], live[128], list[300];

  /* Consensus. */
  dead_consensus_endpoint(r, dead, sizeof dead);
  zb_consensus_broker_t* cb;
  CHECK_OK(zb_consensus_broker_new(r, 0, &cb));
  CHECK_OK(
      zb_consensus_broker_bind(cb, "tcp://127.0.0.1:*", live, sizeof live));
  int served = 0;
  zb_consensus_worker_t* cw;
  CHECK_OK(zb_consensus_worker_new(r, live, "echo", 4, hb, 3, handle_count,
                                   &served, NULL, &cw));
  wait_for_worker(r, cb, "echo");
  snprintf(list, sizeof list, "%s,%s", dead, live);
  zb_consensus_client_t* c;
  CHECK_OK(zb_consensus_client_new(r, list, &c)); /* failover by default */
  reply_state st;
  /* Two attempts time out on the dead broker (the client's reopen rule),
   * the third goes to the live one. */
  CHECK(request(r, c, "echo", "over", 300 * 1000, 4, &st));
  CHECK(st.result == ZB_RESULT_SUCCESS);
  CHECK(st.count == 1 && strcmp(st.frames[0], "over") == 0);
  CHECK(st.attempts >= 3);
  CHECK(served == 1);
  uint64_t failovers = 0;
  CHECK_OK(zb_consensus_client_failovers(c, &failovers));
  CHECK(failovers == 1);
  /* It stays on the live broker. */
  CHECK(request(r, c, "echo", "again", 300 * 1000, 0, &st));
  CHECK(st.result == ZB_RESULT_SUCCESS && st.attempts == 1);
  CHECK_OK(zb_consensus_client_failovers(c, &failovers));
  CHECK(failovers == 1);
  CHECK_OK(zb_consensus_client_destroy(c));

  /* Majordomo: a timed-out request moves the client on at once. */
  zb_mdp_broker_t* mb;
  CHECK_OK(zb_mdp_broker_new(r, hb, 3, &mb));
  CHECK_OK(zb_mdp_broker_bind(mb, "tcp://127.0.0.1:*", live, sizeof live));
  int mserved = 0;
  zb_mdp_worker_t* mw;
  CHECK_OK(zb_mdp_worker_new(r, live, "echo", 4, hb, 3, 50 * 1000, mdp_count,
                             &mserved, NULL, &mw));
  size_t workers = 0;
  int64_t deadline = zb_now_us() + 10 * 1000 * 1000;
  while (workers == 0 && zb_now_us() < deadline) {
    CHECK_OK(zb_reactor_run_once(r, 20 * 1000, NULL));
    CHECK_OK(zb_mdp_broker_worker_count(mb, "echo", 4, &workers));
  }
  CHECK(workers == 1);
  snprintf(list, sizeof list, "%s,%s", dead, live);
  zb_client_options_t o;
  CHECK_OK(zb_client_options_init(&o));
  zb_mdp_client_t* m;
  CHECK_OK(zb_mdp_client_new_ex(r, list, 300 * 1000, 3, &o, &m));
  mdp_reply_state ms;
  CHECK(mdp_request(r, m, "echo", "over", 0, &ms));
  CHECK(ms.code == ZB_OK && ms.count == 1 && strcmp(ms.frames[0], "over") == 0);
  CHECK(mserved == 1);
  CHECK_OK(zb_mdp_client_failovers(m, &failovers));
  CHECK(failovers >= 1);
  CHECK_OK(zb_mdp_client_destroy(m));
  CHECK_OK(zb_reactor_destroy(r));
}

/* kSpread: requests go round-robin to two live brokers. */
static void test_client_spread(void) {
  zb_reactor_t* r;
  CHECK_OK(zb_reactor_new(&r));
  const int64_t hb = 200 * 1000;
  char ea[128], eb[128], list[300];
  zb_consensus_broker_t *ba, *bb;
  CHECK_OK(zb_consensus_broker_new(r, 0, &ba));
  CHECK_OK(zb_consensus_broker_new(r, 0, &bb));
  CHECK_OK(zb_consensus_broker_bind(ba, "tcp://127.0.0.1:*", ea, sizeof ea));
  CHECK_OK(zb_consensus_broker_bind(bb, "tcp://127.0.0.1:*", eb, sizeof eb));
  int served[2] = {0, 0};
  zb_consensus_worker_t *wa, *wb;
  CHECK_OK(zb_consensus_worker_new(r, ea, "echo", 4, hb, 3, handle_count,
                                   &served[0], NULL, &wa));
  CHECK_OK(zb_consensus_worker_new(r, eb, "echo", 4, hb, 3, handle_count,
                                   &served[1], NULL, &wb));
  wait_for_worker(r, ba, "echo");
  wait_for_worker(r, bb, "echo");
  snprintf(list, sizeof list, "%s,%s", ea, eb);
  zb_client_options_t o;
  CHECK_OK(zb_client_options_init(&o));
  o.endpoint_policy = ZB_ENDPOINT_SPREAD;
  zb_consensus_client_t* c;
  CHECK_OK(zb_consensus_client_new_ex(r, list, &o, &c));
  reply_state st;
  for (int i = 0; i < 10; ++i) {
    CHECK(request(r, c, "echo", "s", 2 * 1000 * 1000, 0, &st));
    CHECK(st.result == ZB_RESULT_SUCCESS);
  }
  CHECK(served[0] + served[1] == 10);
  CHECK(served[0] >= 3 && served[1] >= 3);

  zb_mdp_broker_t *ma, *mb;
  CHECK_OK(zb_mdp_broker_new(r, hb, 3, &ma));
  CHECK_OK(zb_mdp_broker_new(r, hb, 3, &mb));
  CHECK_OK(zb_mdp_broker_bind(ma, "tcp://127.0.0.1:*", ea, sizeof ea));
  CHECK_OK(zb_mdp_broker_bind(mb, "tcp://127.0.0.1:*", eb, sizeof eb));
  int mserved[2] = {0, 0};
  zb_mdp_worker_t *mwa, *mwb;
  CHECK_OK(zb_mdp_worker_new(r, ea, "echo", 4, hb, 3, 50 * 1000, mdp_count,
                             &mserved[0], NULL, &mwa));
  CHECK_OK(zb_mdp_worker_new(r, eb, "echo", 4, hb, 3, 50 * 1000, mdp_count,
                             &mserved[1], NULL, &mwb));
  size_t na = 0, nb = 0;
  int64_t deadline = zb_now_us() + 10 * 1000 * 1000;
  while ((na == 0 || nb == 0) && zb_now_us() < deadline) {
    CHECK_OK(zb_reactor_run_once(r, 20 * 1000, NULL));
    CHECK_OK(zb_mdp_broker_worker_count(ma, "echo", 4, &na));
    CHECK_OK(zb_mdp_broker_worker_count(mb, "echo", 4, &nb));
  }
  CHECK(na == 1 && nb == 1);
  snprintf(list, sizeof list, "%s,%s", ea, eb);
  zb_mdp_client_t* m;
  CHECK_OK(zb_mdp_client_new_ex(r, list, 2 * 1000 * 1000, 0, &o, &m));
  mdp_reply_state ms;
  for (int i = 0; i < 10; ++i) {
    CHECK(mdp_request(r, m, "echo", "s", 0, &ms));
    CHECK(ms.code == ZB_OK);
  }
  CHECK(mserved[0] + mserved[1] == 10);
  CHECK(mserved[0] >= 3 && mserved[1] >= 3);
  CHECK_OK(zb_reactor_destroy(r));
}

int main(void) {
  test_errors();
  test_timers();
  test_run_post_stop();
  test_pair_ping_pong();
  test_dealer_router();
  test_consensus();
  test_majordomo();
  test_majordomo_discard_gives_back();
  test_worker_many_brokers();
  test_client_options();
  test_client_failover();
  test_client_spread();
  test_tokens_outlive_the_reactor();
  test_destroy_inside_callbacks();
  test_curve();
  test_external_loop();
  printf("zb_c_test: %d checks passed\n", atomic_load(&g_checks));
  return 0;
}
