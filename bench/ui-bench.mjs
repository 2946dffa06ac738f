// yonder ui in the browser: first paint and filter latency with 10,000 jobs in the ledger,
// measured in Debian's Chromium (playwright-core, the system executable), beside the same
// page over a ledger of 10 jobs. Goals (issue 17): first paint under 1 s, a filter under 200 ms.
// Run with `pnpm bench` (or `node bench/ui-bench.mjs` after `pnpm build`); results also go to
// bench-results/ui.json.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sampleJob } from '../packages/core/dist/conformance/index.js';
import CHROMIUM_ARGS from '../packages/ui/src/test-support/chromium-args.json' with {
  type: 'json',
};

const ROOT = new URL('..', import.meta.url).pathname;
const { env } = process;
const BIN = join(ROOT, 'packages/cli/dist/bin.js');
const CHROMIUM = env.YONDER_CHROMIUM ?? '/usr/bin/chromium';
const REPEATS = Number(env.YONDER_BENCH_REPEATS ?? 5);
const SIZES = (env.YONDER_BENCH_UI_SIZES ?? '10,10000').split(',').map(Number);
const QUERIES = [
  'state:failed',
  '-state:succeeded profile:gpu',
  'train-0042',
  'name:nothing-like-it',
];
const { chromium } = createRequire(join(ROOT, 'packages/ui/package.json'))('playwright-core');

const STATES = ['succeeded', 'succeeded', 'succeeded', 'failed', 'cancelled', 'running', 'pending'];
const PROFILES = ['local', 'gpu', 'cluster', 'box'];

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const say = (text) => process.stdout.write(`${text}\n`);
const ms = (value) => `${value.toFixed(1)} ms`;

/**
 * A ledger of `count` jobs of mixed states, profiles and names, in the file store's layout.
 * No job is marked active, so nothing polls them: the page is measured, not the polls.
 */
function ledger(count) {
  const state = mkdtempSync(join(tmpdir(), `yonder-ui-bench-${count}-`));
  mkdirSync(join(state, 'jobs'), { recursive: true });
  mkdirSync(join(state, 'active'));
  const lines = [];
  for (let n = 0; n < count; n += 1) {
    const id = (0x100000000000 + n).toString(16);
    const jobState = STATES[n % STATES.length];
    const created = new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString();
    const job = sampleJob({
      id,
      name: `train-${String(n).padStart(4, '0')}`,
      profile: PROFILES[n % PROFILES.length],
      state: jobState,
      exitCode: jobState === 'failed' ? 1 : jobState === 'succeeded' ? 0 : null,
      createdAt: created,
      submittedAt: created,
      finishedAt: ['succeeded', 'failed', 'cancelled'].includes(jobState) ? created : null,
    });
    const shard = join(state, 'jobs', id.slice(0, 2));
    if (!existsSync(shard)) mkdirSync(shard);
    writeFileSync(join(shard, `${id}.json`), `${JSON.stringify(job)}\n`);
    lines.push(`${created}\t${id}`);
  }
  writeFileSync(join(state, 'index.log'), `${lines.join('\n')}\n`);
  return state;
}

/** `yonder ui --no-open` over `state`; resolves with its address and how long it took to print it. */
function startUi(state) {
  const started = performance.now();
  const child = spawn(process.execPath, [BIN, 'ui', '--no-open'], {
    env: { ...env, YONDER_STATE_DIR: state, YONDER_CONFIG: '', XDG_CONFIG_HOME: state },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      if (stdout.includes('\n'))
        resolve({ child, url: stdout.split('\n')[0], startMs: performance.now() - started });
    });
    child.once('exit', (code) => reject(new Error(`yonder ui exited (${code}): ${stderr}`)));
  });
}

/** Resolves after the frame that shows the table's rows for `query` has been painted. */
const RENDERED_SCRIPT = `
  document.addEventListener('yonder:rendered', (event) => {
    requestAnimationFrame(() => requestAnimationFrame(() => {
      (window.__rendered ??= []).push({ query: event.detail.query, at: performance.now() });
    }));
  });
`;

async function measure(browser, url) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addInitScript(RENDERED_SCRIPT);
  const page = await context.newPage();
  // The token stays in the address (never a cookie): every visit carries it.
  const paints = [];
  const contentful = [];
  for (let repeat = 0; repeat < REPEATS; repeat += 1) {
    await page.goto(url);
    await page.waitForFunction(() => window.__rendered?.length > 0);
    paints.push(await page.evaluate(() => window.__rendered[0].at));
    contentful.push(
      await page.evaluate(
        () => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Number.NaN,
      ),
    );
  }
  const filters = [];
  for (let repeat = 0; repeat < REPEATS; repeat += 1) {
    for (const query of [...QUERIES, '']) {
      filters.push(
        await page.evaluate(async (wanted) => {
          const input = document.querySelector('#filter');
          const seen = window.__rendered.length;
          const started = performance.now();
          input.value = wanted;
          input.dispatchEvent(new Event('input', { bubbles: true }));
          for (;;) {
            const done = window.__rendered.slice(seen).find((entry) => entry.query === wanted);
            if (done) return done.at - started;
            await new Promise((resolve) => setTimeout(resolve, 1));
          }
        }, query),
      );
    }
  }
  const rows = await page.locator('#jobs tbody tr').count();
  await context.close();
  return {
    paintMs: median(paints),
    contentfulMs: median(contentful),
    filterMs: median(filters),
    filterMaxMs: Math.max(...filters),
    rows,
  };
}

async function main() {
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium is not installed at ${CHROMIUM}: apt-get install chromium`);
  say(`\nyonder ui in Chromium — first paint and filter latency, repeats ${REPEATS} (medians)`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
  });
  const figures = {};
  try {
    for (const size of SIZES) {
      const state = ledger(size);
      const { child, url, startMs } = await startUi(state);
      try {
        figures[size] = { size, startMs, ...(await measure(browser, url)) };
      } finally {
        child.kill('SIGINT');
        await new Promise((resolve) => child.once('exit', resolve));
        rmSync(state, { recursive: true, force: true });
      }
    }
  } finally {
    await browser.close();
  }
  const base = figures[SIZES[0]];
  for (const size of SIZES) {
    const f = figures[size];
    say(
      `  ${`${size} jobs`.padEnd(12)} first paint (rows shown) ${ms(f.paintMs).padStart(9)}   first contentful paint ${ms(f.contentfulMs).padStart(9)}   filter ${ms(f.filterMs).padStart(8)} (max ${ms(f.filterMaxMs)})   server ready ${ms(f.startMs)}`,
    );
  }
  const big = figures[SIZES.at(-1)];
  say(
    `  goals at ${big.size} jobs: first paint ${ms(big.paintMs)} (< 1000 ms: ${big.paintMs < 1000 ? 'met' : 'NOT met'}), filter ${ms(big.filterMs)} (< 200 ms: ${big.filterMs < 200 ? 'met' : 'NOT met'}); ${(big.paintMs / base.paintMs).toFixed(2)}× the paint and ${(big.filterMs / base.filterMs).toFixed(2)}× the filter of ${base.size} jobs`,
  );
  mkdirSync(join(ROOT, 'bench-results'), { recursive: true });
  writeFileSync(
    join(ROOT, 'bench-results', 'ui.json'),
    `${JSON.stringify({ at: new Date().toISOString(), repeats: REPEATS, figures }, null, 2)}\n`,
  );
  say('  Results written to bench-results/ui.json');
}

await main();
