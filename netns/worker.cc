#include "netns/worker.h"

#include <pthread.h>

#include <exception>

#include "core/logging.h"

namespace okna::netns {

Worker::Worker(core::HealthRegistry* health, std::string name, std::chrono::milliseconds maxSilence)
    : health_(health), name_(std::move(name)) {
  if (health_ != nullptr) health_->addHeartbeat(name_, maxSilence);
  thread_ = std::thread([this] {
    // Named for top/perf (15 chars at most): "okna-" + the worker's name.
    pthread_setname_np(pthread_self(), ("okna-" + name_).substr(0, 15).c_str());
    run();
  });
}

Worker::~Worker() {
  stop();
}

bool Worker::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return false;
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
  return true;
}

void Worker::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    tasks_.clear();
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void Worker::beat() {
  if (health_ != nullptr) health_->beat(name_);
}

void Worker::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      // The timeout is the idle heartbeat, not a synchronisation.
      while (!stopping_ && tasks_.empty()) {
        lock.unlock();
        beat();
        lock.lock();
        wake_.wait_for(lock, kIdleBeat, [this] { return stopping_ || !tasks_.empty(); });
      }
      if (stopping_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    beat();
    try {
      task();
    } catch (const std::exception& e) {
      // Tasks report errors as values; an exception is a bug, but must not kill the agent.
      core::logger("netns")->error("{}: task threw: {}", name_, e.what());
    }
    beat();
  }
}

}  // namespace okna::netns
