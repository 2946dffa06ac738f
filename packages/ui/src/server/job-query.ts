/** The jobs table's filter language: `state:failed,cancelled -profile:local name:train` and bare words for the name, each term negatable with `-` or `!`. */
import type { JobState } from '@yonder/core';

/** The fields a term can name. */
export const QUERY_FIELDS = ['state', 'profile', 'name', 'backend', 'id', 'target'] as const;
export type QueryField = (typeof QUERY_FIELDS)[number];

/** One term: a field and its alternatives (any of them matches), or their negation. */
export interface QueryTerm {
  readonly field: QueryField;
  readonly values: readonly string[];
  readonly negated: boolean;
}

/** A parsed filter: every term must hold. */
export interface JobQuery {
  readonly terms: readonly QueryTerm[];
  /** Problems for people, e.g. an unknown field; the rest of the query still applies. */
  readonly problems: readonly string[];
}

/** What a term is matched against. */
export interface QueryableJob {
  readonly id: string;
  readonly name: string;
  readonly state: JobState;
  readonly profile: string;
  readonly backend: string;
  readonly target: string;
}

/** Split on whitespace, keeping "double quoted" stretches together (the quotes removed). */
function words(text: string): string[] {
  const out: string[] = [];
  let current = '';
  let quoted = false;
  let started = false;
  for (const character of text) {
    if (character === '"') {
      quoted = !quoted;
      started = true;
    } else if (!quoted && /\s/.test(character)) {
      if (started) out.push(current);
      current = '';
      started = false;
    } else {
      current += character;
      started = true;
    }
  }
  if (started) out.push(current);
  return out;
}

/** Parse a filter. Matching is case-insensitive; `name`, `profile`, `backend` and `target` match by substring, `state` and `id` exactly (an id by prefix). */
export function parseJobQuery(text: string): JobQuery {
  const terms: QueryTerm[] = [];
  const problems: string[] = [];
  for (const word of words(text)) {
    let rest = word;
    let negated = false;
    if (rest.length > 1 && (rest.startsWith('-') || rest.startsWith('!'))) {
      negated = true;
      rest = rest.slice(1);
    }
    const colon = rest.indexOf(':');
    let field: QueryField = 'name';
    if (colon > 0) {
      const named = rest.slice(0, colon).toLowerCase();
      if ((QUERY_FIELDS as readonly string[]).includes(named)) {
        field = named as QueryField;
        rest = rest.slice(colon + 1);
      } else {
        problems.push(`unknown field "${named}" (fields: ${QUERY_FIELDS.join(', ')})`);
        continue;
      }
    }
    const values = rest
      .split(',')
      .map((value) => value.trim().toLowerCase())
      .filter((value) => value.length > 0);
    if (values.length === 0) continue;
    terms.push({ field, values, negated });
  }
  return { terms, problems };
}

function termMatches(term: QueryTerm, job: QueryableJob): boolean {
  const value = job[term.field].toLowerCase();
  switch (term.field) {
    case 'state':
      return term.values.includes(value);
    case 'id':
      return term.values.some((wanted) => value.startsWith(wanted));
    default:
      return term.values.some((wanted) => value.includes(wanted));
  }
}

/** Whether a job passes every term of the query. */
export function matchesJobQuery(query: JobQuery, job: QueryableJob): boolean {
  for (const term of query.terms) {
    if (termMatches(term, job) === term.negated) return false;
  }
  return true;
}
