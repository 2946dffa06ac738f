#!/usr/bin/env bash
# Run every test: set up the workspace, start the services the integration tests need
# (as root: the two test users, podman and its test image, task-spooler, Chromium, a one-node Slurm, sshd on loopback),
# then build, lint, typecheck, publint and test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "$(id -u)" = 0 ]; then
  # The victim and attacker accounts of the shared-machine tests (packages/cli/src/shared-machine).
  bash scripts/test-users.sh
  # task-spooler: the queue of the out-of-tree example plugin (examples/yonder-backend-tsp).
  if ! command -v tsp >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends task-spooler >&2 ||
      { apt-get update >&2 && apt-get install -y --no-install-recommends task-spooler >&2; }
  fi
  # Chromium: the browser that @yonder/ui's browser tests and `pnpm bench` drive (playwright-core
  # with the system executable; no browser is downloaded).
  if [ ! -x /usr/bin/chromium ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends chromium >&2 ||
      { apt-get update >&2 && apt-get install -y --no-install-recommends chromium >&2; }
  fi
  for service in scripts/slurm-cluster.sh scripts/sshd-hosts.sh; do
    if [ -f "$service" ]; then bash "$service" start; fi
  done
  # podman (as root, and rootless for the victim and the sshd hosts' user) and the test image
  # the container tests run.
  bash scripts/containers.sh
else
  echo "test-all: not root, so Slurm, sshd, task-spooler and Chromium are not set up; the tests that need them fail, naming the command that starts them." >&2
fi
pnpm test
