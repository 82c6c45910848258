/**
 * The word count job: source → tokenize (pointwise) → count (hash: each counter reads only its words) → sink
 * (all-to-all).
 *
 * source, tokenize and sink share slots in the `default` group (UNKNOWN resources: any default slot
 * does); the counters run in their own `counting` group and ask for more heap than a default slot
 * of the demo cluster has, so the SlotManager cuts them dynamic slots from what is left.
 */
import type { JobGraphSpec, RestartStrategySpec } from '../../lib/jobmaster/JobGraph.js';
import type { ResourceSpec } from '../../lib/core/ResourceProfile.js';

export type WordCountSource = { readonly text: readonly string[] } | { readonly lines: number; readonly seed: number };

export interface WordCountOptions {
  /** The text, or how many lines to generate from which seed. */
  readonly input: WordCountSource;
  /** Parallelism of source and tokenize (default 2). */
  readonly parallelism?: number;
  /** Parallelism of count (default 2). */
  readonly counters?: number;
  /** What each counter asks for (default: 1 core, 384 mb heap, 32 mb managed memory). */
  readonly counterResources?: ResourceSpec | 'UNKNOWN';
  readonly restartStrategy?: RestartStrategySpec;
  readonly name?: string;
}

export interface WordCountResult {
  readonly totalWords: number;
  readonly distinctWords: number;
  /** The ten most frequent words, ties by word. */
  readonly top: ReadonlyArray<readonly [string, number]>;
  readonly counts: Readonly<Record<string, number>>;
}

export const COUNTER_RESOURCES: ResourceSpec = { cpuCores: 1, taskHeapMemory: '384m', managedMemory: '32m' };

const task = (name: string) => new URL(`./tasks/${name}.ts`, import.meta.url);

export function wordCountJob(options: WordCountOptions): JobGraphSpec {
  const parallelism = options.parallelism ?? 2;
  const counters = options.counters ?? 2;
  return {
    name: options.name ?? 'word count',
    vertices: [
      { id: 'source', taskModule: task('source'), parallelism, config: options.input },
      { id: 'tokenize', taskModule: task('tokenize'), parallelism },
      {
        id: 'count',
        taskModule: task('count'),
        parallelism: counters,
        slotSharingGroup: 'counting',
        resources: options.counterResources ?? COUNTER_RESOURCES,
      },
      { id: 'sink', taskModule: task('sink'), parallelism: 1 },
    ],
    edges: [
      { from: 'source', to: 'tokenize', pattern: 'pointwise' },
      { from: 'tokenize', to: 'count', pattern: 'hash' },
      { from: 'count', to: 'sink', pattern: 'all-to-all' },
    ],
    ...(options.restartStrategy ? { restartStrategy: options.restartStrategy } : {}),
  };
}
