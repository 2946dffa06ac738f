/** The job view: state, times, failure, spec and resources, the history timeline with native states and sources, actions, and the log followed live by byte offset. */
import {
  ApiError,
  cancelJobs,
  getJson,
  type JobRow,
  liveEvents,
  resubmitJobs,
  type StaleTarget,
  withToken,
} from './api.js';
import { showNote, showStale } from './banners.js';
import { durationElement, formatTime, h, stateBadge } from './dom.js';

interface Transition {
  at: string;
  from: string | null;
  to: string;
  source: string;
  nativeState: string | null;
  reason?: string | null;
}

interface JobRecord extends Omit<JobRow, 'cancelRequested'> {
  history: Transition[];
  cancel: { requestedAt: string; reason: string; lastSentAt: string | null } | null;
  spec: {
    argv: string[];
    env: Record<string, string>;
    secretNames: string[];
    resources: Record<string, string | number | undefined>;
    schedulerOptions: string[];
    cwd: string | null;
    settingsSha256: string | null;
  };
}

interface JobAnswer {
  job: JobRecord;
  resubmit: { ok: boolean; reason?: string };
  stale: StaleTarget[];
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);
/**
 * Characters of log kept on the page (at least what the server holds of a log, 2 MiB); older
 * text is dropped from the top, a whole line at a time.
 */
const LOG_KEEP = 4_000_000;

/** A size in bytes as people read it: `512 bytes`, `2.0 MiB`, `200 MiB`. */
function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

function facts(entries: Array<[string, Node | string | null | undefined]>): HTMLElement {
  const list = h('dl', { class: 'facts' });
  for (const [term, value] of entries) {
    if (value === null || value === undefined || value === '') continue;
    list.append(h('dt', {}, term), h('dd', {}, value));
  }
  return list;
}

function timeline(history: Transition[]): HTMLElement {
  return h(
    'ol',
    { class: 'timeline', id: 'timeline' },
    ...history.map((step) =>
      h(
        'li',
        { 'data-to': step.to },
        h('time', { datetime: step.at }, formatTime(step.at)),
        ' ',
        step.from ? `${step.from} → ` : '',
        stateBadge(step.to),
        h(
          'span',
          { class: 'step-detail' },
          ` from ${step.source}`,
          step.nativeState ? `, native ${step.nativeState}` : '',
          step.reason ? `, reason ${step.reason}` : '',
        ),
      ),
    ),
  );
}

function specSection(job: JobRecord): HTMLElement {
  const resources = Object.entries(job.spec.resources).filter(([, value]) => value !== undefined);
  const env = Object.entries(job.spec.env);
  return h(
    'section',
    { 'aria-labelledby': 'spec-heading' },
    h('h2', { id: 'spec-heading' }, 'Spec'),
    facts([
      [
        'Command',
        h('code', { class: 'argv' }, job.spec.argv.map((word) => JSON.stringify(word)).join(' ')),
      ],
      ['Directory', job.spec.cwd],
      [
        'Resources',
        resources.length
          ? resources.map(([key, value]) => `${key}=${value}`).join(', ')
          : 'none asked for',
      ],
      ['Scheduler options', job.spec.schedulerOptions.join(' ')],
      ['Environment', env.map(([key, value]) => `${key}=${value}`).join('\n')],
      ['Secrets (names only)', job.spec.secretNames.join(', ')],
      ['Settings (sha-256)', job.spec.settingsSha256],
    ]),
  );
}

export function showJobPage(main: HTMLElement, id: string): void {
  let job: JobRecord | null = null;
  let refetching = false;
  let again = false;
  const header = h('div', { class: 'job-header' });
  const actions = h('div', { class: 'actions', role: 'group', 'aria-label': 'Actions' });
  const status = h('p', { class: 'summary', role: 'status', 'aria-live': 'polite' });
  const details = h('div', { class: 'job-details' });
  const log = h('pre', { id: 'log', class: 'log', tabindex: '0', 'aria-label': 'Job output' });
  const logNote = h('p', { id: 'log-note', class: 'help', role: 'status', 'aria-live': 'polite' });
  const follow = h('input', { type: 'checkbox', id: 'follow-log', checked: true });

  const render = (answer: JobAnswer): void => {
    job = answer.job;
    const terminal = TERMINAL.has(job.state);
    document.title = `${job.name} · yonder`;
    header.replaceChildren(
      h('h1', {}, job.name, ' ', stateBadge(job.state, job.cancel !== null)),
      h('p', { class: 'mono' }, job.id),
    );
    actions.replaceChildren(
      h(
        'button',
        {
          type: 'button',
          id: 'cancel-job',
          disabled: terminal || job.cancel !== null,
          onclick: async () => {
            status.textContent = 'Asking the job to stop…';
            try {
              await cancelJobs([id]);
              status.textContent = 'Cancel asked for; it is repeated until the job has ended.';
            } catch (error) {
              showNote((error as Error).message);
            }
            void refetch();
          },
        },
        job.cancel !== null && !terminal ? 'Cancelling…' : 'Cancel',
      ),
      h(
        'button',
        {
          type: 'button',
          id: 'resubmit-job',
          disabled: !answer.resubmit.ok,
          title: answer.resubmit.reason ?? null,
          onclick: async () => {
            try {
              const { outcomes } = await resubmitJobs([id]);
              const outcome = outcomes[0];
              if (outcome?.ok) {
                status.replaceChildren(
                  'Submitted again as ',
                  h('a', { href: withToken(`/job/${outcome.id}`) }, outcome.id),
                  '.',
                );
              } else if (outcome) showNote(outcome.message);
            } catch (error) {
              showNote((error as Error).message);
            }
          },
        },
        'Resubmit',
      ),
    );
    if (!answer.resubmit.ok) {
      actions.append(
        h('span', { class: 'help' }, `Resubmit unavailable: ${answer.resubmit.reason}.`),
      );
    }
    details.replaceChildren(
      h(
        'section',
        { 'aria-labelledby': 'state-heading' },
        h('h2', { id: 'state-heading' }, 'State'),
        facts([
          ['Profile', job.profile],
          ['Backend', `${job.backend} (${job.target})`],
          ['External id', job.externalId],
          ['Native state', job.nativeState],
          ['Exit code', job.exitCode === null ? null : String(job.exitCode)],
          ['Signal', job.signal],
          [
            'Failure',
            job.failureKind ? `${job.failureKind}: ${job.reason ?? 'no reason given'}` : null,
          ],
          ['Reason', job.failureKind ? null : job.reason],
          ['Last error', job.error ? `${job.error.code}: ${job.error.message}` : null],
          [
            'Cancel',
            job.cancel
              ? `asked for at ${formatTime(job.cancel.requestedAt)} (${job.cancel.reason})`
              : null,
          ],
          ['Created', formatTime(job.createdAt)],
          ['Submitted', formatTime(job.submittedAt)],
          ['Started', job.startedAt ? formatTime(job.startedAt) : null],
          ['Finished', job.finishedAt ? formatTime(job.finishedAt) : null],
          ['Duration', durationElement(job)],
        ]),
      ),
      h(
        'section',
        { 'aria-labelledby': 'history-heading' },
        h('h2', { id: 'history-heading' }, 'History'),
        timeline(job.history),
      ),
      specSection(job),
    );
    showStale(answer.stale);
  };

  let removed = false;
  /** The job left the ledger (`yonder rm`, `prune`, retention; here or in another process). */
  const showRemoved = (): void => {
    if (removed) return;
    removed = true;
    logSource.close();
    main.dataset.removed = 'true';
    for (const button of actions.querySelectorAll('button')) button.disabled = true;
    header.querySelector('h1 .state')?.replaceWith(h('span', { class: 'state' }, 'removed'));
    status.textContent = job
      ? 'This job was removed from the ledger (yonder rm or prune). What is shown is how it was last seen.'
      : `No job ${id} in the ledger: it was removed (yonder rm or prune), or never existed.`;
  };

  async function refetch(): Promise<void> {
    if (removed) return;
    if (refetching) {
      again = true;
      return;
    }
    refetching = true;
    try {
      render(await getJson<JobAnswer>(`/api/jobs/${id}`));
    } catch (error) {
      if (error instanceof ApiError && error.code === 'E_NO_SUCH_JOB') showRemoved();
      else showNote((error as Error).message);
    } finally {
      refetching = false;
      if (again) {
        again = false;
        void refetch();
      }
    }
  }

  main.replaceChildren(
    h('p', {}, h('a', { href: withToken('/') }, '← All jobs')),
    header,
    actions,
    status,
    details,
    h(
      'section',
      { 'aria-labelledby': 'log-heading', class: 'log-section' },
      h('h2', { id: 'log-heading' }, 'Output'),
      h('label', { class: 'follow' }, follow, ' Keep the newest output in view'),
      h(
        'p',
        {},
        h(
          'a',
          {
            id: 'log-download',
            href: withToken(`/api/jobs/${id}/log/download`),
            download: `yonder-${id}.log`,
          },
          'Download the whole log',
        ),
      ),
      logNote,
      log,
    ),
  );

  /** Text was dropped from the top of the page to keep it small. */
  let trimmed = false;
  const showNewest = (): void => {
    // At once, not animated: an animation still under way when more text arrives stops short.
    if (follow.checked) log.scrollTop = log.scrollHeight;
  };
  follow.addEventListener('change', showNewest);
  const logSource = new EventSource(withToken(`/api/jobs/${id}/log`));
  logSource.addEventListener('log', (message) => {
    const { text, offset } = JSON.parse((message as MessageEvent).data) as {
      text: string;
      offset: number;
    };
    log.append(text);
    const shown = log.textContent ?? '';
    if (shown.length > LOG_KEEP) {
      const cut = shown.length - LOG_KEEP;
      const line = shown.indexOf('\n', cut - 1);
      log.textContent = shown.slice(line >= 0 && line < shown.length - 1 ? line + 1 : cut);
      trimmed = true;
    }
    log.dataset.offset = String(offset);
    showNewest();
  });
  logSource.addEventListener('notice', (message) => {
    logNote.textContent = (JSON.parse((message as MessageEvent).data) as { text: string }).text;
  });
  logSource.addEventListener('truncated', (message) => {
    const { offset } = JSON.parse((message as MessageEvent).data) as { offset: number };
    if (log.textContent) log.append(`\n[… output before byte ${offset} is not shown here …]\n`);
    log.dataset.from = String(offset);
    logNote.textContent = `Showing the output from byte ${offset.toLocaleString()} on; the earlier output is in the download.`;
  });
  logSource.addEventListener('end', (message) => {
    const { size } = JSON.parse((message as MessageEvent).data) as { size: number };
    logSource.close();
    log.dataset.ended = 'true';
    showNewest();
    if (trimmed || log.dataset.from !== undefined) {
      logNote.textContent = `The job has ended. Shown here: the end of its output; the whole log (${formatBytes(size)}) is in the download.`;
    } else {
      logNote.textContent = 'The job has ended; this is all of its output.';
    }
  });

  liveEvents({
    hello: () => void refetch(),
    job: (data) => {
      if ((data as JobRow).id === id) void refetch();
    },
    removed: (data) => {
      if ((data as { id: string }).id === id) showRemoved();
    },
    lagged: () => void refetch(),
    stale: (data) =>
      showStale((data as StaleTarget[]).filter((target) => target.target === job?.target)),
    problem: (data) => showNote((data as { message: string }).message),
  });
  void refetch();
}
