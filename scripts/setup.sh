#!/usr/bin/env bash
# Install pnpm (pinned), the workspace's dependencies, and build every package.
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(node -p "require('./package.json').packageManager.split('@')[1]")
if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version 2>/dev/null)" != "$want" ]; then
  echo "setup: installing pnpm $want" >&2
  npm install --global --no-fund --no-audit "pnpm@$want" >&2
fi
if [ -n "${CI:-}" ]; then
  pnpm install --frozen-lockfile >&2
else
  pnpm install >&2
fi
pnpm build >&2
