// Copyright delayq authors.
//
// The delayq command-line program: what every subcommand shares — its
// description (name, usage, flags, help), the parsed command line it runs
// with, and the two ways it reports trouble.
//
// Exit codes: 0 success; 1 the command could not do its work (a bad value,
// an unknown id, a store that cannot be opened); 2 the command line itself is
// wrong (unknown subcommand or flag, missing or extra arguments).

#ifndef DELAYQ_TOOLS_DELAYQ_CLI_H_
#define DELAYQ_TOOLS_DELAYQ_CLI_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace delayq {
namespace cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

// FlagSpec
//
// One flag of a subcommand. Flags are spelled --name VALUE, --name=VALUE, or
// -s VALUE for a short name; a flag without a value is a switch.
struct FlagSpec {
  enum class Arg {
    kNone,      // a switch
    kRequired,  // always takes a value
    kDuration,  // optional value; the next argument is taken only if it
                // parses as a duration (for --watch [INTERVAL])
  };
  std::string name;
  char short_name = 0;
  Arg arg = Arg::kNone;
  std::string value_name;  // shown in help: --delay DURATION
  std::string help;
};

struct Context;

// CommandSpec
//
// A subcommand: its usage line, help text, flags and entry point.
struct CommandSpec {
  std::string name;
  std::string usage;    // after "delayq ": "add TOPIC [PAYLOAD | -]"
  std::string summary;  // one line for the program's help
  std::string details;  // paragraphs for the subcommand's help
  std::vector<FlagSpec> flags;
  bool json = false;           // accepts --json
  bool takes_command = false;  // accepts "-- COMMAND [ARGS...]"
  int (*run)(const Context&) = nullptr;
};

// Context
//
// One parsed command line.
struct Context {
  const CommandSpec* spec = nullptr;
  std::vector<std::string> args;             // positional arguments
  std::vector<std::string> command;          // everything after "--"
  bool has_command = false;                  // "--" was given
  std::map<std::string, std::string> flags;  // name -> value ("" for a switch)

  bool Has(absl::string_view name) const;
  // The flag's value, or `fallback` when it was not given.
  std::string Get(absl::string_view name,
                  absl::string_view fallback = "") const;
  bool json() const { return Has("json"); }
};

// UsageError()
//
// Prints "delayq CMD: <problem>" and the usage line on stderr; returns 2.
int UsageError(const Context& ctx, absl::string_view problem);

// Fail()
//
// Prints "delayq: <message>" on stderr; returns 1.
int Fail(absl::string_view message);
int Fail(const absl::Status& status);

// The subcommands, one function per file group.
const CommandSpec& AddCommand();
const CommandSpec& BatchCommand();
const CommandSpec& StatsCommand();
const CommandSpec& ListCommand();
const CommandSpec& WorkersCommand();
const CommandSpec& GetCommand();
const CommandSpec& WaitCommand();
const CommandSpec& CancelCommand();
const CommandSpec& KickCommand();
const CommandSpec& LimitCommand();
const CommandSpec& PauseCommand();
const CommandSpec& ResumeCommand();
const CommandSpec& RetryCommand();
const CommandSpec& PromoteCommand();
const CommandSpec& PurgeCommand();
const CommandSpec& ScheduleCommand();
const CommandSpec& WorkCommand();
const CommandSpec& ServeCommand();

}  // namespace cli
}  // namespace delayq

#endif  // DELAYQ_TOOLS_DELAYQ_CLI_H_
