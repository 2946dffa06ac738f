/** The program search path yonder starts programs with. */
import { describe, expect, it } from 'vitest';
import { buildEnvironment } from '../transport/local-transport.js';
import { fixedSearchPath, withFixedSearchPath } from './search-path.js';

describe('fixedSearchPath', () => {
  it('keeps the absolute entries in order and drops empty, `.` and relative ones', () => {
    expect(fixedSearchPath('/usr/bin:/bin')).toBe('/usr/bin:/bin');
    expect(fixedSearchPath(':/usr/bin::/bin:')).toBe('/usr/bin:/bin');
    expect(fixedSearchPath('.:/usr/bin:./bin:bin:../x:~/bin')).toBe('/usr/bin');
    expect(fixedSearchPath('/opt/a b/bin:/usr/bin')).toBe('/opt/a b/bin:/usr/bin');
    expect(fixedSearchPath('.')).toBe('');
    expect(fixedSearchPath(undefined)).toBeUndefined();
  });

  it('is what every local program yonder starts gets, whatever the caller set', () => {
    const base = { PATH: '.:/usr/bin', HOME: '/h' };
    expect(withFixedSearchPath(base)).toEqual({ PATH: '/usr/bin', HOME: '/h' });
    expect(base.PATH).toBe('.:/usr/bin');
    expect(buildEnvironment({}, base).PATH).toBe('/usr/bin');
    expect(buildEnvironment({ env: { PATH: 'tools::/opt/bin' } }, base).PATH).toBe('/opt/bin');
    expect(buildEnvironment({}, { HOME: '/h' }).PATH).toBeUndefined();
  });
});
