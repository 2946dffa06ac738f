import { runInNewContext } from 'node:vm';
import { describe, expect, it, vi } from 'vitest';
import * as errors from './index.js';
import {
  CorruptRecordError,
  getErrorMessage,
  NoSuchPluginError,
  toYonderError,
  UnsupportedVersionError,
  ValidationError,
  YonderError,
} from './index.js';

type ErrorClass = { isInstance(value: unknown): boolean; name: string };

/** `value instanceof Class`, for a class known only as a value. */
const instanceOf = (value: unknown, Class: unknown): boolean =>
  value instanceof (Class as abstract new (...args: never[]) => unknown);

/** One instance of every error class of core, made by the copy `module`. */
function instances(module: typeof errors) {
  return {
    YonderError: new module.YonderError('E_TRANSPORT', 'down'),
    ValidationError: new module.ValidationError('E_INVALID_PROFILE', 'Profile "p" is invalid', [
      { path: 'host', message: 'bad' },
    ]),
    NoSuchPluginError: new module.NoSuchPluginError('backend', 'pbs', ['local']),
    CorruptRecordError: new module.CorruptRecordError('/state/jobs/ab.json', 'not JSON'),
    UnsupportedVersionError: new module.UnsupportedVersionError('The plugin', 'v9', ['v1']),
  };
}

const CLASSES: Record<keyof ReturnType<typeof instances>, ErrorClass> = {
  YonderError,
  ValidationError,
  NoSuchPluginError,
  CorruptRecordError,
  UnsupportedVersionError,
};

describe('each error class’s marker', () => {
  const made = instances(errors);

  it.each(Object.entries(CLASSES))(
    '%s.isInstance answers as instanceof does, for every class',
    (_name, Class) => {
      for (const [kind, error] of Object.entries(made)) {
        const expected = instanceOf(error, Class);
        expect(Class.isInstance(error), `${Class.name}.isInstance(a ${kind})`).toBe(expected);
      }
    },
  );

  it('never takes a base for a subclass, nor one subclass for another', () => {
    expect(ValidationError.isInstance(made.YonderError)).toBe(false);
    expect(NoSuchPluginError.isInstance(made.ValidationError)).toBe(false);
    expect(CorruptRecordError.isInstance(made.NoSuchPluginError)).toBe(false);
    expect(UnsupportedVersionError.isInstance(made.CorruptRecordError)).toBe(false);
    // A subclass is a YonderError, as it is an instance of it.
    for (const error of Object.values(made)) expect(YonderError.isInstance(error)).toBe(true);
  });

  it('is Symbol.for(yonder.error.<Name>), the base’s Symbol.for(yonder.error)', () => {
    expect(
      (made.ValidationError as unknown as Record<symbol, unknown>)[
        Symbol.for('yonder.error.ValidationError')
      ],
    ).toBe(true);
    expect(
      (made.ValidationError as unknown as Record<symbol, unknown>)[Symbol.for('yonder.error')],
    ).toBe(true);
    const lookalike = { [Symbol.for('yonder.error.NoSuchPluginError')]: true };
    expect(NoSuchPluginError.isInstance(lookalike)).toBe(true);
    expect(NoSuchPluginError.isInstance({ [Symbol.for('yonder.error')]: true })).toBe(false);
    expect(NoSuchPluginError.isInstance({ [Symbol('yonder.error.NoSuchPluginError')]: true })).toBe(
      false,
    );
  });

  it('works across two copies of core, where instanceof does not', async () => {
    vi.resetModules();
    const copy: typeof errors = await import('./index.js');
    expect(copy.ValidationError).not.toBe(ValidationError);
    const foreign = instances(copy);
    expect(foreign.ValidationError instanceof ValidationError).toBe(false);
    for (const [name, Class] of Object.entries(CLASSES)) {
      for (const [kind, error] of Object.entries(foreign)) {
        const sameCopy = instanceOf(error, copy[name as keyof typeof CLASSES]);
        expect(Class.isInstance(error), `${name}.isInstance(a ${kind} of the other copy)`).toBe(
          sameCopy,
        );
      }
    }
    expect(toYonderError(foreign.NoSuchPluginError)).toBe(foreign.NoSuchPluginError);
  });
});

describe('YonderError', () => {
  it('carries structured data beside its message, and keeps it out of toJSON', () => {
    const error = new YonderError('E_NO_SUCH_PROFILE', 'No profile named "gpu".', {
      data: { profile: 'gpu', profiles: ['local'] },
    });
    expect(error.data).toEqual({ profile: 'gpu', profiles: ['local'] });
    expect(error.toJSON()).toEqual({
      code: 'E_NO_SUCH_PROFILE',
      message: 'No profile named "gpu".',
    });
    expect(new YonderError('E_STORE', 'x').data).toEqual({});
  });

  it('ValidationError keeps its subject beside its issues', () => {
    const error = new ValidationError('E_INVALID_JOB_SPEC', 'The job cannot be submitted', [
      { path: 'argv', message: 'must not be empty' },
      { path: '', message: 'no settings' },
    ]);
    expect(error.subject).toBe('The job cannot be submitted');
    expect(error.message).toBe(
      'The job cannot be submitted:\n  argv: must not be empty\n  no settings',
    );
  });

  it('NoSuchPluginError keeps the application’s hint as a field, and at the end of the message', () => {
    const error = new NoSuchPluginError('transport', 'ssh', ['local'], 'Install the ssh package.');
    expect(error.hint).toBe('Install the ssh package.');
    expect(error.message).toBe(
      'No transport named "ssh". Available: local. Install the ssh package.',
    );
    expect(new NoSuchPluginError('store', 'db', []).hint).toBeUndefined();
  });
});

describe('getErrorMessage', () => {
  it.each([
    ['an Error', new Error('disk full'), 'disk full'],
    ['a YonderError', new YonderError('E_STORE', 'no space'), 'no space'],
    ['an Error of another realm', runInNewContext('new TypeError("other realm")'), 'other realm'],
    ['an object with a message', { message: 'from a plain object' }, 'from a plain object'],
    ['a string', 'just text', 'just text'],
    ['a number', 42, '42'],
    ['undefined', undefined, 'undefined'],
    ['null', null, 'null'],
    ['an object whose message is not text', { message: 7 }, '[object Object]'],
    ['an object without a prototype', Object.create(null), '[object Object]'],
  ])('reads %s', (_what, value, expected) => {
    expect(getErrorMessage(value)).toBe(expected);
  });

  it('is what toYonderError wraps with', () => {
    expect(toYonderError({ message: 'odd' }, 'E_TRANSPORT', 'ssh').message).toBe('ssh: odd');
    expect(toYonderError('text').message).toBe('text');
  });
});
