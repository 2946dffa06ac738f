/**
 * `@yonder/core/testing`: for tests and embedding — a ledger in memory, and the check that a
 * value implements the backend contract. The conformance kit is `@yonder/core/conformance`.
 */
export { assertBackend } from '../registry/registry.js';
export { createMemoryStore } from '../store/memory-store.js';
