/** The options of a Grid Engine profile: their schema and their type (the manager checks them and hands them to the backend as `context.options`). */
import { type Static, Type } from '@yonder/core';

/** Options of a Grid Engine profile (`yonder profile add NAME --backend gridengine --set KEY=VALUE`). */
export const GridEngineOptionsSchema = Type.Object(
  {
    parallelEnvironment: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_.-]+$',
        description:
          'The parallel environment that gives a job its --cpus as slots on one host (qsub -pe NAME N); without it a job may ask for one cpu only.',
      }),
    ),
    probeTtlSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 604_800,
        description: 'How long the probe (version, qmaster, accounting) is cached; default 3600.',
      }),
    ),
  },
  { additionalProperties: false },
);

export type GridEngineOptions = Static<typeof GridEngineOptionsSchema>;
