/** The banners above every view: targets whose last poll failed ("stale since …"), ledger records that could not be read, and passing problems. */
import type { StaleTarget } from './api.js';
import { formatTime, h } from './dom.js';

let stale: StaleTarget[] = [];
let unreadable: Array<{ location: string; message: string }> = [];
let notes: string[] = [];

function render(): void {
  const region = document.getElementById('banners');
  if (!region) return;
  const items: HTMLElement[] = [];
  for (const target of stale) {
    items.push(
      h(
        'p',
        { class: 'banner banner-stale', 'data-target': target.target },
        h('strong', {}, `${target.profiles.join(', ')} (${target.backend}, ${target.target}): `),
        `the last poll failed — ${target.message}. `,
        `States of its ${target.jobs} active job${target.jobs === 1 ? '' : 's'} are stale since ${formatTime(target.since)}.`,
      ),
    );
  }
  if (unreadable.length > 0) {
    items.push(
      h(
        'p',
        { class: 'banner banner-problem' },
        `${unreadable.length} ledger record${unreadable.length === 1 ? '' : 's'} could not be read: `,
        unreadable
          .slice(0, 3)
          .map((problem) => `${problem.location} (${problem.message})`)
          .join('; '),
      ),
    );
  }
  for (const note of notes) items.push(h('p', { class: 'banner banner-problem' }, note));
  region.replaceChildren(...items);
}

export function showStale(targets: StaleTarget[]): void {
  stale = targets;
  render();
}

export function showUnreadable(problems: Array<{ location: string; message: string }>): void {
  unreadable = problems;
  render();
}

/** A passing problem: shown until the next one replaces it. */
export function showNote(text: string): void {
  notes = [text];
  render();
}
