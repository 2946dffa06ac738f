/** The hops from here to a host, as ssh finds them: a ProxyJump list's last host reached through the hosts before it (`-J`), a jump host's own ProxyJump or ProxyCommand followed when it is reached alone. */
import { YonderError } from '@yonder/core';
import {
  type ResolvedHost,
  type ResolveOptions,
  resolveHost,
  splitDestination,
} from './ssh-config.js';

/** A chain too long is a loop in the config (a jump host that jumps through itself). */
const MAX_HOPS = 10;

/**
 * The route to a destination, first hop first: each hop after the first is reached through a
 * forwarded channel of the one before; the first by TCP or by its ProxyCommand. It follows
 * ssh's rewriting of `ProxyJump a,b,c` into `ssh -J a,b -W %h:%p c`: `c` is resolved with `-l`
 * and `-p` from the jump spec and with `-J a,b` (its own ProxyJump and ProxyCommand ignored),
 * and `a`, the last left alone, with its own config, ProxyJump included.
 * @throws YonderError `E_INVALID_PROFILE` for a loop; what resolveHost throws.
 */
export function planRoute(destination: string, options: ResolveOptions = {}): ResolvedHost[] {
  const route: ResolvedHost[] = [];
  const visit = (target: string, resolveOptions: ResolveOptions, depth: number): void => {
    if (depth > MAX_HOPS)
      throw new YonderError(
        'E_INVALID_PROFILE',
        `The route to ${destination} has more than ${MAX_HOPS} ProxyJump hops: a loop in the ssh config?`,
      );
    const host = resolveHost(target, resolveOptions);
    if (host.proxyJump) {
      const hops = host.proxyJump.split(',');
      const last = splitDestination(hops[hops.length - 1] as string);
      if (
        last.host === host.hostname &&
        (last.port ?? 22) === host.port &&
        (last.user ?? host.user) === host.user
      )
        throw new YonderError('E_INVALID_PROFILE', `ssh config: jump host loop via ${last.host}.`);
      const rest = hops.slice(0, -1).join(',');
      visit(
        last.host,
        {
          ...options,
          overrides: { user: last.user, port: last.port, proxyJump: rest.length > 0 ? rest : null },
        },
        depth + 1,
      );
    }
    route.push(host);
  };
  visit(destination, options, 0);
  return route;
}
