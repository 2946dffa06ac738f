import { profileExists } from '../errors/profile-exists.js';
import { assertValid } from '../errors/validation-error.js';
import { YonderError } from '../errors/yonder-error.js';
import type { JobRecord } from '../spec/job.js';
import type { Profile } from '../spec/profile.js';
import type { LeaseV1, ListJobsResultV1, StoreV1 } from '../spec/store/v1/store-v1.js';
import { isTerminal } from '../state/job-states.js';
import { validateProfileFields } from '../validation/profile-schema.js';

const clone = <T>(value: T): T => structuredClone(value);

/**
 * A ledger in memory, for one process: tests, embedding, and the reference for the store
 * contract. Nothing survives the process.
 */
export function createMemoryStore(): StoreV1 {
  const profiles = new Map<string, Profile>();
  const jobs = new Map<string, JobRecord>();
  const order: string[] = [];
  const settings = new Map<string, string>();
  const leases = new Map<string, { held: boolean; lastCompletedAt: string | null }>();
  const newest = (a: JobRecord, b: JobRecord): number =>
    a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0;
  return {
    specificationVersion: 'v1',
    id: 'memory',
    location: 'memory',
    async saveProfile(profile, options = {}) {
      assertValid(
        'E_INVALID_PROFILE',
        `Profile "${String(profile?.name)}" is invalid`,
        validateProfileFields(profile),
      );
      if (options.create && profiles.has(profile.name.toLowerCase()))
        throw profileExists(profile.name);
      profiles.set(profile.name.toLowerCase(), clone(profile));
    },
    async getProfile(name) {
      const profile = profiles.get(name.toLowerCase());
      return profile ? clone(profile) : undefined;
    },
    async listProfiles() {
      return {
        profiles: [...profiles.values()]
          .map(clone)
          .sort((a, b) => a.name.toLowerCase().localeCompare(b.name.toLowerCase())),
        problems: [],
      };
    },
    async removeProfile(name) {
      return profiles.delete(name.toLowerCase());
    },
    async createJob(job) {
      if (jobs.has(job.id))
        throw new YonderError('E_STORE', `A job with id ${job.id} already exists.`);
      jobs.set(job.id, clone(job));
      order.push(job.id);
    },
    async getJob(id) {
      const job = jobs.get(id);
      return job ? clone(job) : undefined;
    },
    async findJobIds(prefix) {
      return [...jobs.keys()].filter((id) => id.startsWith(prefix.toLowerCase())).sort();
    },
    async updateJob(id, change) {
      const current = jobs.get(id);
      if (!current) throw new YonderError('E_NO_SUCH_JOB', `No job with id ${id}.`);
      const next = change(clone(current));
      if (next === undefined) return clone(current);
      const written = {
        ...clone(next),
        id,
        revision: current.revision + 1,
        updatedAt: new Date().toISOString(),
      };
      jobs.set(id, written);
      return clone(written);
    },
    async listJobs(options = {}): Promise<ListJobsResultV1> {
      let list = [...jobs.values()];
      if (options.activeOnly) list = list.filter((job) => !isTerminal(job.state));
      else if (options.limit !== undefined) {
        const ids = new Set(order.slice(-options.limit));
        list = list.filter((job) => ids.has(job.id));
      }
      return { jobs: list.map(clone).sort(newest), problems: [] };
    },
    async removeJob(id) {
      settings.delete(id);
      const index = order.indexOf(id);
      if (index >= 0) order.splice(index, 1);
      return jobs.delete(id);
    },
    async saveJobSettings(id, text) {
      if (!jobs.has(id)) throw new YonderError('E_NO_SUCH_JOB', `No job with id ${id}.`);
      settings.set(id, text);
    },
    async getJobSettings(id) {
      return settings.get(id);
    },
    async tryLease(key): Promise<LeaseV1 | undefined> {
      const entry = leases.get(key) ?? { held: false, lastCompletedAt: null };
      if (entry.held) return undefined;
      entry.held = true;
      leases.set(key, entry);
      return {
        key,
        lastCompletedAt: entry.lastCompletedAt,
        async release(options = {}) {
          if (options.completed) entry.lastCompletedAt = new Date().toISOString();
          entry.held = false;
        },
      };
    },
    async waitForLease(key, timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      while (leases.get(key)?.held && performance.now() < deadline)
        await new Promise((r) => setTimeout(r, 5));
      return leases.get(key)?.lastCompletedAt ?? null;
    },
    async close() {},
  };
}
