#!/usr/bin/env bash
# The browser tests (tests/test_browser.py) drive Debian's Chromium at /usr/bin/chromium through the
# playwright package; no browser is ever downloaded by playwright. Called by `make test`.
# Installs it when missing and we are root (CI runs as root on a fresh Debian machine). Otherwise it
# says why and carries on: the browser tests then skip, except with CI=true, where they fail.
set -euo pipefail

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup_browser: $CHROMIUM is missing and this is not root, so it is not installed;" \
       "the browser tests will be skipped (install it with: sudo apt-get install chromium)" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "setup_browser: $CHROMIUM is missing and there is no apt-get; the browser tests will be skipped" >&2
  exit 0
fi
echo "setup_browser: installing Debian's chromium (for the browser tests)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# fonts-liberation: the site uses system fonts (no web fonts), so the pictures need some to render text.
apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
"$CHROMIUM" --version
