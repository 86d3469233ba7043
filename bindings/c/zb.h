/* Copyright 2026 The zbrokers Authors.
 *
 * zb.h -- the C ABI of zbrokers (libzbrokers.so, pkg-config "zbrokers").
 *
 * A stable, pure-C surface over the zbrokers reactor and the client and
 * worker libraries, for C programs and for any language with a C FFI
 * (Python ctypes, Ruby ffi, LuaJIT, Go cgo, ...).  It compiles as C11 and
 * as C++; no C++ type or exception crosses it.
 *
 *   #include <zb.h>
 *
 *   static void on_tick(void* user) {
 *     zb_reactor_stop((zb_reactor_t*)user);
 *   }
 *
 *   zb_reactor_t* r;
 *   if (zb_reactor_new(&r) != ZB_OK) die(zb_last_error());
 *   zb_timer_id id;
 *   zb_reactor_after(r, 1000, on_tick, r, NULL, &id);   // 1000 us
 *   zb_reactor_run(r);                                   // until stop
 *   zb_reactor_destroy(r);
 *
 * Conventions.
 *   - Handles are opaque pointers (zb_reactor_t*, zb_socket_t*, ...).
 *   - Every function returns an int: ZB_OK (0) on success, a negative
 *     ZB_ERR_* code on failure.  Results come back through out-parameters,
 *     which are left untouched on failure.  After a failure,
 *     zb_last_error() describes it; the message belongs to the calling
 *     thread and stays valid until that thread's next failing zb_ call.
 *   - Byte strings are (pointer, length) pairs and may contain NUL bytes.  A
 *     multipart message is `count` frames given as two parallel arrays:
 *     `data[i]` points at `sizes[i]` bytes.  (A frame of size 0 may have a
 *     NULL data pointer.)  Functions that take frames copy them before they
 *     return; frames handed to a callback are valid only during that call.
 *   - Callbacks take a `void* user` pointer that the library passes back
 *     unchanged.  Wherever a function takes a `zb_free_fn free_user` (may be
 *     NULL), the library calls free_user(user) exactly once, when it will
 *     never call that callback again (after a one-shot timer fired, after a
 *     cancel, when a socket or the reactor is destroyed, ...).  This is the
 *     moment to release whatever keeps the callback alive -- for example a
 *     binding's reference to a closure.  free_user runs on the reactor thread
 *     (or in the thread that destroys the object) and must not call zb_
 *     functions on the object that is being torn down.  When a call fails,
 *     the library has not taken `user`: free_user is not called for it.
 *
 * Threading.  A reactor belongs to the thread that created it, its *owner*.
 * Every function that takes a reactor, a socket or a client/worker/broker
 * handle must be called on the owner thread, except those marked "any
 * thread" (zb_reactor_post, zb_reactor_stop, zb_responder_*, zb_mdp_reply,
 * zb_mdp_replier_discard).  A call from another thread fails with
 * ZB_ERR_WRONG_THREAD; it never aborts.  All callbacks run on the owner
 * thread, inside zb_reactor_run()/RunOnce()/run_for().  To drive a reactor
 * from another thread, post() to it.
 *
 * ZeroMQ context.  The library owns the ZeroMQ context: one per process,
 * shared by every reactor (so inproc:// endpoints connect across reactors)
 * and terminated when the last reactor is destroyed.
 */

#ifndef ZB_BINDINGS_C_ZB_H_
#define ZB_BINDINGS_C_ZB_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Errors ------------------------------------------------------------ */

/* Return codes.  New codes may be added; treat unknown negative values as
 * failures. */
enum {
  ZB_OK = 0,
  /* A bad argument: NULL handle or out-pointer, unknown socket type name,
   * negative delay, frame count of 0 where frames are required, ... */
  ZB_ERR_INVALID = -1,
  /* An owner-thread-only function was called from another thread. */
  ZB_ERR_WRONG_THREAD = -2,
  /* The thing named does not exist (unknown or already fired timer, ...). */
  ZB_ERR_NOT_FOUND = -3,
  /* The call is not allowed in the object's current state: destroying a
   * reactor from inside one of its callbacks, running a reactor that is
   * already running, using a reactor while it is being destroyed, ... */
  ZB_ERR_STATE = -4,
  /* A send would have to block: the socket's high-water mark is reached.
   * Nothing was sent. */
  ZB_ERR_AGAIN = -5,
  /* A ROUTER socket with ZB_OPT_ROUTER_MANDATORY has no peer with the
   * identity in the first frame.  Nothing was sent. */
  ZB_ERR_UNREACHABLE = -6,
  /* Any other ZeroMQ failure (bad endpoint, address in use, bad option
   * value, ...).  zb_last_error() carries ZeroMQ's message. */
  ZB_ERR_ZMQ = -7,
  /* An output buffer is too small. */
  ZB_ERR_RANGE = -8,
  /* Out of memory. */
  ZB_ERR_NO_MEMORY = -9,
  /* An unexpected internal failure (a bug); the message says what. */
  ZB_ERR_INTERNAL = -10,
  /* Passed to a zb_status_fn: the operation did not complete in time. */
  ZB_ERR_TIMEOUT = -11,
  /* Passed to a zb_status_fn: the object was destroyed first. */
  ZB_ERR_CANCELLED = -12
};

/* The calling thread's message for its last failed zb_ call ("" if none).
 * Owned by the library; valid until this thread's next failing call. */
const char* zb_last_error(void);

/* A static name for a return code ("ZB_OK", "ZB_ERR_ZMQ", ...; "unknown"
 * for anything else).  Any thread. */
const char* zb_strerror(int code);

/* The library version as "MAJOR.MINOR.PATCH" (static storage).  Any thread. */
const char* zb_version(void);

/* ---- Callbacks ----------------------------------------------------------- */

/* Releases a user pointer; see "Callbacks" above. */
typedef void (*zb_free_fn)(void* user);
/* A timer or a posted task. */
typedef void (*zb_callback_fn)(void* user);
/* Receives one multipart message: `count` (>= 1) frames, frame i is
 * `sizes[i]` bytes at `data[i]`.  The arrays and the bytes are valid only
 * during the call; copy what you keep. */
typedef void (*zb_frames_fn)(void* user, size_t count, const void* const* data,
                             const size_t* sizes);
/* Receives the outcome of an asynchronous operation: ZB_OK or a ZB_ERR_*
 * code, and a message ("" on success) valid only during the call. */
typedef void (*zb_status_fn)(void* user, int code, const char* message);
/* Receives a log line (NUL-terminated, valid only during the call). */
typedef void (*zb_log_fn)(void* user, int level, const char* line);

/* Log levels passed to a zb_log_fn. */
enum {
  ZB_LOG_DEBUG = 0,
  ZB_LOG_INFO = 1,
  ZB_LOG_WARNING = 2,
  ZB_LOG_ERROR = 3
};

/* ---- Reactor ------------------------------------------------------------- */

typedef struct zb_reactor_t zb_reactor_t;

/* Creates a reactor owned by the calling thread.  On success *out receives
 * it; the caller owns it and destroys it with zb_reactor_destroy(). */
int zb_reactor_new(zb_reactor_t** out);

/* Destroys the reactor and everything it owns, in this order: clients,
 * workers, brokers (consensus and MDP), sockets (closed with their
 * ZB_OPT_LINGER, 0 by default), timers and posted tasks that never ran (their
 * free_user is called; their callbacks are not).  Owner thread; fails with
 * ZB_ERR_STATE when called from inside one of the reactor's callbacks.  NULL is
 * a no-op. No other thread may use the handle once this has started. */
int zb_reactor_destroy(zb_reactor_t* reactor);

/* Runs the loop until zb_reactor_stop().  Owner thread; not re-entrant
 * (ZB_ERR_STATE when called from a callback). */
int zb_reactor_run(zb_reactor_t* reactor);

/* Waits at most `max_wait_us` microseconds (< 0: without limit) for
 * something to happen, runs every ready callback, and returns.  When
 * `handled` is not NULL it receives the number of callbacks that ran.  Does
 * not look at zb_reactor_stop().  Owner thread; not re-entrant. */
int zb_reactor_run_once(zb_reactor_t* reactor, int64_t max_wait_us,
                        int* handled);

/* Runs the loop until zb_reactor_stop() or until `max_us` microseconds have
 * passed, whichever comes first.  When `stopped` is not NULL it receives 1
 * if the loop returned because of a stop (the stop is then consumed, as by
 * zb_reactor_run) and 0 on time-out.  Meant for hosts that must regain
 * control now and then, e.g. an interpreter that handles signals between
 * calls.  Owner thread; not re-entrant. */
int zb_reactor_run_for(zb_reactor_t* reactor, int64_t max_us, int* stopped);

/* Makes zb_reactor_run() return after the current iteration (and
 * zb_reactor_run_for() report stopped=1).  A stop that arrives while the
 * loop is not running makes the next run return at once.  Any thread,
 * including from inside a callback. */
int zb_reactor_stop(zb_reactor_t* reactor);

/* Runs fn(user) on the owner thread at the start of the next loop
 * iteration, waking a blocked loop at once.  Tasks posted by one thread run
 * in the order they were posted.  free_user(user) (if not NULL) is called
 * after fn returns, or when the reactor is destroyed before the task ran.
 * Any thread. */
int zb_reactor_post(zb_reactor_t* reactor, zb_callback_fn fn, void* user,
                    zb_free_fn free_user);

/* ---- Driving a reactor from another event loop ------------------------------
 *
 * For hosts with an event loop of their own (Python's asyncio, libuv, glib,
 * a GUI toolkit): instead of zb_reactor_run(), watch one descriptor and
 * one timeout, and run a step whenever either fires:
 *
 *   int fd;
 *   zb_reactor_fd(r, &fd);                      // once; readable = work
 *   for (;;) {
 *     int64_t us;
 *     zb_reactor_next_timeout_us(r, &us);       // -1: no timer pending
 *     wait until fd is readable or `us` microseconds have passed
 *     zb_reactor_run_once(r, 0, NULL);          // never blocks
 *   }
 *
 * ZeroMQ's ZMQ_FD is edge-triggered in effect: it signals that something
 * changed, not that a message is waiting, and any operation on the socket
 * (a send, reading an option) may consume the signal of a message that is
 * then never looked at.  Two rules keep a host from sleeping on such a
 * message, and the library applies both: zb_reactor_next_timeout_us()
 * reads every socket's ZMQ_EVENTS and answers 0 when anything is ready;
 * and once zb_reactor_fd() has been called, every owner-thread zb_ call
 * made outside the reactor's callbacks (a send, a request, a new socket or
 * timer, ...) makes the descriptor readable, so that the host runs the next
 * step and asks again.  A host therefore never needs to know which call
 * touched which socket. */

/* A descriptor that is readable (level-triggered) while the reactor has
 * something to do: an epoll descriptor over the reactor's wake-up eventfd,
 * its sockets' ZMQ_FDs and its raw descriptors, kept up to date by
 * zb_reactor_next_timeout_us().  The reactor owns it (do not close it or
 * read from it); it stays the same until zb_reactor_destroy() closes it.
 * The first call switches the reactor to the mode described above.  Owner
 * thread; not from inside a callback. */
int zb_reactor_fd(zb_reactor_t* reactor, int* fd);

/* How long the host may wait on zb_reactor_fd() before it calls
 * zb_reactor_run_once(r, 0, NULL): *timeout_us receives 0 when there is
 * work now (a message queued, a post or a stop pending, a timer due), the
 * time to the earliest timer (rounded up to a microsecond), or -1 when only
 * the descriptor can bring work.  Call it after every step.  Owner thread;
 * not from inside a callback. */
int zb_reactor_next_timeout_us(zb_reactor_t* reactor, int64_t* timeout_us);

/* ---- Timers ---------------------------------------------------------------
 *
 * A timer id is never 0 and never reused by one reactor.  Times are in
 * microseconds on a monotonic clock (see zb_now_us), so wall-clock changes
 * never affect timers.  A timer callback may add or cancel timers, itself
 * included.  Owner thread. */

typedef uint64_t zb_timer_id;

/* Microseconds on the monotonic clock the timers use.  Any thread. */
int64_t zb_now_us(void);

/* Calls fn(user) once, `delay_us` (>= 0) from now.  free_user is called
 * after it ran or when it is cancelled.  *id receives the timer id (id may
 * be NULL). */
int zb_reactor_after(zb_reactor_t* reactor, int64_t delay_us, zb_callback_fn fn,
                     void* user, zb_free_fn free_user, zb_timer_id* id);

/* Calls fn(user) every `period_us` (> 0), first `period_us` from now, until
 * cancelled.  Missed periods are skipped, never bunched up. */
int zb_reactor_every(zb_reactor_t* reactor, int64_t period_us,
                     zb_callback_fn fn, void* user, zb_free_fn free_user,
                     zb_timer_id* id);

/* Calls fn(user) once at `deadline_us` on the zb_now_us() clock; a deadline
 * in the past fires on the next iteration. */
int zb_reactor_at(zb_reactor_t* reactor, int64_t deadline_us, zb_callback_fn fn,
                  void* user, zb_free_fn free_user, zb_timer_id* id);

/* Cancels a timer: it will not fire again.  Its free_user is called before
 * this returns -- or, when a timer cancels itself from its own callback,
 * right after that callback returns.  ZB_ERR_NOT_FOUND when the id is
 * unknown, already cancelled, or a one-shot timer that already fired. */
int zb_reactor_cancel(zb_reactor_t* reactor, zb_timer_id id);

/* ---- Sockets ---------------------------------------------------------------
 *
 * ZeroMQ sockets owned by a reactor: created on the library's context,
 * watched by the reactor once a readable callback is set, closed by
 * zb_socket_close() or when the reactor is destroyed.  Owner thread. */

typedef struct zb_socket_t zb_socket_t;

/* Socket types; the values are ZeroMQ's. */
enum {
  ZB_PAIR = 0,
  ZB_PUB = 1,
  ZB_SUB = 2,
  ZB_REQ = 3,
  ZB_REP = 4,
  ZB_DEALER = 5,
  ZB_ROUTER = 6,
  ZB_PULL = 7,
  ZB_PUSH = 8,
  ZB_XPUB = 9,
  ZB_XSUB = 10,
  ZB_STREAM = 11
};

/* Common socket options; the values are ZeroMQ's option numbers, and any
 * other ZeroMQ option number may be passed as is.  Options of type int64
 * or uint64 in ZeroMQ (ZB_OPT_MAXMSGSIZE, affinity) are handled by
 * zb_socket_set_int/get_int too. */
enum {
  ZB_OPT_ROUTING_ID = 5,         /* bytes (ZMQ_IDENTITY) */
  ZB_OPT_SUBSCRIBE = 6,          /* bytes */
  ZB_OPT_UNSUBSCRIBE = 7,        /* bytes */
  ZB_OPT_RCVMORE = 13,           /* int, read-only */
  ZB_OPT_TYPE = 16,              /* int, read-only */
  ZB_OPT_LINGER = 17,            /* int, ms; the library's default is 0 */
  ZB_OPT_RECONNECT_IVL = 18,     /* int, ms */
  ZB_OPT_BACKLOG = 19,           /* int */
  ZB_OPT_RECONNECT_IVL_MAX = 21, /* int, ms */
  ZB_OPT_MAXMSGSIZE = 22,        /* int64 */
  ZB_OPT_SNDHWM = 23,            /* int */
  ZB_OPT_RCVHWM = 24,            /* int */
  ZB_OPT_SNDTIMEO = 28,          /* int, ms (sends never block here anyway) */
  ZB_OPT_ROUTER_MANDATORY = 33,  /* int 0/1 */
  ZB_OPT_IMMEDIATE = 39,         /* int 0/1 */
  ZB_OPT_ROUTER_HANDOVER = 56,   /* int 0/1 */
  ZB_OPT_HEARTBEAT_IVL = 75,     /* int, ms */
  ZB_OPT_HEARTBEAT_TTL = 76,     /* int, ms */
  ZB_OPT_HEARTBEAT_TIMEOUT = 77  /* int, ms */
};

/* Creates a socket of type `type` (ZB_DEALER, ...) on the reactor.  *out
 * receives it; the reactor owns it.  Its linger is set to 0, so closing it
 * never blocks; set ZB_OPT_LINGER to keep unsent messages for a while. */
int zb_socket_new(zb_reactor_t* reactor, int type, zb_socket_t** out);

/* The same, with the type given by name, case-insensitively: "PAIR", "PUB",
 * "SUB", "REQ", "REP", "DEALER", "ROUTER", "PULL", "PUSH", "XPUB", "XSUB",
 * "STREAM". */
int zb_socket_new_named(zb_reactor_t* reactor, const char* type_name,
                        zb_socket_t** out);

/* Closes the socket, stops watching it, calls the readable callback's
 * free_user, and frees the handle.  Safe inside the socket's own
 * callback (the callback is not called again).  NULL is a no-op. */
int zb_socket_close(zb_socket_t* socket);

/* Sets an integer option.  Values that do not fit ZeroMQ's type for the
 * option fail with ZB_ERR_INVALID. */
int zb_socket_set_int(zb_socket_t* socket, int option, int64_t value);
/* Sets a byte-string option (ZB_OPT_ROUTING_ID, ZB_OPT_SUBSCRIBE, ...). */
int zb_socket_set_bytes(zb_socket_t* socket, int option, const void* value,
                        size_t size);
/* Reads an integer option into *value. */
int zb_socket_get_int(zb_socket_t* socket, int option, int64_t* value);
/* Reads a byte-string option into buf[0..capacity); *size receives its
 * length.  ZB_ERR_RANGE (with *size set to what is needed, where ZeroMQ
 * says) when the buffer is too small. */
int zb_socket_get_bytes(zb_socket_t* socket, int option, void* buf,
                        size_t capacity, size_t* size);

/* Binds / connects / unbinds / disconnects an endpoint ("tcp://127.0.0.1:*",
 * "ipc:///tmp/x", "inproc://name").  A bad or unusable endpoint fails with
 * ZB_ERR_ZMQ and ZeroMQ's message. */
int zb_socket_bind(zb_socket_t* socket, const char* endpoint);
int zb_socket_connect(zb_socket_t* socket, const char* endpoint);
int zb_socket_unbind(zb_socket_t* socket, const char* endpoint);
int zb_socket_disconnect(zb_socket_t* socket, const char* endpoint);

/* Copies the last bound or connected endpoint, NUL-terminated, into
 * buf[0..capacity) -- after binding "tcp://127.0.0.1:*" it holds the
 * actual port.  ZB_ERR_RANGE when it does not fit (256 bytes always do). */
int zb_socket_last_endpoint(zb_socket_t* socket, char* buf, size_t capacity);

/* Sends one multipart message of `count` (>= 1) frames without blocking.
 * The bytes are copied.  ZB_ERR_AGAIN at the high-water mark,
 * ZB_ERR_UNREACHABLE for an unknown ROUTER peer with
 * ZB_OPT_ROUTER_MANDATORY; nothing is sent in either case. */
int zb_socket_send(zb_socket_t* socket, size_t count, const void* const* data,
                   const size_t* sizes);

/* Sets the callback that receives every message arriving on the socket,
 * and starts watching the socket.  Replaces (and releases) a previous
 * callback; fn == NULL stops watching.  Messages are read in batches, one
 * call per message. */
int zb_socket_on_readable(zb_socket_t* socket, zb_frames_fn fn, void* user,
                          zb_free_fn free_user);

/* ---- CURVE encryption and authentication -------------------------------
 *
 * docs/security.md: a broker endpoint that takes CURVE clients only lets in
 * those whose public key is in its allowlist.  Clients and workers give the
 * broker's public key and their own key pair to the *_new_curve variants of
 * their constructors.  Keys are NUL-terminated Z85 strings of 40
 * characters (what `zb keygen` writes); secret keys are never copied into
 * error messages.  Any thread. */

typedef struct zb_curve_keys_t {
  const char* server_public_key; /* the broker's public key */
  const char* public_key;        /* ours; NULL: derived from secret_key */
  const char* secret_key;        /* ours */
} zb_curve_keys_t;

/* 1 when the libzmq in use has CURVE (zmq_has("curve")), else 0. */
int zb_has_curve(void);

/* Writes a new key pair, each 40 characters + NUL, into public_key[41] and
 * secret_key[41].  ZB_ERR_STATE when libzmq has no CURVE. */
int zb_curve_keypair(char* public_key, char* secret_key);

/* Writes the public key of `secret_key` into public_key[41]. */
int zb_curve_public(const char* secret_key, char* public_key);

/* ---- Client options: broker lists and the endpoint policy ---------------
 *
 * The `endpoint` of every client constructor is one broker or a
 * comma-separated list of brokers ("tcp://a:5555,tcp://b:5555"; at most 64,
 * in the order given, no duplicate, no empty item, spaces around an item
 * ignored; a bad list fails with ZB_ERR_ZMQ naming what is wrong, like a bad
 * endpoint).  What a client does with more than one broker is its endpoint
 * policy (docs/ha.md):
 *
 *   ZB_ENDPOINT_FAILOVER  one broker at a time, the first one first.  When
 *       the client's own timeout/retry/reopen logic gives up on the current
 *       broker, it reopens to the next one of the list (cyclically), counts
 *       a failover (zb_consensus_client_failovers, zb_mdp_client_failovers)
 *       and re-sends what is outstanding by its usual rules.  The default,
 *       and what a fail-over pair of zb-brokers ([ha]) needs.
 *   ZB_ENDPOINT_SPREAD    requests round-robin across every broker of the
 *       list that is connected, a dead one skipped: for many independent
 *       brokers that share the load, never for a fail-over pair (the
 *       passive broker drops what it is sent).
 *
 * With a single endpoint both policies behave the same.  The values are
 * zb::EndpointPolicy's; "failover" and "spread" are their names in
 * config files, flags and Python. */
enum { ZB_ENDPOINT_FAILOVER = 0, ZB_ENDPOINT_SPREAD = 1 };

/* The options of zb_consensus_client_new_ex() and zb_mdp_client_new_ex().
 * Fill it with zb_client_options_init() first, then set what you need:
 * `size` lets a later library add fields without breaking callers built
 * against this header (a caller's bytes past the fields this library knows
 * must be 0, else ZB_ERR_INVALID; a size smaller than this version's is
 * ZB_ERR_INVALID too). */
typedef struct zb_client_options_t {
  size_t size;                  /* sizeof(zb_client_options_t) */
  int endpoint_policy;          /* ZB_ENDPOINT_* [ZB_ENDPOINT_FAILOVER] */
  const zb_curve_keys_t* curve; /* CURVE keys; NULL: plaintext [NULL] */
} zb_client_options_t;

/* Sets `size` and every field to its default.  Any thread. */
int zb_client_options_init(zb_client_options_t* options);

/* The ZB_ENDPOINT_* value named `name` ("failover" or "spread", exactly)
 * into *policy; ZB_ERR_INVALID, with a message naming the word and the
 * two accepted, for anything else.  Any thread. */
int zb_endpoint_policy_parse(const char* name, int* policy);

/* "failover" or "spread" (static storage); NULL for an unknown value.  Any
 * thread. */
const char* zb_endpoint_policy_name(int policy);

/* ---- Consensus (CCp100) clients, workers and brokers ---------------------
 *
 * docs/consensus.md and docs/protocols/ccp.md describe the protocol: a
 * request goes to every worker of its service and succeeds only when all
 * of them answer success.  These objects live on a reactor: create, use and
 * destroy them on its owner thread (except the zb_responder_* functions).
 * The reactor owns them: zb_reactor_destroy() destroys those still alive,
 * clients first, then workers, then brokers. */

/* Outcome of a consensus request. */
enum {
  ZB_RESULT_SUCCESS = 0, /* every worker answered success */
  ZB_RESULT_FAILURE = 1, /* a worker, the broker or the client failed it */
  ZB_RESULT_TIMEOUT = 2  /* no answer in time and no retries left */
};

/* Who failed a request (ZB_RESULT_FAILURE only). */
enum {
  ZB_FAILED_BY_NONE = 0,
  /* A worker answered failure: the frames are its payload as sent. */
  ZB_FAILED_BY_WORKER = 1,
  /* The broker failed it: the reason is its code ("zb:no-workers",
   * "zb:timeout", "zb:worker-failed", "zb:worker-left", "zb:bad-sequence",
   * "zb:shutdown", ...) and the frames are [code, human-readable text]. */
  ZB_FAILED_BY_BROKER = 2,
  /* The client failed it without an answer: "zb:client-closed" (destroyed
   * with the request open), "zb:invalid-request", "zb:not-connected". */
  ZB_FAILED_BY_CLIENT = 3
};

typedef struct zb_consensus_client_t zb_consensus_client_t;

/* Receives the outcome of a request, exactly once, on the reactor thread.
 *   result     ZB_RESULT_*
 *   failed_by  ZB_FAILED_BY_* (ZB_FAILED_BY_NONE unless ZB_RESULT_FAILURE)
 *   reason     "" on success; the code for broker and client failures; for
 *              a worker failure the worker's first payload frame up to its
 *              first NUL; "timeout" on ZB_RESULT_TIMEOUT
 *   attempts   how many times the request was sent
 *   frames     on success every worker's payload frames, in the broker's
 *              worker order; on failure see ZB_FAILED_BY_*; none on timeout
 * Everything is valid only during the call. */
typedef void (*zb_consensus_reply_fn)(void* user, int result, int failed_by,
                                      const char* reason, int attempts,
                                      size_t count, const void* const* data,
                                      const size_t* sizes);

/* Creates a client connected to a consensus broker at `endpoint` (one, or
 * a comma-separated list used with the default ZB_ENDPOINT_FAILOVER; see
 * "Client options").  A bad endpoint fails here (ZB_ERR_ZMQ).  The reactor
 * owns the client. */
int zb_consensus_client_new(zb_reactor_t* reactor, const char* endpoint,
                            zb_consensus_client_t** out);
/* The same with CURVE keys (NULL: plaintext).  Bad keys fail here
 * (ZB_ERR_INVALID). */
int zb_consensus_client_new_curve(zb_reactor_t* reactor, const char* endpoint,
                                  const zb_curve_keys_t* curve,
                                  zb_consensus_client_t** out);
/* The same with options (NULL: the defaults): the endpoint policy for a
 * list of brokers and CURVE keys (see "Client options" above).  An unknown
 * policy, a bad `size` or bad keys fail here (ZB_ERR_INVALID). */
int zb_consensus_client_new_ex(zb_reactor_t* reactor, const char* endpoint,
                               const zb_client_options_t* options,
                               zb_consensus_client_t** out);

/* Destroys the client.  Requests still open end at once with
 * ZB_RESULT_FAILURE / ZB_FAILED_BY_CLIENT / "zb:client-closed", and failures
 * known at request time ("zb:invalid-request", ...) not delivered yet are
 * delivered; all these callbacks run inside this call, and none of the
 * client's callbacks runs after it returns.  Called from inside one of the
 * client's own callbacks, the destruction is finished right after that callback
 * returns.  The handle is invalid once this returns.  NULL is a no-op. */
int zb_consensus_client_destroy(zb_consensus_client_t* client);

/* Sends `count` payload frames (0 sends one empty frame; copied) to every
 * worker of `service`.  Each attempt waits `timeout_us` (> 0) for the
 * broker's answer; after a timed-out attempt the request is sent again, up
 * to `retries` (>= 0) times.  fn(user, ...) is called exactly once with the
 * outcome -- never inside this call -- and free_user(user) right after. */
int zb_consensus_client_request(zb_consensus_client_t* client,
                                const void* service, size_t service_size,
                                size_t count, const void* const* data,
                                const size_t* sizes, int64_t timeout_us,
                                int retries, zb_consensus_reply_fn fn,
                                void* user, zb_free_fn free_user);

/* Flags of zb_consensus_client_request_flags(). */
enum {
  /* When the broker answers "zb:no-workers" (no worker has registered for
   * the service yet, e.g. the client started together with its workers),
   * send the request again with a growing backoff (10 ms, doubling, at most
   * 500 ms) for as long as the attempt's timeout allows; then it ends with
   * the broker's last "zb:no-workers".  Off by default (see
   * docs/consensus.md: the broker's immediate answer tells a caller at once
   * that a service has no workers). */
  ZB_REQUEST_RETRY_NO_WORKERS = 1
};

/* zb_consensus_client_request() with `flags`, a bitwise OR of
 * ZB_REQUEST_* (0 is zb_consensus_client_request()).  Unknown bits fail
 * with ZB_ERR_INVALID. */
int zb_consensus_client_request_flags(zb_consensus_client_t* client,
                                      const void* service, size_t service_size,
                                      size_t count, const void* const* data,
                                      const size_t* sizes, int64_t timeout_us,
                                      int retries, int flags,
                                      zb_consensus_reply_fn fn, void* user,
                                      zb_free_fn free_user);

/* Sends PING; fn(user, code, message) gets ZB_OK when the broker echoes it
 * within `timeout_us`, ZB_ERR_TIMEOUT when not, ZB_ERR_CANCELLED when the
 * client is destroyed first. */
int zb_consensus_client_ping(zb_consensus_client_t* client, int64_t timeout_us,
                             zb_status_fn fn, void* user, zb_free_fn free_user);

/* The number of requests that have not ended yet. */
int zb_consensus_client_open_requests(zb_consensus_client_t* client,
                                      size_t* count);

/* ZB_ENDPOINT_FAILOVER: how many times the client moved to the next broker
 * of its endpoint list.  0 with one endpoint, and with ZB_ENDPOINT_SPREAD
 * (nothing moves; docs/consensus.md). */
int zb_consensus_client_failovers(zb_consensus_client_t* client,
                                  uint64_t* count);

typedef struct zb_consensus_worker_t zb_consensus_worker_t;

/* A request's reply token, handed to the worker's handler, which owns it.
 * It must be consumed exactly once by zb_responder_succeed(),
 * zb_responder_fail() or zb_responder_discard() -- at once in the handler,
 * or later, from any thread.  The token is freed by that call; using it
 * again is undefined.  A token may outlive its worker and its reactor (the
 * answer is then dropped). */
typedef struct zb_responder_t zb_responder_t;

/* Receives one request: its payload frames (valid only during the call)
 * and the token to answer it with. */
typedef void (*zb_consensus_handler_fn)(void* user, zb_responder_t* responder,
                                        size_t count, const void* const* data,
                                        const size_t* sizes);

/* Creates a worker for `service` connected to a consensus broker at
 * `endpoint`; it sends READY and heartbeats every `heartbeat_interval_us`
 * (<= 0: 1 s), and reconnects after `heartbeat_liveness` (<= 0: 3) silent
 * intervals.  handler(user, ...) gets every request on the reactor thread;
 * free_user(user) is called when the worker is destroyed.  A bad endpoint
 * fails here (ZB_ERR_ZMQ).
 *
 * `endpoint` may be a comma-separated list of brokers
 * ("tcp://a:5556,tcp://b:5556"; at most 64, no duplicate, no empty item):
 * the worker then registers with every one of them at once, each with its
 * own connection, heartbeats and reconnects, and every request is answered
 * to the broker it came from (a token of a connection that has since been
 * lost is dropped).  Destroying the worker sends DISCONNECT to each.  The
 * same holds for zb_mdp_worker_new(). */
int zb_consensus_worker_new(zb_reactor_t* reactor, const char* endpoint,
                            const void* service, size_t service_size,
                            int64_t heartbeat_interval_us,
                            int heartbeat_liveness,
                            zb_consensus_handler_fn handler, void* user,
                            zb_free_fn free_user, zb_consensus_worker_t** out);
/* The same with CURVE keys (NULL: plaintext). */
int zb_consensus_worker_new_curve(
    zb_reactor_t* reactor, const char* endpoint, const void* service,
    size_t service_size, int64_t heartbeat_interval_us, int heartbeat_liveness,
    const zb_curve_keys_t* curve, zb_consensus_handler_fn handler, void* user,
    zb_free_fn free_user, zb_consensus_worker_t** out);

/* Sends DISCONNECT and destroys the worker; tokens still out stay valid
 * and their answers are dropped.  From inside the worker's own handler the
 * destruction is finished right after the handler returns.  NULL is a
 * no-op. */
int zb_consensus_worker_destroy(zb_consensus_worker_t* worker);

/* Answers a request with REPLY_SUCCESS and these payload frames (copied; 0
 * frames sends one empty frame), and frees the token.  Any thread. */
int zb_responder_succeed(zb_responder_t* responder, size_t count,
                         const void* const* data, const size_t* sizes);
/* Answers with REPLY_FAILURE and these payload frames; by convention the
 * first frame says why.  It must not start with "zb:" (reserved for the
 * broker's own codes).  Frees the token.  Any thread. */
int zb_responder_fail(zb_responder_t* responder, size_t count,
                      const void* const* data, const size_t* sizes);
/* Frees the token without a deliberate answer: the worker answers
 * REPLY_FAILURE ["worker:unanswered"].  Any thread.  NULL is a no-op. */
int zb_responder_discard(zb_responder_t* responder);

typedef struct zb_consensus_broker_t zb_consensus_broker_t;

/* Creates a consensus broker on the reactor (in-process; zb-broker is the
 * daemon for deployments).  Requests not answered by every worker within
 * `request_timeout_us` (<= 0: 5 s) fail with "zb:timeout".  Bind it with
 * zb_consensus_broker_bind().  Log lines of level warning and above go to
 * stderr unless zb_consensus_broker_set_log() says otherwise. */
int zb_consensus_broker_new(zb_reactor_t* reactor, int64_t request_timeout_us,
                            zb_consensus_broker_t** out);

/* Answers open requests with "zb:shutdown", sends DISCONNECT to the
 * workers and destroys the broker.  Called from inside the broker's own log
 * callback, the destruction is finished on the reactor's next iteration.
 * NULL is a no-op. */
int zb_consensus_broker_destroy(zb_consensus_broker_t* broker);

/* Binds the broker's ROUTER socket (may be called several times).  When
 * `resolved` is not NULL it receives the actual endpoint, NUL-terminated
 * (the port chosen for "tcp://127.0.0.1:*"); ZB_ERR_RANGE when it does not
 * fit (the bind itself has then succeeded). */
int zb_consensus_broker_bind(zb_consensus_broker_t* broker,
                             const char* endpoint, char* resolved,
                             size_t capacity);

/* Sends the broker's log lines to fn(user, level, line) (any level); NULL
 * restores the default (warnings and errors on stderr).  Replaces and
 * releases a previous sink. */
int zb_consensus_broker_set_log(zb_consensus_broker_t* broker, zb_log_fn fn,
                                void* user, zb_free_fn free_user);

/* The number of workers registered for `service`. */
int zb_consensus_broker_worker_count(zb_consensus_broker_t* broker,
                                     const void* service, size_t service_size,
                                     size_t* count);

/* ---- Majordomo (MDP/0.1) clients, workers and brokers ---------------------
 *
 * docs/majordomo.md describes them: the standard Majordomo protocol (ZeroMQ
 * RFC 7, with the MMI extension of RFC 8), so any MDP peer in any language
 * interoperates.  A request goes to one idle worker of its service.  As
 * with the consensus objects, they live on a reactor and are used on its
 * thread (except zb_mdp_reply / zb_mdp_replier_discard); the reactor
 * destroys those still alive (clients, workers, brokers). */

typedef struct zb_mdp_client_t zb_mdp_client_t;

/* Receives the outcome of an MDP request, exactly once, on the reactor
 * thread: code ZB_OK with the reply frames; ZB_ERR_TIMEOUT when no reply
 * came after all retries; ZB_ERR_CANCELLED when the client was destroyed
 * first; another ZB_ERR_* for other failures.  `message` is "" on success.
 * Everything is valid only during the call. */
typedef void (*zb_mdp_reply_fn)(void* user, int code, const char* message,
                                size_t count, const void* const* data,
                                const size_t* sizes);

/* Creates an asynchronous MDP client connected to `endpoint` (one, or a
 * comma-separated list used with ZB_ENDPOINT_FAILOVER), with the
 * default per-request timeout `timeout_us` (<= 0: 2.5 s) and number of
 * resends after a timeout `retries` (< 0: 0).  A timeout makes the client
 * reopen its socket and resend what is outstanding (see
 * zbrokers/majordomo/client.h). A bad endpoint fails here (ZB_ERR_ZMQ). */
int zb_mdp_client_new(zb_reactor_t* reactor, const char* endpoint,
                      int64_t timeout_us, int retries, zb_mdp_client_t** out);
/* The same with CURVE keys (NULL: plaintext). */
int zb_mdp_client_new_curve(zb_reactor_t* reactor, const char* endpoint,
                            int64_t timeout_us, int retries,
                            const zb_curve_keys_t* curve,
                            zb_mdp_client_t** out);
/* The same with options (NULL: the defaults): the endpoint policy for a
 * list of brokers and CURVE keys (see "Client options" above). */
int zb_mdp_client_new_ex(zb_reactor_t* reactor, const char* endpoint,
                         int64_t timeout_us, int retries,
                         const zb_client_options_t* options,
                         zb_mdp_client_t** out);

/* Destroys the client; outstanding requests end with ZB_ERR_CANCELLED
 * (their callbacks run inside this call).  From inside one of its own
 * callbacks the destruction is finished on the next loop iteration.  NULL
 * is a no-op. */
int zb_mdp_client_destroy(zb_mdp_client_t* client);

/* Sends `count` frames (copied; 0 sends one empty frame) to `service`
 * (e.g. "echo", or "mmi.service" to ask whether a service exists).
 * `timeout_us` > 0 overrides the client's default for this request.
 * fn(user, ...) is called exactly once, never inside this call, and
 * free_user(user) right after.  Each reply completes the request it
 * answers: with zb-broker through request tags (negotiated per connection),
 * with another broker by keeping one request per service on the wire and
 * queueing the rest (docs/majordomo.md). */
int zb_mdp_client_request(zb_mdp_client_t* client, const void* service,
                          size_t service_size, size_t count,
                          const void* const* data, const size_t* sizes,
                          int64_t timeout_us, zb_mdp_reply_fn fn, void* user,
                          zb_free_fn free_user);

/* The number of requests without an outcome yet. */
int zb_mdp_client_outstanding(zb_mdp_client_t* client, size_t* count);

/* ZB_ENDPOINT_FAILOVER: how many times the client moved to the next broker
 * of its endpoint list; ZB_ENDPOINT_SPREAD: how many times a broker came to
 * look dead (docs/majordomo.md).  0 with one endpoint. */
int zb_mdp_client_failovers(zb_mdp_client_t* client, uint64_t* count);

typedef struct zb_mdp_worker_t zb_mdp_worker_t;

/* A request's reply token, owned by the handler that received it.  Consume
 * it exactly once with zb_mdp_reply() (any thread, at once or later) or
 * zb_mdp_replier_discard().  A worker serves one request at a time (RFC 7)
 * per broker: a broker sends it nothing new until it replies.  The token may
 * outlive its worker and reactor; the reply is then dropped.  A token that is
 * never consumed holds its request (and the worker) for good: always consume
 * it. */
typedef struct zb_mdp_replier_t zb_mdp_replier_t;

typedef void (*zb_mdp_handler_fn)(void* user, zb_mdp_replier_t* replier,
                                  size_t count, const void* const* data,
                                  const size_t* sizes);

/* Creates a worker for `service` connected to an MDP broker at `endpoint`
 * (one endpoint, or a comma-separated list of brokers to register with
 * all at once, as for zb_consensus_worker_new(); RFC 7's one request at a
 * time then holds per broker, so the handler may hold one token per
 * broker) and sends READY.  It heartbeats every `heartbeat_interval_us` (<= 0:
 * 2.5 s; must match the broker's), treats the broker as gone after
 * `heartbeat_liveness` (<= 0: 3) silent intervals, and reconnects after
 * `reconnect_delay_us` (< 0: 1 s).  handler(user, ...) gets every request;
 * free_user(user) is called when the worker is destroyed.  A bad endpoint
 * fails here (ZB_ERR_ZMQ). */
int zb_mdp_worker_new(zb_reactor_t* reactor, const char* endpoint,
                      const void* service, size_t service_size,
                      int64_t heartbeat_interval_us, int heartbeat_liveness,
                      int64_t reconnect_delay_us, zb_mdp_handler_fn handler,
                      void* user, zb_free_fn free_user, zb_mdp_worker_t** out);
/* The same with CURVE keys (NULL: plaintext). */
int zb_mdp_worker_new_curve(zb_reactor_t* reactor, const char* endpoint,
                            const void* service, size_t service_size,
                            int64_t heartbeat_interval_us,
                            int heartbeat_liveness, int64_t reconnect_delay_us,
                            const zb_curve_keys_t* curve,
                            zb_mdp_handler_fn handler, void* user,
                            zb_free_fn free_user, zb_mdp_worker_t** out);

/* Sends DISCONNECT and destroys the worker.  From inside its own handler
 * the destruction is finished on the next loop iteration.  NULL is a
 * no-op. */
int zb_mdp_worker_destroy(zb_mdp_worker_t* worker);

/* Sends the reply (copied; 0 frames sends one empty frame) and frees the
 * token.  Any thread.  When the frames are invalid (ZB_ERR_INVALID) the
 * token is freed all the same, as by zb_mdp_replier_discard(). */
int zb_mdp_reply(zb_mdp_replier_t* replier, size_t count,
                 const void* const* data, const size_t* sizes);

/* Frees the token without replying: the request is given back.  The
 * worker sends the broker DISCONNECT and reconnects (after its reconnect
 * delay), so the broker redispatches every request the worker held to
 * another worker, or drops one that failed max_redispatch times; the same
 * policy as a dropped zb::MdpWorker::Replier in C++ and an unsent MdpReply
 * in Python (docs/majordomo.md).  MDP has no failure reply: to tell the
 * client, reply with an error of your own making instead.  Any thread.
 * NULL is a no-op. */
int zb_mdp_replier_discard(zb_mdp_replier_t* replier);

typedef struct zb_mdp_broker_t zb_mdp_broker_t;

/* Creates an in-process Majordomo broker on the reactor (zb-broker is the
 * daemon).  Heartbeats every `heartbeat_interval_us` (<= 0: 2.5 s; workers
 * must use the same), drops workers silent for `heartbeat_liveness` (<= 0:
 * 3) intervals.  Warnings go to stderr unless zb_mdp_broker_set_log() says
 * otherwise. */
int zb_mdp_broker_new(zb_reactor_t* reactor, int64_t heartbeat_interval_us,
                      int heartbeat_liveness, zb_mdp_broker_t** out);

/* Destroys the broker (it sends nothing; requests in flight are lost).
 * Called from inside the broker's own log callback, the destruction is
 * finished on the reactor's next iteration.  NULL is a no-op. */
int zb_mdp_broker_destroy(zb_mdp_broker_t* broker);

/* Binds like zb_consensus_broker_bind(). */
int zb_mdp_broker_bind(zb_mdp_broker_t* broker, const char* endpoint,
                       char* resolved, size_t capacity);

/* Sends the broker's log lines (worker joins/leaves at ZB_LOG_INFO;
 * refusals and malformed messages at ZB_LOG_WARNING; each kind rate-limited
 * by the broker, with a count of what was held back) to fn(user, level,
 * line); NULL restores the default. */
int zb_mdp_broker_set_log(zb_mdp_broker_t* broker, zb_log_fn fn, void* user,
                          zb_free_fn free_user);

/* The number of workers registered for `service`. */
int zb_mdp_broker_worker_count(zb_mdp_broker_t* broker, const void* service,
                               size_t service_size, size_t* count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ZB_BINDINGS_C_ZB_H_ */
