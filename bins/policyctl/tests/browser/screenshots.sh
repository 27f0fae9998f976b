#!/usr/bin/env bash
# Regenerates the screenshots of `policyctl report -o html` in docs/images/
# (the bundled example, one PNG per view, and the Hosts view in the dark
# scheme). Needs what `bash .ci/browser-deps.sh` installs. POLICYCTL names
# a built binary to use instead of `cargo run -p policyctl`.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
page="$(mktemp -d)/report.html"
if [ -n "${POLICYCTL:-}" ]; then
    "$POLICYCTL" report -o html > "$page" 2>/dev/null
else
    cargo run --quiet -p policyctl -- report -o html > "$page" 2>/dev/null
fi
mkdir -p docs/images
node bins/policyctl/tests/browser/check.mjs screenshots "$page" "$PWD/docs/images"
ls -l docs/images/report-*.png
