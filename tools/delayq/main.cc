// Copyright delayq authors.
//
// delayq — see and steer delayq queues from a shell: enqueue jobs, count and
// list them, cancel or revive them, and run a command for each job.
//
// This file parses the command line (global flags, the subcommand, its flags
// in any order among the positionals, and "-- COMMAND" for `work`) and prints
// help; each subcommand lives in its own file.

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "delayq/version.h"
#include "tools/common/runtime_policy.h"
#include "tools/delayq/cli.h"
#include "tools/delayq/suggest.h"

namespace delayq {
namespace cli {
namespace {

std::vector<const CommandSpec*> Commands() {
  return {&AddCommand(),     &BatchCommand(), &StatsCommand(),
          &ListCommand(),    &GetCommand(),   &WaitCommand(),
          &CancelCommand(),  &KickCommand(),  &RetryCommand(),
          &PromoteCommand(), &PurgeCommand(), &PauseCommand(),
          &ResumeCommand(),  &LimitCommand(), &ScheduleCommand(),
          &WorkCommand(),    &ServeCommand(), &WorkersCommand()};
}

const CommandSpec* FindCommand(absl::string_view name) {
  for (const CommandSpec* spec : Commands()) {
    if (spec->name == name) return spec;
  }
  return nullptr;
}

// Flags every subcommand takes, after its own.
std::vector<FlagSpec> AllFlags(const CommandSpec& spec) {
  std::vector<FlagSpec> flags = spec.flags;
  if (spec.json) {
    flags.push_back({"json", 0, FlagSpec::Arg::kNone, "",
                     "print JSON instead of text, for scripts"});
  }
  flags.push_back({"store", 0, FlagSpec::Arg::kRequired, "URL",
                   "the store (default $DELAYQ_STORE, else sqlite:delayq.db)"});
  flags.push_back({"help", 'h', FlagSpec::Arg::kNone, "", "show this help"});
  return flags;
}

constexpr char kProgramHelp[] = R"(delayq: see and steer delayq job queues.

Usage: delayq [--store URL] COMMAND [ARGS...] [FLAGS...]

Commands:
%s
Every command takes:
  --store URL   where the jobs are: sqlite:PATH (a file, created by add and
                work when missing), redis://HOST:PORT, redis+unix:///SOCKET,
                postgres://USER:PASSWORD@HOST:PORT/DB?schema=NAME,
                or memory: (a fresh store that lives only as long as the
                command). Default:
                $DELAYQ_STORE, else sqlite:delayq.db in the current directory.
  --json        (stats, list, get, add, cancel, kick, retry) JSON output.
  -h, --help    help for the command; also `delayq help COMMAND`.
  --version     print delayq's version (also `delayq version`).

Flags may come before or after the positional arguments. Durations are
written like 250ms, 90s, 30m or 1h30m; times in RFC 3339
(2026-12-01T10:00:00Z).

Exit status:
  0  success
  1  the command failed: a bad value (duration, time, number, URL), a store
     that cannot be opened, an unknown id, a job in the wrong state
  2  usage error: unknown command or flag, missing or extra arguments
)";

void PrintProgramHelp(FILE* out) {
  std::string commands;
  for (const CommandSpec* spec : Commands()) {
    absl::StrAppendFormat(&commands, "  %-34s %s\n", spec->usage,
                          spec->summary);
  }
  absl::StrAppendFormat(&commands, "  %-34s %s\n", "help [COMMAND]",
                        "this help, or a command's");
  absl::FPrintF(out, kProgramHelp, commands);
}

void PrintCommandHelp(const CommandSpec& spec) {
  absl::PrintF("Usage: delayq %s\n\n%s\n\nFlags:\n", spec.usage, spec.details);
  for (const FlagSpec& flag : AllFlags(spec)) {
    std::string left =
        flag.short_name != 0
            ? absl::StrFormat("-%c, --%s", flag.short_name, flag.name)
            : absl::StrCat("--", flag.name);
    if (flag.arg == FlagSpec::Arg::kRequired) {
      absl::StrAppend(&left, " ", flag.value_name);
    } else if (flag.arg == FlagSpec::Arg::kDuration) {
      absl::StrAppend(&left, " [", flag.value_name, "]");
    }
    absl::PrintF("  %-26s %s\n", left, flag.help);
  }
  absl::PrintF("\nExit status: 0 success, 1 failure, 2 usage error.\n");
}

const FlagSpec* FindFlag(const std::vector<FlagSpec>& flags,
                         absl::string_view name, char short_name) {
  for (const FlagSpec& flag : flags) {
    if (short_name != 0 ? flag.short_name == short_name : flag.name == name) {
      return &flag;
    }
  }
  return nullptr;
}

// " (did you mean 'X'?)" when `typed` looks like a slip for X of `known`.
std::string Hint(absl::string_view typed, const std::vector<std::string>& known,
                 absl::string_view prefix = "") {
  const std::string near = DidYouMean(typed, known);
  if (near.empty()) return "";
  return absl::StrCat(" (did you mean '", prefix, near, "'?)");
}

std::string UnknownFlag(const std::string& arg,
                        const std::vector<FlagSpec>& flags) {
  if (!absl::StartsWith(arg, "--")) return absl::StrCat("unknown flag ", arg);
  std::vector<std::string> names;
  for (const FlagSpec& f : flags) names.push_back(f.name);
  absl::string_view typed = arg;
  typed.remove_prefix(2);
  typed = typed.substr(0, typed.find('='));
  return absl::StrCat("unknown flag ", arg, Hint(typed, names, "--"));
}

std::vector<std::string> CommandNames() {
  std::vector<std::string> names = {"help", "version"};
  for (const CommandSpec* spec : Commands()) names.push_back(spec->name);
  return names;
}

// Parses `args` (everything after the subcommand's name) into `ctx`.
// Returns an empty string or the usage problem.
std::string ParseArgs(const std::vector<std::string>& args, Context& ctx) {
  const std::vector<FlagSpec> flags = AllFlags(*ctx.spec);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      if (!ctx.spec->takes_command) return "unexpected '--'";
      ctx.has_command = true;
      ctx.command.assign(args.begin() + i + 1, args.end());
      return "";
    }
    if (arg.size() < 2 || arg[0] != '-' ||
        (arg[1] != '-' && !std::isalpha(static_cast<unsigned char>(arg[1])))) {
      ctx.args.push_back(arg);  // includes "-" (stdin) and "-5"
      continue;
    }
    std::string name, value;
    bool has_value = false;
    const FlagSpec* flag = nullptr;
    if (arg[1] == '-') {
      name = arg.substr(2);
      const size_t eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
        has_value = true;
      }
      flag = FindFlag(flags, name, 0);
    } else {
      flag = FindFlag(flags, "", arg[1]);
      if (arg.size() > 2) {  // -j4, -j=4
        value = arg.substr(arg[2] == '=' ? 3 : 2);
        has_value = true;
      }
    }
    if (flag == nullptr) return UnknownFlag(arg, flags);
    switch (flag->arg) {
      case FlagSpec::Arg::kNone:
        if (has_value) return absl::StrCat("--", flag->name, " takes no value");
        break;
      case FlagSpec::Arg::kRequired:
        if (!has_value) {
          if (i + 1 >= args.size()) {
            return absl::StrCat("--", flag->name, " needs a ",
                                flag->value_name);
          }
          value = args[++i];
        }
        break;
      case FlagSpec::Arg::kDuration: {
        absl::Duration unused;
        if (!has_value && i + 1 < args.size() &&
            absl::ParseDuration(args[i + 1], &unused)) {
          value = args[++i];
        }
        break;
      }
    }
    ctx.flags[flag->name] = value;
  }
  return "";
}

int PrintVersion() {
  absl::PrintF("delayq %s\n", kVersion);
  return kExitOk;
}

int Main(int argc, char** argv) {
  // Under `bazel run`, relative paths (the default sqlite:delayq.db) should
  // mean the user's directory, not the runfiles tree.
  if (const char* dir = std::getenv("BUILD_WORKING_DIRECTORY");
      dir != nullptr && *dir != '\0' && chdir(dir) != 0) {
    return Fail(absl::StrCat("cannot enter ", dir));
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  // Global flags before the subcommand: --store URL, --json, --help.
  std::vector<std::string> leading;
  size_t i = 0;
  for (; i < args.size() && absl::StartsWith(args[i], "-"); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h" || arg == "--help") {
      PrintProgramHelp(stdout);
      return kExitOk;
    }
    if (arg == "--version") return PrintVersion();
    leading.push_back(arg);
    if (arg == "--store" && i + 1 < args.size()) leading.push_back(args[++i]);
  }
  if (i == args.size()) {
    if (!leading.empty()) {
      absl::FPrintF(stderr, "delayq: unknown flag or missing command: %s\n\n",
                    leading.front());
    }
    PrintProgramHelp(stderr);
    return kExitUsage;
  }
  const std::string name = args[i];
  std::vector<std::string> rest(args.begin() + i + 1, args.end());
  if (name == "version" && rest.empty()) return PrintVersion();
  if (name == "help") {
    if (rest.empty()) {
      PrintProgramHelp(stdout);
      return kExitOk;
    }
    const CommandSpec* spec = FindCommand(rest[0]);
    if (spec == nullptr || rest.size() > 1) {
      absl::FPrintF(stderr, "delayq: no help for '%s'\n", rest[0]);
      return kExitUsage;
    }
    PrintCommandHelp(*spec);
    return kExitOk;
  }
  const CommandSpec* spec = FindCommand(name);
  if (spec == nullptr) {
    absl::FPrintF(stderr, "delayq: unknown command '%s'%s\n\n", name,
                  Hint(name, CommandNames()));
    PrintProgramHelp(stderr);
    return kExitUsage;
  }
  Context ctx;
  ctx.spec = spec;
  // Leading flags parse as if they came after the subcommand, so an
  // unknown one is reported against it.
  leading.insert(leading.end(), rest.begin(), rest.end());
  if (std::string problem = ParseArgs(leading, ctx); !problem.empty()) {
    return UsageError(ctx, problem);
  }
  if (ctx.Has("help")) {
    PrintCommandHelp(*spec);
    return kExitOk;
  }
  return spec->run(ctx);
}

}  // namespace

bool Context::Has(absl::string_view name) const {
  return flags.count(std::string(name)) > 0;
}

std::string Context::Get(absl::string_view name,
                         absl::string_view fallback) const {
  auto it = flags.find(std::string(name));
  return it == flags.end() ? std::string(fallback) : it->second;
}

int UsageError(const Context& ctx, absl::string_view problem) {
  absl::FPrintF(stderr,
                "delayq %s: %s\nUsage: delayq %s\nRun 'delayq help %s' for "
                "more.\n",
                ctx.spec->name, problem, ctx.spec->usage, ctx.spec->name);
  return kExitUsage;
}

int Fail(absl::string_view message) {
  absl::FPrintF(stderr, "delayq: %s\n", message);
  return kExitFailed;
}

int Fail(const absl::Status& status) {
  return Fail(status.message().empty() ? status.ToString()
                                       : std::string(status.message()));
}

}  // namespace cli
}  // namespace delayq

int main(int argc, char** argv) {
  delayq::SetRuntimePolicy();
  return delayq::cli::Main(argc, argv);
}
