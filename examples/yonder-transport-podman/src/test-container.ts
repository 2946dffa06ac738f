/** A running container of the test image (scripts/containers.sh), as root's podman or a test user's, removed by the cleanups. */
import { spawnSync } from 'node:child_process';
import { onCleanup } from '@yonder/test-helpers';

export const TEST_IMAGE = process.env.YONDER_TEST_IMAGE ?? 'localhost/yonder-test-busybox';

/** `podman ARGS` as root, or as `user` (rootless) through runuser in a login-like environment. */
export function podman(args: readonly string[], user?: string) {
  const argv = user
    ? ['runuser', '-u', user, '--', 'env', '-C', '/', 'podman', ...args]
    : ['podman', ...args];
  return spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', timeout: 120_000 });
}

/**
 * Start a container that stays up (`sleep`), named for this test; fails, naming the script
 * that provides them, when podman or the image is missing.
 */
export function startContainer(label: string, user?: string): string {
  const name = `yonder-podman-${label}-${process.pid}`;
  const started = podman(
    ['run', '--detach', '--rm', '--name', name, TEST_IMAGE, 'sleep', '3600'],
    user,
  );
  if (started.status !== 0)
    throw new Error(
      `cannot start a container of ${TEST_IMAGE}${user ? ` as ${user}` : ''} (run scripts/containers.sh as root, which scripts/test-all.sh does): ${started.error?.message ?? started.stderr}`,
    );
  onCleanup(() => {
    podman(['rm', '--force', '--time', '0', name], user);
  });
  return name;
}
