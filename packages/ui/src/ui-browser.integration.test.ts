/** `yonder ui` in a real browser (Debian's Chromium through playwright-core) over real jobs on the local backend and the ssh test hosts: the table, a live log, cancel and resubmit from the page, another process's submit arriving live, the stale banner; screenshots kept in test-artifacts/. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Raw,
  requireSshHosts,
  runCli,
  runCliJson,
  sshHostsEnv,
  untilJobGone,
} from '@yonder/test-helpers';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ARTIFACTS,
  launchChromium,
  startUiProcess,
  type UiProcess,
} from './test-support/ui-process.js';

let state: string;
let ui: UiProcess;
let browser: Browser;
const ids: Record<string, string> = {};
/** Script errors any page met: every test ends with none. */
const pageErrors: string[] = [];

async function yonder(args: string[]): Promise<string> {
  const result = await runCli(args, { state });
  expect(result.code, `yonder ${args.join(' ')}: ${result.stderr}`).toBe(0);
  return result.stdout.trim();
}

async function status(id: string): Promise<Raw> {
  return (await runCliJson(['status', id], { state })).doc.result[0];
}

async function openPage(path = '/'): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(`${path}: ${error.message}`));
  // The token stays with the page opened with it: in its address, never in a cookie.
  await page.goto(path === '/' ? ui.url : ui.address(path));
  expect(new URL(page.url()).searchParams.get('token')).toBe(ui.token);
  expect(await context.cookies()).toEqual([]);
  return page;
}

const row = (page: Page, id: string) => page.locator(`#jobs tr[data-id="${id}"]`);

beforeAll(async () => {
  requireSshHosts();
  state = mkdtempSync(join(tmpdir(), 'yonder-ui-browser-'));
  await yonder([
    'profile',
    'add',
    'box',
    '--backend',
    'ssh',
    '--host',
    'target',
    '--ssh-config',
    sshHostsEnv().YONDER_SSH_CONFIG as string,
  ]);
  // A queue whose status command always fails: its job's polls fail, and the page says so.
  await yonder([
    'profile',
    'add',
    'flaky',
    '--backend',
    'command',
    '--set',
    'submit=echo 4242 {script}',
    '--set',
    'idPattern=^(\\d+)',
    '--set',
    'status=false {external_ids}',
    '--set',
    'cancel=true {external_ids}',
  ]);
  ids.localDone = await yonder(['submit', '--name', 'local-done', '--', 'sh', '-c', 'echo fine']);
  ids.localFailed = await yonder(['submit', '--name', 'local-failed', '--', 'sh', '-c', 'exit 3']);
  ids.remoteDone = await yonder([
    'submit',
    '--profile',
    'box',
    '--name',
    'remote-done',
    '--',
    'sh',
    '-c',
    'echo "on $(hostname)"',
  ]);
  ids.remoteSleeper = await yonder([
    'submit',
    '--profile',
    'box',
    '--name',
    'remote-sleeper',
    '--',
    'sleep',
    '300',
  ]);
  ids.flaky = await yonder(['submit', '--profile', 'flaky', '--name', 'flaky-one', '--', 'true']);
  for (const id of [ids.localDone, ids.localFailed, ids.remoteDone]) {
    await runCli(['wait', id as string, '--timeout', '60'], { state });
  }
  ui = await startUiProcess(state);
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  if (ui) expect(await ui.stop(), ui.stderr()).toBe(0);
  await runCli(['cancel', ...Object.values(ids)], { state });
  rmSync(state, { recursive: true, force: true });
});

afterEach(() => {
  expect(pageErrors.splice(0)).toEqual([]);
});

describe('yonder ui in Chromium', () => {
  it('shows every job with its state, local and remote, and a banner for the failing target', async () => {
    const page = await openPage();
    const expected: Record<string, string> = {
      [ids.localDone as string]: 'succeeded',
      [ids.localFailed as string]: 'failed',
      [ids.remoteDone as string]: 'succeeded',
      [ids.remoteSleeper as string]: 'running',
      [ids.flaky as string]: 'pending',
    };
    for (const [id, wanted] of Object.entries(expected)) {
      await expect
        .poll(() => row(page, id).getAttribute('data-state'), { timeout: 30_000 })
        .toBe(wanted);
      await expect(row(page, id).locator('.col-state').textContent()).resolves.toContain(wanted);
    }
    await expect(
      row(page, ids.remoteDone as string)
        .locator('.col-profile')
        .textContent(),
    ).resolves.toBe('box');
    const banner = page.locator('.banner-stale');
    await banner.waitFor({ timeout: 30_000 });
    await expect(banner.textContent()).resolves.toMatch(
      /flaky .*the last poll failed — status command: exit status 1.*stale since/,
    );
    await page.screenshot({ path: join(ARTIFACTS, 'jobs-table.png'), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: join(ARTIFACTS, 'jobs-table-phone.png'), fullPage: true });
    await page.close();
  });

  it('filters with negation, sorts from the keyboard, and remembers the chosen columns', async () => {
    const page = await openPage();
    await row(page, ids.localDone as string).waitFor();
    await page.fill('#filter', '-state:succeeded -profile:flaky');
    await expect
      .poll(() => page.locator('#jobs').getAttribute('data-query'))
      .toBe('-state:succeeded -profile:flaky');
    const states = await page
      .locator('#jobs tbody tr')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-state')));
    expect(states.sort()).toEqual(['failed', 'running']);
    await page.fill('#filter', '');
    await expect.poll(() => page.locator('#jobs').getAttribute('data-query')).toBe('');
    await page.locator('button.sort[data-sort="name"]').focus();
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.locator('th[aria-sort]').getAttribute('aria-sort'))
      .toBe('ascending');
    const names = await page.locator('#jobs tbody .col-name').allTextContents();
    expect(names).toEqual([...names].sort((a, b) => a.localeCompare(b)));
    // The table was drawn anew, and the keyboard's focus stayed on the button: Enter again
    // reverses the order.
    await expect
      .poll(() => page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.sort))
      .toBe('name');
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.locator('th[aria-sort]').getAttribute('aria-sort'))
      .toBe('descending');
    await page.locator('details.columns summary').click();
    await page.locator('.columns-menu input[value="profile"]').uncheck();
    await page.reload();
    await row(page, ids.localDone as string).waitFor();
    await expect(page.locator('#jobs thead').textContent()).resolves.not.toContain('Profile');
    await page.locator('details.columns summary').click();
    await page.locator('.columns-menu input[value="profile"]').check();
    await page.close();
  });

  it('follows a running job’s log live on its page', async () => {
    const id = await yonder([
      'submit',
      '--name',
      'ticker',
      '--',
      'sh',
      '-c',
      'i=0; while [ $i -lt 30 ]; do i=$((i+1)); echo "tick $i"; sleep 0.3; done',
    ]);
    ids.ticker = id;
    const page = await openPage(`/job/${id}`);
    await expect
      .poll(() => page.locator('#log').textContent(), { timeout: 30_000 })
      .toContain('tick 2\n');
    const early = (await page.locator('#log').textContent()) ?? '';
    // Later lines arrive without a reload, after what was already shown.
    await expect
      .poll(() => page.locator('#log').textContent(), { timeout: 30_000 })
      .toContain('tick 9\n');
    // The text and its offset read at one moment (the log goes on growing meanwhile).
    const [later, offset] = await page
      .locator('#log')
      .evaluate((element) => [element.textContent ?? '', element.getAttribute('data-offset')]);
    expect(later.startsWith(early)).toBe(true);
    expect(Number(offset)).toBe(Buffer.byteLength(later ?? ''));
    await expect(page.locator('#timeline').textContent()).resolves.toContain('running');
    await page.screenshot({ path: join(ARTIFACTS, 'job-log.png'), fullPage: true });
    await expect
      .poll(() => page.locator('#log').getAttribute('data-ended'), { timeout: 60_000 })
      .toBe('true');
    const lines = ((await page.locator('#log').textContent()) ?? '').trim().split('\n');
    expect(lines).toEqual(Array.from({ length: 30 }, (_, index) => `tick ${index + 1}`));
    await page.close();
  });

  it('cancels a local job from its page, and a remote one from the table; their processes are gone', async () => {
    const id = await yonder(['submit', '--name', 'local-sleeper', '--', 'sleep', '300']);
    ids.localSleeper = id;
    const pid = (await status(id)).data.pid as number;
    const page = await openPage(`/job/${id}`);
    await page.locator('#cancel-job:not([disabled])').click();
    await expect
      .poll(() => page.locator('h1 .state').textContent(), { timeout: 30_000 })
      .toBe('cancelled');
    await untilJobGone(pid);
    await expect(page.locator('#timeline').textContent()).resolves.toContain('cancelled');
    await page.screenshot({ path: join(ARTIFACTS, 'job-cancelled.png'), fullPage: true });
    await page.close();

    const remotePid = (await status(ids.remoteSleeper as string)).data.pid as number;
    const table = await openPage();
    await row(table, ids.remoteSleeper as string)
      .locator('input[type="checkbox"]')
      .check();
    await table.locator('#bulk-cancel').click();
    await expect
      .poll(() => row(table, ids.remoteSleeper as string).getAttribute('data-state'), {
        timeout: 60_000,
      })
      .toBe('cancelled');
    // The test host is this machine: the job's processes there are gone, not only its record.
    await untilJobGone(remotePid);
    await table.close();
  });

  it('shows a job submitted by another yonder process without a reload', async () => {
    const page = await openPage();
    await row(page, ids.localDone as string).waitFor();
    await page.evaluate(() => {
      (window as unknown as { unreloaded: boolean }).unreloaded = true;
    });
    const id = await yonder(['submit', '--name', 'arrives-live', '--', 'sh', '-c', 'exit 0']);
    ids.arrivesLive = id;
    await row(page, id).waitFor({ timeout: 30_000 });
    await expect
      .poll(() => row(page, id).getAttribute('data-state'), { timeout: 30_000 })
      .toBe('succeeded');
    expect(
      await page.evaluate(() => (window as unknown as { unreloaded?: boolean }).unreloaded),
    ).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, 'jobs-live-arrival.png'), fullPage: true });
    await page.close();
  });

  it('resubmits a job with the same spec from its page', async () => {
    const page = await openPage(`/job/${ids.localDone}`);
    await page.locator('#resubmit-job:not([disabled])').click();
    const link = page.locator('.summary a');
    await link.waitFor({ timeout: 30_000 });
    const again = ((await link.textContent()) ?? '').trim();
    expect(again).not.toBe(ids.localDone);
    const [before, after] = [await status(ids.localDone as string), await status(again)];
    expect(after.spec.argv).toEqual(before.spec.argv);
    expect(after.name).toBe(before.name);
    expect(after.profile).toBe(before.profile);
    await page.close();
  });

  it('honours a preference for reduced motion', async () => {
    const context = await browser.newContext({ reducedMotion: 'reduce' });
    const page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(`reduced motion: ${error.message}`));
    await page.goto(ui.url);
    await row(page, ids.localDone as string).waitFor();
    const animation = async (motion: 'reduce' | 'no-preference') => {
      await page.emulateMedia({ reducedMotion: motion });
      return page.evaluate(() => {
        const badge = document.createElement('span');
        badge.className = 'state state-running';
        document.body.append(badge);
        const name = getComputedStyle(badge, '::before').animationName;
        badge.remove();
        return name;
      });
    };
    expect(await animation('reduce')).toBe('none');
    expect(await animation('no-preference')).toBe('pulse');
    await context.close();
  });
});
