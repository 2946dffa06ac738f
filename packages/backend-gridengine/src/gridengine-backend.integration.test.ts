import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobRecord } from '@yonder/core';
import { backendConformance } from '@yonder/core/conformance';
import { beforeAll, describe, expect, it } from 'vitest';
import { createGridEngineBackend } from './gridengine-backend.js';
import { requireGridEngine, workdir } from './test-support/cluster.js';

beforeAll(() => requireGridEngine());

const profile = {
  name: 'ge',
  backend: 'gridengine',
  workdir: workdir(),
  options: { parallelEnvironment: 'smp' },
};

/** Wait until `check` holds, polling; fails naming `what` after `timeoutMs`. */
async function until(
  check: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

backendConformance(it, () => createGridEngineBackend({ absentGraceSeconds: 5 }), {
  profile,
  jobTimeoutMs: 90_000,
  additionalTests(test, createManager) {
    test('gridengine: exit 0, exit 3, a job killed by a signal, h_rt exceeded: each as Grid Engine and the wrapper recorded it', async () => {
      const h = await createManager();
      try {
        const submit = (argv: string[], extra = {}) =>
          h.manager.submit({ argv, ...extra }, { profile: 'ge' });
        const ok = await submit(['true']);
        const three = await submit(['sh', '-c', 'exit 3']);
        const killed = await submit(['sh', '-c', 'kill -KILL $$']);
        const limited = await submit(['sleep', '120'], { resources: { time: '0:02' } });
        const { jobs, timedOut } = await h.manager.wait([ok.id, three.id, killed.id, limited.id], {
          timeoutMs: 120_000,
        });
        expect(timedOut).toBe(false);
        expect(jobs[0]).toMatchObject({ state: 'succeeded', exitCode: 0 });
        expect(jobs[1]).toMatchObject({
          state: 'failed',
          exitCode: 3,
          failureKind: 'application',
          reason: 'exit code 3',
        });
        // The job's shell killed itself; its wrapper recorded 137 and ended by itself (failed 0):
        // nothing says whether that was a kill or an exit 137, and the record says no more.
        expect(jobs[2]).toMatchObject({
          state: 'failed',
          exitCode: 137,
          signal: null,
          reason: 'exit code 137 (or killed by SIGKILL)',
          failureKind: 'application',
        });
        expect(jobs[3]).toMatchObject({
          state: 'failed',
          reason: 'timeout',
          failureKind: 'application',
          nativeState: expect.stringMatching(/^failed 37 : qmaster enforced h_rt/),
        });
      } finally {
        await h.dispose();
      }
    }, 150_000);

    test('gridengine: qdel of a running and of a held (pending) job: both end cancelled', async () => {
      const h = await createManager();
      try {
        const running = await h.manager.submit({ argv: ['sleep', '300'] }, { profile: 'ge' });
        const held = await h.manager.submit(
          { argv: ['true'], schedulerOptions: ['-h'] },
          { profile: 'ge' },
        );
        let states: JobRecord[] = [];
        await until(
          async () => {
            states = await h.manager.status([running.id, held.id]);
            return states[0]?.state === 'running' && states[1]?.reason === 'held';
          },
          60_000,
          'the first job to run and the second to be held',
        );
        expect(states[1]).toMatchObject({ state: 'pending', nativeState: 'hqw', reason: 'held' });
        const cancelled = await h.manager.cancel([running.id, held.id], { waitMs: 60_000 });
        expect(cancelled.map((job) => job.state)).toEqual(['cancelled', 'cancelled']);
      } finally {
        await h.dispose();
      }
    }, 150_000);

    test('gridengine: a job whose working directory is gone when it starts (Eqw) is refused with the reason, and leaves the queue', async () => {
      const h = await createManager();
      const cwd = mkdtempSync(join(tmpdir(), 'yonder ge cwd '));
      try {
        const job = await h.manager.submit(
          { argv: ['true'], cwd, schedulerOptions: ['-h'] },
          { profile: 'ge' },
        );
        rmSync(cwd, { recursive: true });
        const { spawnSync } = await import('node:child_process');
        expect(
          spawnSync('qrls', [String((await h.manager.status([job.id]))[0]?.externalId)]).status,
        ).toBe(0);
        const { jobs, timedOut } = await h.manager.wait([job.id], { timeoutMs: 60_000 });
        expect(timedOut).toBe(false);
        expect(jobs[0]).toMatchObject({
          state: 'failed',
          failureKind: 'submission',
          reason: expect.stringContaining(`can't chdir to ${cwd}`),
        });
        const listed = spawnSync('qstat', ['-u', '*'], { encoding: 'utf8' }).stdout;
        expect(listed).not.toMatch(new RegExp(`^\\s*${jobs[0]?.externalId}\\s`, 'm'));
      } finally {
        rmSync(cwd, { recursive: true, force: true });
        await h.dispose();
      }
    }, 90_000);

    test('gridengine: hostile argv, env and names arrive as given; a cwd with "$" is refused naming the field', async () => {
      const h = await createManager();
      const cwd = mkdtempSync(join(tmpdir(), "yonder ge cwd 'q' ; "));
      try {
        const argv = [
          'printf',
          '[%s]\\n',
          'a b',
          '',
          '$(id)',
          'line\nbreak',
          '-x',
          ';',
          "it's",
          'ü',
          'tab\tx',
          '`x`',
          '*',
        ];
        const job = await h.manager.submit(
          {
            argv,
            name: '-name with spaces/:@\\*?\t$(x)',
            env: { HOSTILE: '$(touch /tmp/x) \'q\' "d"\nline', EMPTY: '' },
            cwd,
          },
          { profile: 'ge' },
        );
        const env = await h.manager.submit(
          {
            argv: ['sh', '-c', 'printf "%s|%s|%s" "$HOSTILE" "${EMPTY-unset}" "$PWD"'],
            env: { HOSTILE: '$(touch /tmp/x) \'q\' "d"\nline', EMPTY: '' },
            cwd,
          },
          { profile: 'ge' },
        );
        const { jobs } = await h.manager.wait([job.id, env.id], { timeoutMs: 90_000 });
        expect(jobs.map((j) => j.state)).toEqual(['succeeded', 'succeeded']);
        const out = (await h.manager.logs(job.id, { all: true })).chunk.data.toString('utf8');
        expect(out).toBe(
          argv
            .slice(2)
            .map((a) => `[${a}]\n`)
            .join(''),
        );
        const envOut = (await h.manager.logs(env.id, { all: true })).chunk.data.toString('utf8');
        expect(envOut).toBe(`$(touch /tmp/x) 'q' "d"\nline||${cwd}`);
        await expect(
          h.manager.submit({ argv: ['true'], cwd: '/tmp/$HOME' }, { profile: 'ge' }),
        ).rejects.toMatchObject({
          code: 'E_INVALID_JOB_SPEC',
          message: expect.stringContaining('cwd'),
        });
        await expect(
          h.manager.submit({ argv: ['true'], schedulerOptions: ['-N', 'x'] }, { profile: 'ge' }),
        ).rejects.toMatchObject({ code: 'E_INVALID_JOB_SPEC' });
      } finally {
        rmSync(cwd, { recursive: true, force: true });
        await h.dispose();
      }
    }, 120_000);

    test('gridengine: a job pending past the profile’s pending timeout fails so, and is deleted from the queue', async () => {
      const h = await createManager();
      try {
        await h.manager.saveProfile({ ...profile, name: 'ge-short', pendingTimeoutSeconds: 2 });
        const job = await h.manager.submit(
          { argv: ['true'], schedulerOptions: ['-h'] },
          { profile: 'ge-short' },
        );
        const { jobs, timedOut } = await h.manager.wait([job.id], { timeoutMs: 90_000 });
        expect(timedOut).toBe(false);
        expect(jobs[0]).toMatchObject({ state: 'failed', reason: 'pending-timeout' });
        const { spawnSync } = await import('node:child_process');
        const listed = spawnSync('qstat', ['-u', '*'], { encoding: 'utf8' }).stdout;
        expect(listed).not.toMatch(new RegExp(`^\\s*${jobs[0]?.externalId}\\s`, 'm'));
      } finally {
        await h.dispose();
      }
    }, 120_000);

    test('gridengine: an unknown queue is refused with Grid Engine’s words, no directory left; --cpus 2 without a parallel environment is refused naming the option', async () => {
      const h = await createManager();
      try {
        await expect(
          h.manager.submit(
            { argv: ['true'], resources: { partition: 'nosuch' } },
            { profile: 'ge' },
          ),
        ).rejects.toMatchObject({
          code: 'E_SUBMIT_REFUSED',
          message: expect.stringContaining('job requests unknown queue "nosuch"'),
        });
        const { jobs } = await h.manager.store.listJobs({});
        expect(jobs[0]).toMatchObject({
          state: 'failed',
          failureKind: 'submission',
          externalId: null,
        });
        const { existsSync } = await import('node:fs');
        expect(existsSync(`${profile.workdir}/${jobs[0]?.id}`)).toBe(false);
        // More than one cpu needs the profile's parallel environment, and says so.
        await h.manager.saveProfile({ ...profile, name: 'ge-nope', options: {} });
        await expect(
          h.manager.submit({ argv: ['true'], resources: { cpus: 2 } }, { profile: 'ge-nope' }),
        ).rejects.toMatchObject({
          code: 'E_INVALID_JOB_SPEC',
          message: expect.stringContaining("set the profile's options.parallelEnvironment"),
        });
      } finally {
        await h.dispose();
      }
    }, 60_000);

    test('gridengine: --cpus takes slots through the profile’s parallel environment', async () => {
      const h = await createManager();
      try {
        const job = await h.manager.submit(
          { argv: ['sh', '-c', 'printf "%s %s" "$NSLOTS" "$PE"'], resources: { cpus: 2 } },
          { profile: 'ge' },
        );
        const { jobs } = await h.manager.wait([job.id], { timeoutMs: 90_000 });
        expect(jobs[0]).toMatchObject({ state: 'succeeded' });
        expect((await h.manager.logs(job.id, { all: true })).chunk.data.toString()).toBe('2 smp');
      } finally {
        await h.dispose();
      }
    }, 120_000);
  },
});

describe('gridengine profile check', () => {
  it('reports the version, the qmaster and readable accounting; an unknown parallel environment is a problem', async () => {
    const { createLocalTransport } = await import('@yonder/core');
    const backend = createGridEngineBackend();
    const state = mkdtempSync(join(tmpdir(), 'yonder-ge-probe-'));
    mkdirSync(state, { recursive: true });
    try {
      const transport = createLocalTransport();
      const context = (options: Record<string, string>) =>
        ({ transport, stateDirectory: state, options, route: 'local' }) as never;
      const good = await backend.probe(profile, context({ parallelEnvironment: 'smp' }));
      expect(good).toMatchObject({
        ok: true,
        problems: [],
        facts: {
          gridEngineVersion: expect.stringMatching(/^SGE 8\./),
          accounting: true,
          qmaster: expect.any(String),
        },
      });
      const bad = await backend.probe(profile, context({ parallelEnvironment: 'nosuch' }));
      expect(bad.ok).toBe(false);
      expect(bad.problems.join('\n')).toContain(
        'options.parallelEnvironment: nosuch is not a parallel environment',
      );
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('gridengine recovery of an interrupted submit', () => {
  it('finds a queued and a finished job by the name yonder gave it; one Grid Engine never had is not submitted once the grace is over', async () => {
    const { createLocalTransport } = await import('@yonder/core');
    const backend = createGridEngineBackend();
    const state = mkdtempSync(join(tmpdir(), 'yonder-ge-recover-'));
    const context = {
      transport: createLocalTransport(),
      options: {},
      stateDirectory: state,
      route: 'local',
    };
    const stamp = Date.now().toString(36);
    const request = (id: string, argv: string[], extra = {}) => ({
      id,
      name: 'recover me',
      marker: `yonder:${id}`,
      createdAt: new Date().toISOString(),
      argv,
      env: {},
      secrets: {},
      resources: {},
      schedulerOptions: [],
      profile,
      ...extra,
    });
    try {
      const held = request(`held${stamp}`, ['true'], { schedulerOptions: ['-h'] });
      const done = request(`done${stamp}`, ['true']);
      const heldJob = await backend.submit(held, context);
      const doneJob = await backend.submit(done, context);
      // The finished job has left qstat: only qacct knows it then.
      await until(
        async () => {
          const seen = (
            await backend.poll(
              [
                {
                  id: done.id,
                  name: done.name,
                  externalId: doneJob.externalId,
                  state: 'pending',
                  createdAt: done.createdAt,
                  cancelRequested: false,
                  profile,
                  options: {},
                  data: doneJob.data,
                },
              ],
              context,
            )
          ).get(done.id);
          return seen?.kind === 'found' && seen.state === 'succeeded';
        },
        60_000,
        'the second job to end',
      );
      const never = request(`never${stamp}`, ['true'], {
        createdAt: new Date(Date.now() - 3_600_000).toISOString(),
      });
      const recent = request(`recent${stamp}`, ['true']);
      const found = await backend.recover?.([held, done, never, recent], context);
      expect(found?.get(held.id)).toMatchObject({
        externalId: heldJob.externalId,
        data: heldJob.data,
      });
      expect(found?.get(done.id)).toMatchObject({
        externalId: doneJob.externalId,
        data: doneJob.data,
      });
      expect(found?.get(never.id)).toBeNull();
      expect(found?.has(recent.id)).toBe(false);
      await backend.cancel(
        [
          {
            id: held.id,
            name: held.name,
            externalId: heldJob.externalId,
            state: 'pending',
            createdAt: held.createdAt,
            cancelRequested: true,
            profile,
            options: {},
            data: heldJob.data,
          },
        ],
        context,
        { force: false },
      );
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  }, 120_000);
});
