/** Small helpers for the page: elements built from data (never from HTML strings), times, durations and local storage. */
import { type JobTimes, jobDuration } from '../shared/job-duration.js';

type Child = Node | string | null | undefined | false;
type Attributes = Record<string, string | number | boolean | null | undefined | EventListener>;

/** An element with attributes (`on…` ones as listeners) and children; text is always text. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, '');
    else element.setAttribute(name, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child);
  }
  return element;
}

/** A time as the reader's locale writes it, or a dash. */
export function formatTime(iso: string | null): string {
  if (!iso) return '–';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/** A duration such as `2h 05m`, `3m 07s` or `850 ms`. */
export function formatDuration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms) || ms < 0) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = Math.floor(ms / 1000);
  const days = Math.floor(seconds / 86_400);
  const hours = Math.floor((seconds % 86_400) / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = seconds % 60;
  const two = (value: number) => String(value).padStart(2, '0');
  if (days > 0) return `${days}d ${two(hours)}h`;
  if (hours > 0) return `${hours}h ${two(minutes)}m`;
  if (minutes > 0) return `${minutes}m ${two(rest)}s`;
  return `${rest}s`;
}

/**
 * A job's duration as shown: from its own start to its own end, and, while it runs, kept
 * ticking by `tickDurations` (the element carries its start).
 */
export function durationElement(job: JobTimes): HTMLElement {
  const running = Boolean(job.startedAt) && !job.finishedAt;
  return h(
    'span',
    {
      class: 'duration',
      'data-started': running ? job.startedAt : null,
      title: job.startedAt ? null : 'not started yet, or its start is not known',
    },
    formatDuration(jobDuration(job, Date.now())),
  );
}

/** Bring every running job's duration on the page up to now (called every second). */
export function tickDurations(): void {
  const now = Date.now();
  for (const element of document.querySelectorAll<HTMLElement>('.duration[data-started]')) {
    element.textContent = formatDuration(
      jobDuration({ startedAt: element.dataset.started ?? null, finishedAt: null }, now),
    );
  }
}

/** A stored preference, or `fallback` when absent or unreadable. */
export function loadSetting<T>(key: string, fallback: T): T {
  try {
    const text = localStorage.getItem(`yonder-ui:${key}`);
    return text === null ? fallback : (JSON.parse(text) as T);
  } catch {
    return fallback;
  }
}

export function saveSetting(key: string, value: unknown): void {
  try {
    localStorage.setItem(`yonder-ui:${key}`, JSON.stringify(value));
  } catch {
    // Storage refused (private mode, quota): the preference lasts as long as the page.
  }
}

/** A state as a badge that says it in words, not only in colour. */
export function stateBadge(state: string, cancelRequested = false): HTMLElement {
  return h(
    'span',
    { class: `state state-${state}` },
    state,
    cancelRequested && state !== 'cancelled' && !['succeeded', 'failed'].includes(state)
      ? ' (cancelling)'
      : null,
  );
}
