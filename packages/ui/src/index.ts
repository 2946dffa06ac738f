/** @yonder/ui: the `yonder ui` server, a local web view of the ledger's jobs. */
export { type JobPage, type JobRow, type StaleTarget, toRow } from './server/job-index.js';
export {
  type JobQuery,
  matchesJobQuery,
  parseJobQuery,
  type QueryTerm,
} from './server/job-query.js';
export { CSRF_HEADER } from './server/security.js';
export { type StartUiOptions, startUi, type UiServer } from './server/start-ui.js';

declare const __PACKAGE_VERSION__: string;
/** This package's version. */
export const VERSION: string = __PACKAGE_VERSION__;
