/** The live side of the server: one watch of the ledger keeps the job index current and fans its changes out to every open page, each through a bounded queue. */
import { type JobEvent, type JobManager, type StoreProblemV1, toYonderError } from '@yonder/core';
import type { JobIndex, JobRow, StaleTarget } from './job-index.js';

/** What an open page is told. */
export type LiveMessage =
  | { readonly event: 'job'; readonly data: JobRow }
  | { readonly event: 'removed'; readonly data: { readonly id: string } }
  | { readonly event: 'stale'; readonly data: readonly StaleTarget[] }
  | { readonly event: 'problem'; readonly data: { readonly message: string } }
  /** Messages were dropped for this page: it reads what it shows again. */
  | { readonly event: 'lagged'; readonly data: Record<string, never> };

/** A page's subscription: messages in order, at most `limit` waiting. */
export interface LiveSubscription {
  next(): Promise<LiveMessage | undefined>;
  close(): void;
}

class BoundedMailbox implements LiveSubscription {
  private items: LiveMessage[] = [];
  private waiting: ((message: LiveMessage | undefined) => void) | null = null;
  private closed = false;

  constructor(
    private readonly limit: number,
    private readonly onClose: () => void,
  ) {}

  push(message: LiveMessage): void {
    if (this.closed) return;
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = null;
      resolve(message);
      return;
    }
    this.items.push(message);
    // Too far behind: what waits is dropped, and the page reads everything again instead.
    if (this.items.length > this.limit) this.items = [{ event: 'lagged', data: {} }];
  }

  next(): Promise<LiveMessage | undefined> {
    const item = this.items.shift();
    if (item) return Promise.resolve(item);
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.items = [];
    this.waiting?.(undefined);
    this.waiting = null;
    this.onClose();
  }
}

export interface LiveHubOptions {
  /** How often the ledger is read for changes. Default 1000 ms. */
  readonly intervalMs?: number;
  /** Messages held for one page before it is told to read again. Default 500. */
  readonly pageQueueLimit?: number;
}

/** Keeps `index` current from the ledger and tells every subscriber what changed. */
export class LiveHub {
  private readonly mailboxes = new Set<BoundedMailbox>();
  private readonly stop = new AbortController();
  private stale = '[]';
  private staleCheck = false;
  /** Records the ledger could not read at the last full read. */
  problems: StoreProblemV1[] = [];

  constructor(
    private readonly manager: JobManager,
    private readonly index: JobIndex,
    private readonly options: LiveHubOptions = {},
  ) {}

  /** Read the whole ledger into the index, then follow it; resolves once the index is full. */
  async start(): Promise<void> {
    const watch = this.manager.watch({
      signal: this.stop.signal,
      intervalMs: this.options.intervalMs ?? 1000,
    });
    await watch.ready;
    await this.reload();
    void (async () => {
      for await (const event of watch) await this.apply(event);
    })();
  }

  /** The stale targets as the index has them now. */
  staleTargets(): StaleTarget[] {
    return this.index.staleTargets();
  }

  subscribe(): LiveSubscription {
    const mailbox: BoundedMailbox = new BoundedMailbox(this.options.pageQueueLimit ?? 500, () =>
      this.mailboxes.delete(mailbox),
    );
    this.mailboxes.add(mailbox);
    return mailbox;
  }

  close(): void {
    this.stop.abort();
    for (const mailbox of [...this.mailboxes]) mailbox.close();
  }

  private broadcast(message: LiveMessage): void {
    for (const mailbox of this.mailboxes) mailbox.push(message);
  }

  private async reload(): Promise<void> {
    const { jobs, problems } = await this.manager.store.listJobs({});
    this.index.reset(jobs);
    this.problems = problems;
    this.stale = JSON.stringify(this.index.staleTargets());
  }

  private async apply(event: JobEvent): Promise<void> {
    switch (event.type) {
      case 'created':
      case 'state-changed':
      case 'updated':
      case 'log-grew':
        this.broadcast({ event: 'job', data: this.index.upsert(event.job) });
        break;
      case 'removed':
        this.index.remove(event.id);
        this.broadcast({ event: 'removed', data: { id: event.id } });
        break;
      case 'lagged':
        try {
          await this.reload();
        } catch (error) {
          this.broadcast({ event: 'problem', data: { message: toYonderError(error).message } });
        }
        this.broadcast({ event: 'lagged', data: {} });
        break;
      case 'error':
        this.broadcast({ event: 'problem', data: { message: event.error.message } });
        break;
      case 'poll-failed':
        if (event.target === null) {
          this.broadcast({
            event: 'problem',
            data: { message: `A refresh failed: ${event.error.message}` },
          });
        }
        break;
    }
    this.checkStale();
  }

  /** Tell pages when the set of stale targets changed, once per burst of events. */
  private checkStale(): void {
    if (this.staleCheck) return;
    this.staleCheck = true;
    setImmediate(() => {
      this.staleCheck = false;
      const targets = this.index.staleTargets();
      const text = JSON.stringify(targets);
      if (text === this.stale) return;
      this.stale = text;
      this.broadcast({ event: 'stale', data: targets });
    });
  }
}
