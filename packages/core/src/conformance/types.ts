/** The test function of your runner (vitest's `it`, node:test's `test`…). */
export type TestFunction = (name: string, fn: () => Promise<void> | void, timeout?: number) => void;
