/** The rule for a group of the user's alone, on user and group lines as `getent` prints them. */
import { describe, expect, it } from 'vitest';
import { soloGroupIn } from './solo-group.js';

const PASSWD = [
  'root:x:0:0:root:/root:/bin/bash',
  'ada:x:1000:1000:Ada:/home/ada:/bin/bash',
  'bob:x:1001:1001:Bob:/home/bob:/bin/bash',
  'carol:x:1002:1000:Carol, in Ada’s group:/home/carol:/bin/sh',
  'dan:x:1003:1003::/home/dan:/bin/sh',
];

describe('soloGroupIn (Debian’s OpenSSH rule for group-writable directories)', () => {
  it('is true for the user’s own group, with no member list or a list of only them', () => {
    expect(soloGroupIn(['bob:x:1001:'], PASSWD, 1001, 1001)).toBe(true);
    expect(soloGroupIn(['bob:x:1001:bob'], PASSWD, 1001, 1001)).toBe(true);
    // Only in the member list (the group is nobody's primary one).
    expect(soloGroupIn(['solo:x:3000:bob'], PASSWD, 3000, 1001)).toBe(true);
  });

  it('is false when anyone else has it as primary group or in its member list', () => {
    // carol's primary group is ada's.
    expect(soloGroupIn(['ada:x:1000:'], PASSWD, 1000, 1000)).toBe(false);
    expect(soloGroupIn(['bob:x:1001:bob,dan'], PASSWD, 1001, 1001)).toBe(false);
    expect(soloGroupIn(['lab:x:3001:dan'], PASSWD, 3001, 1001)).toBe(false);
    // Another user's own group.
    expect(soloGroupIn(['dan:x:1003:'], PASSWD, 1003, 1001)).toBe(false);
  });

  it('is false for a group with no members at all (setgid programs’), and whenever it is not known', () => {
    expect(soloGroupIn(['games:x:60:'], PASSWD, 60, 1001)).toBe(false);
    expect(soloGroupIn([], PASSWD, 1001, 1001)).toBe(false);
    expect(soloGroupIn(null, PASSWD, 1001, 1001)).toBe(false);
    expect(soloGroupIn(['bob:x:1001:'], null, 1001, 1001)).toBe(false);
    // The user is not in the user database.
    expect(soloGroupIn(['x:x:4000:'], PASSWD, 4000, 4000)).toBe(false);
    // A line for another gid (getent answering for a name that looks like a number).
    expect(soloGroupIn(['1001:x:5000:'], PASSWD, 1001, 1001)).toBe(false);
  });

  it('is false when a second entry of the gid (groupadd -o) lists anyone else: getent group GID shows only the first', () => {
    // initgroups gives dan gid 1001 from the second line, as `id dan` shows.
    expect(soloGroupIn(['bob:x:1001:', 'bob-share:x:1001:dan'], PASSWD, 1001, 1001)).toBe(false);
    expect(soloGroupIn(['bob:x:1001:', 'bob:x:1001:'], PASSWD, 1001, 1001)).toBe(true);
    // A gid written with a leading zero (/etc/group read directly) is the same gid.
    expect(soloGroupIn(['bob:x:1001:', 'other:x:01001:dan'], PASSWD, 1001, 1001)).toBe(false);
  });

  it('does not take a malformed passwd line for anyone', () => {
    expect(soloGroupIn(['bob:x:1001:'], [...PASSWD, 'broken', 'eve:x::1001'], 1001, 1001)).toBe(
      true,
    );
  });
});
