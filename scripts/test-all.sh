#!/usr/bin/env bash
# Run every test: set up the workspace, start the services the integration tests need
# (as root: a one-node Slurm, sshd on loopback), then build, lint, typecheck, publint and test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "$(id -u)" = 0 ]; then
  for service in scripts/slurm-cluster.sh scripts/sshd-hosts.sh; do
    if [ -f "$service" ]; then bash "$service" start; fi
  done
else
  echo "test-all: not root, so Slurm and sshd are not started; tests that need them skip (under CI they fail)." >&2
fi
pnpm test
