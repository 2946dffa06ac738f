/** The page's calls to its server: JSON reads, state-changing posts carrying the session's CSRF token, and the live event streams; each carries the token this page was opened with (a Bearer header, or `?token=` where a header cannot go), never a cookie. */

/** A row of the jobs table, as the server sends it. */
export interface JobRow {
  id: string;
  name: string;
  profile: string;
  backend: string;
  target: string;
  state: string;
  nativeState: string | null;
  exitCode: number | null;
  signal: string | null;
  reason: string | null;
  failureKind: string | null;
  externalId: string | null;
  createdAt: string;
  submittedAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  updatedAt: string;
  error: { code: string; message: string } | null;
  cancelRequested: boolean;
}

export interface StaleTarget {
  backend: string;
  target: string;
  profiles: string[];
  message: string;
  since: string;
  jobs: number;
}

export interface JobPage {
  total: number;
  offset: number;
  rows: JobRow[];
  states: Record<string, number>;
  profiles: string[];
  problems: string[];
  stale: StaleTarget[];
  unreadable: Array<{ location: string; message: string }>;
}

function meta(name: string): string {
  return document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? '';
}

function csrf(): string {
  return meta('yonder-csrf');
}

/** The session's token, as the server put it in this page. */
function token(): string {
  return meta('yonder-token');
}

/**
 * `path` (which may carry a query) with the session's token added: for links to the page's own
 * views, event streams and downloads, where no header can carry it.
 */
export function withToken(path: string): string {
  const url = new URL(path, location.origin);
  url.searchParams.set('token', token());
  return `${url.pathname}${url.search}`;
}

export class ApiError extends Error {
  constructor(
    message: string,
    /** The server's error code (`E_NO_SUCH_JOB`…), when it gave one. */
    readonly code: string | null,
  ) {
    super(message);
  }
}

async function answer<T>(response: Response): Promise<T> {
  const body = (await response.json().catch(() => null)) as
    | (T & { error?: { code?: string; message: string } })
    | null;
  if (!response.ok)
    throw new ApiError(
      body?.error?.message ?? `The server answered ${response.status}.`,
      body?.error?.code ?? null,
    );
  return body as T;
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  return answer<T>(
    await fetch(path, {
      credentials: 'omit',
      headers: { authorization: `Bearer ${token()}` },
      ...(signal ? { signal } : {}),
    }),
  );
}

export async function postJson<T>(path: string, body: unknown): Promise<T> {
  return answer<T>(
    await fetch(path, {
      method: 'POST',
      credentials: 'omit',
      headers: {
        authorization: `Bearer ${token()}`,
        'content-type': 'application/json',
        'x-yonder-csrf': csrf(),
      },
      body: JSON.stringify(body),
    }),
  );
}

export type ResubmitOutcome =
  | { from: string; ok: true; id: string }
  | { from: string; ok: false; message: string };

export function cancelJobs(ids: string[]): Promise<{ jobs: JobRow[] }> {
  return postJson('/api/cancel', { ids });
}

export function resubmitJobs(ids: string[]): Promise<{ outcomes: ResubmitOutcome[] }> {
  return postJson('/api/resubmit', { ids });
}

/** The live stream of job changes, with the connection's state shown in the header. */
export function liveEvents(handlers: Record<string, (data: unknown) => void>): EventSource {
  const source = new EventSource(withToken('/api/events'));
  const status = document.getElementById('connection');
  source.addEventListener('open', () => {
    if (status) status.textContent = 'live';
    status?.classList.remove('offline');
  });
  source.addEventListener('error', () => {
    if (status) status.textContent = 'reconnecting…';
    status?.classList.add('offline');
  });
  for (const [event, handle] of Object.entries(handlers)) {
    source.addEventListener(event, (message) => handle(JSON.parse((message as MessageEvent).data)));
  }
  return source;
}
