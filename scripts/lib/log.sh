# Logging shared by the service scripts. Before sourcing, set LOG_NAME (the prefix) and
# LOG_QUIET (1 to keep progress quiet); the script defines dump_logs, which die calls.
T0=${EPOCHREALTIME/,/.}

elapsed() {
  local now=${EPOCHREALTIME/,/.}
  awk -v a="$now" -v b="$T0" 'BEGIN { printf "%.1f", a - b }'
}
log() {
  [[ ${LOG_QUIET:-0} == 1 ]] && return 0
  printf '[%s %5ss] %s\n' "$LOG_NAME" "$(elapsed)" "$*" >&2
}
warn() { printf '[%s] WARNING: %s\n' "$LOG_NAME" "$*" >&2; }
die() {
  printf '[%s] ERROR: %s\n' "$LOG_NAME" "$*" >&2
  dump_logs
  exit 1
}
