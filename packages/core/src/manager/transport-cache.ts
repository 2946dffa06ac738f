/** The transports the job manager has opened, one per target, shared by every operation on it and closed together. */
import type { Registry } from '../registry/registry.js';
import type { BackendV1 } from '../spec/backend/v1/backend-v1.js';
import type { Profile } from '../spec/profile.js';
import type { TransportV1 } from '../spec/transport/v1/transport-v1.js';

export class TransportCache {
  private readonly transports = new Map<string, TransportV1>();

  constructor(
    private readonly registry: Registry,
    private readonly transportId: (profile: Profile, backend: BackendV1) => string,
  ) {}

  /** The transport that reaches a profile's target, made on first use. */
  async get(profile: Profile, backend: BackendV1): Promise<TransportV1> {
    const transportId = this.transportId(profile, backend);
    const key = transportId === 'local' ? 'local' : `${transportId}:${profile.host ?? ''}`;
    let transport = this.transports.get(key);
    if (!transport) {
      transport = this.registry.transport(transportId)(profile);
      this.transports.set(key, transport);
    }
    return transport;
  }

  /** Close every transport made so far. */
  async close(): Promise<void> {
    await Promise.all([...this.transports.values()].map((transport) => transport.close()));
    this.transports.clear();
  }
}
