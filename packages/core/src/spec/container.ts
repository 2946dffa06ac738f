/** The container a job runs in: the runtime, the pre-staged image, the bind mounts, GPUs and variables set inside. */

/** The container runtimes yonder drives: apptainer (HPC, a `.sif` file) or podman (a local image). */
export type ContainerRuntime = 'apptainer' | 'podman';

export const CONTAINER_RUNTIMES: readonly ContainerRuntime[] = ['apptainer', 'podman'];

/**
 * A job's container, as a job spec or a profile's defaults give it. Every field may come from
 * the profile; what the job gives wins, and the job's `binds` follow the profile's.
 */
export interface ContainerSpec {
  /** `apptainer` or `podman`. */
  runtime?: ContainerRuntime;
  /**
   * The image, already on the target (never pulled): an absolute `.sif` path for apptainer, a
   * local image reference (`localhost/pipeline:1.2`, an image id) for podman.
   */
  image?: string;
  /**
   * Bind mounts, `SRC:DST` or `SRC:DST:ro` / `SRC:DST:rw` (default `ro`): absolute paths on
   * the target (SRC) and inside the container (DST), without `:` or `,` in them.
   */
  binds?: string[];
  /**
   * GPUs: `true` gives the container the target's GPUs (apptainer `--nv`, podman
   * `--device nvidia.com/gpu=all`); a string is the CDI device podman is given instead.
   */
  gpus?: boolean | string;
  /** Variables set inside the container only (the job's own `env` wins over these). */
  env?: Record<string, string>;
}

/** A job's container once the profile's defaults are applied: runtime and image known. */
export interface ResolvedContainer {
  runtime: ContainerRuntime;
  image: string;
  binds: string[];
  gpus: boolean | string;
  env: Record<string, string>;
}

/** The image a job's container ran, as the target identified it at submit. */
export interface ContainerImage {
  /** podman: the image id (`sha256:…`); apptainer: the sha256 of the `.sif` file. */
  id: string;
  /** podman: the manifest digest, when the image has one; apptainer: the same as `id`. */
  digest: string | null;
}
