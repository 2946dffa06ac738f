export { createFsStore, FsStore, type FsStoreOptions } from './fs-store.js';
export { resolveStateDirectory } from './state-directory.js';

/** This package's version. */
export const VERSION: string = '0.1.0';
