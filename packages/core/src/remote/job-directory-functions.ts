/**
 * The sh functions every script that touches a job directory shares: the trust check of a work
 * directory (OpenSSH's StrictModes, on the target), the check and `cd` into a private job
 * directory, and reading and writing its small files by relative names only.
 */

/**
 * Defines `me` (this user's uid) and, for a POSIX sh script:
 * - `trusted_dir PATH ROLE`: walks PATH from `/` as the kernel would, following links: every
 *   directory passed through must be the user's or root's and writable by nobody else unless it
 *   is sticky (as /tmp), a group that is the user's alone not counting as anybody else (core's
 *   isSoloGroup, asked of `getent` with 10 s to answer, every entry of the gid) unless an access control list
 *   names others (core's hasExtendedAcl, asked of `ls -ld`); every link the user's or root's; PATH itself the user's, writable by
 *   nobody else, and a directory. A violation is printed to stderr naming the path, its owner
 *   and mode and the fix (`chmod go-w PATH`…), and fails. When a part of PATH is missing, sets
 *   `td_exists=0` and `td_next` to the first missing directory (what exists above it passed);
 *   else `td_exists=1`.
 * - `make_trusted_dir PATH ROLE`: `trusted_dir`, then makes what is missing of PATH (mode 0700),
 *   one directory at a time, each checked before the next is made in it, so a directory another
 *   user slips in meanwhile is found. Returns 23 when PATH is not to be trusted, 19 when it
 *   cannot be made.
 * Before anything is made or read in PATH; the messages read like core's `checkTrustedPath`.
 */
export const TRUSTED_DIRECTORY_FUNCTIONS = `me=$(id -u) td_solos= td_shared=
td_stat() {
  td_file=$1
  td_info=$(LC_ALL=C stat -c '%u %g %f' -- "$1" 2>/dev/null) || return 1
  td_uid=\${td_info%% *}; td_info=\${td_info#* }
  td_gid=\${td_info%% *}; td_mode=$((0x\${td_info#* }))
}
td_getent() {
  if command -v timeout >/dev/null 2>&1; then timeout 10 getent "$@"; else getent "$@"; fi
}
td_solo_check() {
  td_gr=$(td_getent group "$1" 2>/dev/null) || return 1
  td_grs=$(td_getent group 2>/dev/null) || return 1
  td_pw=$(td_getent passwd 2>/dev/null) || return 1
  { printf '%s\\n' "$td_pw" | sed 's/^/P:/'; printf '%s\\n' "$td_gr" "$td_grs" | sed 's/^/G:/'; } |
    awk -F: -v g="$1" -v u="$me" '
    function num(f) { return f ~ /^[0-9]+$/ }
    $1 == "P" && num($4) && num($5) {
      if ($4 == u && name == "") name = $2
      if ($5 == g) { if ($4 != u) bad = 1; else mine = 1 }
    }
    $1 == "G" && num($4) && $4 == g {
      found = 1; n = split($5, list, ",")
      for (i = 1; i <= n; i++) if (list[i] != "") { if (list[i] != name) bad = 1; else mine = 1 }
    }
    END { exit (bad || !found || name == "" || !mine) }'
}
td_solo() {
  case " $td_solos " in *" $1 "*) return 0 ;; esac
  case " $td_shared " in *" $1 "*) return 1 ;; esac
  if td_solo_check "$1"; then td_solos="$td_solos $1"; return 0; fi
  td_shared="$td_shared $1"; return 1
}
td_acl() {
  td_ls=$(LC_ALL=C ls -ld -- "$1" 2>/dev/null) || return 0
  case $td_ls in ??????????' '*|??????????.*) return 1 ;; esac
}
td_group_writes() {
  [ $((td_mode & 16)) -ne 0 ] || return 1
  if ! td_solo "$td_gid"; then td_by='its group'; return 0; fi
  td_acl "$td_file" || return 1
  td_by='the users and groups its access control list names'
}
td_open() {
  [ $((td_mode & 2)) -ne 0 ] || td_group_writes
}
td_user() {
  td_name=$(id -nu "$1" 2>/dev/null) && td_user="$td_name (uid $1)" || td_user="uid $1"
}
td_refuse() {
  td_user "$td_uid"; td_owner=$td_user
  printf 'yonder: Refusing the %s %s: %s (owner %s, mode 0%03o) %s, so another user could change what yonder reads or runs there. Fix: %s\\n' "$td_role" "$td_subject" "$1" "$td_owner" "$((td_mode & 4095))" "$2" "$3" >&2
  return 1
}
td_writers() {
  if td_group_writes; then
    if [ $((td_mode & 2)) -ne 0 ]; then td_who="$td_by and others"; else td_who=$td_by; fi
  else td_who=others; fi
}
td_parent() {
  if [ "$td_uid" != "$me" ] && [ "$td_uid" != 0 ]; then
    td_user "$me"
    td_refuse "$1" "belongs to another user, neither to you ($td_user) nor to root" "use a location where every directory on the way is yours or root’s."; return 1
  fi
  if [ $((td_mode & 512)) -eq 0 ] && td_open; then
    td_writers
    td_refuse "$1" "is writable by $td_who" "chmod go-w $1 (or, for a directory all may share, chmod +t $1 as /tmp has)."; return 1
  fi
}
td_self() {
  if [ "$td_uid" != "$me" ]; then
    td_user "$me"
    td_refuse "$1" "belongs to another user, not to you ($td_user)" "do not use what is in it; move it aside (mv $1 $1.untrusted) and let yonder make its own, or choose another path."; return 1
  fi
  if td_open; then td_writers; td_refuse "$1" "is writable by $td_who" "chmod go-w $1"; return 1; fi
  if [ $((td_mode & 61440)) -ne 16384 ]; then td_refuse "$1" 'is not a directory' "move it aside (mv $1 $1.old)."; return 1; fi
}
trusted_dir() {
  td_subject=$1 td_role=$2 td_links=0 td_cur= td_exists=0 td_next=
  td_pending=\${1#/}
  td_stat / || { echo "yonder: cannot inspect /" >&2; return 1; }
  td_parent / || return 1
  while [ -n "$td_pending" ]; do
    case $td_pending in
      */*) td_part=\${td_pending%%/*}; td_pending=\${td_pending#*/} ;;
      *) td_part=$td_pending; td_pending= ;;
    esac
    case $td_part in
      ''|.) continue ;;
      ..) td_cur=\${td_cur%/*}; continue ;;
    esac
    td_path=$td_cur/$td_part
    if ! td_stat "$td_path"; then td_next=$td_path; return 0; fi
    if [ $((td_mode & 61440)) -eq 40960 ]; then
      if [ "$td_uid" != "$me" ] && [ "$td_uid" != 0 ]; then
        td_refuse "$td_path" 'is a symbolic link made by another user' "remove it (rm $td_path) and use a path of your own."; return 1
      fi
      td_links=$((td_links + 1))
      if [ "$td_links" -gt 40 ]; then echo "yonder: too many symbolic links in $td_subject" >&2; return 1; fi
      td_target=$(readlink -- "$td_path") || { echo "yonder: cannot read the link $td_path" >&2; return 1; }
      case $td_target in /*) td_cur= ;; esac
      td_pending=\${td_target#/}\${td_pending:+/$td_pending}
      continue
    fi
    if [ -n "$td_pending" ]; then
      if [ $((td_mode & 61440)) -ne 16384 ]; then echo "yonder: $td_path (in $td_subject) is not a directory" >&2; return 1; fi
      td_parent "$td_path" || return 1
    fi
    td_cur=$td_path
  done
  td_stat "\${td_cur:-/}" || { echo "yonder: cannot inspect \${td_cur:-/}" >&2; return 1; }
  td_self "\${td_cur:-/}" || return 1
  td_exists=1
}
make_trusted_dir() {
  mt_round=0
  while [ "$mt_round" -lt 64 ]; do
    trusted_dir "$1" "$2" || return 23
    [ "$td_exists" = 0 ] || return 0
    if ! mt_error=$(mkdir -m 700 -- "$td_next" 2>&1) && [ ! -d "$td_next" ]; then
      echo "yonder: cannot create the $2 $1: $mt_error" >&2; return 19
    fi
    mt_round=$((mt_round + 1))
  done
  echo "yonder: cannot create the $2 $1" >&2; return 19
}`;

/**
 * Defines, for a POSIX sh script (after TRUSTED_DIRECTORY_FUNCTIONS, which sets `me`):
 * - `private_dirs STRIDE ARGS…`: sets `private` to the list (one a line) of the directories among
 *   ARGS — the first of each group of STRIDE — that are real directories (never links) of this
 *   user that nobody else may read, write or enter (mode 0700, special bits aside): one `find`
 *   for them all, never one command per job.
 * - `enter_private DIR`: `cd` into DIR when `private` lists it and it is still the user's own and
 *   not a link once entered; fails otherwise. After it, the job's files are named relatively.
 */
export const PRIVATE_DIRECTORY_FUNCTIONS = `nl='
'
private_dirs() {
  pd_stride=$1; shift
  pd_count=$(($# / pd_stride)); pd_rest=$(($# - pd_count * pd_stride)); pd_i=0
  while [ "$pd_i" -lt "$pd_count" ]; do
    pd_dir=$1; shift "$pd_stride"
    case $pd_dir in /*) set -- "$@" "$pd_dir" ;; esac
    pd_i=$((pd_i + 1))
  done
  shift "$pd_rest"
  private=
  [ $# -gt 0 ] || return 0
  private=$(find "$@" -maxdepth 0 -type d -user "$me" -perm -700 ! -perm -040 ! -perm -020 ! -perm -010 ! -perm -004 ! -perm -002 ! -perm -001 -print 2>/dev/null)
}
enter_private() {
  case "$nl$private$nl" in *"$nl$1$nl"*) ;; *) return 1 ;; esac
  [ ! -L "$1" ] && cd -P -- "$1" 2>/dev/null && [ -O . ]
}`;

/**
 * Defines, for a POSIX sh script working inside a job directory it has entered:
 * - `read_word FILE`: sets `word` to the first line of FILE (no fork); fails when FILE is not a
 *   regular file.
 * - `put NAME VALUE`: replaces NAME by a file holding VALUE: written to a temporary created under
 *   noclobber (`set -C`, so it never follows a link; a stale temporary is removed first), then
 *   renamed, so a reader never sees half. It leaves noclobber on.
 * - `spare NAME`: sets room aside for NAME (`.NAME.spare`, 65 bytes), made while there is space;
 *   `put_spare NAME VALUE` writes VALUE over it in place (no new space needed), cuts it to length
 *   and renames it to NAME: what `put` falls back on when the disk is full.
 * - `clock`: sets `now` to epoch seconds, with nanoseconds when `date +%s.%N` gives them.
 */
export const JOB_FILE_FUNCTIONS = `read_word() {
  word=
  [ -f "$1" ] && [ ! -L "$1" ] || return 1
  { IFS= read -r word; } < "$1" 2>/dev/null
  return 0
}
put() {
  set -C
  if ! { printf '%s\\n' "$2" > ".$1.tmp"; } 2>/dev/null; then
    rm -f -- ".$1.tmp" && printf '%s\\n' "$2" > ".$1.tmp" || return 1
  fi
  mv -f -- ".$1.tmp" "$1"
}
spare() {
  set -C
  { printf '%064d\\n' 0 > ".$1.spare"; } 2>/dev/null || rm -f -- ".$1.spare"
}
put_spare() {
  rm -f -- ".$1.tmp"
  [ -f ".$1.spare" ] && [ ! -L ".$1.spare" ] || return 1
  { printf '%s\\n' "$2" 1<> ".$1.spare"; } 2>/dev/null &&
    dd if=/dev/null of=".$1.spare" bs=1 seek=$((\${#2} + 1)) 2>/dev/null &&
    mv -f -- ".$1.spare" "$1"
}
clock() {
  now=$(date +%s.%N 2>/dev/null)
  case $now in ''|.*|*.|*[!0-9.]*|*.*.*) now=$(date +%s) ;; esac
}`;
