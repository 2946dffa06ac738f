import { describe, expect, it } from 'vitest';
import { refusedOption, schedulerOptionIssues } from './sbatch-options.js';

describe('refusedOption', () => {
  it.each([
    ['--test-only', 'test-only'],
    ['--te', 'test-only'],
    ['--wrap=echo hi', 'wrap'],
    ['--parsable', 'parsable'],
    ['--array=1-3', 'array'],
    ['--wait', 'wait'],
    ['--quiet', 'quiet'],
    // getopt takes an unambiguous prefix for the option (sbatch --qu prints no job id).
    ['--qu', 'quiet'],
    ['--export-file=/tmp/env', 'export-file'],
    ['--export=ALL', 'export'],
    ['--clusters=other', 'clusters'],
    ['--cluster=other', 'cluster'],
    ['--uid=1000', 'uid'],
    ['--version', 'version'],
    ['--help', 'help'],
    ['--usage', 'usage'],
    ['--outp=/tmp/x', 'output'],
    ['--job-name=x', 'job-name'],
  ])('refuses %s (--%s)', (word, option) => {
    expect(refusedOption(word)).toMatch(new RegExp(`^--${option}: `));
  });

  it.each([
    ['-a', 'array'],
    ['-a1-3', 'array'],
    ['-W', 'wait'],
    ['-Q', 'quiet'],
    ['-M', 'clusters'],
    ['-V', 'version'],
    ['-h', 'help'],
    ['-J', 'job-name'],
    // Grouped short options: -v takes no value, so -W is the next option.
    ['-vW', 'wait'],
    ['-HQ', 'quiet'],
  ])('refuses the short form %s (--%s)', (word, option) => {
    expect(refusedOption(word)).toContain(`(--${option}): `);
  });

  it('refuses the words that end sbatch’s options or start a heterogeneous component', () => {
    expect(refusedOption('--')).toMatch(/end sbatch’s options/);
    expect(refusedOption(':')).toMatch(/heterogeneous/);
  });

  it.each([
    '--hold',
    '-H',
    '--ho',
    '--get-user-env',
    '--wait-all-nodes=1',
    '--cluster-constraint=a',
    '--time=5',
    '--ti=5',
    '--qos=normal',
    '--wckey=x',
    '--verbose',
    '-v',
    // Values of short options are not options: -c takes "W", -bW is --begin=W.
    '-cW',
    '-bQ',
    'debug',
    '-pdebug',
  ])('lets %s pass', (word) => {
    expect(refusedOption(word)).toBeNull();
  });
});

describe('schedulerOptionIssues', () => {
  it('names every refused word by its place, and nothing else', () => {
    expect(schedulerOptionIssues(['--hold', '--test-only', '-p', 'debug', '-W'])).toEqual([
      {
        path: 'schedulerOptions.1',
        message:
          '"--test-only" is refused: --test-only: sbatch would only estimate a start time and submit nothing',
      },
      {
        path: 'schedulerOptions.4',
        message: '"-W" is refused: -W (--wait): sbatch would wait until the job has ended',
      },
    ]);
    expect(schedulerOptionIssues(['--hold', '--mem=1G'])).toEqual([]);
  });
});
