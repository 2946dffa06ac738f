/** The examples in docs/pipelines.md run as written with the built CLI on this machine: each `sh` block prints the `text` block after it. */
import { type DocSandbox, docExamples, docSandbox, requireCliBuild } from '@yonder/test-helpers';
import { afterAll, beforeAll, expect, it } from 'vitest';

let sandbox: DocSandbox;

beforeAll(() => {
  requireCliBuild();
  sandbox = docSandbox('pipelines');
});

afterAll(() => sandbox.remove());

it('has its examples, each followed by what it prints', () => {
  expect(docExamples('pipelines.md')).toHaveLength(2);
});

it('each example prints what the page says', () => {
  for (const { script, output } of docExamples('pipelines.md')) {
    const result = sandbox.run(script);
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(output);
  }
}, 300_000);
