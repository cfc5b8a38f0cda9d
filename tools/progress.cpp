#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace estuary::cli {

namespace {

constexpr auto kQuietPeriod = std::chrono::milliseconds(700);
constexpr auto kRedrawPeriod = std::chrono::milliseconds(100);
constexpr size_t kBarWidth = 24;

}  // namespace

ProgressBar::ProgressBar(std::vector<std::string> stages, bool enabled) : stages_(std::move(stages)) {
  if (enabled && isatty(STDERR_FILENO)) thread_ = std::thread([this] { loop(); });
}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::enter(size_t stage) {
  std::lock_guard<std::mutex> lock(mutex_);
  stage_ = stage;
}

void ProgressBar::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ProgressBar::draw(std::chrono::steady_clock::time_point now) {
  double seconds = std::chrono::duration<double>(now - started_).count();
  size_t filled = stages_.empty() ? 0 : stage_ * kBarWidth / stages_.size();
  std::string bar(filled, '#');
  bar.resize(kBarWidth, '.');
  const std::string& name = stage_ < stages_.size() ? stages_[stage_] : std::string();
  std::fprintf(stderr, "\r\033[K[%s] %zu/%zu %s  %.1f s", bar.c_str(), stage_ + 1, stages_.size(), name.c_str(),
               seconds);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!done_) {
    wake_.wait_for(lock, kRedrawPeriod);
    auto now = std::chrono::steady_clock::now();
    if (!done_ && now - started_ >= kQuietPeriod) draw(now);
  }
  if (drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
}

}  // namespace estuary::cli
