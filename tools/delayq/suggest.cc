// Copyright delayq authors.

#include "tools/delayq/suggest.h"

#include <algorithm>
#include <vector>

namespace delayq {
namespace cli {
namespace {

// Optimal string alignment distance: edits of one letter, and swaps of
// two neighbouring letters ("stast" for "stats").
int EditDistance(absl::string_view a, absl::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] =
          std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

}  // namespace

std::string DidYouMean(absl::string_view typed,
                       const std::vector<std::string>& known) {
  // Words longer than any command or flag are no slip; and the table
  // above stays small.
  if (typed.empty() || typed.size() > 64) return "";
  const int allowed = typed.size() <= 4 ? 1 : 2;
  std::string best;
  int best_distance = allowed + 1;
  for (const std::string& word : known) {
    const int d = EditDistance(typed, word);
    if (d < best_distance) {
      best = word;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace cli
}  // namespace delayq
