/** Ledger URLs alone (no driver loaded): what a front end checks before it opens the store. */
export { isPostgresUrl, type LedgerAddress, parseLedgerUrl } from './connection.js';
