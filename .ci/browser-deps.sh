#!/usr/bin/env bash
# What the browser tests of `policyctl report -o html`
# (bins/policyctl/tests/html_browser.rs) need: Debian's chromium and
# playwright-core (bins/policyctl/tests/browser/package-lock.json). Installs
# only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
    if ! apt-get install -y chromium; then
        apt-get update
        apt-get install -y chromium
    fi
fi
if ! command -v node >/dev/null 2>&1; then
    apt-get install -y nodejs npm || { apt-get update && apt-get install -y nodejs npm; }
fi
if [ ! -d bins/policyctl/tests/browser/node_modules/playwright-core ]; then
    npm ci --prefix bins/policyctl/tests/browser --no-audit --no-fund
fi
