import { parse } from '../../args.js';
import type { Command } from '../../command.js';
import { formatTable } from '../../format-table.js';
import { envelope } from '../../output.js';
import { configPath } from '../../plugins/config.js';
import { UsageError } from '../../usage-error.js';

const HELP = `Usage: yonder plugins [--json]

List the backends, transports and stores available, with the package, version and contract
version of each, and every plugin that could not be loaded and why. Third-party plugins are
named in the config file ($YONDER_CONFIG, else $XDG_CONFIG_HOME/yonder/config.json):
  { "plugins": ["yonder-backend-pbs", { "package": "…", "options": { … } }] }
`;

export const run: Command = async (argv, { io, runtime }) => {
  const { values, positionals } = parse(argv, { json: { type: 'boolean' } }, 'plugins');
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`Unexpected argument "${positionals[0]}".`);
  const { registry, loadAll } = runtime();
  const statuses = await loadAll();
  const listed = registry.list();
  const builtIn = { package: '@yonder/core', version: 'built in' };
  const rows = [
    ...listed.backends.map((entry) => ({
      kind: 'backend',
      id: entry.id,
      contract: entry.specificationVersion,
      ...(entry.origin ?? builtIn),
    })),
    ...listed.transports.map((entry) => ({
      kind: 'transport',
      id: entry.id,
      contract: 'v1',
      ...(entry.origin ?? builtIn),
    })),
    ...listed.stores.map((entry) => ({
      kind: 'store',
      id: entry.id,
      contract: 'v1',
      ...(entry.origin ?? { package: '@yonder/store-fs', version: 'built in' }),
    })),
  ];
  const problems = statuses.filter(
    (status) => !status.ok && (status.source === 'config' || !status.missing),
  );
  if (values.json) {
    io.stdout(envelope({ config: configPath(io.env), available: rows, plugins: statuses }));
    return 0;
  }
  io.stdout(
    formatTable(
      ['KIND', 'ID', 'PACKAGE', 'VERSION', 'CONTRACT'],
      rows.map((row) => [row.kind, row.id, row.package, row.version, row.contract]),
    ),
  );
  const missing = statuses
    .filter((status) => !status.ok && status.source === 'bundled' && status.missing)
    .map((status) => status.package);
  if (missing.length > 0) io.stdout(`\nNot installed: ${missing.join(', ')}\n`);
  for (const problem of problems)
    if (!problem.ok) io.stderr(`yonder: plugin ${problem.package}: ${problem.error}\n`);
  return problems.length > 0 ? 1 : 0;
};
