#!/bin/bash
# README.md and docs/*.md name only targets, flags and files that exist
# (tools/check_docs.py). Reads the source tree itself: the test is local
# (unsandboxed) and external (never cached), so a file deleted after the
# docs last changed still fails it.
set -euo pipefail
root=$(dirname "$(readlink -f README.md)")
exec /usr/bin/python3 "$root/tools/check_docs.py" "$root"
