/** The transports the job manager has made, one per transport id, host and options, shared by every operation on the target and closed together. */
import { createHash } from 'node:crypto';
import type { BackendV1 } from '../spec/backend/v1/backend-v1.js';
import type { Profile } from '../spec/profile.js';
import type { TransportFactoryV1 } from '../spec/transport/v1/transport-factory-v1.js';
import type { TransportV1 } from '../spec/transport/v1/transport-v1.js';
import { chooseTransport } from './choose-transport.js';
import { normaliseProfile } from './normalise-profile.js';
import { transportOptions } from './profile-options.js';

/** JSON with object keys in order, so equal options always give the same text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    return `{${Object.keys(record)
      .sort()
      .filter((key) => record[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The digests of the option texts seen so far. A poll asks for the route of every job it holds,
 * and their profiles mostly share a handful of option sets: hashing each one again cost more
 * than the rest of the grouping (55 ms for 3000 routes in a new process). Bounded, as a
 * long-lived host (a web view, a workflow engine) may meet any number of profiles.
 */
const optionDigests = new Map<string, string>();
const OPTION_DIGESTS_KEPT = 256;

/** What makes two profiles share a transport: the transport id, the host and the options. */
export function transportKey(id: string, profile: Profile): string {
  const text = canonicalJson(profile.transportOptions ?? {});
  let options = optionDigests.get(text);
  if (options === undefined) {
    options = createHash('sha256').update(text).digest('hex').slice(0, 16);
    if (optionDigests.size >= OPTION_DIGESTS_KEPT) optionDigests.clear();
    optionDigests.set(text, options);
  }
  return `${id}|${profile.host ?? ''}|${options}`;
}

export class TransportCache {
  private readonly transports = new Map<string, Promise<TransportV1>>();

  constructor(
    private readonly resolve: (id: string, profile: Profile) => Promise<TransportFactoryV1>,
  ) {}

  /**
   * The transport that reaches a profile's target, made on first use by the factory the
   * registry has for the chosen id, from the profile and its checked `transportOptions`.
   * @throws NoSuchPluginError for an unknown transport; ValidationError `E_INVALID_PROFILE`
   *   for options that do not fit the transport's schema; what the factory throws.
   */
  get(input: Profile, backend: BackendV1): Promise<TransportV1> {
    const profile = normaliseProfile(input);
    const id = chooseTransport(profile, backend);
    const key = transportKey(id, profile);
    let transport = this.transports.get(key);
    if (!transport) {
      transport = this.resolve(id, profile).then((factory) =>
        factory(profile, transportOptions(id, factory, profile)),
      );
      this.transports.set(key, transport);
      // A factory that failed is asked again next time, not remembered as failed.
      transport.catch(() => {
        if (this.transports.get(key) === transport) this.transports.delete(key);
      });
    }
    return transport;
  }

  /** The route `get` would share a transport by for this profile (BackendContextV1.route). */
  route(input: Profile, backend: BackendV1): string {
    const profile = normaliseProfile(input);
    return transportKey(chooseTransport(profile, backend), profile);
  }

  /** Close every transport made so far. */
  async close(): Promise<void> {
    const made = await Promise.allSettled(this.transports.values());
    this.transports.clear();
    await Promise.all(
      made.map((result) => (result.status === 'fulfilled' ? result.value.close() : undefined)),
    );
  }
}
