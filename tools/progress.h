#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace estuary::cli {

// A progress bar for a job made of named stages, drawn on stderr when it is a terminal:
//   [#######.............] 2/5 build  3.4 s
// It appears only once the job has run for a moment, so quick jobs print nothing, and it
// erases itself when done, leaving stdout's summary clean.
class ProgressBar {
 public:
  ProgressBar(std::vector<std::string> stages, bool enabled);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Marks the stages before `stage` done and `stage` running.
  void enter(size_t stage);
  // Stops drawing and erases the bar.
  void finish();

 private:
  void draw(std::chrono::steady_clock::time_point now);
  void loop();

  const std::vector<std::string> stages_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::condition_variable wake_;
  size_t stage_ = 0;
  bool done_ = false;
  bool drawn_ = false;
  std::thread thread_;
};

}  // namespace estuary::cli
