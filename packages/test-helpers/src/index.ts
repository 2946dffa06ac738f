/** yonder's shared test helpers (a private package): import them as `@yonder/test-helpers`. */

export { type DocSandbox, docExamples, docSandbox, toyqProfileFlags } from './doc-examples.js';
export { type Frozen, freezeProcess } from './freezer.js';
export {
  canaryFragments,
  HOSTILE_FRAGMENTS,
  type HostileStringOptions,
  hostileString,
  hostileWords,
  INVALID_UTF8,
  LINE_BREAKS,
  NUL,
} from './hostile-fragments.js';
export { type InstalledCli, installCli, installPackages } from './install-cli.js';
export { logBytes, logPiece, logWrites, referenceTail } from './log-bytes.js';
export { pluginSite } from './plugin-site.js';
export { privateTempDir } from './private-dir.js';
export {
  alive,
  JOB_GONE_MS,
  jobProcessesGone,
  markedProcesses,
  type ProcessState,
  processGroup,
  readProcessState,
  unsignalled,
  untilJobGone,
} from './process-state.js';
export { REPOSITORY_ROOT } from './repository.js';
export {
  jsonOf,
  type RunAsOptions,
  runAs,
  runProgramAs,
  yonderAs,
  yonderJsonAs,
} from './run-as.js';
export {
  CLI_BIN,
  type CliOptions,
  type CliResult,
  cliEnv,
  collectProcess,
  type Raw,
  requireCliBuild,
  runCli,
  runCliJson,
  spawnCli,
} from './run-cli.js';
export {
  createTestDatabase,
  dropTestDatabase,
  GRIDENGINE_SCRIPT,
  POSTGRES_HOST,
  POSTGRES_SCRIPT,
  POSTGRES_SUPERUSER,
  postgresSql,
  postgresUrl,
  requireGridEngine,
  requirePostgres,
  requireSlurm,
  requireSshHosts,
  SLURM_SCRIPT,
  SSH_HOSTS_SCRIPT,
  serviceCommand,
  serviceStatus,
  sshHostsEnv,
} from './services.js';
export { type DeclaresSubmitGrace, submitGraceMs } from './submit-grace.js';
export {
  asUser,
  cleanupUsers,
  labGroup,
  lookUp,
  onCleanup,
  ownedDir,
  requireUsers,
  rootDir,
  startAsUser,
  type TestUser,
  usersWithCli,
} from './test-users.js';
export { until } from './until.js';
export { attackerPlace, startWorkdirAttack, type WorkdirAttack } from './workdir-attack.js';
