/**
 * Starts a child process on a module, TypeScript (tests, under tsx) or compiled JavaScript
 * (`dist/`), with the IPC channel in `serialization: 'advanced'` so messages cross with the same
 * structured clone as between threads (Map, Set, Date, BigInt, typed arrays, cycles). Unlike a
 * worker thread, a child process does get tsx's hooks from `--import tsx`; we pass tsx by its
 * resolved URL so the child finds it whatever its working directory.
 */
import { fork, type ChildProcess, type ForkOptions } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { entryUrl, isTypeScriptEntry, resolveTsx } from './startWorker.js';

/**
 * Forks `entry` with `args`. `execArgv` defaults to this process's; for a `.ts` entry tsx's hook is
 * added unless already there. `serialization` is always 'advanced'.
 */
export function forkProcess(
  entry: URL | string,
  args: readonly string[] = [],
  options: Omit<ForkOptions, 'serialization'> = {},
): ChildProcess {
  const url = entryUrl(entry);
  const execArgv = [...(options.execArgv ?? process.execArgv)];
  if (isTypeScriptEntry(url) && !execArgv.some((arg) => /(^|[=/\\])tsx([/\\]|$)|tsx[/\\]dist/.test(arg))) {
    execArgv.push('--import', resolveTsx('.', url));
  }
  return fork(fileURLToPath(url), [...args], { ...options, execArgv, serialization: 'advanced' });
}
