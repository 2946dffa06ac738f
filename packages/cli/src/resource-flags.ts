/** The resource flags a submit takes, and a profile takes as its defaults: their parse options and the `Resources` they say. */
import type { Resources } from '@yonder/core';
import { integerOption, type Parsed } from './args.js';

/** `--time --cpus --memory --gpus --nodes --partition --account --qos` and `--scheduler-option`. */
export const RESOURCE_OPTIONS = {
  time: { type: 'string' },
  cpus: { type: 'string' },
  memory: { type: 'string' },
  gpus: { type: 'string' },
  nodes: { type: 'string' },
  partition: { type: 'string' },
  account: { type: 'string' },
  qos: { type: 'string' },
  'scheduler-option': { type: 'string', multiple: true },
} as const;

/** The resources the flags name (only those given). */
export function readResources(values: Parsed['values']): Resources {
  const resources: Resources = {};
  if (values.time !== undefined) resources.time = String(values.time);
  if (values.memory !== undefined) resources.memory = String(values.memory);
  const cpus = integerOption(values.cpus, 'cpus', 1);
  if (cpus !== undefined) resources.cpus = cpus;
  const gpus = integerOption(values.gpus, 'gpus', 0);
  if (gpus !== undefined) resources.gpus = gpus;
  const nodes = integerOption(values.nodes, 'nodes', 1);
  if (nodes !== undefined) resources.nodes = nodes;
  for (const key of ['partition', 'account', 'qos'] as const) {
    if (values[key] !== undefined) resources[key] = String(values[key]);
  }
  return resources;
}

/** The `--scheduler-option` words given, in order. */
export function readSchedulerOptions(values: Parsed['values']): string[] {
  return (values['scheduler-option'] as string[] | undefined) ?? [];
}
