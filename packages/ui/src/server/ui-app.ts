/** The UI's HTTP application (Hono): the page, its bundled assets, the JSON API over the job index, and the live streams, all behind the security gate. */
import { type JobManager, toYonderError, YonderError } from '@yonder/core';
import { type Context, Hono } from 'hono';
import { stream, streamSSE } from 'hono/streaming';
import { type JobIndex, SORT_KEYS, type SortKey } from './job-index.js';
import { parseJobQuery } from './job-query.js';
import type { LiveHub, LiveMessage } from './live-hub.js';
import type { LogFollowers } from './log-followers.js';
import { renderPage } from './page.js';
import { resubmitCheck, resubmitJobs } from './resubmit.js';
import { securityGate, type UiSecrets } from './security.js';

export interface UiAssets {
  readonly script: string;
  readonly style: string;
  readonly version: string;
}

export interface UiAppOptions {
  readonly manager: JobManager;
  readonly index: JobIndex;
  readonly hub: LiveHub;
  readonly logs: LogFollowers;
  readonly secrets: UiSecrets;
  readonly assets: UiAssets;
  /** The port the server listens on (known once it does). */
  readonly port: () => number;
}

const JOB_ID = /^[0-9a-f]{1,64}$/;
const MAX_IDS = 1000;
const PAGE_LIMIT_MAX = 500;
/** A comment sent on quiet streams so that proxies and the browser keep them open. */
const HEARTBEAT_MS = 15_000;

function problem(c: Context, status: 400 | 404 | 500, code: string, message: string) {
  return c.json({ error: { code, message } }, status);
}

function failure(c: Context, error: unknown) {
  const yonder = toYonderError(error);
  const status = yonder.code === 'E_NO_SUCH_JOB' || yonder.code === 'E_AMBIGUOUS_JOB' ? 404 : 400;
  return problem(c, status, yonder.code, yonder.message);
}

/** The ids of a state-changing request's JSON body: `{"ids": ["3f9a…", …]}`. */
async function bodyIds(c: Context): Promise<string[]> {
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw new YonderError('E_USAGE', 'The body must be JSON: {"ids": [...]}.');
  }
  const ids = (body as { ids?: unknown } | null)?.ids;
  if (
    !Array.isArray(ids) ||
    ids.length === 0 ||
    ids.length > MAX_IDS ||
    !ids.every((id) => typeof id === 'string' && JOB_ID.test(id))
  ) {
    throw new YonderError('E_USAGE', `"ids" must list 1 to ${MAX_IDS} job ids.`);
  }
  return ids as string[];
}

function wholeNumber(text: string | undefined, fallback: number, max: number): number {
  const value = Number(text);
  return Number.isInteger(value) && value >= 0 ? Math.min(value, max) : fallback;
}

/** Wait for the next message, or for a quiet spell after which a heartbeat is due. */
function nextOrHeartbeat<T>(next: Promise<T>): Promise<T | 'heartbeat'> {
  let timer: NodeJS.Timeout | undefined;
  const beat = new Promise<'heartbeat'>((resolve) => {
    timer = setTimeout(() => resolve('heartbeat'), HEARTBEAT_MS);
  });
  return Promise.race([next, beat]).finally(() => clearTimeout(timer));
}

export function createUiApp(options: UiAppOptions): Hono {
  const { manager, index, hub, logs, secrets, assets } = options;
  const app = new Hono();
  app.use('*', securityGate(secrets, options.port));

  const page = (c: Context) => c.html(renderPage(secrets, assets.version));
  app.get('/', page);
  app.get('/job/:id', page);
  app.get('/assets/app.js', (c) => {
    c.header('content-type', 'text/javascript; charset=utf-8');
    return c.body(assets.script);
  });
  app.get('/assets/app.css', (c) => {
    c.header('content-type', 'text/css; charset=utf-8');
    return c.body(assets.style);
  });

  app.get('/api/jobs', (c) => {
    const query = parseJobQuery(c.req.query('q') ?? '');
    const sortParam = c.req.query('sort') ?? 'created';
    const sort: SortKey = (SORT_KEYS as readonly string[]).includes(sortParam)
      ? (sortParam as SortKey)
      : 'created';
    const result = index.page({
      query,
      sort,
      descending: c.req.query('dir') !== 'asc',
      offset: wholeNumber(c.req.query('offset'), 0, Number.MAX_SAFE_INTEGER),
      limit: Math.max(1, wholeNumber(c.req.query('limit'), 50, PAGE_LIMIT_MAX)),
    });
    return c.json({
      ...result,
      problems: query.problems,
      stale: hub.staleTargets(),
      unreadable: hub.problems,
    });
  });

  app.get('/api/jobs/:id', async (c) => {
    const id = c.req.param('id');
    if (!JOB_ID.test(id)) return problem(c, 404, 'E_NO_SUCH_JOB', `No job "${id}".`);
    try {
      const job = await manager.resolve(id);
      return c.json({
        job,
        resubmit: await resubmitCheck(manager, job),
        stale: hub.staleTargets().filter((target) => target.target === job.target),
      });
    } catch (error) {
      return failure(c, error);
    }
  });

  app.get('/api/events', (c) =>
    streamSSE(c, async (stream) => {
      const subscription = hub.subscribe();
      stream.onAbort(() => subscription.close());
      await stream.writeSSE({ event: 'hello', data: JSON.stringify({ jobs: index.size }) });
      // A heartbeat does not give up the read it interrupted: that read's message comes next.
      let pending = subscription.next();
      for (;;) {
        const message: LiveMessage | undefined | 'heartbeat' = await nextOrHeartbeat(pending);
        if (message === undefined || stream.aborted) break;
        if (message === 'heartbeat') {
          await stream.write(': heartbeat\n\n');
          continue;
        }
        pending = subscription.next();
        await stream.writeSSE({ event: message.event, data: JSON.stringify(message.data) });
      }
      subscription.close();
    }),
  );

  app.get('/api/jobs/:id/log', async (c) => {
    const reference = c.req.param('id');
    let id: string;
    try {
      id = (await manager.resolve(reference)).id;
    } catch (error) {
      return failure(c, error);
    }
    const resume = c.req.header('last-event-id') ?? c.req.query('from');
    const from = wholeNumber(resume, 0, Number.MAX_SAFE_INTEGER);
    return streamSSE(c, async (stream) => {
      const stop = new AbortController();
      stream.onAbort(() => stop.abort());
      const messages = logs.follow(id, from, stop.signal);
      let pending = messages.next();
      for (;;) {
        const next = await nextOrHeartbeat(pending);
        if (stream.aborted) break;
        if (next === 'heartbeat') {
          await stream.write(': heartbeat\n\n');
          continue;
        }
        if (next.done) break;
        pending = messages.next();
        const message = next.value;
        if (message.type === 'log') {
          await stream.writeSSE({
            event: 'log',
            id: String(message.offset),
            data: JSON.stringify({ text: message.text, offset: message.offset }),
          });
        } else {
          await stream.writeSSE({ event: message.type, data: JSON.stringify(message) });
        }
        if (message.type === 'end') break;
      }
      stop.abort();
      await messages.return(undefined);
    });
  });

  // The whole log, as the job wrote it, for the browser to save: read in bounded pieces
  // through the manager, each written before the next is read.
  app.get('/api/jobs/:id/log/download', async (c) => {
    let id: string;
    try {
      id = (await manager.resolve(c.req.param('id'))).id;
    } catch (error) {
      return failure(c, error);
    }
    c.header('content-type', 'application/octet-stream');
    c.header('content-disposition', `attachment; filename="yonder-${id}.log"`);
    return stream(c, async (out) => {
      const stop = new AbortController();
      out.onAbort(() => stop.abort());
      await manager.streamLogs(
        id,
        async (chunk) => {
          // Copied: the chunk is lent only until this write resolves, and the stream queues it.
          await out.write(Buffer.from(chunk.data));
        },
        { all: true, signal: stop.signal },
      );
    });
  });

  app.post('/api/cancel', async (c) => {
    try {
      const jobs = await manager.cancel(await bodyIds(c));
      return c.json({ jobs: jobs.map((job) => index.upsert(job)) });
    } catch (error) {
      return failure(c, error);
    }
  });

  app.post('/api/resubmit', async (c) => {
    try {
      return c.json({ outcomes: await resubmitJobs(manager, await bodyIds(c)) });
    } catch (error) {
      return failure(c, error);
    }
  });

  app.notFound((c) => problem(c, 404, 'E_NOT_FOUND', 'Nothing here.'));
  app.onError((error, c) => problem(c, 500, 'E_INTERNAL', toYonderError(error).message));
  return app;
}
