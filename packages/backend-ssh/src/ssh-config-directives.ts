/** Which ssh_config directives the ssh2 transport honours, which have no bearing on running commands, and which it cannot honour: those are reported as warnings, or refused when connecting without them would not be what ssh does. */
import type { ConfigLine } from './ssh-config-reader.js';
import type { ConfigValues } from './ssh-config-values.js';

/** Read and honoured by the ssh2 transport (Host, Match and Include are the reader's own). */
const HONOURED = new Set([
  'hostname',
  'user',
  'port',
  'identityfile',
  'identitiesonly',
  'identityagent',
  'proxyjump',
  'proxycommand',
  'hostkeyalias',
  'serveraliveinterval',
  'serveralivecountmax',
  'userknownhostsfile',
  'globalknownhostsfile',
  'hashknownhosts',
  'connecttimeout',
  'batchmode',
  'pubkeyauthentication',
]);

/** No bearing on a transport that runs non-interactive commands: accepted silently. */
const NO_BEARING = new Set([
  'addkeystoagent',
  'checkhostip',
  'clearallforwardings',
  'compression',
  'connectionattempts',
  'controlmaster',
  'controlpath',
  'controlpersist',
  'dynamicforward',
  'enableescapecommandline',
  'escapechar',
  'exitonforwardfailure',
  'fingerprinthash',
  'forkafterauthentication',
  'forwardx11',
  'forwardx11timeout',
  'forwardx11trusted',
  'gatewayports',
  'ignoreunknown',
  'ipqos',
  'localcommand',
  'localforward',
  'loglevel',
  'logverbose',
  'nohostauthenticationforlocalhost',
  'numberofpasswordprompts',
  'obscurekeystroketiming',
  'permitlocalcommand',
  'remoteforward',
  'requesttty',
  'sessiontype',
  'stdinnull',
  'streamlocalbindmask',
  'streamlocalbindunlink',
  'syslogfacility',
  'tcpkeepalive',
  'tunnel',
  'tunneldevice',
  'updatehostkeys',
  'usekeychain',
  'visualhostkey',
  'xauthlocation',
  'canonicalizefallbacklocal',
  'canonicaldomains',
  'canonicalizemaxdots',
  'canonicalizepermittedcnames',
  // Authentication methods ssh2 cannot use: named in the error when a server asks for them.
  'passwordauthentication',
  'kbdinteractiveauthentication',
  'challengeresponseauthentication',
  'kbdinteractivedevices',
  'preferredauthentications',
  'hostbasedauthentication',
  'gssapiauthentication',
  'gssapidelegatecredentials',
]);

/** Off by these values (no warning); any other value is reported. */
const OFF_VALUES = new Set(['no', 'none', 'false', 'off']);

/** Directives whose effect ssh2 cannot give: connecting without them would not be what ssh does. */
const REFUSED: Record<string, string> = {
  knownhostscommand: 'KnownHostsCommand (host keys from a command)',
  revokedhostkeys: 'RevokedHostKeys (a key revocation list)',
  proxyusefdpass: 'ProxyUseFdpass',
  canonicalizehostname: 'CanonicalizeHostname (DNS canonicalisation)',
  verifyhostkeydns: 'VerifyHostKeyDNS (SSHFP records)',
};

/** Reported when set, because authentication may need them: ssh2 has no way to use them. */
const CANNOT_AUTHENTICATE: Record<string, string> = {
  certificatefile: 'CertificateFile (OpenSSH certificates)',
  pkcs11provider: 'PKCS11Provider (smartcard keys)',
  securitykeyprovider: 'SecurityKeyProvider (FIDO keys)',
};

const HINT = 'use --transport openssh';

function where(line: ConfigLine): string {
  return `${line.file}:${line.line}`;
}

/** What ssh would do that the ssh2 transport will not: warnings (ignored) and refusals (fatal). */
export interface DirectiveReview {
  warnings: string[];
  refusals: string[];
}

/** Review every directive that applied to a destination. */
export function reviewDirectives(values: ConfigValues): DirectiveReview {
  const warnings: string[] = [];
  const refusals: string[] = [];
  for (const text of values.unsupportedMatches)
    refusals.push(
      `ssh config: ${text} cannot be evaluated by the ssh2 transport (the route would be guessed); ${HINT}.`,
    );
  for (const [keyword, line] of values.lines) {
    if (HONOURED.has(keyword)) continue;
    if (keyword === 'stricthostkeychecking') {
      const strict = (line.args[0] ?? '').toLowerCase();
      if (['yes', 'ask', 'true'].includes(strict)) continue;
      warnings.push(
        `ssh config: StrictHostKeyChecking ${line.args[0]} at ${where(line)} is not followed by the ssh2 transport: an unknown host key is refused unless the profile accepts new keys (its acceptNewHostKeys option), and a changed one always is.`,
      );
      continue;
    }
    const value = line.args.join(' ');
    const off = OFF_VALUES.has((line.args[0] ?? '').toLowerCase());
    if (REFUSED[keyword] !== undefined) {
      if (off) continue;
      refusals.push(
        `ssh config: ${REFUSED[keyword]} at ${where(line)} is not supported by the ssh2 transport; ${HINT}.`,
      );
      continue;
    }
    if (CANNOT_AUTHENTICATE[keyword] !== undefined) {
      if (off) continue;
      warnings.push(
        `ssh config: ${CANNOT_AUTHENTICATE[keyword]} at ${where(line)} cannot be used by the ssh2 transport; a login that needs it fails (${HINT}).`,
      );
      continue;
    }
    if (NO_BEARING.has(keyword)) {
      // GSSAPI, like passwords and prompts, is named when a login fails for want of it: most
      // servers never need it, and distributions turn it on in /etc/ssh/ssh_config.
      if (keyword === 'hostbasedauthentication' && !off)
        warnings.push(
          `ssh config: ${line.name} ${value} at ${where(line)} cannot be used by the ssh2 transport; a login that needs it fails (${HINT}).`,
        );
      continue;
    }
    if (keyword === 'forwardagent' && off) continue;
    if ((keyword === 'remotecommand' || keyword === 'sendenv' || keyword === 'setenv') && off)
      continue;
    warnings.push(
      `ssh config: ${line.name} ${value} at ${where(line)} is not supported by the ssh2 transport and is ignored.`,
    );
  }
  return { warnings, refusals };
}
