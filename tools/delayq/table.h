// Copyright delayq authors.
//
// Text tables for the commands that list things (stats, list, schedule
// list).

#ifndef DELAYQ_TOOLS_DELAYQ_TABLE_H_
#define DELAYQ_TOOLS_DELAYQ_TABLE_H_

#include <cstddef>
#include <string>
#include <vector>

namespace delayq {
namespace cli {

using Row = std::vector<std::string>;

// Columns padded to their widest cell; columns from `first_number` on are
// right-aligned. One line per row, trailing blanks trimmed.
std::string Table(const std::vector<Row>& rows, size_t first_number);

}  // namespace cli
}  // namespace delayq

#endif  // DELAYQ_TOOLS_DELAYQ_TABLE_H_
