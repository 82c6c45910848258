/**
 * The child process of a TaskManager in mode 'process' (TaskManagerProcess.ts): it runs the
 * TaskManager itself (its TaskExecutor on this process's main thread, tasks on task threads; it
 * registers as mode 'process') under the heap limit its parent gave it, tells its parent its state
 * over IPC, and closes gracefully when told to or when its parent goes away.
 */
import { startTaskManagerInChildProcess, type TaskManager, type TaskManagerOptions } from './TaskManager.js';
import { CLOSE_MESSAGE, START_MESSAGE, STATUS_MESSAGE, type TaskManagerStatus } from './taskManagerProcessProtocol.js';

/** The parent's first message: our options (never on the command line, where secrets would show). */
function startMessage(): Promise<TaskManagerOptions> {
  return new Promise((resolve) => {
    // A parent gone before it told us anything: nothing to start.
    const orphaned = () => process.exit(2);
    const onMessage = (message: unknown) => {
      const options = (message as Record<string, unknown> | null)?.[START_MESSAGE];
      if (options === undefined) return;
      process.off('message', onMessage).off('disconnect', orphaned);
      resolve(options as TaskManagerOptions);
    };
    process.on('message', onMessage).once('disconnect', orphaned);
  });
}

async function main(): Promise<void> {
  const options = await startMessage();
  let taskManager: TaskManager;
  try {
    taskManager = await startTaskManagerInChildProcess({ ...options, mode: 'thread' });
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
  let last = '';
  let registrations = 0;
  const report = () => {
    const status: TaskManagerStatus = {
      resourceId: taskManager.resourceId,
      registered: taskManager.registered,
      incarnations: taskManager.incarnations,
      registrations,
    };
    const text = JSON.stringify(status);
    if (text !== last && process.connected) process.send?.({ [STATUS_MESSAGE]: status });
    last = text;
  };
  // Each registration at once (the parent tells its listeners), other changes within 100 ms.
  taskManager.onRegistered(() => {
    registrations++;
    report();
  });
  report();
  const timer = setInterval(report, 100);
  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    clearInterval(timer);
    await taskManager.close();
    process.exit(0);
  };
  process.on('message', (message) => {
    if ((message as Record<string, unknown> | null)?.[CLOSE_MESSAGE] !== undefined) void close();
  });
  process.on('disconnect', () => void close());
  // Ctrl-C in a terminal reaches the whole process group: the parent decides, and tells us to close.
  process.on('SIGINT', () => {});
}

await main();
