/** The program search path yonder starts programs with. */
import { describe, expect, it } from 'vitest';
import { buildEnvironment } from '../transport/local-transport.js';
import { DEFAULT_SEARCH_PATH, fixedSearchPath, withFixedSearchPath } from './search-path.js';

describe('fixedSearchPath', () => {
  it('keeps the absolute entries in order and drops empty, `.` and relative ones', () => {
    expect(fixedSearchPath('/usr/bin:/bin')).toBe('/usr/bin:/bin');
    expect(fixedSearchPath(':/usr/bin::/bin:')).toBe('/usr/bin:/bin');
    expect(fixedSearchPath('.:/usr/bin:./bin:bin:../x:~/bin')).toBe('/usr/bin');
    expect(fixedSearchPath('/opt/a b/bin:/usr/bin')).toBe('/opt/a b/bin:/usr/bin');
    // Nothing absolute left: never '' (the working directory to exec and sh), nor unset (bash's
    // default then ends in '.'), but the directories Node searches without a PATH.
    expect(fixedSearchPath('.')).toBe(DEFAULT_SEARCH_PATH);
    expect(fixedSearchPath('.:tools:')).toBe(DEFAULT_SEARCH_PATH);
    expect(fixedSearchPath('')).toBe(DEFAULT_SEARCH_PATH);
    expect(fixedSearchPath(undefined)).toBe(DEFAULT_SEARCH_PATH);
    expect(DEFAULT_SEARCH_PATH).toBe('/usr/bin:/bin');
  });

  it('is what every local program yonder starts gets, whatever the caller set', () => {
    const base = { PATH: '.:/usr/bin', HOME: '/h' };
    expect(withFixedSearchPath(base)).toEqual({ PATH: '/usr/bin', HOME: '/h' });
    expect(base.PATH).toBe('.:/usr/bin');
    expect(buildEnvironment({}, base).PATH).toBe('/usr/bin');
    expect(buildEnvironment({ env: { PATH: 'tools::/opt/bin' } }, base).PATH).toBe('/opt/bin');
    expect(buildEnvironment({}, { HOME: '/h' }).PATH).toBe(DEFAULT_SEARCH_PATH);
    expect(buildEnvironment({ env: { PATH: '.' } }, base).PATH).toBe(DEFAULT_SEARCH_PATH);
    expect(buildEnvironment({ unsetEnv: ['PATH'] }, base).PATH).toBe(DEFAULT_SEARCH_PATH);
    expect(withFixedSearchPath({ HOME: '/h' })).toEqual({ PATH: DEFAULT_SEARCH_PATH, HOME: '/h' });
    // ssh execs $SHELL by its path: a relative one is dropped (it then uses /bin/sh).
    expect(withFixedSearchPath({ ...base, SHELL: 'tools/sh' }).SHELL).toBeUndefined();
    expect(withFixedSearchPath({ ...base, SHELL: 'bash' }).SHELL).toBeUndefined();
    expect(withFixedSearchPath({ ...base, SHELL: '/bin/bash' }).SHELL).toBe('/bin/bash');
    expect(buildEnvironment({}, { ...base, SHELL: './sh' }).SHELL).toBeUndefined();
  });
});
