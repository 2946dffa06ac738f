import { type Static, Type } from '@yonder/core';

/** Options of a command profile: the scheduler's commands as argument templates. */
export const CommandOptionsSchema = Type.Object(
  {
    submit: Type.String({
      description: 'Submit command template; needs {script} or {settings}; prints the job id.',
    }),
    status: Type.String({
      description:
        'Status command template; needs {external_id} (one call per job) or {external_ids} (one call for all).',
    }),
    cancel: Type.String({
      description: 'Cancel command template; needs {external_id} or {external_ids}.',
    }),
    logs: Type.Optional(
      Type.String({
        description: 'Logs command template (default: read the job’s own log file {log}).',
      }),
    ),
    idPattern: Type.Optional(
      Type.String({
        description:
          'Regular expression that finds the job id in the submit output (named group "id", else group 1, else the match).',
      }),
    ),
    states: Type.Optional(
      Type.Record(
        Type.String(),
        Type.Union([
          Type.Literal('pending'),
          Type.Literal('running'),
          Type.Literal('succeeded'),
          Type.Literal('failed'),
          Type.Literal('cancelled'),
        ]),
        {
          description:
            'Extra native state words and what they mean, for words the shared table does not know.',
        },
      ),
    ),
    timeoutSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 3600,
        description: 'Time limit of each command (default 120).',
      }),
    ),
  },
  { additionalProperties: false },
);

export type CommandOptions = Static<typeof CommandOptionsSchema>;

/** Every placeholder a template may use. */
export const PLACEHOLDERS = [
  'id',
  'name',
  'settings',
  'script',
  'workdir',
  'log',
  'external_id',
  'external_ids',
  'profile',
] as const;
