import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitDestination } from './ssh-config.js';
import { resolveConfig } from './ssh-config-values.js';
import { sshG } from './test-support/ssh-config-files.js';

// The config resolution checked against OpenSSH itself: `ssh -G -F file destination` over
// generated configs (Host patterns with ? * and !, first match wins, Match host / originalhost /
// user / all / final with negation, Include, the %h token in HostName, ProxyJump and
// ProxyCommand competing, IdentityFile none).

let scratch: string;
let counter = 0;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'yonder-ssh-differential-'));
});

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

const NAMES = ['alpha', 'beta', 'db.corp', 'web.corp', 'Mixed', 'real.example'];
const PATTERNS = ['*', 'alpha', '*.corp', '!db.corp', 'b?ta', 'Mixed', 'mixed', 'real.*', '!alpha'];
const DIRECTIVES: Record<string, string[]> = {
  HostName: ['real.example', '%h.internal', 'alpha', 'UPPER.example', '%%h'],
  User: ['alice', 'bob', 'Carol'],
  Port: ['2022', '2200'],
  IdentityFile: ['~/.ssh/k1', '/keys/%h', 'none', '/keys/k2'],
  ProxyJump: ['j1', 'u@j2:2222,j3', 'none', 'ssh://u@j4:2022'],
  ProxyCommand: ['nc %h %p', 'none', 'ssh -W %h:%p gw # not a comment'],
  HostKeyAlias: ['alias1', 'Alias2'],
};

const directive = fc
  .constantFrom(...Object.keys(DIRECTIVES))
  .chain((keyword) =>
    fc.constantFrom(...(DIRECTIVES[keyword] as string[])).map((value) => `  ${keyword} ${value}`),
  );

const criterion = fc.oneof(
  fc
    .constantFrom('host', '!host', 'originalhost', 'user', '!user')
    .chain((name) =>
      fc
        .constantFrom(...(name.includes('user') ? ['alice', 'bob', 'root', 'a*'] : PATTERNS))
        .map((value) => `${name} ${value}`),
    ),
  fc.constant('final'),
);

const header = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .array(fc.constantFrom(...PATTERNS), { minLength: 1, maxLength: 3 })
      .map((p) => `Host ${p.join(' ')}`),
  },
  {
    weight: 2,
    arbitrary: fc
      .array(criterion, { minLength: 1, maxLength: 2 })
      .map((c) => `Match ${c.join(' ')}`),
  },
  { weight: 1, arbitrary: fc.constant('Match all') },
);

const block = fc
  .tuple(header, fc.array(directive, { minLength: 1, maxLength: 3 }))
  .map(([head, lines]) => [head, ...lines].join('\n'));

/** A config: global lines, blocks, and maybe an Include of another generated file inside a block. */
const configs = fc.record({
  global: fc.array(directive, { maxLength: 2 }),
  blocks: fc.array(block, { minLength: 1, maxLength: 4 }),
  included: fc.option(fc.array(block, { minLength: 1, maxLength: 2 }), { nil: undefined }),
  includeAt: fc.nat(4),
  destination: fc.tuple(
    fc.constantFrom(...NAMES),
    fc.option(fc.constantFrom('bob', 'alice'), { nil: undefined }),
  ),
});

/** A ProxyJump list as ssh -G prints it: the hops before the last as written, the last as user@host:port. */
function printedJump(list: string): string {
  const hops = list.split(',');
  const last = splitDestination(hops.pop() as string);
  const printed = `${last.user ? `${last.user}@` : ''}${last.host}${last.port ? `:${last.port}` : ''}`;
  return [...hops, printed].join(',');
}

describe('config resolution against ssh -G', () => {
  it('agrees on hostname, user, port, identityfile, proxyjump, proxycommand, hostkeyalias', () => {
    fc.assert(
      fc.property(configs, (generated) => {
        counter += 1;
        const dir = join(scratch, `case-${counter}`);
        execFileSync('mkdir', ['-p', dir]);
        const blocks = [...generated.blocks];
        if (generated.included) {
          const included = join(dir, 'included.conf');
          writeFileSync(included, `${generated.included.join('\n')}\n`);
          const at = generated.includeAt % (blocks.length + 1);
          if (at === blocks.length) blocks.push(`Include ${included}`);
          else blocks[at] = `${blocks[at]}\n  Include ${included}`;
        }
        const file = join(dir, 'config');
        const text = `${[...generated.global.map((line) => line.trim()), ...blocks].join('\n')}\n`;
        writeFileSync(file, text);
        const [host, user] = generated.destination;
        const destination = user ? `${user}@${host}` : host;
        const expected = sshG(file, destination);
        const given = splitDestination(destination);
        const ours = resolveConfig(given, { configFile: file });
        const actual = {
          hostname: [ours.hostname],
          user: [ours.user],
          port: [String(ours.port)],
          identityfile: ours.identityFiles,
          ...(ours.proxyJump ? { proxyjump: [printedJump(ours.proxyJump)] } : {}),
          ...(ours.proxyCommand ? { proxycommand: [ours.proxyCommand] } : {}),
          ...(ours.hostKeyAlias ? { hostkeyalias: [ours.hostKeyAlias] } : {}),
        };
        const keys = [
          'hostname',
          'user',
          'port',
          'identityfile',
          'proxyjump',
          'proxycommand',
          'hostkeyalias',
        ];
        const wanted = Object.fromEntries(
          keys.filter((key) => expected[key] !== undefined).map((key) => [key, expected[key]]),
        );
        expect(actual, `${destination} with\n${text}`).toEqual(wanted);
      }),
      { numRuns: 300 },
    );
  }, 120_000);
});
