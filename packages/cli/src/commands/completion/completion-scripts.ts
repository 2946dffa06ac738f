/** The shell completion scripts `yonder completion` prints: commands and each command's flags (read from its own help), with profile names and job ids asked of yonder when completing. */

/** What completion knows of the CLI: its commands and each one's flags. */
export interface CompletionTable {
  commands: string[];
  flags: Record<string, string[]>;
}

/** Commands whose words after the flags are job ids. */
const TAKES_JOBS = ['status', 'wait', 'logs', 'cancel', 'rm', 'remove', 'resubmit'];
const PROFILE_SUBCOMMANDS = ['add', 'edit', 'list', 'show', 'remove', 'check', 'schema'];
const SHELLS = ['bash', 'zsh', 'fish'];

/** A word for sh inside single quotes (flags and command names hold none, but be safe). */
const word = (text: string): string => text.replace(/[^A-Za-z0-9_.=-]/g, '');

/** Bash: `complete -F _yonder yonder`; zsh reads the same through bashcompinit. */
export function bashScript(table: CompletionTable): string {
  const cases = Object.entries(table.flags)
    .map(([command, flags]) => `    ${word(command)}) flags='${flags.map(word).join(' ')}' ;;`)
    .join('\n');
  return `# yonder completion for bash: eval "$(yonder completion bash)" (e.g. in ~/.bashrc)
_yonder_words() { command yonder __complete "$1" 2>/dev/null; }
_yonder() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]} cmd=\${COMP_WORDS[1]} flags=
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W '${table.commands.map(word).join(' ')}' -- "$cur")); return
  fi
  case $prev in
    --profile) COMPREPLY=($(compgen -W "$(_yonder_words profiles)" -- "$cur")); return ;;
    --state) COMPREPLY=($(compgen -W 'submitting pending running succeeded failed cancelled unknown' -- "$cur")); return ;;
    --backend) COMPREPLY=($(compgen -W 'local ssh slurm command' -- "$cur")); return ;;
    --unsupported-resources) COMPREPLY=($(compgen -W 'refuse warn ignore' -- "$cur")); return ;;
  esac
  case $cmd in
${cases}
  esac
  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "$flags" -- "$cur")); return; fi
  case $cmd in
    ${TAKES_JOBS.join('|')}) COMPREPLY=($(compgen -W "$(_yonder_words jobs)" -- "$cur")) ;;
    profile)
      if [ "$COMP_CWORD" -eq 2 ]; then COMPREPLY=($(compgen -W '${PROFILE_SUBCOMMANDS.join(' ')}' -- "$cur"))
      else COMPREPLY=($(compgen -W "$(_yonder_words profiles)" -- "$cur")); fi ;;
    completion) COMPREPLY=($(compgen -W '${SHELLS.join(' ')}' -- "$cur")) ;;
    help) COMPREPLY=($(compgen -W '${table.commands.map(word).join(' ')}' -- "$cur")) ;;
  esac
}
complete -F _yonder yonder
`;
}

/** Zsh: the bash function through zsh's bashcompinit. */
export function zshScript(table: CompletionTable): string {
  return `# yonder completion for zsh: eval "$(yonder completion zsh)" (e.g. in ~/.zshrc)
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
${bashScript(table).split('\n').slice(1).join('\n')}`;
}

/** Fish: one `complete` line per command and per flag, profile names and job ids asked of yonder. */
export function fishScript(table: CompletionTable): string {
  const lines = [
    '# yonder completion for fish: yonder completion fish > ~/.config/fish/completions/yonder.fish',
    'complete -c yonder -f',
    `complete -c yonder -n __fish_use_subcommand -a '${table.commands.map(word).join(' ')}'`,
    `complete -c yonder -n '__fish_seen_subcommand_from ${TAKES_JOBS.join(' ')}' -a '(yonder __complete jobs 2>/dev/null)'`,
    `complete -c yonder -n '__fish_seen_subcommand_from profile' -a '${PROFILE_SUBCOMMANDS.join(' ')} (yonder __complete profiles 2>/dev/null)'`,
    `complete -c yonder -n '__fish_seen_subcommand_from completion' -a '${SHELLS.join(' ')}'`,
  ];
  for (const [command, flags] of Object.entries(table.flags)) {
    for (const flag of flags) {
      const takesProfile =
        flag === '--profile' ? " -x -a '(yonder __complete profiles 2>/dev/null)'" : '';
      lines.push(
        `complete -c yonder -n '__fish_seen_subcommand_from ${word(command)}' -l ${word(flag.slice(2))}${takesProfile}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}
