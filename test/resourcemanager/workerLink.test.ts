/**
 * wireWorkerLink lets go of a JobMaster on a worker's Link once it is withdrawn (its job ended a while ago): the
 * channels it was served on close, so a long-lived TaskExecutor's Link does not keep every ended job's JobMaster. The
 * worker side's JobTable closes its own once it let go of the job (test/taskexecutor/TaskExecutor.test.ts).
 */
import { expect } from 'chai';
import { SimulatedClock } from '../../lib/core/clock.js';
import { JobID, ResourceID } from '../../lib/core/ids.js';
import { connectGateway } from '../../lib/rpc/connect.js';
import { CONTROL_METHODS, GATEWAY, type JobMasterGateway } from '../../lib/rpc/gateways.js';
import { Link } from '../../lib/rpc/Link.js';
import { MainThreadExecutor } from '../../lib/rpc/MainThreadExecutor.js';
import { memoryTransportPair } from '../../lib/rpc/memoryTransport.js';
import { wireWorkerLink } from '../../lib/resourcemanager/workerLink.js';

describe('wireWorkerLink', () => {
  it('closes the channels a JobMaster was served on once it is withdrawn, and no other', async () => {
    const clock = new SimulatedClock(0);
    const [mainEnd, workerEnd] = memoryTransportPair();
    const main = new Link('main', mainEnd);
    const worker = new Link('worker', workerEnd);
    const served = new Map<string, JobMasterGateway>();
    const withdrawn = new Set<(address: string) => void>();
    const calls: string[] = [];
    const jobMaster = (name: string) =>
      ({
        ...Object.fromEntries(
          [...CONTROL_METHODS.jobMaster, 'updateTaskExecutionState', 'updateTaskExecutionStates'].map((m) => [
            m,
            async () => {},
          ]),
        ),
        registerTaskManager: async () => {
          calls.push(name);
          return { kind: 'accepted' };
        },
      }) as unknown as JobMasterGateway;
    served.set('a', jobMaster('a'));
    served.set('b', jobMaster('b'));
    wireWorkerLink(
      main,
      {
        mailbox: new MainThreadExecutor('rm', clock),
        onWorkerTerminated: () => {},
        resourceManagerGateway: () =>
          Object.fromEntries(CONTROL_METHODS.resourceManager.map((m) => [m, async () => {}])) as never,
        jobMasterGateway: (address) => served.get(address),
        onJobMasterWithdrawn: (listener) => {
          withdrawn.add(listener);
          return () => withdrawn.delete(listener);
        },
      },
      { resourceId: ResourceID.generate('taskexecutor'), timeoutMs: 1_000, clock },
    );
    const call = (address: string) =>
      connectGateway<JobMasterGateway>(worker, `jm:${address}`, {
        gateway: GATEWAY.jobMaster,
        timeoutMs: 1_000,
        clock,
        control: CONTROL_METHODS.jobMaster,
      }).registerTaskManager(JobID.generate(), ResourceID.generate('taskexecutor'));
    await Promise.all([call('a'), call('b')]);
    expect(calls.sort()).to.deep.equal(['a', 'b']);
    const jm = () => main.channelNames.filter((name) => name.startsWith('jm:')).sort();
    expect(jm()).to.deep.equal(['jm:a', 'jm:b']);
    served.delete('a');
    for (const listener of withdrawn) listener('a');
    expect(jm()).to.deep.equal(['jm:b']);
    // The other JobMaster is still served.
    await call('b');
    expect(calls.filter((c) => c === 'b')).to.have.length(2);
    main.close();
    worker.close();
    expect(withdrawn.size, 'unsubscribed when the link closed').to.equal(0);
  });
});
