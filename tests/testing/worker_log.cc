// Copyright delayq authors.

#include "tests/testing/worker_log.h"

#include <sstream>

namespace delayq {
namespace testing {

void AddToWorkerLog(const std::vector<std::string>& lines, WorkerLog* log) {
  for (const std::string& line : lines) {
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "P") {
      std::string id;
      fields >> id;
      log->produced.push_back(id);
    } else if (kind == "R") {
      WorkerLog::Reservation r;
      fields >> r.id >> r.token >> r.now_us >> r.deadline_us;
      log->reserved.push_back(r);
    } else if (kind == "I") {
      std::string id;
      fields >> id;
      log->acking.push_back(id);
    } else if (kind == "A") {
      WorkerLog::AckRecord a;
      fields >> a.id >> a.token >> a.code;
      log->acked.push_back(a);
    }
  }
}

}  // namespace testing
}  // namespace delayq
