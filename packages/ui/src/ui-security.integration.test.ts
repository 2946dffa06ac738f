/** `yonder ui` refuses what it must, over plain HTTP: no token, a wrong token, a foreign Host, a change from another origin or without the CSRF token, a preflight; and it listens on 127.0.0.1 alone. */

import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startUiProcess, type UiProcess } from './test-support/ui-process.js';

let state: string;
let ui: UiProcess;
let jobId: string;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request with exactly these headers (Host included), as any HTTP client could send. */
function send(
  path: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    host?: string;
    /** Send no Host header at all. */
    noHost?: boolean;
  } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: options.host ?? '127.0.0.1',
        port: ui.port,
        path,
        method: options.method ?? 'GET',
        setHost: false,
        headers: options.noHost
          ? { ...options.headers }
          : { host: `127.0.0.1:${ui.port}`, ...options.headers },
      },
      (incoming) => {
        let body = '';
        incoming.setEncoding('utf8');
        incoming.on('data', (chunk) => {
          body += chunk;
        });
        incoming.on('end', () =>
          resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, body }),
        );
      },
    );
    outgoing.on('error', reject);
    outgoing.end(options.body);
  });
}

const bearer = () => ({ authorization: `Bearer ${ui.token}` });

/** The page's CSRF token, read from the page as a browser would get it. */
async function csrf(): Promise<string> {
  const page = await send('/', { headers: bearer() });
  const match = /name="yonder-csrf" content="([^"]+)"/.exec(page.body);
  if (!match) throw new Error(`no CSRF token in the page: ${page.body.slice(0, 200)}`);
  return match[1] as string;
}

beforeAll(async () => {
  state = mkdtempSync(join(tmpdir(), 'yonder-ui-security-'));
  const submitted = await runCli(['submit', '--name', 'sleeper', '--', 'sleep', '300'], { state });
  expect(submitted.code, submitted.stderr).toBe(0);
  jobId = submitted.stdout.trim();
  ui = await startUiProcess(state);
});

afterAll(async () => {
  await runCli(['cancel', jobId], { state });
  expect(await ui.stop()).toBe(0);
  rmSync(state, { recursive: true, force: true });
});

describe('yonder ui security', () => {
  it('prints the address with its token first, on 127.0.0.1 only', async () => {
    expect(ui.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{32}$/);
    await expect(send('/', { host: '127.0.0.2', headers: bearer() })).rejects.toThrow(
      /ECONNREFUSED/,
    );
  });

  it('refuses requests without the token (401) and with a wrong one (403)', async () => {
    for (const path of ['/', '/api/jobs', `/api/jobs/${jobId}`, '/api/events', '/assets/app.js']) {
      expect((await send(path)).status, path).toBe(401);
      expect((await send(path, { headers: { authorization: 'Bearer wrong' } })).status).toBe(403);
      // Cookies are never read: the right token in one does not open the door.
      const cookie = { cookie: `yonder-ui-${ui.port}=${ui.token}; yonder-token=${ui.token}` };
      expect((await send(path, { headers: cookie })).status).toBe(401);
    }
    expect((await send(`/?token=${ui.token.slice(1)}`)).status).toBe(403);
    expect((await send('/api/jobs', { headers: bearer() })).status).toBe(200);
  });

  it('keeps the token with the page opened with it, and never in a cookie', async () => {
    const opened = await send(`/?token=${ui.token}`);
    expect(opened.status).toBe(200);
    expect(opened.headers['set-cookie']).toBeUndefined();
    expect(opened.body).toContain(`<meta name="yonder-token" content="${ui.token}">`);
    expect(opened.body).toContain(`/assets/app.js?v=`);
    const script = /src="([^"]+)"/.exec(opened.body)?.[1]?.replace(/&amp;/g, '&') as string;
    expect(script).toContain(`token=${ui.token}`);
    expect((await send(script)).status).toBe(200);
    // A planted cookie with a wrong value changes nothing for a request that carries the token.
    const planted = { cookie: `yonder-ui-${ui.port}=planted; token=planted` };
    expect((await send(`/?token=${ui.token}`, { headers: planted })).status).toBe(200);
    expect((await send('/api/jobs', { headers: { ...planted, ...bearer() } })).status).toBe(200);
  });

  it('refuses a foreign Host even with the right token (DNS rebinding)', async () => {
    for (const host of [
      `attacker.example:${ui.port}`,
      'attacker.example',
      `127.0.0.1:${ui.port + 1}`,
      `localhost.attacker.example:${ui.port}`,
    ]) {
      const answer = await send('/api/jobs', { headers: { ...bearer(), host } });
      expect(answer.status, host).toBe(403);
      expect(answer.body).not.toContain(jobId);
    }
    expect(
      (await send('/api/jobs', { headers: { ...bearer(), host: `localhost:${ui.port}` } })).status,
    ).toBe(200);
  });

  it('refuses a change from another origin, without an origin, or without the CSRF token', async () => {
    const token = await csrf();
    const body = JSON.stringify({ ids: [jobId] });
    const post = (headers: Record<string, string>) =>
      send('/api/cancel', {
        method: 'POST',
        body,
        headers: { ...bearer(), 'content-type': 'application/json', ...headers },
      });
    expect((await post({ origin: 'http://attacker.example', 'x-yonder-csrf': token })).status).toBe(
      403,
    );
    expect(
      (await post({ origin: `http://127.0.0.1:${ui.port + 1}`, 'x-yonder-csrf': token })).status,
    ).toBe(403);
    expect((await post({ 'x-yonder-csrf': token })).status).toBe(403);
    expect((await post({ origin: ui.origin })).status).toBe(403);
    expect((await post({ origin: ui.origin, 'x-yonder-csrf': 'guess' })).status).toBe(403);
    // None of those reached the job.
    const job = JSON.parse((await send(`/api/jobs/${jobId}`, { headers: bearer() })).body);
    expect(job.job.cancel).toBeNull();
    expect(job.job.state).toBe('running');
  });

  it('sends no CORS headers and refuses preflights', async () => {
    const preflight = await send('/api/cancel', {
      method: 'OPTIONS',
      headers: {
        ...bearer(),
        origin: 'http://attacker.example',
        'access-control-request-method': 'POST',
      },
    });
    expect(preflight.status).toBe(405);
    const read = await send('/api/jobs', {
      headers: { ...bearer(), origin: 'http://attacker.example' },
    });
    for (const answer of [preflight, read]) {
      expect(
        Object.keys(answer.headers).filter((name) => name.startsWith('access-control-')),
      ).toEqual([]);
    }
    expect(read.headers['content-security-policy']).toContain("default-src 'none'");
    expect(read.headers['x-frame-options']).toBe('DENY');
  });

  it('accepts a change from its own page with the CSRF token', async () => {
    const answer = await send('/api/cancel', {
      method: 'POST',
      body: JSON.stringify({ ids: [jobId] }),
      headers: {
        ...bearer(),
        'content-type': 'application/json',
        origin: ui.origin,
        'x-yonder-csrf': await csrf(),
      },
    });
    expect(answer.status, answer.body).toBe(200);
    expect(JSON.parse(answer.body).jobs[0]).toMatchObject({ id: jobId, cancelRequested: true });
  });
});

describe('yonder ui options', () => {
  it('listens on the port asked for, and refuses bad options as usage errors', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const fixed = await startUiProcess(state, {}, ['--port', String(port)]);
    try {
      expect(fixed.url.startsWith(`http://127.0.0.1:${port}/?token=`)).toBe(true);
      expect(fixed.token).not.toBe(ui.token);
      // Taken: a second server on the same port says so.
      const clash = await runCli(['ui', '--no-open', '--port', String(port)], { state });
      // A runtime failure, not a usage error: the command line was right.
      expect(clash.code).toBe(1);
      expect(clash.stderr).toContain(`Could not listen on 127.0.0.1:${port}`);
      expect(clash.stderr).not.toContain('yonder --help');
    } finally {
      expect(await fixed.stop()).toBe(0);
    }
    for (const args of [['--port', 'abc'], ['--port', '70000'], ['extra'], ['--open-wide']]) {
      const refused = await runCli(['ui', '--no-open', ...args], { state });
      expect(refused.code, args.join(' ')).toBe(2);
    }
    const help = await runCli(['ui', '--help'], { state });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: yonder ui [--port N] [--no-open]');
  });
});
