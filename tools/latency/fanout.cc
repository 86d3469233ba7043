// Copyright 2026 The zbrokers Authors.

#include "tools/latency/fanout.h"

#include <cstdio>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "tools/latency/raw_consensus.h"
#include "zbrokers/consensus/broker.h"
#include "zbrokers/consensus/client.h"
#include "zbrokers/consensus/worker.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace zb::latency {

std::string_view ImplName(Impl impl) {
  return impl == Impl::kZbrokers ? "zbrokers" : "raw";
}

namespace {

// --- zbrokers
// ------------------------------------------------------------------

class ZbBrokerHost : public BrokerHost {
 public:
  static absl::StatusOr<std::unique_ptr<BrokerHost>> Start(
      zmq::context_t& context, const std::string& bind_endpoint,
      std::chrono::milliseconds request_timeout,
      const Reactor::Options& reactor) {
    auto host = std::make_unique<ZbBrokerHost>(reactor);
    absl::Status st = host->thread_.Invoke([&](Reactor& r) -> absl::Status {
      ConsensusBroker::Options options;
      options.request_timeout = request_timeout;
      absl::StatusOr<std::unique_ptr<ConsensusBroker>> broker =
          ConsensusBroker::Create(r, context, options);
      if (!broker.ok()) return broker.status();
      host->broker_ = *std::move(broker);
      // Worker joins are logged at kInfo; the test adds workers all the
      // time, so only warnings and errors reach stderr.
      host->broker_->set_log_hook([](LogLevel level, std::string_view line) {
        if (level >= LogLevel::kWarning) {
          std::fprintf(stderr, "consensus broker: %.*s\n",
                       static_cast<int>(line.size()), line.data());
        }
      });
      if (absl::Status b = host->broker_->Bind(bind_endpoint); !b.ok()) {
        return b;
      }
      host->endpoint_ = host->broker_->endpoints().front();
      return absl::OkStatus();
    });
    if (!st.ok()) return st;
    return host;
  }

  explicit ZbBrokerHost(const Reactor::Options& reactor) : thread_(reactor) {}
  ~ZbBrokerHost() override {
    thread_.Invoke([this](Reactor&) { broker_.reset(); });
  }

  const std::string& endpoint() const override { return endpoint_; }

 private:
  ReactorThread thread_;
  std::unique_ptr<ConsensusBroker> broker_;  // lives on thread_
  std::string endpoint_;
};

class ZbWorkerHost : public WorkerHost {
 public:
  ZbWorkerHost(zmq::context_t& context, std::string endpoint,
               std::string service, const Reactor::Options& reactor)
      : context_(context),
        endpoint_(std::move(endpoint)),
        service_(std::move(service)),
        thread_(reactor) {}

  ~ZbWorkerHost() override {
    thread_.Invoke([this](Reactor&) { workers_.clear(); });
  }

  absl::Status Add(int n) override {
    return thread_.Invoke([&](Reactor& r) -> absl::Status {
      for (int i = 0; i < n; ++i) {
        absl::StatusOr<std::unique_ptr<ConsensusWorker>> w =
            ConsensusWorker::Create(
                r, context_, endpoint_, service_,
                [](std::span<zmq::message_t> payload,
                   ConsensusWorker::Responder responder) {
                  responder.Succeed(payload);  // echo, moving the frames back
                });
        if (!w.ok()) return w.status();
        workers_.push_back(*std::move(w));
      }
      return absl::OkStatus();
    });
  }

  int size() const override { return static_cast<int>(workers_.size()); }

 private:
  zmq::context_t& context_;
  const std::string endpoint_;
  const std::string service_;
  ReactorThread thread_;
  // Created and destroyed on thread_; size() reads the count from the
  // calling thread between invoke()s, which synchronize with the thread.
  std::vector<std::unique_ptr<ConsensusWorker>> workers_;
};

class ZbClient : public ClientEndpoint {
 public:
  static absl::StatusOr<std::unique_ptr<ZbClient>> Create(
      zmq::context_t& context, const std::string& endpoint, std::string service,
      int payload_bytes, bool use_reactor, std::chrono::milliseconds timeout,
      const Reactor::Options& reactor) {
    std::unique_ptr<ZbClient> c(new ZbClient(std::move(service), payload_bytes,
                                             use_reactor, timeout, reactor));
    absl::StatusOr<std::unique_ptr<ConsensusClient>> client =
        ConsensusClient::Create(c->reactor_, context, endpoint);
    if (!client.ok()) return client.status();
    c->client_ = *std::move(client);
    return c;
  }

  bool RoundTrip(int expected_workers) override {
    return Exchange() == expected_workers;
  }
  int Probe() override { return Exchange(); }

 private:
  ZbClient(std::string service, int payload_bytes, bool use_reactor,
           std::chrono::milliseconds timeout, const Reactor::Options& reactor)
      : use_reactor_(use_reactor),
        reactor_(reactor),
        service_(std::move(service)),
        payload_(static_cast<std::size_t>(payload_bytes), 'p'),
        frames_(1) {
    options_.timeout = timeout;
    options_.retries = 0;
  }

  int Exchange() {
    // The payload is built afresh for every request, exactly as the raw
    // client does (zmq_msg_init_size + memcpy).
    frames_[0] = zmq::message_t(payload_.data(), payload_.size());
    done_ = false;
    answer_ = -1;
    auto done = [this](ConsensusClient::Result&& r) {
      done_ = true;
      answer_ = Check(r);
    };
    if (!use_reactor_) {
      // A sequential client: wait in a blocking receive on the socket.
      client_->Call(service_, std::span<zmq::message_t>(frames_), options_,
                    done);
      return answer_;
    }
    client_->Request(service_, std::span<zmq::message_t>(frames_), options_,
                     done);
    while (!done_) {
      // The client's own deadline ends the request; the wait here only
      // bounds one poll.
      if (!reactor_.RunOnce(std::chrono::seconds(1)).ok()) return -1;
    }
    return answer_;
  }

  int Check(const ConsensusClient::Result& r) const {
    if (!r.ok()) return -1;
    for (const zmq::message_t& f : r.payload) {
      if (f.size() != payload_.size() ||
          (!payload_.empty() &&
           std::memcmp(f.data(), payload_.data(), payload_.size()) != 0)) {
        return -1;
      }
    }
    return static_cast<int>(r.payload.size());
  }

  const bool use_reactor_;
  Reactor reactor_;
  std::unique_ptr<ConsensusClient> client_;  // uses reactor_
  const std::string service_;
  const std::string payload_;
  ConsensusClient::RequestOptions options_;
  std::vector<zmq::message_t> frames_;
  bool done_ = false;
  int answer_ = -1;
};

// --- raw
// -------------------------------------------------------------------------

class RawBrokerHost : public BrokerHost {
 public:
  explicit RawBrokerHost(std::unique_ptr<RawBroker> b)
      : broker_(std::move(b)) {}
  const std::string& endpoint() const override { return broker_->endpoint(); }

 private:
  std::unique_ptr<RawBroker> broker_;
};

class RawWorkerHost : public WorkerHost {
 public:
  explicit RawWorkerHost(std::unique_ptr<RawWorkers> w)
      : workers_(std::move(w)) {}
  absl::Status Add(int n) override { return workers_->Add(n); }
  int size() const override { return workers_->size(); }

 private:
  std::unique_ptr<RawWorkers> workers_;
};

class RawClientEndpoint : public ClientEndpoint {
 public:
  RawClientEndpoint(zmq::context_t& context, const std::string& endpoint,
                    std::string service, int payload_bytes,
                    std::chrono::milliseconds timeout)
      : client_(context, endpoint, std::move(service), payload_bytes, timeout) {
  }
  bool RoundTrip(int expected_workers) override {
    return client_.RoundTrip(expected_workers);
  }
  int Probe() override { return client_.Probe(); }

 private:
  RawClient client_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BrokerHost>> StartBroker(
    Impl impl, zmq::context_t& context, const std::string& bind_endpoint,
    std::chrono::milliseconds request_timeout,
    const Reactor::Options& reactor) {
  if (impl == Impl::kZbrokers) {
    return ZbBrokerHost::Start(context, bind_endpoint, request_timeout,
                               reactor);
  }
  absl::StatusOr<std::unique_ptr<RawBroker>> b =
      RawBroker::Start(context, bind_endpoint);
  if (!b.ok()) return b.status();
  return std::make_unique<RawBrokerHost>(std::move(*b));
}

absl::StatusOr<std::unique_ptr<WorkerHost>> StartWorkers(
    Impl impl, zmq::context_t& context, const std::string& endpoint,
    const std::string& service, const Reactor::Options& reactor) {
  if (impl == Impl::kZbrokers) {
    return std::make_unique<ZbWorkerHost>(context, endpoint, service, reactor);
  }
  absl::StatusOr<std::unique_ptr<RawWorkers>> w =
      RawWorkers::Start(context, endpoint, service);
  if (!w.ok()) return w.status();
  return std::make_unique<RawWorkerHost>(std::move(*w));
}

absl::StatusOr<std::unique_ptr<ClientEndpoint>> MakeClient(
    Impl impl, zmq::context_t& context, const std::string& endpoint,
    const std::string& service, int payload_bytes, bool client_uses_reactor,
    std::chrono::milliseconds timeout, const Reactor::Options& reactor) {
  if (impl == Impl::kZbrokers) {
    absl::StatusOr<std::unique_ptr<ZbClient>> c =
        ZbClient::Create(context, endpoint, service, payload_bytes,
                         client_uses_reactor, timeout, reactor);
    if (!c.ok()) return c.status();
    return std::unique_ptr<ClientEndpoint>(*std::move(c));
  }
  try {
    return std::make_unique<RawClientEndpoint>(context, endpoint, service,
                                               payload_bytes, timeout);
  } catch (const zmq::error_t& e) {
    return absl::InternalError(absl::StrFormat(
        "raw client: cannot connect to %s: %s", endpoint, e.what()));
  }
}

}  // namespace zb::latency
