#!/usr/bin/env bash
# Set up the workspace, install `yonder` for this user (scripts/install.sh: on the PATH of every
# new login shell), and run a demo job on the built-in local backend: submit, list, logs, wait
# and status, with the ledger in a fresh directory.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export YONDER_STATE_DIR="${YONDER_STATE_DIR:-$PWD/.tmp/demo-state}"
yonder() { "${YONDER_PREFIX:-$HOME/.local}/bin/yonder" "$@"; }
say() { printf '\n$ %s\n' "$*" >&2; }

say 'yonder submit --name demo -- sh -c "echo hello from $(hostname); sleep 2; echo done"'
id=$(yonder submit --name demo -- sh -c 'echo "hello from $(hostname)"; sleep 2; echo done')
echo "$id"
say "yonder list"
yonder list
say "yonder logs $id --follow"
yonder logs "$id" --follow
say "yonder wait $id"
yonder wait "$id"
say "yonder status $id"
yonder status "$id"
echo >&2
echo "The ledger is in $YONDER_STATE_DIR. In a new login shell, try: yonder --help" >&2
