/**
 * What the dashboard's job page reads of a job (describeJobs), from a JobMaster alone on a simulated
 * clock: the graph's edges, the job's, each vertex's and each subtask's start and end, where an ended
 * subtask ran, and a restarted subtask's earlier attempt.
 */
import { expect } from 'chai';
import { describeJobs } from '../../lib/dashboard/jobDetails.js';
import { ArchivedJob, liveJobView } from '../../lib/jobmaster/ArchivedJob.js';
import { Harness } from '../jobmaster/jobMasterHarness.js';
import { edge, vertex } from '../jobmaster/support.js';

/** The Dispatcher's lookup of the harness's job: its JobMaster, or (`archived`) what it keeps once the job ended. */
function lookupOf(h: Harness, archived = false) {
  const view = archived ? new ArchivedJob(liveJobView(h.master)) : liveJobView(h.master);
  return {
    listJobs: () => [{ jobId: h.master.jobId, name: 'job', status: h.master.status }],
    getJobView: () => view,
  };
}

describe('describeJobs (the job page)', () => {
  it(
    "gives the graph, the job's, each vertex's and each subtask's times, where an ended subtask ran, " +
      'and the earlier attempt of a restarted one',
    async () => {
      const h = new Harness({
        vertices: [vertex('src', 2), vertex('sink', 1)],
        edges: [edge('src', 'sink', 'all-to-all')],
        restartStrategy: { type: 'fixed-delay', attempts: 1, delay: '1 s' },
      });
      // Created at 0 (its JobMaster made), started at 1 s.
      await h.advance(1_000);
      await h.start();
      const te = h.addExecutor('taskexecutor-a');
      const slots = await h.offer(te, 2);
      await h.advance(100);
      await h.finish(h.submittedFor('src', 0)[0]!, 'a');
      await h.advance(100);
      const failed = h.submittedFor('src', 1)[0]!;
      await h.report(failed, 'running');
      await h.report(failed, 'failed', { error: { name: 'Error', message: 'boom' } });

      let [job] = describeJobs(lookupOf(h));
      expect(job!.edges).to.deep.equal([{ from: 'src', to: 'sink', pattern: 'all-to-all' }]);
      expect(job!.vertices.map((v) => [v.id, v.parallelism])).to.deep.equal([
        ['src', 2],
        ['sink', 1],
      ]);
      expect([job!.startTime, job!.endTime]).to.deep.equal([0, -1]);
      const [src0, src1] = job!.vertices[0]!.subtasks;
      // Ended and its slot given back, src#0 still says where it ran, and when.
      expect(src0).to.deep.include({ state: 'finished', resourceId: te, startTime: 1_000, endTime: 1_100 });
      expect(slots).to.include(src0!.allocationId);
      expect(src1).to.deep.include({ attempt: 0, state: 'failed', resourceId: te, endTime: 1_200 });

      await h.advance(1_000); // the restart delay
      const retry = h.submittedFor('src', 1).at(-1)!;
      expect(retry.attemptNumber).to.equal(1);
      await h.advance(50);
      await h.finish(retry, 'b');
      await h.advance(50);
      await h.finish(h.submittedFor('sink', 0)[0]!, 'ab');
      expect((await h.master.result).status).to.equal('finished');

      // What the Dispatcher keeps of the ended job (its archive, not its JobMaster) says the same.
      [job] = describeJobs(lookupOf(h, true));
      const [, again] = job!.vertices[0]!.subtasks;
      expect(again).to.deep.include({
        attempt: 1,
        state: 'finished',
        resourceId: te,
        startTime: 2_200,
        endTime: 2_250,
      });
      expect(again!.priorAttempts).to.deep.equal([
        {
          attempt: 0,
          state: 'failed',
          resourceId: te,
          allocationId: src1!.allocationId,
          startTime: 1_000,
          endTime: 1_200,
        },
      ]);
      // A vertex runs from its first subtask's start to its last one's end.
      expect(job!.vertices.map((v) => [v.startTime, v.endTime])).to.deep.equal([
        [1_000, 2_250],
        [2_250, 2_300],
      ]);
      expect([job!.startTime, job!.endTime]).to.deep.equal([0, 2_300]);
    },
  );

  it('shows a parallelism the adaptive scheduler has not decided as null, then the decision and why', async () => {
    const h = new Harness(
      {
        scheduler: 'adaptive',
        vertices: [vertex('src', 2), { id: 'sink', taskModule: new URL('../fixtures/tasks/ok.ts', import.meta.url) }],
        edges: [edge('src', 'sink')],
      },
      { 'execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task': '1 kb' },
    );
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    await h.offer(te, 2);
    let [job] = describeJobs(lookupOf(h));
    expect(job!.vertices.map((v) => [v.id, v.parallelism, v.parallelismReason])).to.deep.equal([
      ['src', 2, null],
      ['sink', null, null],
    ]);
    for (const i of [0, 1]) await h.finishKept(h.submittedFor('src', i)[0]!, te, [2048]);
    [job] = describeJobs(lookupOf(h));
    expect(job!.vertices[1]).to.deep.include({
      parallelism: 4,
      parallelismReason: 'its inputs produced 4 kb; at 1 kb per subtask that is 4, within [1, 128]: 4',
    });
    expect(job!.vertices[1]!.subtasks).to.have.length(4);
  });
});
