/** What a person sees change over time in `yonder ui` (Chromium, local jobs): a running job's duration goes on from its own start and stops at its own end, and a finished job removed by another process leaves the table, its counts and its page says it was removed. */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Raw, runCli, runCliJson } from '@yonder/test-helpers';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, startUiProcess, type UiProcess } from './test-support/ui-process.js';

let state: string;
let ui: UiProcess;
let browser: Browser;
const ids: string[] = [];
const pageErrors: string[] = [];

async function yonder(args: string[]): Promise<string> {
  const result = await runCli(args, { state });
  expect(result.code, `yonder ${args.join(' ')}: ${result.stderr}`).toBe(0);
  return result.stdout.trim();
}

async function status(id: string): Promise<Raw> {
  return (await runCliJson(['status', id], { state })).doc.result[0];
}

async function openPage(path: string): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  page.on('pageerror', (error) => pageErrors.push(`${path}: ${error.message}`));
  await page.goto(ui.address(path));
  return page;
}

/** The whole seconds a duration such as `850 ms`, `7s` or `1m 05s` says; -1 for none (`–`). */
function seconds(text: string): number {
  if (text.trim() === '–') return -1;
  if (/^\d+ ms$/.test(text.trim())) return 0;
  const match = /^(?:(\d+)m )?(\d+)s$/.exec(text.trim());
  if (!match) throw new Error(`not a duration: "${text}"`);
  return Number(match[1] ?? 0) * 60 + Number(match[2]);
}

/** The duration `shown` comes to say something, then says more, with nothing else asked for. */
async function expectTicking(shown: Locator): Promise<void> {
  const read = async () => seconds((await shown.textContent()) ?? '');
  await expect.poll(read, { timeout: 30_000 }).toBeGreaterThanOrEqual(0);
  const first = await read();
  await expect.poll(read, { timeout: 30_000 }).toBeGreaterThan(first);
}

beforeAll(async () => {
  state = mkdtempSync(join(tmpdir(), 'yonder-ui-live-'));
  ui = await startUiProcess(state);
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  if (ui) expect(await ui.stop(), ui.stderr()).toBe(0);
  if (ids.length > 0) await runCli(['cancel', ...ids], { state });
  rmSync(state, { recursive: true, force: true });
});

afterEach(() => {
  expect(pageErrors.splice(0)).toEqual([]);
});

describe('yonder ui over time', () => {
  it('keeps a running job’s duration going from its own start, and stops it at its own end', async () => {
    // It runs until the test has seen what it looks for, however slow the machine is.
    const release = join(state, 'release');
    const id = await yonder([
      'submit',
      '--name',
      'timed',
      '--',
      'sh',
      '-c',
      'while [ ! -e "$0" ]; do sleep 0.2; done',
      release,
    ]);
    ids.push(id);
    const page = await openPage(`/job/${id}`);
    const duration = page.locator('.facts .duration');
    await expect
      .poll(() => page.locator('h1 .state').textContent(), { timeout: 30_000 })
      .toBe('running');
    // While it runs, the shown duration grows without any event from the server (once its
    // start is known: the first poll reads it from the job's own record).
    await expectTicking(duration);
    const table = await openPage('/');
    const cell = table.locator(`#jobs tr[data-id="${id}"] .col-duration`);
    await cell.waitFor({ timeout: 30_000 });
    await expect(
      table.locator(`#jobs tr[data-id="${id}"]`).getAttribute('data-state'),
    ).resolves.toBe('running');
    await expectTicking(cell);
    // Once it has ended: the job's own start to its own end, as `yonder status` says, and
    // the same a while later.
    writeFileSync(release, '');
    await expect
      .poll(() => page.locator('h1 .state').textContent(), { timeout: 60_000 })
      .toBe('succeeded');
    const record = await status(id);
    const ran = Math.floor((Date.parse(record.finishedAt) - Date.parse(record.startedAt)) / 1000);
    expect(ran).toBeGreaterThanOrEqual(1);
    await expect.poll(async () => seconds((await duration.textContent()) ?? '')).toBe(ran);
    await expect
      .poll(async () => seconds((await cell.textContent()) ?? ''), { timeout: 30_000 })
      .toBe(ran);
    await page.waitForTimeout(2500);
    expect(seconds((await duration.textContent()) ?? '')).toBe(ran);
    expect(seconds((await cell.textContent()) ?? '')).toBe(ran);
    await page.context().close();
    await table.context().close();
  });

  it('shows a large finished log from a whole line, says it is the end, offers all of it, and keeps the newest in view', async () => {
    // 8 MiB of numbered lines, four times what the page holds, then a last line.
    const id = await yonder([
      'submit',
      '--name',
      'chatty',
      '--',
      'sh',
      '-c',
      'seq -f "line %08g of a long log, with a few words to make it longer" 1 140000; echo LAST-LINE',
    ]);
    ids.push(id);
    await yonder(['wait', id, '--timeout', '120']);
    const whole = readFileSync((await status(id)).data.log as string);
    expect(whole.length).toBeGreaterThan(8 * 1024 * 1024);
    for (let round = 0; round < 2; round += 1) {
      // Opened, and opened again: the newest output in view each time.
      const page = await openPage(`/job/${id}`);
      const log = page.locator('#log');
      await expect.poll(() => log.getAttribute('data-ended'), { timeout: 60_000 }).toBe('true');
      const shown = (await log.textContent()) ?? '';
      expect(shown.startsWith('line ')).toBe(true);
      expect(shown.trimEnd().endsWith('\nLAST-LINE')).toBe(true);
      expect(whole.toString('utf8').endsWith(shown)).toBe(true);
      const note = (await page.locator('#log-note').textContent()) ?? '';
      expect(note).not.toContain('this is all of its output');
      expect(note).toContain('the whole log (8.');
      expect(note).toContain('is in the download');
      await expect
        .poll(() =>
          log.evaluate(
            (element) => element.scrollTop + element.clientHeight >= element.scrollHeight - 2,
          ),
        )
        .toBe(true);
      if (round === 0) {
        const href = (await page.locator('#log-download').getAttribute('href')) as string;
        const download = await page.request.get(new URL(href, ui.origin).href);
        expect(download.status()).toBe(200);
        expect(download.headers()['content-disposition']).toBe(
          `attachment; filename="yonder-${id}.log"`,
        );
        expect(Buffer.compare(await download.body(), whole)).toBe(0);
      }
      await page.context().close();
    }
  });

  it('resubmits from its page a job that ran in a container with settings: the same container, settings and output', async () => {
    const settings = join(state, 'settings.json');
    writeFileSync(settings, JSON.stringify({ word: 'a b;$(c) ☃' }));
    const id = await yonder([
      'submit',
      '--name',
      'boxed',
      '--container-runtime',
      'podman',
      '--container-image',
      'localhost/yonder-test-busybox',
      '--settings',
      settings,
      '--',
      'sh',
      '-c',
      'cat /etc/yonder-image "$1"',
      'sh',
      '{settings}',
    ]);
    ids.push(id);
    await yonder(['wait', id, '--timeout', '120']);
    const before = await yonder(['logs', id]);
    expect(before).toContain('hello-from-image');
    const page = await openPage(`/job/${id}`);
    await page.locator('#resubmit-job:not([disabled])').click();
    const link = page.locator('.summary a');
    await link.waitFor({ timeout: 60_000 });
    const again = ((await link.textContent()) ?? '').trim();
    ids.push(again);
    expect(again).not.toBe(id);
    await yonder(['wait', again, '--timeout', '120']);
    expect(await yonder(['logs', again])).toBe(before);
    const [old, fresh] = [await status(id), await status(again)];
    expect(fresh.spec.container).toEqual(old.spec.container);
    expect(fresh.spec.settingsSha256).toBe(old.spec.settingsSha256);
    expect(fresh.spec.argv).toEqual(old.spec.argv);
    await page.context().close();
  });

  it('drops a finished job another process removed: its row, its count, and its page says so', async () => {
    const keep = await yonder(['submit', '--name', 'kept', '--', 'true']);
    const gone = await yonder(['submit', '--name', 'to-be-removed', '--', 'sh', '-c', 'echo bye']);
    await yonder(['wait', keep, gone, '--timeout', '60']);
    const table = await openPage('/');
    const jobPage = await openPage(`/job/${gone}`);
    await table.locator(`#jobs tr[data-id="${gone}"]`).waitFor({ timeout: 30_000 });
    await expect
      .poll(() => jobPage.locator('h1 .state').textContent(), { timeout: 30_000 })
      .toBe('succeeded');
    const chip = table.locator('.chip.state-succeeded');
    const before = Number(/\d+$/.exec((await chip.textContent()) ?? '')?.[0]);
    expect(before).toBeGreaterThanOrEqual(2);

    // Another process forgets it.
    await yonder(['rm', gone]);
    await table
      .locator(`#jobs tr[data-id="${gone}"]`)
      .waitFor({ state: 'detached', timeout: 30_000 });
    await expect
      .poll(() => chip.textContent(), { timeout: 30_000 })
      .toBe(`succeeded ${before - 1}`);
    await expect
      .poll(() => jobPage.locator('.summary').textContent(), { timeout: 30_000 })
      .toContain('This job was removed from the ledger');
    await expect(jobPage.locator('#cancel-job').isDisabled()).resolves.toBe(true);
    await expect(jobPage.locator('#resubmit-job').isDisabled()).resolves.toBe(true);
    await expect(jobPage.locator('h1 .state').textContent()).resolves.toBe('removed');

    // After a reload too: gone from the table, and its page says so.
    await table.reload();
    await table.locator(`#jobs tr[data-id="${keep}"]`).waitFor({ timeout: 30_000 });
    await expect(table.locator(`#jobs tr[data-id="${gone}"]`).count()).resolves.toBe(0);
    await jobPage.reload();
    await expect
      .poll(() => jobPage.locator('.summary').textContent(), { timeout: 30_000 })
      .toContain(`No job ${gone} in the ledger: it was removed`);
    await table.context().close();
    await jobPage.context().close();
  });
});
