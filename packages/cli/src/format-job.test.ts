/** `--format` templates: fields, nested fields, and a value mapped to another word. */
import { sampleJob } from '@yonder/core/conformance';
import { describe, expect, it } from 'vitest';
import { checkFormat, formatJob } from './format-job.js';

describe('formatJob', () => {
  const job = sampleJob({ state: 'succeeded', exitCode: 0 });
  it('maps a value to another word, with * for the rest, and leaves it as it is when unnamed', () => {
    const template = '{state:succeeded=success,failed=failed,*=running}';
    expect(formatJob(template, job, false)).toBe('success\n');
    expect(formatJob(template, { ...job, state: 'pending' }, false)).toBe('running\n');
    expect(formatJob('{state:failed=bad}', job, false)).toBe('succeeded\n');
    expect(formatJob('{exitCode:0=ok} {id}', job, false)).toBe(`ok ${job.id}\n`);
  });
  it('refuses a mapping that is not from=to pairs, naming the placeholder', () => {
    expect(() => checkFormat('{state:success}')).toThrow('{state:success} maps values as from=to');
    expect(() => checkFormat('{stat:a=b}')).toThrow('{stat} is not a field');
  });
});
