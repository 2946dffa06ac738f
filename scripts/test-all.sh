#!/usr/bin/env bash
# Run every test: set up the workspace, start the services the integration tests need
# (as root: the two test users, the Debian packages listed below, a one-node Slurm, a one-node
# Grid Engine, sshd on loopback, podman and its test image),
# then build, lint, typecheck, publint and test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "$(id -u)" = 0 ]; then
  # The victim and attacker accounts of the shared-machine tests (packages/cli/src/shared-machine).
  bash scripts/test-users.sh
  # Debian packages the tests use, as "program package" pairs (installed when the program is missing):
  # task-spooler, the queue of the out-of-tree example plugin (examples/yonder-backend-tsp);
  # Chromium, the browser that @yonder/ui's browser tests and `pnpm bench` drive (playwright-core
  # with the system executable; no browser is downloaded); faketime, the wall clock stepped under
  # a running command (packages/reliability/src/clock.test.ts); Snakemake (Debian's, 7.x), a real
  # workflow client of yonder (packages/cli/src/snakemake.integration.test.ts on the local backend,
  # docs/snakemake-slurm.integration.test.ts on the Slurm profile); setfacl (acl), the access
  # control lists the trust check must see through (packages/core/src/trust, remote/); Grid
  # Engine's client, master and execution daemon (gridengine-cluster.sh configures and starts
  # them) for packages/backend-gridengine; PostgreSQL (Debian's, 15), the private cluster of
  # @yonder/store-postgres (scripts/postgres-cluster.sh).
  export DEBIAN_FRONTEND=noninteractive
  missing=()
  while read -r program package; do
    [ -e "$program" ] || command -v "$program" >/dev/null 2>&1 || missing+=("$package")
  done <<'PACKAGES'
tsp task-spooler
/usr/bin/chromium chromium
faketime faketime
snakemake snakemake
setfacl acl
qsub gridengine-client
sge_qmaster gridengine-master
sge_execd gridengine-exec
/usr/lib/postgresql postgresql
PACKAGES
  if [ "${#missing[@]}" -gt 0 ]; then
    apt-get install -y -o DPkg::Lock::Timeout=600 --no-install-recommends "${missing[@]}" >&2 ||
      { apt-get update >&2 && apt-get install -y -o DPkg::Lock::Timeout=600 --no-install-recommends "${missing[@]}" >&2; }
  fi
  for service in scripts/slurm-cluster.sh scripts/gridengine-cluster.sh scripts/sshd-hosts.sh scripts/postgres-cluster.sh; do
    if [ -f "$service" ]; then bash "$service" start; fi
  done
  # podman (as root, and rootless for the victim and the sshd hosts' user) and the test image
  # the container tests run.
  bash scripts/containers.sh
else
  echo "test-all: not root, so Slurm, Grid Engine, sshd, PostgreSQL, podman, task-spooler and Chromium are not set up; the tests that need them fail, naming the command that starts them." >&2
fi
pnpm test
