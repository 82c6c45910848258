/**
 * `slotwise <command>`: the entry every command goes through. A refusal — a bad flag, an unreadable
 * job file, a JobManager that is not there or says no — is one line on stderr naming what is wrong,
 * `slotwise <command>: <message>`, and exit code 2; `run` answers 0 or 1 for the job's outcome.
 * Commands are loaded when called, so `slotwise list` does not load the runtime.
 */
import type { CliIo } from './flags.js';

export const USAGE = `Usage: slotwise <command> [options]

  run [--jobmanager URL] JOB_FILE [--detached] [--json]   submit a job and follow it
  list [--jobmanager URL] [--json]                        the cluster's jobs
  cancel [--jobmanager URL] JOB_ID                        cancel a job
  logs [--jobmanager URL] JOB_ID [--follow]               what a job's tasks logged (session cluster)
  overview [--jobmanager URL] [--json]                    TaskManagers, slots, the slot table
  jobmanager [--nats URL] [--rest-port PORT] ...          start a JobManager (or --local-taskmanagers N)
  taskmanager [--nats URL] [--slots N] ...                start a TaskManager

The JobManager's REST URL: --jobmanager, else $SLOTWISE_JOBMANAGER, else http://127.0.0.1:8081.
slotwise <command> --help tells a command's flags.`;

type Command = (args: readonly string[], io: CliIo) => Promise<number>;

const COMMANDS: Readonly<Record<string, () => Promise<Command>>> = {
  run: async () => (await import('./commands/run.js')).run,
  list: async () => (await import('./commands/list.js')).list,
  cancel: async () => (await import('./commands/cancel.js')).cancel,
  logs: async () => (await import('./commands/logs.js')).logs,
  overview: async () => (await import('./commands/overview.js')).overview,
  jobmanager: async () => (await import('./commands/jobmanager.js')).jobmanager,
  taskmanager: async () => (await import('./commands/taskmanager.js')).taskmanager,
};

/** Runs one command line; resolves with the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    (name === undefined ? io.stderr : io.stdout)(USAGE);
    return name === undefined ? 2 : 0;
  }
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (load === undefined) {
    io.stderr(`slotwise: unknown command '${name}'; commands: ${Object.keys(COMMANDS).join(', ')} (slotwise --help)`);
    return 2;
  }
  try {
    return await (await load())(args, io);
  } catch (error) {
    io.stderr(`slotwise ${name}: ${oneLine(error)}`);
    return 2;
  }
}

function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s*\n\s*/g, ' ').trim() || (error instanceof Error ? error.name : 'failed');
}
