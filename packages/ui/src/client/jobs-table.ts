/** The jobs view: every job of the ledger a page at a time from the server, sortable, filtered by a negatable query, with chosen columns and saved filters remembered, bulk actions, and live rows. */
import {
  cancelJobs,
  getJson,
  type JobPage,
  type JobRow,
  liveEvents,
  resubmitJobs,
  withToken,
} from './api.js';
import { showNote, showStale, showUnreadable } from './banners.js';
import { durationElement, formatTime, h, loadSetting, saveSetting, stateBadge } from './dom.js';

interface Column {
  key: string;
  label: string;
  sort?: string;
  cell: (row: JobRow) => Node | string;
}

const COLUMNS: Column[] = [
  {
    key: 'id',
    label: 'Id',
    sort: 'id',
    cell: (row) => h('a', { href: withToken(`/job/${row.id}`), class: 'mono' }, row.id),
  },
  { key: 'name', label: 'Name', sort: 'name', cell: (row) => row.name },
  {
    key: 'state',
    label: 'State',
    sort: 'state',
    cell: (row) => stateBadge(row.state, row.cancelRequested),
  },
  { key: 'profile', label: 'Profile', sort: 'profile', cell: (row) => row.profile },
  { key: 'backend', label: 'Backend', sort: 'backend', cell: (row) => row.backend },
  { key: 'native', label: 'Native state', cell: (row) => row.nativeState ?? '–' },
  {
    key: 'exit',
    label: 'Exit',
    sort: 'exit',
    cell: (row) => (row.exitCode ?? row.signal ?? '–').toString(),
  },
  {
    key: 'reason',
    label: 'Reason',
    cell: (row) =>
      row.reason ? `${row.reason}${row.failureKind ? ` (${row.failureKind})` : ''}` : '–',
  },
  { key: 'created', label: 'Created', sort: 'created', cell: (row) => formatTime(row.createdAt) },
  {
    key: 'submitted',
    label: 'Submitted',
    sort: 'submitted',
    cell: (row) => formatTime(row.submittedAt),
  },
  {
    key: 'finished',
    label: 'Finished',
    sort: 'finished',
    cell: (row) => formatTime(row.finishedAt),
  },
  {
    key: 'duration',
    label: 'Duration',
    sort: 'duration',
    cell: (row) => durationElement(row),
  },
  { key: 'external', label: 'External id', cell: (row) => row.externalId ?? '–' },
];
const DEFAULT_COLUMNS = ['id', 'name', 'state', 'profile', 'exit', 'reason', 'created', 'duration'];
const STATES = ['submitting', 'pending', 'running', 'succeeded', 'failed', 'cancelled', 'unknown'];
const PAGE_SIZE = 50;

interface ViewState {
  q: string;
  sort: string;
  dir: 'asc' | 'desc';
  offset: number;
}

function readLocation(): ViewState {
  const params = new URLSearchParams(location.search);
  return {
    q: params.get('q') ?? '',
    sort: params.get('sort') ?? 'created',
    dir: params.get('dir') === 'asc' ? 'asc' : 'desc',
    offset: Math.max(0, Number(params.get('offset')) || 0),
  };
}

function writeLocation(view: ViewState): void {
  const params = new URLSearchParams();
  if (view.q) params.set('q', view.q);
  if (view.sort !== 'created') params.set('sort', view.sort);
  if (view.dir !== 'desc') params.set('dir', view.dir);
  if (view.offset > 0) params.set('offset', String(view.offset));
  const search = params.toString();
  // The token stays in the address: the page is reloaded, bookmarked or shared only with it.
  history.replaceState(null, '', withToken(search ? `/?${search}` : '/'));
}

export function showJobsTable(main: HTMLElement): void {
  const view = readLocation();
  let columns = loadSetting<string[]>('columns', DEFAULT_COLUMNS).filter((key) =>
    COLUMNS.some((column) => column.key === key),
  );
  if (columns.length === 0) columns = [...DEFAULT_COLUMNS];
  let saved = loadSetting<string[]>('filters', []);
  let page: JobPage | null = null;
  const selected = new Set<string>();
  let inFlight: AbortController | null = null;
  let refetchTimer: number | null = null;

  const filter = h('input', {
    id: 'filter',
    type: 'search',
    value: view.q,
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': 'filter-help',
    placeholder: 'state:running -profile:local train',
  });
  const savedSelect = h('select', { id: 'saved-filters', 'aria-label': 'Saved filters' });
  const chips = h('div', { class: 'chips', role: 'group', 'aria-label': 'Jobs by state' });
  const columnsMenu = h('div', { class: 'columns-menu' });
  const summary = h('p', {
    id: 'summary',
    class: 'summary',
    role: 'status',
    'aria-live': 'polite',
  });
  const bulk = h('div', { class: 'bulk', role: 'group', 'aria-label': 'Selected jobs' });
  const table = h('table', { id: 'jobs', class: 'jobs' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  const queryProblems = h('p', { class: 'query-problems', role: 'alert' });

  const renderSaved = (): void => {
    savedSelect.replaceChildren(
      h('option', { value: '' }, 'Saved filters…'),
      ...saved.map((q) => h('option', { value: q }, q)),
    );
  };
  renderSaved();

  const renderColumnsMenu = (): void => {
    columnsMenu.replaceChildren(
      ...COLUMNS.map((column) =>
        h(
          'label',
          {},
          h('input', {
            type: 'checkbox',
            value: column.key,
            checked: columns.includes(column.key),
            onchange: (event: Event) => {
              const box = event.target as HTMLInputElement;
              columns = COLUMNS.map((c) => c.key).filter((key) =>
                key === column.key ? box.checked : columns.includes(key),
              );
              saveSetting('columns', columns);
              renderTable();
            },
          }),
          ` ${column.label}`,
        ),
      ),
    );
  };
  renderColumnsMenu();

  const setQuery = (q: string): void => {
    filter.value = q;
    view.q = q;
    view.offset = 0;
    void load();
  };

  const renderChips = (): void => {
    if (!page) return;
    const counts = page.states;
    chips.replaceChildren(
      h('button', { type: 'button', class: 'chip', onclick: () => setQuery('') }, 'all'),
      ...STATES.filter((state) => (counts[state] ?? 0) > 0).map((state) =>
        h(
          'button',
          {
            type: 'button',
            class: `chip state-${state}`,
            'aria-pressed': view.q.trim() === `state:${state}` ? 'true' : 'false',
            onclick: () => setQuery(`state:${state}`),
          },
          `${state} ${counts[state]}`,
        ),
      ),
    );
  };

  const renderBulk = (): void => {
    const ids = [...selected];
    const act = async (label: string, run: () => Promise<string>): Promise<void> => {
      summary.textContent = `${label}…`;
      try {
        summary.textContent = await run();
      } catch (error) {
        showNote((error as Error).message);
      }
      selected.clear();
      renderBulk();
      scheduleRefetch(0);
    };
    bulk.replaceChildren(
      h(
        'span',
        {},
        ids.length === 0 ? 'Select jobs to act on several at once.' : `${ids.length} selected`,
      ),
      h(
        'button',
        {
          type: 'button',
          id: 'bulk-cancel',
          disabled: ids.length === 0,
          onclick: () =>
            act('Cancelling', async () => {
              const { jobs } = await cancelJobs(ids);
              return `Cancel asked for ${jobs.length} job${jobs.length === 1 ? '' : 's'}.`;
            }),
        },
        'Cancel',
      ),
      h(
        'button',
        {
          type: 'button',
          id: 'bulk-resubmit',
          disabled: ids.length === 0,
          onclick: () =>
            act('Resubmitting', async () => {
              const { outcomes } = await resubmitJobs(ids);
              const failed = outcomes.filter((outcome) => !outcome.ok);
              if (failed.length > 0)
                showNote(
                  failed
                    .map(
                      (outcome) =>
                        `${outcome.from}: ${'message' in outcome ? outcome.message : ''}`,
                    )
                    .join(' '),
                );
              return `Resubmitted ${outcomes.length - failed.length} of ${outcomes.length}.`;
            }),
        },
        'Resubmit',
      ),
    );
  };
  renderBulk();

  const headerCell = (column: Column): HTMLElement => {
    if (!column.sort) return h('th', { scope: 'col' }, column.label);
    const active = view.sort === column.sort;
    const ariaSort = active ? (view.dir === 'asc' ? 'ascending' : 'descending') : null;
    return h(
      'th',
      { scope: 'col', 'aria-sort': ariaSort },
      h(
        'button',
        {
          type: 'button',
          class: 'sort',
          'data-sort': column.sort,
          'data-focus-key': `sort:${column.sort}`,
          onclick: () => {
            if (active) view.dir = view.dir === 'asc' ? 'desc' : 'asc';
            else {
              view.sort = column.sort as string;
              view.dir = column.sort === 'name' || column.sort === 'profile' ? 'asc' : 'desc';
            }
            view.offset = 0;
            void load();
          },
        },
        column.label,
        h(
          'span',
          { class: 'arrow', 'aria-hidden': 'true' },
          active ? (view.dir === 'asc' ? ' ▲' : ' ▼') : '',
        ),
      ),
    );
  };

  const rowElement = (row: JobRow, shown: Column[]): HTMLTableRowElement =>
    h(
      'tr',
      { 'data-id': row.id, 'data-state': row.state },
      h(
        'td',
        { class: 'select' },
        h('input', {
          type: 'checkbox',
          'aria-label': `Select ${row.name} (${row.id})`,
          'data-focus-key': `select:${row.id}`,
          checked: selected.has(row.id),
          onchange: (event: Event) => {
            if ((event.target as HTMLInputElement).checked) selected.add(row.id);
            else selected.delete(row.id);
            renderBulk();
          },
        }),
      ),
      ...shown.map((column) => h('td', { class: `col-${column.key}` }, column.cell(row))),
    );

  function renderTable(): void {
    if (!page) return;
    const shown = COLUMNS.filter((column) => columns.includes(column.key));
    // The table is drawn anew on every change (live rows too): a keyboard user keeps the focus.
    const focused = table.contains(document.activeElement)
      ? (document.activeElement as HTMLElement).dataset.focusKey
      : undefined;
    table.replaceChildren(
      h('caption', { class: 'visually-hidden' }, 'Jobs, newest first unless sorted otherwise'),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Select')),
          ...shown.map(headerCell),
        ),
      ),
      h(
        'tbody',
        {},
        ...(page.rows.length === 0
          ? [h('tr', {}, h('td', { colspan: shown.length + 1, class: 'empty' }, 'No jobs match.'))]
          : page.rows.map((row) => rowElement(row, shown))),
      ),
    );
    const first = page.total === 0 ? 0 : page.offset + 1;
    const last = page.offset + page.rows.length;
    summary.textContent = `${first}–${last} of ${page.total.toLocaleString()} job${page.total === 1 ? '' : 's'}`;
    pager.replaceChildren(
      h(
        'button',
        {
          type: 'button',
          id: 'previous-page',
          disabled: page.offset === 0,
          onclick: () => {
            view.offset = Math.max(0, view.offset - PAGE_SIZE);
            void load();
          },
        },
        'Previous',
      ),
      h(
        'button',
        {
          type: 'button',
          id: 'next-page',
          disabled: last >= page.total,
          onclick: () => {
            view.offset += PAGE_SIZE;
            void load();
          },
        },
        'Next',
      ),
    );
    queryProblems.textContent = page.problems.join('; ');
    table.dataset.query = view.q;
    if (focused !== undefined)
      table.querySelector<HTMLElement>(`[data-focus-key="${CSS.escape(focused)}"]`)?.focus();
    renderChips();
  }

  async function load(): Promise<void> {
    inFlight?.abort();
    const controller = new AbortController();
    inFlight = controller;
    writeLocation(view);
    const params = new URLSearchParams({
      q: view.q,
      sort: view.sort,
      dir: view.dir,
      offset: String(view.offset),
      limit: String(PAGE_SIZE),
    });
    try {
      const next = await getJson<JobPage>(`/api/jobs?${params}`, controller.signal);
      if (controller.signal.aborted) return;
      page = next;
      view.offset = next.offset;
      renderTable();
      showStale(next.stale);
      showUnreadable(next.unreadable);
      document.dispatchEvent(new CustomEvent('yonder:rendered', { detail: { query: view.q } }));
    } catch (error) {
      if (!controller.signal.aborted) showNote((error as Error).message);
    } finally {
      if (inFlight === controller) inFlight = null;
    }
  }

  function scheduleRefetch(delayMs = 400): void {
    if (refetchTimer !== null) return;
    refetchTimer = window.setTimeout(() => {
      refetchTimer = null;
      void load();
    }, delayMs);
  }

  filter.addEventListener('input', () => setQuery(filter.value));
  savedSelect.addEventListener('change', () => {
    if (savedSelect.value) setQuery(savedSelect.value);
  });

  main.replaceChildren(
    h('h1', {}, 'Jobs'),
    h(
      'div',
      { class: 'controls' },
      h('label', { for: 'filter' }, 'Filter'),
      filter,
      h(
        'p',
        { id: 'filter-help', class: 'help' },
        'Terms: state:, profile:, name:, backend:, id:, target: (commas for any of several); a bare word matches the name; put - before a term to exclude it.',
      ),
      h(
        'div',
        { class: 'saved' },
        savedSelect,
        h(
          'button',
          {
            type: 'button',
            onclick: () => {
              const q = filter.value.trim();
              if (!q || saved.includes(q)) return;
              saved = [...saved, q];
              saveSetting('filters', saved);
              renderSaved();
            },
          },
          'Save filter',
        ),
        h(
          'button',
          {
            type: 'button',
            onclick: () => {
              saved = saved.filter((q) => q !== savedSelect.value);
              saveSetting('filters', saved);
              renderSaved();
            },
          },
          'Forget filter',
        ),
      ),
      queryProblems,
      chips,
      h('details', { class: 'columns' }, h('summary', {}, 'Columns'), columnsMenu),
    ),
    bulk,
    summary,
    h('div', { class: 'table-scroll', tabindex: '0', 'aria-label': 'Jobs table' }, table),
    pager,
  );

  liveEvents({
    hello: () => scheduleRefetch(0),
    job: (data) => {
      const row = data as JobRow;
      const index = page?.rows.findIndex((candidate) => candidate.id === row.id) ?? -1;
      if (page && index >= 0) {
        page.rows[index] = row;
        const shown = COLUMNS.filter((column) => columns.includes(column.key));
        table.querySelector(`tr[data-id="${row.id}"]`)?.replaceWith(rowElement(row, shown));
      }
      scheduleRefetch();
    },
    removed: (data) => {
      const { id } = data as { id: string };
      selected.delete(id);
      table.querySelector(`tr[data-id="${CSS.escape(id)}"]`)?.remove();
      scheduleRefetch();
    },
    lagged: () => scheduleRefetch(0),
    stale: (data) => showStale(data as JobPage['stale']),
    problem: (data) => showNote((data as { message: string }).message),
  });
  void load();
}
