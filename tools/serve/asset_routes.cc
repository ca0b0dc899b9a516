// Copyright delayq authors.

#include <string>

#include "absl/strings/match.h"
#include "tools/serve/assets.h"

namespace delayq {
namespace serve {
namespace {

const char* ContentType(absl::string_view name) {
  if (absl::EndsWith(name, ".html")) return "text/html; charset=utf-8";
  if (absl::EndsWith(name, ".js")) return "text/javascript; charset=utf-8";
  if (absl::EndsWith(name, ".css")) return "text/css; charset=utf-8";
  if (absl::EndsWith(name, ".yaml")) return "application/yaml";
  return "text/plain; charset=utf-8";
}

// Answers GET `pattern` with the asset `name`.
void Serve(Router& router, const std::string& pattern, absl::string_view name) {
  for (int i = 0; i < kAssetCount; ++i) {
    if (name != kAssets[i].name) continue;
    // Each literal starts with the newline after its opening delimiter.
    absl::string_view text = kAssets[i].text;
    if (absl::StartsWith(text, "\n")) text.remove_prefix(1);
    router.GetFile(pattern, std::string(text), ContentType(name));
  }
}

}  // namespace

void AddAssetRoutes(Router& router) {
  Serve(router, "/", "index.html");
  Serve(router, "/v1/openapi.yaml", "openapi.yaml");
  for (int i = 0; i < kAssetCount; ++i) {
    const std::string name = kAssets[i].name;
    if (name == "index.html" || name == "openapi.yaml") continue;
    Serve(router, "/ui/" + name, name);
  }
}

}  // namespace serve
}  // namespace delayq
