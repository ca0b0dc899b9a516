// Copyright delayq authors.

#include "tools/delayq/table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace delayq {
namespace cli {

std::string Table(const std::vector<Row>& rows, size_t first_number) {
  std::vector<size_t> width;
  for (const Row& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t c = 0; c < row.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  }
  std::string out;
  for (const Row& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) line += "  ";
      const std::string pad(width[c] - row[c].size(), ' ');
      const bool last = c + 1 == row.size();
      if (c >= first_number) {
        absl::StrAppend(&line, pad, row[c]);
      } else {
        absl::StrAppend(&line, row[c], last ? "" : pad);
      }
    }
    absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(line), "\n");
  }
  return out;
}

}  // namespace cli
}  // namespace delayq
