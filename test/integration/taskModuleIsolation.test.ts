/**
 * User code never runs in the coordinator (issue 10, A): submitting a job whose task module hangs,
 * exits, throws or has no default export at top level fails that submit with JobGraphError
 * `invalid-task-module` and a `details.problem` saying what happened; the application keeps
 * running, a job already running finishes untouched, and a module that patches Map.prototype.set
 * reaches none of the coordinator's maps.
 */
import { expect } from 'chai';
import { JobGraphError } from '../../lib/core/errors.js';
import { MiniCluster } from '../../lib/MiniCluster.js';

const task = (name: string) => new URL(`../fixtures/tasks/${name}.ts`, import.meta.url);

describe('task modules are checked off the main thread', function () {
  this.timeout(120_000);
  let cluster: MiniCluster;

  before(async () => {
    cluster = await MiniCluster.start({
      taskExecutors: 1,
      slotsPerTaskExecutor: 2,
      configuration: { 'dispatcher.task-module-check.timeout': '3 s' },
    });
  });

  after(async () => {
    await cluster?.close();
  });

  it('refuses each bad module with its problem, while another job runs on untouched', async () => {
    const secret = { apiKey: 'sk-do-not-leak' };
    const running = await cluster.submitJob({
      name: 'bystander',
      vertices: [{ id: 'nap', taskModule: task('sleep'), parallelism: 1, config: { ms: 1_500, secret } }],
    });
    const set = Map.prototype.set;

    for (const [module, problem] of [
      ['hangsOnLoad', 'timed-out'],
      ['exitsOnLoad', 'exited'],
      ['throwsOnLoad', 'threw'],
      ['noDefault', 'no-default-export'],
    ] as const) {
      const error = await cluster
        .submitJob({ name: module, vertices: [{ id: 'bad', taskModule: task(module), parallelism: 1 }] })
        .catch((e: unknown) => e);
      expect(error, module).to.be.instanceOf(JobGraphError);
      expect((error as JobGraphError).reason, module).to.equal('invalid-task-module');
      expect((error as JobGraphError).details, module).to.deep.include({ vertex: 'bad', problem });
    }
    // The application is alive (a top-level process.exit(3) ended only the checker) and did not mean to exit.
    expect(process.exitCode ?? 0).to.equal(0);

    // A valid module that patches Map.prototype.set when loaded: its job is taken, the patch stays off this thread.
    const patcher = await cluster.submitJob({
      name: 'patcher',
      vertices: [{ id: 'patch', taskModule: task('patchesMap'), parallelism: 1, slotSharingGroup: 'apart' }],
    });
    expect(Map.prototype.set).to.equal(set);
    expect((globalThis as { __slotwiseStolen?: unknown }).__slotwiseStolen).to.equal(undefined);

    const result = await running.result;
    expect(result.status).to.equal('finished');
    expect(result.restarts).to.equal(0);
    expect(result.outputs['nap']).to.deep.equal([{ subtask: 0, attempt: 0, inputs: {} }]);
    expect((await patcher.result).status).to.equal('finished');
    expect(
      cluster
        .listJobs()
        .map((j) => j.name)
        .sort(),
    ).to.deep.equal(['bystander', 'patcher']);
  });
});
