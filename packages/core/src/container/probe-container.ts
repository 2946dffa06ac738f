/** What `profile check` finds of a profile's default container on its target: the runtime, the image (and its id) and the bind sources, checked as a submit checks them. */
import type { Profile } from '../spec/profile.js';
import type { TransportV1 } from '../spec/transport/v1/transport-v1.js';
import { containerBinds, resolveContainer } from '../validation/validate-container.js';
import { CONTAINER_CHECK_FUNCTIONS } from './container-scripts.js';

const CHECK_SCRIPT = `${CONTAINER_CHECK_FUNCTIONS}
container_check "$@" && printf '%s %s\\n' "$container_id" "$container_digest"
`;

/**
 * Check the profile's container on the target (nothing when it has none, or its defaults name
 * no image): `containerImage` is the image id found, each problem the field and its fix.
 */
export async function probeContainer(
  transport: TransportV1,
  profile: Profile,
  timeoutMs: number,
): Promise<{ facts: Record<string, string>; problems: string[] }> {
  const { container } = resolveContainer(undefined, profile.container);
  if (container === null) return { facts: {}, problems: [] };
  const sources = containerBinds(container).map((bind) => bind.source);
  const result = await transport.runScript(
    CHECK_SCRIPT,
    [container.runtime, container.image, String(sources.length), ...sources],
    { timeoutMs },
  );
  if (result.exitCode === 0) {
    const [id = ''] = result.stdout.trim().split(' ');
    return { facts: { containerImage: id }, problems: [] };
  }
  const said = result.stderr.trim().replace(/^yonder: /, '');
  return { facts: {}, problems: [said || `the container check failed (exit ${result.exitCode})`] };
}
