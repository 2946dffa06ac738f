#!/usr/bin/env bash
# Install yonder for the user running it, so that `yonder` works from any directory in a new
# login shell: build the workspace, pack its packages, install them with npm into
# PREFIX/lib/yonder (PREFIX: $YONDER_PREFIX, else ~/.local), link PREFIX/bin/yonder, and put
# PREFIX/bin on the PATH of login shells when it is not there yet.
#
#   bash scripts/install.sh            # the CLI and every backend
#   YONDER_PACKAGES="@yonder/backend-slurm" bash scripts/install.sh
#                                      # the CLI, its ledger, and only the backends named
#
# Run it again to upgrade; nothing outside PREFIX and one marked block of the login shell's
# startup file is touched.
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=${YONDER_PREFIX:-$HOME/.local}
fail() {
  printf 'install: %s\n' "$*" >&2
  exit 1
}
case $prefix in
/*) ;;
*) fail "YONDER_PREFIX must be an absolute path (it is \"$prefix\"): set it to a directory of yours, such as \$HOME/.local." ;;
esac
case $prefix in
*$'\n'* | *:*) fail "YONDER_PREFIX cannot hold a line break or a colon (a PATH entry could not name it): choose another directory." ;;
esac

# Every package of the CLI by default; the CLI and its ledger always.
all_optional="@yonder/backend-ssh @yonder/backend-slurm @yonder/backend-command @yonder/ui"
wanted=${YONDER_PACKAGES-$all_optional}
packages="@yonder/core @yonder/store-fs @yonder/cli"
for name in $wanted; do
  case " $all_optional " in
  *" $name "*) packages="$packages $name" ;;
  *) fail "YONDER_PACKAGES names $name, which yonder does not ship; choose among: $all_optional." ;;
  esac
done

# Built first (pnpm, the dependencies, every package), unless the caller says the build is
# current (YONDER_INSTALL_PREBUILT=1: the test suite, which has just built it, and must not
# rebuild under tests that are running).
if [ "${YONDER_INSTALL_PREBUILT:-}" != 1 ]; then
  bash scripts/setup.sh
fi

packs=$(mktemp -d)
trap 'rm -rf "$packs"' EXIT
tarballs=()
for name in $packages; do
  dir=packages/${name#@yonder/}
  (cd "$dir" && pnpm pack --pack-destination "$packs" >/dev/null)
  tarballs+=("$packs/yonder-${name#@yonder/}-$(node -p "require('./$dir/package.json').version").tgz")
done

home="$prefix/lib/yonder"
mkdir -p -- "$prefix/lib" "$prefix/bin"
# Built beside the installation and swapped in whole: a failed install leaves the last one working.
stage=$(mktemp -d "$prefix/lib/.yonder-new.XXXXXX")
trap 'rm -rf "$packs" "$stage"' EXIT
chmod 755 -- "$stage"
printf '{ "name": "yonder-installation", "private": true }\n' > "$stage/package.json"
# One project holding them all: npm takes each @yonder dependency from the tarball given beside it.
npm install --prefix "$stage" --omit=dev --ignore-scripts --no-fund --no-audit --loglevel=error -- "${tarballs[@]}" >&2
if [ -e "$home" ]; then
  rm -rf -- "$home.old"
  mv -- "$home" "$home.old"
fi
mv -- "$stage" "$home"
chmod -R go-w -- "$home"
rm -rf -- "$home.old"

bin="$home/node_modules/@yonder/cli/dist/bin.js"
chmod +x -- "$bin"
ln -sfn -- "$bin" "$prefix/bin/yonder"

# PREFIX/bin on the PATH of login shells: bash reads the first of these that exists.
profile=$HOME/.profile
for candidate in "$HOME/.bash_profile" "$HOME/.bash_login"; do
  if [ -f "$candidate" ]; then
    profile=$candidate
    break
  fi
done
quoted=$(printf '%s' "$prefix/bin" | sed "s/'/'\\\\''/g")
marker="# yonder: $prefix/bin on PATH (scripts/install.sh)"
if ! grep -qxF -- "$marker" "$profile" 2>/dev/null; then
  {
    printf '\n%s\n' "$marker"
    printf "case \":\$PATH:\" in *':%s:'*) ;; *) PATH='%s':\$PATH; export PATH ;; esac\n" "$quoted" "$quoted"
  } >> "$profile"
fi

printf 'install: yonder %s in %s; %s runs it (a new login shell has it on PATH).\n' \
  "$("$prefix/bin/yonder" --version)" "$home" "$prefix/bin/yonder" >&2
