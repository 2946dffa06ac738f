/** The examples in docs/containers.md run as written with the built CLI and real podman: each `sh` block prints the `text` block after it. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { type DocSandbox, docExamples, docSandbox, REPOSITORY_ROOT } from '@yonder/test-helpers';
import { afterAll, beforeAll, expect, it } from 'vitest';

let sandbox: DocSandbox;

beforeAll(() => {
  const status = spawnSync('bash', [join(REPOSITORY_ROOT, 'scripts/containers.sh'), 'status']);
  if (status.status !== 0)
    throw new Error(
      'podman or its test image is missing. Set them up as root with: bash scripts/containers.sh',
    );
  sandbox = docSandbox('containers');
});

afterAll(() => sandbox?.remove());

it('has its examples, each followed by what it prints', () => {
  expect(docExamples('containers.md')).toHaveLength(3);
});

it('each example prints what the page says', () => {
  for (const { script, output } of docExamples('containers.md')) {
    const result = sandbox.run(script);
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(output);
  }
}, 300_000);
