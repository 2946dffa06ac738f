/**
 * Deadlines from the code's own settings: how long a backend may leave an interrupted submit
 * `submitting` (its declared `capabilities.submitGraceSeconds`), so a test never waits less.
 */

/** The part of a backend (`BackendV1`) this reads. */
export interface DeclaresSubmitGrace {
  readonly id: string;
  readonly capabilities: { readonly submitGraceSeconds?: number };
}

/** `capabilities.submitGraceSeconds` in milliseconds; throws if the backend declares none. */
export function submitGraceMs(backend: DeclaresSubmitGrace): number {
  const seconds = backend.capabilities.submitGraceSeconds;
  if (seconds === undefined || !Number.isFinite(seconds) || seconds < 0)
    throw new Error(`The ${backend.id} backend declares no capabilities.submitGraceSeconds.`);
  return seconds * 1000;
}
