#!/usr/bin/env bash
# Screenshot a report's index.html in headless Chromium, to check by eye that it reads well.
#   pipelines/screenshot_report.sh REPORT_DIR [OUT.png] [WIDTH,HEIGHT]
# REPORT_DIR: a folder written by `lsr-eval report` (holds index.html). OUT.png defaults to
# REPORT_DIR/screenshot.png, the window to 1280,2000 (the screenshot is the top WIDTH x HEIGHT pixels of the page;
# give a larger height to see more). Needs Chromium (Debian: apt-get install -y chromium); no network is used.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 3 ]]; then
    echo "usage: $0 REPORT_DIR [OUT.png] [WIDTH,HEIGHT]" >&2
    exit 2
fi
report=$(cd "$1" && pwd)
page="$report/index.html"
out=${2:-$report/screenshot.png}
size=${3:-1280,2000}
[[ -f "$page" ]] || { echo "$0: $page not found (run: lsr-eval report RESULTS_DIR --out $1)" >&2; exit 1; }
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[[ -n "$browser" ]] || { echo "$0: no chromium on PATH (apt-get install -y chromium)" >&2; exit 1; }
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$profile" \
    --screenshot="$out" --window-size="$size" "file://$page" 2>"$profile/chromium.log" \
    || { cat "$profile/chromium.log" >&2; exit 1; }
[[ -s "$out" ]] || { echo "$0: chromium wrote no screenshot" >&2; cat "$profile/chromium.log" >&2; exit 1; }
echo "$out"
