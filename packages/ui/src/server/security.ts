/** The UI server's gate: loopback Host names only (against DNS rebinding), the session token on every request (never a cookie), a CSRF token and the page's own origin on every state-changing one, and no CORS. */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';

/** The secrets of one `yonder ui` session. */
export interface UiSecrets {
  /**
   * In the URL printed at start, and only with the page opened with it: in its address, its
   * links and its requests. Never a cookie: cookies do not tell the ports of 127.0.0.1 apart, so
   * a page on another port would be sent it (and could plant its own).
   */
  readonly token: string;
  /** Sent by the page with every request that changes something. */
  readonly csrf: string;
}

export function createSecrets(): UiSecrets {
  return {
    token: randomBytes(24).toString('base64url'),
    csrf: randomBytes(24).toString('base64url'),
  };
}

export const CSRF_HEADER = 'x-yonder-csrf';

function same(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Headers on every answer: nothing may frame, sniff, refer or load from elsewhere. */
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'cache-control': 'no-store',
};

/**
 * The gate, in order: a Host header that is not this server's loopback name and port is
 * refused (403) before anything else; a request without the token (`?token=` in the address,
 * or `Authorization: Bearer`) is refused with 401, one with a wrong token with 403 — cookies
 * are never read, so one planted by another port's page changes nothing; a request that is
 * not GET or HEAD needs the page's CSRF token and an Origin header naming this server (403
 * otherwise). No answer carries an Access-Control-Allow-* header, so no other origin can
 * read one; a preflight gets 405.
 */
export function securityGate(secrets: UiSecrets, port: () => number): MiddlewareHandler {
  return async (c, next) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) c.header(name, value);
    const allowedHosts = new Set([`127.0.0.1:${port()}`, `localhost:${port()}`]);
    const host = c.req.header('host') ?? '';
    if (!allowedHosts.has(host.toLowerCase())) {
      return c.text('Refused: this server answers only to 127.0.0.1 and localhost.\n', 403);
    }
    const fromQuery = c.req.query('token');
    const authorization = c.req.header('authorization');
    const bearer = authorization?.startsWith('Bearer ') ? authorization.slice(7) : undefined;
    const presented = bearer ?? fromQuery;
    if (presented === undefined || presented === '') {
      return c.text('Refused: open the address yonder ui printed (it carries the token).\n', 401);
    }
    if (!same(presented, secrets.token)) return c.text('Refused: wrong token.\n', 403);
    if (c.req.method === 'OPTIONS') return c.text('Not allowed.\n', 405);
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      const origin = c.req.header('origin');
      if (origin !== `http://${host}`) {
        return c.text('Refused: a change must come from this page (origin).\n', 403);
      }
      const csrf = c.req.header(CSRF_HEADER);
      if (csrf === undefined || !same(csrf, secrets.csrf)) {
        return c.text('Refused: a change must come from this page (CSRF token).\n', 403);
      }
    }
    await next();
  };
}
