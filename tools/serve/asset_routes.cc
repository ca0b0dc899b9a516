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

// A route that answers with the asset `name`.
httplib::Server::Handler Serve(absl::string_view name) {
  for (int i = 0; i < kAssetCount; ++i) {
    if (name != kAssets[i].name) continue;
    // Each literal starts with the newline after its opening delimiter.
    absl::string_view text = kAssets[i].text;
    if (absl::StartsWith(text, "\n")) text.remove_prefix(1);
    const std::string body(text);
    const char* type = ContentType(name);
    return [body, type](const httplib::Request&, httplib::Response& res) {
      res.set_content(body, type);
      res.set_header("Cache-Control", "no-cache");
    };
  }
  return nullptr;
}

}  // namespace

void AddAssetRoutes(httplib::Server& server) {
  server.Get("/", Serve("index.html"));
  server.Get("/v1/openapi.yaml", Serve("openapi.yaml"));
  for (int i = 0; i < kAssetCount; ++i) {
    const std::string name = kAssets[i].name;
    if (name == "index.html" || name == "openapi.yaml") continue;
    server.Get("/ui/" + name, Serve(name));
  }
}

}  // namespace serve
}  // namespace delayq
