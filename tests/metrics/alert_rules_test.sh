#!/usr/bin/env bash
# The shipped alert rules (docs/prometheus/alerts.yml) are valid and fire as
# their unit tests (alerts_test.yml) say, by Prometheus's own promtool.
set -euo pipefail
if ! command -v promtool >/dev/null; then
  echo "promtool is missing: tools/setup.sh installs Debian's prometheus" >&2
  exit 1
fi
promtool check rules docs/prometheus/alerts.yml
promtool test rules docs/prometheus/alerts_test.yml
