/** The options of a Slurm profile: their schema and their type (the manager checks them against it and hands them to the backend as `context.options`). */
import { type Static, Type } from '@yonder/core';

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
