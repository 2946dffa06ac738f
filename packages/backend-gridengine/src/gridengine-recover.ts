/** Recovery of interrupted submits: find the Grid Engine jobs by the names yonder gave them before anything is sent again. */
import {
  type BackendContextV1,
  type SubmitRequestV1,
  type SubmitResultV1,
  YonderError,
} from '@yonder/core';
import { chunks, commandFailure } from '@yonder/core/backend-kit';
import { QUERY_CHUNK, QUERY_TIMEOUT_MS } from './gridengine-command.js';
import type { GridEngineOptions } from './gridengine-options.js';
import { parseResolveOutput } from './gridengine-poll.js';
import { gridEngineProbe, gridEngineWorkdir } from './gridengine-probe.js';
import { type GridEngineJobData, gridEngineJobName } from './gridengine-submit.js';
import { parseQacct, parseQstatXml } from './parse.js';
import { QSTAT_SCRIPT, RESOLVE_SCRIPT } from './scripts.js';

/**
 * For each request: the job Grid Engine has under its name (the user's own: qstat, then qacct
 * for the names qstat does not list), or null when it has none and the request is older than
 * `submitGraceSeconds` (a submit that recent may still be in flight, so it is left out).
 * @throws YonderError `E_SCHEDULER_UNAVAILABLE` when qstat or qacct does not answer.
 */
export async function gridEngineRecover(
  requests: readonly SubmitRequestV1[],
  context: BackendContextV1<GridEngineOptions>,
  submitGraceSeconds: number,
): Promise<Map<string, SubmitResultV1 | null>> {
  const out = new Map<string, SubmitResultV1 | null>();
  const first = requests[0];
  if (!first) return out;
  const report = await gridEngineProbe(first.profile, context.options, context, false);
  const queue = await context.transport.runScript(QSTAT_SCRIPT, [], {
    timeoutMs: QUERY_TIMEOUT_MS,
  });
  if (queue.exitCode !== 0)
    throw new YonderError('E_SCHEDULER_UNAVAILABLE', `qstat failed: ${commandFailure(queue)}`);
  const found = new Map<string, { id: string; state: string }>();
  for (const row of parseQstatXml(queue.stdout))
    if (!found.has(row.name)) found.set(row.name, { id: row.jobId, state: row.state });
  const names = requests.map((request) => gridEngineJobName(request.id, request.name));
  for (const chunk of chunks(
    names.filter((name) => !found.has(name)),
    QUERY_CHUNK,
  )) {
    const result = await context.transport.runScript(
      RESOLVE_SCRIPT,
      [String(chunk.length), ...chunk],
      { timeoutMs: QUERY_TIMEOUT_MS },
    );
    const answer = parseResolveOutput(result.stdout);
    for (const name of chunk) {
      const qacct = answer.qacct.get(name);
      if (!qacct || (qacct.status !== 0 && !/job name .* not found/.test(qacct.err)))
        throw new YonderError(
          'E_SCHEDULER_UNAVAILABLE',
          `qacct -j ${name} failed: ${qacct?.err.trim() || commandFailure(result)}`,
        );
      // qacct lists every user's jobs: only the user's own is this one (another user may
      // have given a job the same name).
      const record = parseQacct(qacct.out)
        .filter((entry) => entry.name === name && entry.owner === answer.user)
        .at(-1);
      if (record) found.set(name, { id: record.jobId, state: 'finished' });
    }
  }
  requests.forEach((request, index) => {
    const name = names[index] as string;
    const hit = found.get(name);
    if (hit) {
      const jobDir = `${gridEngineWorkdir(request.profile, report)}/${request.id}`;
      const data: GridEngineJobData = {
        jobDir,
        log: `${jobDir}/job.log`,
        jobName: name,
        marker: request.marker,
      };
      out.set(request.id, { externalId: hit.id, state: 'pending', nativeState: hit.state, data });
    } else if (Date.now() - Date.parse(request.createdAt) > submitGraceSeconds * 1000) {
      out.set(request.id, null);
    }
  });
  return out;
}
