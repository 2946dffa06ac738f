/** The conformance suites' two assertions: a condition that must hold, and a promise that must fail with a given code; each failure names its suite. */
import { YonderError } from '../errors/yonder-error.js';

/** An assertion that a condition holds (declared as a type, so TypeScript narrows by it). */
export type Check = (condition: unknown, message: string) => asserts condition;

/** `check` and `rejects` for one suite, whose name starts every failure's message. */
export function assertionsFor(suite: string): {
  check: Check;
  rejects: (promise: Promise<unknown>, code: string, what: string) => Promise<void>;
} {
  const check: Check = (condition, message) => {
    if (!condition) throw new Error(`${suite} conformance: ${message}`);
  };
  async function rejects(promise: Promise<unknown>, code: string, what: string): Promise<void> {
    try {
      await promise;
    } catch (error) {
      check(
        YonderError.isInstance(error) && error.code === code,
        `${what} should fail with ${code}, got ${String(error)}`,
      );
      return;
    }
    throw new Error(`${suite} conformance: ${what} should fail with ${code}, but succeeded`);
  }
  return { check, rejects };
}
