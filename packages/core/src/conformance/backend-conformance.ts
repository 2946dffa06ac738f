import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobManager } from '../manager/job-manager.js';
import { backendOptions } from '../manager/profile-options.js';
import { assertBackend, createRegistry } from '../registry/registry.js';
import type { BackendV1 } from '../spec/backend/v1/backend-v1.js';
import type { JobRecord } from '../spec/job.js';
import type { Profile } from '../spec/profile.js';
import type { TransportV1 } from '../spec/transport/v1/transport-v1.js';
import { createMemoryStore } from '../store/memory-store.js';
import { createLocalTransport } from '../transport/local-transport.js';
import { logConformance } from './log-conformance.js';
import type { TestFunction } from './types.js';

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`Backend conformance: ${message}`);
}

export interface BackendConformanceOptions {
  /** The profile jobs are submitted through (its `backend` must be the backend's id). */
  profile: Profile;
  /** The transport to the target. Default: this machine. */
  createTransport?: (profile: Profile) => TransportV1;
  /** How long one job may take to finish, in ms. Default 60 s. */
  jobTimeoutMs?: number;
  /** Skip the cancel test (for backends whose targets cannot cancel). */
  skipCancel?: boolean;
  /** Tests of your own, with a fresh manager each. */
  additionalTests?: (test: TestFunction, createManager: () => Promise<ConformanceHarness>) => void;
}

/** A job manager wired to the backend under test, with an in-memory ledger. */
export interface ConformanceHarness {
  manager: JobManager;
  backend: BackendV1;
  /** How many times `poll` was called, and with how many jobs each time. */
  pollCalls: number[];
  /** A directory on this machine removed after the test. */
  scratch: string;
  dispose(): Promise<void>;
}

/**
 * The contract every backend must keep, exercised with real jobs on its target:
 * success, failure with an exit code, arguments that must arrive literally, settings,
 * secrets kept out of the ledger, batched polls, cancel, and logs read back byte for byte
 * (bytes that are not UTF-8, characters cut by chunks, no final newline).
 * Usage: `backendConformance(it, () => createMyBackend(), { profile: { name: 'x', backend: 'my' } })`.
 */
export function backendConformance(
  test: TestFunction,
  createBackend: () => BackendV1 | Promise<BackendV1>,
  options: BackendConformanceOptions,
): void {
  const timeout = options.jobTimeoutMs ?? 60_000;

  const harness = async (): Promise<ConformanceHarness> => {
    const inner = await createBackend();
    const pollCalls: number[] = [];
    const backend: BackendV1 = {
      ...inner,
      poll: (jobs, context) => {
        pollCalls.push(jobs.length);
        return inner.poll(jobs, context);
      },
    };
    const scratch = mkdtempSync(join(tmpdir(), 'yonder-conformance-'));
    const store = createMemoryStore();
    await store.saveProfile(options.profile);
    const createTransport = options.createTransport ?? (() => createLocalTransport());
    // The transport under test stands for `local` and for the one the backend declares.
    const declared = backend.capabilities.transport ?? 'local';
    const registry = createRegistry({
      backends: [backend],
      transports: { local: createTransport, [declared]: createTransport },
    });
    const manager = new JobManager({
      store,
      registry,
      stateDirectory: scratch,
      minPollIntervalMs: 0,
    });
    return {
      manager,
      backend,
      pollCalls,
      scratch,
      async dispose() {
        await manager.close();
        rmSync(scratch, { recursive: true, force: true });
      },
    };
  };

  const withHarness = (fn: (h: ConformanceHarness) => Promise<void>) => async () => {
    const h = await harness();
    try {
      await fn(h);
    } finally {
      await h.dispose();
    }
  };

  const run = async (
    h: ConformanceHarness,
    argv: string[],
    extra: Partial<Parameters<JobManager['submit']>[0]> = {},
  ) => {
    const job = await h.manager.submit({ argv, ...extra }, { profile: options.profile.name });
    const { jobs, timedOut } = await h.manager.wait([job.id], { timeoutMs: timeout });
    check(!timedOut, `job ${argv.join(' ')} did not finish within ${timeout} ms`);
    return jobs[0] as JobRecord;
  };

  const output = async (h: ConformanceHarness, job: JobRecord): Promise<string> => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const { chunk } = await h.manager.logs(job.id, { all: true });
      if (chunk.data.length > 0 || Date.now() > deadline) return chunk.data.toString('utf8');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };

  test('backend: implements contract v1', async () => {
    const backend = await createBackend();
    assertBackend(backend);
    const profileOptions = backendOptions(backend, options.profile);
    check(
      backend.targetKey(options.profile, profileOptions) ===
        backend.targetKey({ ...options.profile }, structuredClone(profileOptions)),
      'targetKey must be stable',
    );
    check(
      Array.isArray(backend.validateProfile(options.profile)),
      'validateProfile must return an array',
    );
    check(
      backend.validateProfile(options.profile).length === 0,
      'the conformance profile must validate',
    );
  });

  test(
    'backend: a job that exits 0 succeeds and its output is readable',
    withHarness(async (h) => {
      const job = await run(h, ['sh', '-c', 'echo conformance-hello']);
      check(
        job.state === 'succeeded',
        `expected succeeded, got ${job.state} (${job.reason ?? ''} ${JSON.stringify(job.error)})`,
      );
      check(job.exitCode === 0, `expected exit code 0, got ${job.exitCode}`);
      check(
        (await output(h, job)).includes('conformance-hello'),
        'the job output must contain what it printed',
      );
    }),
    timeout + 20_000,
  );

  test(
    'backend: a job that exits 3 fails with exit code 3, an application failure',
    withHarness(async (h) => {
      const job = await run(h, ['sh', '-c', 'exit 3']);
      check(job.state === 'failed', `expected failed, got ${job.state}`);
      check(job.exitCode === 3, `expected exit code 3, got ${job.exitCode}`);
      check(
        job.failureKind === 'application',
        `expected an application failure, got ${job.failureKind}`,
      );
    }),
    timeout + 20_000,
  );

  test(
    'backend: hostile arguments reach the job literally and run nothing',
    withHarness(async (h) => {
      const canary = join(h.scratch, 'canary');
      const words = [
        `$(touch ${canary})`,
        `; touch ${canary}`,
        '`touch x`',
        'it\'s "quoted"',
        'line\nbreak',
        '--leading-dash',
        '-',
        'spaces  inside',
        'ünïcødé ✓',
        '*',
        '$HOME',
        '{name}',
      ];
      const job = await run(h, ['printf', '%s\\n', ...words]);
      check(
        job.state === 'succeeded',
        `expected succeeded, got ${job.state} (${JSON.stringify(job.error)})`,
      );
      const text = await output(h, job);
      check(
        text === `${words.join('\n')}\n`,
        `arguments changed on the way: ${JSON.stringify(text)}`,
      );
      check(!existsSync(canary), 'an argument was executed by a shell');
    }),
    timeout + 20_000,
  );

  test(
    'backend: settings are written next to the job and {settings} points at them',
    withHarness(async (h) => {
      const settings = {
        input: 'a value with spaces',
        nested: { list: [1, 'two'] },
        quote: "it's $(x)",
      };
      const job = await run(h, ['cat', '{settings}'], { settings });
      check(
        job.state === 'succeeded',
        `expected succeeded, got ${job.state} (${JSON.stringify(job.error)})`,
      );
      const text = await output(h, job);
      check(
        JSON.stringify(JSON.parse(text)) === JSON.stringify(settings),
        `settings file differs: ${text}`,
      );
    }),
    timeout + 20_000,
  );

  test(
    'backend: env and secrets reach the job; secrets stay out of the ledger',
    withHarness(async (h) => {
      const secret = `s3cr3t-'$(x)-${Date.now()}`;
      const job = await run(h, ['sh', '-c', 'printf "%s|%s" "$PLAIN" "$TOKEN"'], {
        env: { PLAIN: 'plain value' },
        secrets: { TOKEN: secret },
      });
      check(job.state === 'succeeded', `expected succeeded, got ${job.state}`);
      check(
        (await output(h, job)) === `plain value|${secret}`,
        'env and secrets must reach the job unchanged',
      );
      const stored = JSON.stringify(await h.manager.store.getJob(job.id));
      check(!stored.includes(secret), 'the secret value must not be in the ledger');
    }),
    timeout + 20_000,
  );

  test(
    'backend: one poll serves every active job of the target',
    withHarness(async (h) => {
      const jobs = await Promise.all(
        [1, 2, 3].map(() =>
          h.manager.submit({ argv: ['sleep', '2'] }, { profile: options.profile.name }),
        ),
      );
      h.pollCalls.length = 0;
      await h.manager.refresh({ force: true });
      check(
        h.pollCalls.length === 1 && h.pollCalls[0] === 3,
        `expected one poll of 3 jobs, got ${JSON.stringify(h.pollCalls)}`,
      );
      const { timedOut } = await h.manager.wait(
        jobs.map((job) => job.id),
        { timeoutMs: timeout },
      );
      check(!timedOut, 'the jobs did not finish');
    }),
    timeout + 20_000,
  );

  if (!options.skipCancel) {
    test(
      'backend: a running job is cancelled',
      withHarness(async (h) => {
        const job = await h.manager.submit(
          { argv: ['sleep', '300'] },
          { profile: options.profile.name },
        );
        const [cancelled] = await h.manager.cancel([job.id], { waitMs: timeout });
        check(
          cancelled?.state === 'cancelled',
          `expected cancelled, got ${cancelled?.state} (${cancelled?.reason ?? ''})`,
        );
      }),
      timeout + 20_000,
    );
  }

  test(
    'backend: cleanup (when there is one) removes what a forgotten job left, once',
    withHarness(async (h) => {
      const cleanup = h.backend.cleanup;
      if (!cleanup) return;
      const job = await run(h, ['sh', '-c', 'echo left behind']);
      check(job.state === 'succeeded', `expected succeeded, got ${job.state}`);
      check((await output(h, job)) === 'left behind\n', 'the job’s log must be readable first');
      const [forgotten] = await h.manager.forget([job.id]);
      check(
        forgotten?.removed === true && forgotten.files === 'removed',
        `forgetting the job must remove its record and files, got ${JSON.stringify(forgotten)}`,
      );
      check((await h.manager.store.getJob(job.id)) === undefined, 'the record must be gone');
      const transport = (options.createTransport ?? (() => createLocalTransport()))(
        options.profile,
      );
      try {
        const context = {
          transport,
          options: backendOptions(h.backend, options.profile),
          stateDirectory: h.scratch,
        };
        const seen = {
          id: job.id,
          name: job.name,
          externalId: job.externalId,
          state: job.state,
          createdAt: job.createdAt,
          cancelRequested: false,
          profile: options.profile,
          options: context.options,
          data: job.data,
        };
        const log = await h.backend.readLog(seen, {}, context);
        check(!log.exists, 'after cleanup the job’s log must be gone');
        const again = (await cleanup([seen], context)).get(job.id);
        check(
          again?.kind === 'absent',
          `a second cleanup must find nothing, got ${JSON.stringify(again)}`,
        );
      } finally {
        await transport.close();
      }
    }),
    timeout + 20_000,
  );

  logConformance(test, {
    profile: options.profile,
    timeout,
    createTransport: options.createTransport ?? (() => createLocalTransport()),
    withHarness,
    run: (h, argv) => run(h, argv),
  });

  options.additionalTests?.(test, harness);
}
