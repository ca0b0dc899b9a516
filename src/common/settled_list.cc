// Copyright delayq authors.

#include "src/common/settled_list.h"

#include <string>
#include <utility>

namespace delayq {
namespace internal {

void NoteSettled(std::vector<Settled>* to, Settled::Kind kind,
                 absl::string_view id, absl::string_view topic,
                 absl::string_view error) {
  if (to == nullptr) return;
  Settled s;
  s.kind = kind;
  s.id = std::string(id);
  s.topic = std::string(topic);
  s.error = std::string(error);
  to->push_back(std::move(s));
}

void AppendSettled(std::vector<Settled> from, std::vector<Settled>* to) {
  if (to == nullptr) return;
  if (to->empty()) {
    *to = std::move(from);
    return;
  }
  for (Settled& s : from) to->push_back(std::move(s));
}

}  // namespace internal
}  // namespace delayq
