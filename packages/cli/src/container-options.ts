/** The container flags shared by `submit` and `profile add`: their parse options, their help, the container they ask for, and its line in `status`. */
import type { JobRecord } from '@yonder/core';
import type { ContainerRuntime, ContainerSpec } from '@yonder/core/backend-kit';
import { pairs } from './args.js';
import { UsageError } from './usage-error.js';

/** The flags, for `parse`. */
export const CONTAINER_OPTIONS = {
  'container-runtime': { type: 'string' },
  'container-image': { type: 'string' },
  bind: { type: 'string', multiple: true },
  'container-gpus': { type: 'string' },
  'container-env': { type: 'string', multiple: true },
  'no-container': { type: 'boolean' },
} as const;

/** Their lines in a command's help. */
export const CONTAINER_HELP = `  --container-image IMAGE  run in a container: a local podman image, or an apptainer .sif path on
                         the target (never pulled; the image's id is recorded)
  --container-runtime R  podman or apptainer
  --bind SRC:DST[:MODE]  bind SRC on the target at DST inside, ro (default) or rw (repeatable)
  --container-gpus G     true (the GPUs: apptainer --nv, podman nvidia.com/gpu=all), false, or a
                         CDI device for podman
  --container-env K=V    variable set inside the container only (repeatable)
`;

type Values = Record<string, string | boolean | string[] | undefined>;

/**
 * The container the flags ask for: undefined when none is given, `null` for `--no-container`
 * (a job then runs in none, whatever its profile says). Fields are checked by core.
 */
export function containerFromOptions(values: Values): ContainerSpec | null | undefined {
  const runtime = values['container-runtime'];
  const image = values['container-image'];
  const binds = (values.bind as string[] | undefined) ?? [];
  const gpus = values['container-gpus'];
  const env = pairs(values['container-env'], 'container-env');
  const given =
    runtime !== undefined ||
    image !== undefined ||
    binds.length > 0 ||
    gpus !== undefined ||
    Object.keys(env).length > 0;
  if (values['no-container']) {
    if (given)
      throw new UsageError('--no-container cannot be combined with other container flags.');
    return null;
  }
  if (!given) return undefined;
  const spec: ContainerSpec = {};
  if (runtime !== undefined) spec.runtime = String(runtime) as ContainerRuntime;
  if (image !== undefined) spec.image = String(image);
  if (binds.length > 0) spec.binds = binds;
  if (gpus !== undefined)
    spec.gpus = gpus === 'true' ? true : gpus === 'false' ? false : String(gpus);
  if (Object.keys(env).length > 0) spec.env = env;
  return spec;
}

/** The container of a job for `status`: runtime, image, and the id the target identified. */
export function containerLine(job: JobRecord): string | undefined {
  const container = job.spec.container;
  if (!container) return undefined;
  const image = job.containerImage;
  const id = image
    ? ` (${image.id}${image.digest && image.digest !== image.id ? `, digest ${image.digest}` : ''})`
    : '';
  const binds = container.binds.length > 0 ? `; binds ${container.binds.join(' ')}` : '';
  return `${container.runtime} ${container.image}${id}${binds}`;
}
