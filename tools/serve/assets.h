// Copyright delayq authors.
//
// The files the server serves from memory: the dashboard (index.html,
// app.js, style.css) and the API's description (openapi.yaml), embedded at
// build time by embed_assets.sh.

#ifndef DELAYQ_TOOLS_SERVE_ASSETS_H_
#define DELAYQ_TOOLS_SERVE_ASSETS_H_

#include "absl/strings/string_view.h"
#include "tools/serve/api/router.h"

namespace delayq {
namespace serve {

struct Asset {
  const char* name;  // the file's base name
  const char* text;  // its contents, after the literal's leading newline
};

extern const Asset kAssets[];
extern const int kAssetCount;

// GET / (the dashboard), /ui/NAME (its files) and /v1/openapi.yaml. They
// need no token: they hold no data, and the dashboard asks for the token
// itself.
void AddAssetRoutes(Router& router);

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_ASSETS_H_
