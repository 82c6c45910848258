/**
 * The word count's input: generated text, the same for the same seed on every thread (a source
 * subtask generates its own share instead of receiving it), and the count a single loop computes,
 * to check the job's answer against.
 */

const VOCABULARY = [
  'the',
  'a',
  'slot',
  'of',
  'and',
  'task',
  'to',
  'in',
  'executor',
  'is',
  'it',
  'that',
  'for',
  'manager',
  'resource',
  'profile',
  'job',
  'master',
  'vertex',
  'edge',
  'parallel',
  'subtask',
  'memory',
  'managed',
  'heap',
  'network',
  'thread',
  'worker',
  'heartbeat',
  'timeout',
  'pending',
  'request',
  'offer',
  'allocate',
  'free',
  'release',
  'restart',
  'failover',
  'share',
  'group',
];

/** mulberry32: a small, fast, seedable PRNG (deterministic across threads and runs). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Line `index` of the text for `seed`: 4 to 15 words, frequent words more often (roughly Zipf). */
export function generateLine(seed: number, index: number): string {
  const next = random(seed * 1_000_003 + index);
  const words = 4 + Math.floor(next() * 12);
  const line: string[] = [];
  for (let i = 0; i < words; i++) {
    const word = VOCABULARY[Math.floor(VOCABULARY.length * next() ** 2)]!;
    line.push(i === 0 ? word[0]!.toUpperCase() + word.slice(1) : word);
  }
  return `${line.join(' ')}.`;
}

/** Lowercased words, punctuation dropped. */
export function tokenize(line: string): string[] {
  return line
    .toLowerCase()
    .split(/[^a-z0-9']+/)
    .filter((word) => word.length > 0);
}

/** A stable partition of words over `n` consumers (FNV-1a). */
export function partitionOf(word: string, n: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < word.length; i++) hash = Math.imul(hash ^ word.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % n;
}

/** The answer, counted in one loop. */
export function countWords(lines: Iterable<string>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const line of lines) for (const word of tokenize(line)) counts[word] = (counts[word] ?? 0) + 1;
  return counts;
}

export function* generatedText(seed: number, lines: number): Generator<string> {
  for (let i = 0; i < lines; i++) yield generateLine(seed, i);
}
