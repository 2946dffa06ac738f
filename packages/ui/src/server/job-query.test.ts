/** Tests of the filter language: fields, alternatives, negation, bare words and quoting. */
import { describe, expect, it } from 'vitest';
import { matchesJobQuery, parseJobQuery } from './job-query.js';

const job = (fields: Partial<Parameters<typeof matchesJobQuery>[1]> = {}) => ({
  id: '3f9a1c2b7d4e',
  name: 'train-model',
  state: 'running' as const,
  profile: 'cluster',
  backend: 'slurm',
  target: 'slurm:login1',
  ...fields,
});

describe('parseJobQuery / matchesJobQuery', () => {
  it('matches fields, any of several values, and bare words against the name', () => {
    expect(matchesJobQuery(parseJobQuery('state:running'), job())).toBe(true);
    expect(matchesJobQuery(parseJobQuery('state:failed,running'), job())).toBe(true);
    expect(matchesJobQuery(parseJobQuery('state:failed'), job())).toBe(false);
    expect(matchesJobQuery(parseJobQuery('TRAIN'), job())).toBe(true);
    expect(matchesJobQuery(parseJobQuery('profile:clus backend:slurm'), job())).toBe(true);
    expect(matchesJobQuery(parseJobQuery('profile:clus backend:local'), job())).toBe(false);
    expect(matchesJobQuery(parseJobQuery('id:3f9a'), job())).toBe(true);
    expect(matchesJobQuery(parseJobQuery('id:9a1c'), job())).toBe(false);
    expect(matchesJobQuery(parseJobQuery(''), job())).toBe(true);
  });

  it('negates a term with - or !, and a state matches exactly, not by substring', () => {
    expect(matchesJobQuery(parseJobQuery('-state:running'), job())).toBe(false);
    expect(matchesJobQuery(parseJobQuery('!profile:local'), job())).toBe(true);
    expect(matchesJobQuery(parseJobQuery('-train'), job())).toBe(false);
    expect(matchesJobQuery(parseJobQuery('-state:succeeded,failed'), job())).toBe(true);
    expect(matchesJobQuery(parseJobQuery('state:run'), job())).toBe(false);
    // A lone "-" is a word, not a negation of nothing.
    expect(parseJobQuery('-').terms).toEqual([{ field: 'name', values: ['-'], negated: false }]);
  });

  it('keeps quoted words together and reports unknown fields without dropping the rest', () => {
    const query = parseJobQuery('name:"big run" colour:red state:pending');
    expect(query.terms).toEqual([
      { field: 'name', values: ['big run'], negated: false },
      { field: 'state', values: ['pending'], negated: false },
    ]);
    expect(query.problems).toEqual([
      'unknown field "colour" (fields: state, profile, name, backend, id, target)',
    ]);
    expect(matchesJobQuery(query, job({ name: 'a Big Run', state: 'pending' }))).toBe(true);
  });
});
