import { expect } from 'chai';
import fc from 'fast-check';
import { IllegalArgumentError, IllegalStateError } from '../../../lib/core/errors.js';
import { JobID } from '../../../lib/core/ids.js';
import { ResourceCounter } from '../../../lib/core/ResourceCounter.js';
import { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import {
  JobScopedResourceTracker,
  matchRequirement,
} from '../../../lib/resourcemanager/slotmanager/JobScopedResourceTracker.js';
import {
  ResourceRequirement,
  ResourceRequirements,
} from '../../../lib/resourcemanager/slotmanager/ResourceRequirement.js';
import { DefaultResourceTracker } from '../../../lib/resourcemanager/slotmanager/ResourceTracker.js';
import { profile } from '../../support/fixtures.js';

const P = {
  UNKNOWN: ResourceProfile.UNKNOWN,
  DEFAULT: profile(1, 100, 64),
  SMALL: profile(0.5, 50),
  GPU: profile(0.5, 10, 0, { gpu: 1 }),
};
type Name = keyof typeof P;
const nameOf = (p: ResourceProfile) => (Object.keys(P) as Name[]).find((n) => P[n].equals(p)) ?? p.toString();
const [J1, J2, J3] = ['1', '2', '3'].map((c) => JobID.parse(c.repeat(32))) as [JobID, JobID, JobID];
/** Requirement lists as readable data: `[['DEFAULT', 2], ['UNKNOWN', 1]]`. */
const show = (list: readonly ResourceRequirement[] | undefined) =>
  list?.map((r) => [nameOf(r.resourceProfile), r.numberOfRequiredSlots]);
const reqs = (...pairs: Array<[Name, number]>) => pairs.map(([n, count]) => ResourceRequirement.create(P[n], count));
const counter = (c: ResourceCounter) => c.entries().map(([p, n]) => [nameOf(p), n]);
const acquire = (t: DefaultResourceTracker, job: JobID, ...names: Name[]) =>
  names.forEach((n) => t.notifyAcquiredResource(job, P[n]));
/** Everything observable, as data: to prove that a refused call changed nothing. */
const state = (t: DefaultResourceTracker) =>
  JSON.stringify(
    [...t.jobs()]
      .map((j) => [j, show(t.getRequiredResources(j)), show(t.getAcquiredResources(j))])
      .concat([...t.getMissingResources()].map(([j, l]) => [j, show(l)])),
  );

describe('DefaultResourceTracker', () => {
  it('reports declared requirements as missing until acquired', () => {
    const t = new DefaultResourceTracker();
    t.notifyResourceRequirements(J1, reqs(['DEFAULT', 2], ['UNKNOWN', 1]));
    expect(show(t.getMissingResources().get(J1))).to.deep.equal([
      ['DEFAULT', 2],
      ['UNKNOWN', 1],
    ]);
    expect(show(t.getRequiredResources(J1))).to.deep.equal([
      ['DEFAULT', 2],
      ['UNKNOWN', 1],
    ]);
    expect(t.isRequirementEmpty(J1)).to.equal(false);
    expect(t.jobs()).to.deep.equal([J1]);
    expect(t.getAcquiredResources(J1)).to.deep.equal([]);
  });

  it('lets an acquired resource fulfil an equal requirement first, then an UNKNOWN one', () => {
    const t = new DefaultResourceTracker();
    t.notifyResourceRequirements(J1, reqs(['UNKNOWN', 1], ['DEFAULT', 1]));
    acquire(t, J1, 'DEFAULT');
    expect(show(t.getMissingResources().get(J1))).to.deep.equal([['UNKNOWN', 1]]);
    acquire(t, J1, 'DEFAULT');
    expect(t.getMissingResources().size).to.equal(0);
    expect(show(t.getAcquiredResources(J1))).to.deep.equal([['DEFAULT', 2]]);
  });

  it('keeps a resource that fulfils nothing as excess', () => {
    const t = new DefaultResourceTracker();
    t.notifyResourceRequirements(J1, reqs(['DEFAULT', 1]));
    acquire(t, J1, 'SMALL');
    expect(show(t.getMissingResources().get(J1))).to.deep.equal([['DEFAULT', 1]]);
    expect(show(t.getAcquiredResources(J1))).to.deep.equal([['SMALL', 1]]);
  });

  it(
    'turns resources beyond a decreased requirement into ' +
      'excess without freeing any, and reuses them on an increase',
    () => {
      const t = new DefaultResourceTracker();
      t.notifyResourceRequirements(J1, reqs(['DEFAULT', 3]));
      acquire(t, J1, 'DEFAULT', 'DEFAULT', 'DEFAULT');
      t.notifyResourceRequirements(J1, reqs(['DEFAULT', 1]));
      expect(t.getMissingResources().size).to.equal(0);
      expect(show(t.getAcquiredResources(J1))).to.deep.equal([['DEFAULT', 3]]);
      t.notifyResourceRequirements(J1, reqs(['DEFAULT', 4]));
      expect(show(t.getMissingResources().get(J1))).to.deep.equal([['DEFAULT', 1]]);
    },
  );

  it('lets a new requirement take matching excess first, and leaves non-matching excess alone', () => {
    const t = new DefaultResourceTracker();
    t.notifyResourceRequirements(J1, reqs(['DEFAULT', 1]));
    acquire(t, J1, 'DEFAULT', 'DEFAULT', 'SMALL');
    t.notifyResourceRequirements(J1, reqs(['DEFAULT', 1], ['GPU', 1], ['UNKNOWN', 1]));
    expect(show(t.getMissingResources().get(J1))).to.deep.equal([['GPU', 1]]);
  });

  it('takes a lost resource from excess first, then from a fulfilled requirement', () => {
    const t = new DefaultResourceTracker();
    t.notifyResourceRequirements(J1, reqs(['DEFAULT', 1]));
    acquire(t, J1, 'DEFAULT', 'DEFAULT');
    t.notifyLostResource(J1, P.DEFAULT);
    expect(t.getMissingResources().size).to.equal(0);
    t.notifyLostResource(J1, P.DEFAULT);
    expect(show(t.getMissingResources().get(J1))).to.deep.equal([['DEFAULT', 1]]);
  });

  it('refills the gap a lost resource leaves with matching excess', () => {
    const t = new DefaultResourceTracker();
    t.notifyResourceRequirements(J1, reqs(['UNKNOWN', 2]));
    acquire(t, J1, 'DEFAULT', 'DEFAULT', 'SMALL');
    t.notifyLostResource(J1, P.DEFAULT);
    expect(t.getMissingResources().size).to.equal(0);
    expect(show(t.getAcquiredResources(J1))).to.deep.equal([
      ['DEFAULT', 1],
      ['SMALL', 1],
    ]);
  });

  it('keeps a job whose requirements were cleared while it holds resources, and drops it with the last one', () => {
    const t = new DefaultResourceTracker();
    t.notifyResourceRequirements(J1, reqs(['DEFAULT', 2]));
    acquire(t, J1, 'DEFAULT', 'DEFAULT');
    t.notifyResourceRequirements(J1, []);
    expect([t.jobs(), t.isRequirementEmpty(J1), t.getMissingResources().size]).to.deep.equal([[J1], true, 0]);
    t.notifyLostResource(J1, P.DEFAULT);
    expect(t.jobs()).to.deep.equal([J1]);
    t.notifyLostResource(J1, P.DEFAULT);
    expect([t.jobs(), t.isEmpty(), t.isRequirementEmpty(J1), t.getAcquiredResources(J1)]).to.deep.equal([
      [],
      true,
      true,
      [],
    ]);
  });

  it('tracks resources of a job that declared nothing as excess, and forgets an empty or all-zero declaration', () => {
    const t = new DefaultResourceTracker();
    t.notifyResourceRequirements(J1, []);
    t.notifyResourceRequirements(J3, [{ resourceProfile: P.DEFAULT, numberOfRequiredSlots: 0 }]); // Flink would keep J3
    expect(t.isEmpty()).to.equal(true);
    acquire(t, J2, 'GPU');
    expect([t.jobs(), show(t.getAcquiredResources(J2)), t.getMissingResources().size]).to.deep.equal([
      [J2],
      [['GPU', 1]],
      0,
    ]);
  });

  it('lists only jobs still missing something, in the order they were first tracked', () => {
    const t = new DefaultResourceTracker();
    for (const j of [J3, J1, J2]) t.notifyResourceRequirements(j, reqs(['DEFAULT', 1]));
    acquire(t, J1, 'DEFAULT');
    expect([...t.getMissingResources().keys()]).to.deep.equal([J3, J2]);
    t.notifyResourceRequirements(J3, []);
    t.notifyResourceRequirements(J3, reqs(['GPU', 1]));
    expect([...t.getMissingResources().keys()]).to.deep.equal([J2, J3]);
  });

  it('refuses to lose a profile a tracked job never acquired (IllegalStateError) and ignores an untracked job', () => {
    const t = new DefaultResourceTracker();
    t.notifyResourceRequirements(J1, reqs(['UNKNOWN', 1]));
    acquire(t, J1, 'DEFAULT');
    const before = state(t);
    expect(() => t.notifyLostResource(J1, P.SMALL)).to.throw(IllegalStateError, /holds no such resource/);
    expect(() => t.notifyLostResource(J2, P.SMALL)).not.to.throw();
    expect(state(t)).to.equal(before);
    t.clear(); // as at shutdown: the losses that follow are ignored
    expect(() => t.notifyLostResource(J1, P.DEFAULT)).not.to.throw();
    expect(t.isEmpty()).to.equal(true);
  });

  it('refuses bad input with IllegalArgumentError naming the argument, and changes nothing', () => {
    const t = new DefaultResourceTracker();
    t.notifyResourceRequirements(J1, reqs(['DEFAULT', 1]));
    const before = state(t);
    const bad: Array<[() => unknown, RegExp]> = [
      [() => t.notifyResourceRequirements('job-1' as JobID, []), /jobId/],
      [
        () => t.notifyResourceRequirements(J2, [{ resourceProfile: P.DEFAULT, numberOfRequiredSlots: -1 }]),
        /requirements\[0\]\.numberOfRequiredSlots/,
      ],
      [
        () => t.notifyResourceRequirements(J2, [{ resourceProfile: 'x' as never, numberOfRequiredSlots: 1 }]),
        /requirements\[0\]\.resourceProfile/,
      ],
      [() => t.notifyResourceRequirements(J2, null as never), /requirements must be an array/],
      [() => t.notifyAcquiredResource(J2, {} as ResourceProfile), /resourceProfile must be a ResourceProfile/],
      [() => t.notifyAcquiredResource(J2, P.UNKNOWN), /not UNKNOWN/],
      [() => t.notifyLostResource(J1, P.UNKNOWN), /not UNKNOWN/],
      [() => t.getAcquiredResources(undefined as never), /jobId/],
    ];
    for (const [call, message] of bad) expect(call).to.throw(IllegalArgumentError, message);
    expect(state(t)).to.equal(before);
  });

  it('gives the same answers, in the same order, for the same sequence', () => {
    const run = () => {
      const t = new DefaultResourceTracker();
      t.notifyResourceRequirements(J2, reqs(['UNKNOWN', 3], ['GPU', 1]));
      t.notifyResourceRequirements(J1, reqs(['SMALL', 1], ['UNKNOWN', 2]));
      acquire(t, J2, 'SMALL', 'DEFAULT', 'GPU', 'GPU');
      acquire(t, J1, 'DEFAULT', 'SMALL', 'SMALL');
      t.notifyResourceRequirements(J2, reqs(['GPU', 1], ['UNKNOWN', 1]));
      t.notifyLostResource(J1, P.SMALL);
      return JSON.stringify([
        [...t.getMissingResources()].map(([j, l]) => [j, show(l)]),
        t.jobs().map((j) => show(t.getAcquiredResources(j))),
      ]);
    };
    expect(run()).to.equal(run());
  });
});

describe('DefaultResourceTracker.notifyAcquiredResources', () => {
  const names = fc.constantFrom<Name>('DEFAULT', 'SMALL', 'GPU');
  /** Everything observable of a job (the losses in between show that the mappings behind it agree too). */
  const view = (t: DefaultResourceTracker, job: JobID) =>
    JSON.stringify([
      show(t.getRequiredResources(job)),
      show(t.getAcquiredResources(job)),
      show(t.getMissingResources().get(job)),
    ]);

  it('does what as many notifyAcquiredResource calls do: requirements filled a run at a time, the rest excess', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(fc.constantFrom<Name>('UNKNOWN', 'DEFAULT', 'SMALL', 'GPU'), fc.integer({ min: 1, max: 5 })),
          { maxLength: 4 },
        ),
        fc.array(fc.tuple(names, fc.integer({ min: 1, max: 7 }), fc.boolean()), { minLength: 1, maxLength: 8 }),
        (declared, batches) => {
          const one = new DefaultResourceTracker();
          const many = new DefaultResourceTracker();
          for (const t of [one, many]) t.notifyResourceRequirements(J1, reqs(...declared));
          for (const [name, count, lose] of batches) {
            for (let i = 0; i < count; i++) one.notifyAcquiredResource(J1, P[name]);
            many.notifyAcquiredResources(J1, P[name], count);
            expect(view(many, J1)).to.equal(view(one, J1));
            if (lose) for (const t of [one, many]) t.notifyLostResource(J1, P[name]);
            expect(view(many, J1)).to.equal(view(one, J1));
          }
        },
      ),
      { seed: 0x5107b1, numRuns: 200 },
    );
  });

  it('refuses a count that is not a positive safe integer, and UNKNOWN, changing nothing', () => {
    const t = new DefaultResourceTracker();
    t.notifyResourceRequirements(J1, reqs(['DEFAULT', 2]));
    const before = state(t);
    expect(() => t.notifyAcquiredResources(J1, P.DEFAULT, 0)).to.throw(
      IllegalArgumentError,
      /count must be a positive safe integer/,
    );
    expect(() => t.notifyAcquiredResources(J1, P.DEFAULT, 1.5)).to.throw(IllegalArgumentError);
    expect(() => t.notifyAcquiredResources(J1, P.UNKNOWN, 1)).to.throw(IllegalArgumentError);
    expect(state(t)).to.equal(before);
  });
});

describe('JobScopedResourceTracker', () => {
  it(
    'matches an exactly equal requirement before an earlier UNKNOWN ' +
      'one, ANY to the first with room, and nothing without room',
    () => {
      const requirements = ResourceCounter.fromEntries([
        [P.UNKNOWN, 1],
        [P.DEFAULT, 1],
      ]);
      const none = () => 0;
      expect(nameOf(matchRequirement(P.DEFAULT, requirements, none)!)).to.equal('DEFAULT');
      expect(nameOf(matchRequirement(P.SMALL, requirements, none)!)).to.equal('UNKNOWN');
      expect(nameOf(matchRequirement(ResourceProfile.ANY, requirements, none)!)).to.equal('UNKNOWN');
      expect(matchRequirement(P.SMALL, requirements, (r) => (r.isUnknown() ? 1 : 0))).to.equal(undefined);
      expect(nameOf(matchRequirement(P.DEFAULT, requirements, (r) => (r.isUnknown() ? 0 : 1))!)).to.equal('UNKNOWN');
    },
  );

  it('moves exactly the surplus of a requirement fulfilled by two profiles to excess, first-assigned first', () => {
    const t = new JobScopedResourceTracker(J1);
    t.notifyResourceRequirements(reqs(['UNKNOWN', 2]));
    t.notifyAcquiredResource(P.DEFAULT);
    t.notifyAcquiredResource(P.SMALL);
    // Flink adds a zero-count move here and then trips its own `decrement > 0` precondition.
    t.notifyResourceRequirements(reqs(['UNKNOWN', 1]));
    expect(counter(t.getExcessResources())).to.deep.equal([['DEFAULT', 1]]);
    expect(counter(t.getResourcesFulfilling(P.UNKNOWN))).to.deep.equal([['SMALL', 1]]);
  });

  it('takes a lost resource from the first requirement it fulfils, then lets excess fill the gap', () => {
    const t = new JobScopedResourceTracker(J1);
    t.notifyResourceRequirements(reqs(['UNKNOWN', 1]));
    t.notifyAcquiredResource(P.DEFAULT);
    t.notifyResourceRequirements(reqs(['UNKNOWN', 1], ['DEFAULT', 1]));
    t.notifyAcquiredResource(P.DEFAULT);
    t.notifyAcquiredResource(P.SMALL);
    expect(counter(t.getExcessResources())).to.deep.equal([['SMALL', 1]]);
    t.notifyLostResource(P.DEFAULT);
    expect(counter(t.getResourcesFulfilling(P.UNKNOWN))).to.deep.equal([['SMALL', 1]]);
    expect(counter(t.getResourcesFulfilling(P.DEFAULT))).to.deep.equal([['DEFAULT', 1]]);
    expect([t.getExcessResources().isEmpty(), t.getMissingResources()]).to.deep.equal([true, []]);
  });

  it('refuses a jobId that is not a JobID', () => {
    expect(() => new JobScopedResourceTracker('nope' as JobID)).to.throw(IllegalArgumentError, /jobId/);
  });
});

describe('ResourceRequirement / ResourceRequirements', () => {
  it('builds frozen requirements and refuses a count below 1 or a non-profile', () => {
    const r = ResourceRequirement.create(P.DEFAULT, 2);
    expect([Object.isFrozen(r), ResourceRequirement.toString(r)]).to.deep.equal([
      true,
      `ResourceRequirement{resourceProfile=${P.DEFAULT}, numberOfRequiredSlots=2}`,
    ]);
    expect(() => ResourceRequirement.create(P.DEFAULT, 0)).to.throw(IllegalArgumentError, /positive safe integer/);
    expect(() => ResourceRequirement.create(null as never, 1)).to.throw(IllegalArgumentError, /resourceProfile/);
  });

  it('sums a profile declared twice at its first place, and checks job, address and entries', () => {
    const d = ResourceRequirements.create(J1, 'jobmaster-1', [
      ...reqs(['UNKNOWN', 1], ['DEFAULT', 2]),
      ResourceRequirement.create(ResourceProfile.UNKNOWN, 3),
    ]);
    expect([show(d.resourceRequirements), Object.isFrozen(d.resourceRequirements)]).to.deep.equal([
      [
        ['UNKNOWN', 4],
        ['DEFAULT', 2],
      ],
      true,
    ]);
    expect(ResourceRequirements.empty(J1, 'jm').resourceRequirements).to.deep.equal([]);
    expect(() => ResourceRequirements.create('x' as JobID, 'jm', [])).to.throw(IllegalArgumentError, /jobId/);
    expect(() => ResourceRequirements.create(J1, '', [])).to.throw(IllegalArgumentError, /targetAddress/);
    expect(() =>
      ResourceRequirements.create(J1, 'jm', [{ resourceProfile: P.GPU, numberOfRequiredSlots: 0 }]),
    ).to.throw(IllegalArgumentError, /resourceRequirements\[0\]/);
  });
});

describe('DefaultResourceTracker, property-based', () => {
  const JOBS = [J1, J2] as const;
  const ACQUIRABLE = ['DEFAULT', 'SMALL', 'GPU'] as const;
  const job = fc.integer({ min: 0, max: 1 });
  const entry = fc.tuple(fc.constantFrom(...(Object.keys(P) as Name[])), fc.integer({ min: 0, max: 2 }));
  // Weighted towards acquire / lose: the interesting cases are losses beside excess.
  const op = fc.oneof(
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('declare' as const), job, list: fc.array(entry, { maxLength: 2 }) }),
    },
    {
      weight: 3,
      arbitrary: fc.record({ kind: fc.constant('acquire' as const), job, name: fc.constantFrom(...ACQUIRABLE) }),
    },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('lose' as const), job, pick: fc.nat() }) },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('loseUnheld' as const), job, name: fc.constantFrom(...ACQUIRABLE) }),
    },
  );

  it(
    'keeps acquired = acquired − lost and 0 ≤ missing = ' + 'required − fulfilled, assigning only matching resources',
    () => {
      fc.assert(
        fc.property(fc.array(op, { maxLength: 24 }), (ops) => {
          const tracker = new DefaultResourceTracker();
          // A mirror per job: the tracker must answer exactly as a lone JobScopedResourceTracker would.
          const mirrors = JOBS.map((j) => new JobScopedResourceTracker(j));
          const held = JOBS.map(() => new Map<Name, number>());
          for (const step of ops) {
            const [jobId, mirror, holds] = [JOBS[step.job]!, mirrors[step.job]!, held[step.job]!];
            if (step.kind === 'declare') {
              const list = step.list.map(([n, count]) => ({ resourceProfile: P[n], numberOfRequiredSlots: count }));
              tracker.notifyResourceRequirements(jobId, list);
              mirror.notifyResourceRequirements(list);
            } else if (step.kind === 'acquire') {
              tracker.notifyAcquiredResource(jobId, P[step.name]);
              mirror.notifyAcquiredResource(P[step.name]);
              holds.set(step.name, (holds.get(step.name) ?? 0) + 1);
            } else if (step.kind === 'lose') {
              const name = [...holds.keys()][step.pick % Math.max(1, holds.size)];
              if (name === undefined) continue; // holds nothing yet
              tracker.notifyLostResource(jobId, P[name]);
              mirror.notifyLostResource(P[name]);
              if (holds.get(name) === 1) holds.delete(name);
              else holds.set(name, holds.get(name)! - 1);
            } else if (!holds.has(step.name)) {
              const before = state(tracker);
              if (tracker.jobs().includes(jobId))
                expect(() => tracker.notifyLostResource(jobId, P[step.name])).to.throw(IllegalStateError);
              else tracker.notifyLostResource(jobId, P[step.name]);
              expect(state(tracker)).to.equal(before);
            }
            JOBS.forEach((j, i) => checkJob(tracker, j, mirrors[i]!, held[i]!));
          }
        }),
        { numRuns: 1000 },
      );
    },
  );

  function checkJob(
    tracker: DefaultResourceTracker,
    jobId: JobID,
    mirror: JobScopedResourceTracker,
    holds: Map<Name, number>,
  ) {
    const acquired = show(tracker.getAcquiredResources(jobId))!;
    expect(Object.fromEntries(acquired)).to.deep.equal(Object.fromEntries(holds));
    expect(acquired).to.deep.equal(show(mirror.getAcquiredResources()));
    expect(show(tracker.getMissingResources().get(jobId)) ?? []).to.deep.equal(show(mirror.getMissingResources()));
    expect(tracker.jobs().includes(jobId)).to.equal(!mirror.isEmpty());
    const missing = new Map(mirror.getMissingResources().map((r) => [r.resourceProfile.key, r.numberOfRequiredSlots]));
    let assigned = 0;
    for (const { resourceProfile: req, numberOfRequiredSlots: required } of mirror.getRequiredResources()) {
      const fulfilling = mirror.getResourcesFulfilling(req);
      const fulfilled = fulfilling.getTotalResourceCount();
      assigned += fulfilled;
      expect(fulfilled).to.be.at.most(required);
      expect(missing.get(req.key) ?? 0).to.equal(required - fulfilled);
      for (const res of fulfilling.getResources()) expect(res.isMatching(req), `${res} fulfils ${req}`).to.equal(true);
      // Greedy: no excess resource is left beside a gap it could fill.
      if (fulfilled < required)
        for (const res of mirror.getExcessResources().getResources()) expect(res.isMatching(req)).to.equal(false);
    }
    expect(assigned + mirror.getExcessResources().getTotalResourceCount()).to.equal(
      [...holds.values()].reduce((a, b) => a + b, 0),
    );
  }
});
