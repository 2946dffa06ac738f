/** The options of a Slurm profile: their schema, their type and the one helper that reads them. */
import { type Profile, type Static, Type } from '@yonder/core';
import { assertValid, checkSchema } from '@yonder/core/backend-kit';

/** Options of a Slurm profile (`yonder profile add NAME --backend slurm --set KEY=VALUE`). */
export const SlurmOptionsSchema = Type.Object(
  {
    binDir: Type.Optional(
      Type.String({
        description:
          'Absolute directory holding sbatch, squeue, sacct, scancel and scontrol, when they are not on PATH.',
      }),
    ),
    export: Type.Optional(
      Type.Union([Type.Literal('ALL'), Type.Literal('NONE')], {
        description:
          'sbatch --export: ALL passes the submitting environment to the job (default), NONE only the job’s own variables.',
      }),
    ),
    requeue: Type.Optional(
      Type.Boolean({
        description:
          'Let Slurm requeue the job after a node failure or preemption (default false: --no-requeue).',
      }),
    ),
    probeTtlSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 604_800,
        description: 'How long the probe (version, accounting, MinJobAge) is cached; default 3600.',
      }),
    ),
  },
  { additionalProperties: false },
);

export type SlurmOptions = Static<typeof SlurmOptionsSchema>;

/**
 * The profile's options, checked against the schema and typed: the only place the backend
 * reads `profile.options` (`validateProfile` aside, which must report rather than throw).
 * @throws ValidationError `E_INVALID_PROFILE` listing every problem.
 */
export function parseSlurmOptions(profile: Profile): SlurmOptions {
  const options = profile.options ?? {};
  assertValid(
    'E_INVALID_PROFILE',
    `Profile "${profile.name}" has invalid Slurm options`,
    checkSchema(SlurmOptionsSchema, options, 'options'),
  );
  // Checked just above against the schema SlurmOptions is derived from.
  return options as SlurmOptions;
}
