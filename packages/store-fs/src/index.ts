export { createFsStore, FsStore, type FsStoreOptions } from './fs-store.js';
export { resolveStateDirectory } from './state-directory.js';

/** Replaced at build by this package's version from package.json (tsup `define`; vitest does the same). */
declare const __PACKAGE_VERSION__: string;

/** This package's version, from its package.json. */
export const VERSION: string = __PACKAGE_VERSION__;
