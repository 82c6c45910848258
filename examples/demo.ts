/**
 * `npm start`: a word count on an in-process cluster.
 *
 * Starts a MiniCluster (2 TaskExecutors × 4 slots on worker threads by default), submits the word
 * count of examples/wordcount (source → tokenize → count → sink; the counters ask for more heap
 * than a default slot), prints each subtask's progress and the slot table as it changes (which
 * subtask runs in which slot of which executor), checks the result against a single loop's count,
 * closes the cluster and exits 0 — or 1 when the job failed or the counts differ.
 */
import { parseArgs } from 'node:util';
import { MiniCluster } from '../lib/index.js';
import { renderSlotTable } from '../lib/cli/slotTable.js';
import { countWords, generatedText } from './wordcount/text.js';
import { wordCountJob, type WordCountResult } from './wordcount/wordCountJob.js';

const HELP = `Usage: npm start -- [options]

Runs a word count over generated text on an in-process slotwise cluster.

  --lines <n>         lines of text to generate (default 20000)
  --seed <n>          seed of the text (default 42)
  --parallelism <n>   subtasks of source and tokenize (default 2)
  --counters <n>      subtasks of count, each asking 1 core and 384 mb heap (default 2)
  --executors <n>     TaskExecutors (default 2)
  --slots <n>         slots per TaskExecutor; each slot brings 1 core, 256 mb heap,
                      64 mb managed and 32 mb network memory (default 4)
  --mode <m>          thread (default) or process
  --inspect [port]    relay every statechart to the Stately inspector on this port
                      (default 8080); open the URL it prints (it holds the relay's
                      token) and keep the cluster up until Ctrl-C
  --help              this text`;

function positiveInteger(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) {
    console.error(`--${name} must be an integer >= 1, got '${value}'\n\n${HELP}`);
    process.exit(2);
  }
  return n;
}

const { values } = (() => {
  try {
    return parseArgs({
      options: {
        lines: { type: 'string' },
        seed: { type: 'string' },
        parallelism: { type: 'string' },
        counters: { type: 'string' },
        executors: { type: 'string' },
        slots: { type: 'string' },
        mode: { type: 'string' },
        inspect: { type: 'boolean' },
        port: { type: 'string' },
        help: { type: 'boolean' },
      },
      args: normalizeArgs(process.argv.slice(2)),
    });
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${HELP}`);
    process.exit(2);
  }
})();

/**
 * `--inspect 9000` → `--inspect --port 9000` (parseArgs has no optional values), and `--executors -1`
 * → `--executors=-1`: parseArgs takes a value that starts with a dash for another option ("ambiguous
 * argument"), so the range check below could not say what is allowed.
 */
function normalizeArgs(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const next = args[i + 1];
    if (arg === '--inspect' && next !== undefined && /^\d+$/.test(next)) out.push(arg, '--port', args[++i]!);
    else if (/^--[a-z]+$/.test(arg) && arg !== '--inspect' && next !== undefined && /^-\d/.test(next))
      out.push(`${arg}=${args[++i]!}`);
    else out.push(arg);
  }
  return out;
}

if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const lines = positiveInteger('lines', values.lines, 20_000);
const seed = positiveInteger('seed', values.seed, 42);
const parallelism = positiveInteger('parallelism', values.parallelism, 2);
const counters = positiveInteger('counters', values.counters, 2);
const executors = positiveInteger('executors', values.executors, 2);
const slots = positiveInteger('slots', values.slots, 4);
const port = positiveInteger('port', values.port, 8080);
const mode = values.mode ?? 'thread';
if (mode !== 'thread' && mode !== 'process') {
  console.error(`--mode must be thread or process, got '${mode}'\n\n${HELP}`);
  process.exit(2);
}

const started = Date.now();
const say = (line: string) => console.log(`${((Date.now() - started) / 1000).toFixed(2).padStart(6)} s  ${line}`);

const cluster = await MiniCluster.start({
  mode,
  taskExecutors: executors,
  slotsPerTaskExecutor: slots,
  resources: {
    cpuCores: slots,
    taskHeapMemory: `${256 * slots}m`,
    managedMemory: `${64 * slots}m`,
    networkMemory: `${32 * slots}m`,
  },
  ...(values.inspect ? { inspect: { stately: { port } } } : {}),
});
say(
  `cluster up: ${executors} TaskExecutor(s) (${mode === 'process' ? 'child processes' : 'worker threads'}) ` +
    `× ${slots} slots of 1 core, 256 mb heap, 64 mb managed, 32 mb network`,
);
if (values.inspect) say(`Stately inspector relay: open ${cluster.inspectorUrl} in a browser`);

const job = await cluster.submitJob(wordCountJob({ input: { lines, seed }, parallelism, counters }));
say(
  `submitted '${job.name}' (${job.jobId}): ${lines} lines, ` +
    `source×${parallelism} → tokenize×${parallelism} → count×${counters} → sink×1`,
);

let lastTable = '';
let tableTimer: NodeJS.Timeout | null = null;
const showTable = () => {
  tableTimer = null;
  const table = renderSlotTable(cluster.overview());
  if (table !== lastTable) console.log(table);
  lastTable = table;
};
job.onEvent((event) => {
  if (event.type === 'status') return say(`job ${event.status}${event.cause ? `: ${event.cause}` : ''}`);
  if (event.type === 'parallelism') return say(`${event.vertexId}: parallelism ${event.parallelism} (${event.reason})`);
  if (event.state === 'running' || event.state === 'finished' || event.state === 'failed') {
    const where = event.resourceId ? ` on ${event.resourceId}` : '';
    say(
      `${event.vertexId}#${event.subtaskIndex} ${event.state}${where}${event.error ? `: ${event.error.message}` : ''}`,
    );
  }
  if (event.state === 'running' || event.state === 'finished') tableTimer ??= setTimeout(showTable, 0);
});

const result = await job.result;
if (tableTimer !== null) clearTimeout(tableTimer);
let exitCode = 0;
if (result.status !== 'finished') {
  say(`the job ${result.status}: ${result.error?.message ?? 'no error reported'}`);
  exitCode = 1;
} else {
  const answer = result.outputs['sink']![0] as WordCountResult;
  const expected = countWords(generatedText(seed, lines));
  const same =
    Object.keys(expected).length === answer.distinctWords &&
    Object.entries(expected).every(([word, n]) => answer.counts[word] === n);
  say(
    `finished in ${result.durationMs} ms with ${result.restarts} ` +
      `restart(s): ${answer.totalWords} words, ${answer.distinctWords} distinct`,
  );
  console.log(`\n  most frequent:\n${answer.top.map(([word, n]) => `    ${word.padEnd(12)} ${n}`).join('\n')}\n`);
  say(
    same
      ? 'the counts match a single loop over the same text'
      : 'the counts DIFFER from a single loop over the same text',
  );
  if (!same) exitCode = 1;
}

if (values.inspect) {
  say('the cluster stays up for the inspector; Ctrl-C to close it');
  await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
}
await cluster.close();
say('cluster closed');
process.exitCode = exitCode;
