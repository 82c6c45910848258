/**
 * Which subtasks share a slot (Flink's SlotSharingGroup): its
 * LocalInputPreferredSlotSharingStrategy, building ExecutionSlotSharingGroups — each becomes one
 * SharedSlot, one physical slot request.
 *
 * Job vertices are walked in topological order, and each one in two passes (Flink's build()):
 * 1. every subtask tries (a) the group its co-location constraint chose already, then (b) the group
 *    of an upstream producer in the same slot sharing group that holds no subtask of this vertex;
 * 2. the subtasks left over take (c) the oldest group of their slot sharing group still free of this
 *    vertex, else (d) a new group.
 * The two passes matter: were they interleaved, subtask 1 of a 2 -> 4 pointwise edge would take in
 * (c) the group subtask 2 is about to find in (b), and subtask 2 would lose its local input.
 *
 * Candidates in (b) are kept per consumed producer block (Flink's ConsumedPartitionGroup): a
 * candidate is dropped once looked at — taken, or already holding this vertex — so an all-to-all
 * edge costs O(p), not O(p²). Everything is in declaration / creation order: deterministic.
 */
import { IllegalStateError } from '../../core/errors.js';
import { ResourceProfile } from '../../core/ResourceProfile.js';
import type { ExecutionVertexID, ExecutionGraph, ExecutionVertex } from '../ExecutionGraph.js';
import type { JobVertex } from '../JobGraph.js';

/** Subtasks that share one slot. */
export interface ExecutionSlotSharingGroup {
  /** `<slot sharing group>[<n>]`, e.g. `default[0]`: n counts the groups of that slot sharing group. */
  readonly id: string;
  /** The slot sharing group it belongs to. */
  readonly slotSharingGroup: string;
  /** Its subtasks, in the order they joined. */
  readonly members: readonly ExecutionVertexID[];
  /**
   * What its slot must offer: the slot sharing group's configured profile if it has one, else the
   * sum (merge) of its members' profiles — UNKNOWN as soon as one member is UNKNOWN (Flink's
   * getPhysicalSlotResourceProfile over ResourceProfile.merge).
   */
  readonly resourceProfile: ResourceProfile;
}

/** The read side the allocator uses. */
export interface SlotSharingStrategy {
  /** The group of a subtask; undefined for a subtask the graph does not have. */
  getExecutionSlotSharingGroup(id: ExecutionVertexID): ExecutionSlotSharingGroup | undefined;
  /** Every group, in creation order. */
  getExecutionSlotSharingGroups(): readonly ExecutionSlotSharingGroup[];
}

interface GroupBuilder {
  readonly id: string;
  readonly slotSharingGroup: string;
  members: ExecutionVertex[];
  /**
   * Job vertices with a subtask in the group: the group is no longer available to them. An array:
   * a group holds a few (one subtask per job vertex of its slot sharing group), and a job of
   * 100,000 subtasks makes tens of thousands of groups, where a Set each cost more than the rest.
   */
  jobVertices: string[];
}

export class LocalInputPreferredSlotSharingStrategy implements SlotSharingStrategy {
  readonly #graph: ExecutionGraph;
  /**
   * Per job vertex, each subtask's group by subtask index: no Map entry and key string per subtask (100,000 in a large
   * job), and no key made per look-up.
   */
  readonly #byVertex = new Map<string, Array<ExecutionSlotSharingGroup | undefined>>();
  readonly #groups: ExecutionSlotSharingGroup[] = [];
  /**
   * What grouping needs, kept while a vertex waits for its subtasks (the adaptive scheduler's) and let go once every
   * vertex is grouped: a job of 100,000 subtasks would otherwise keep a map entry per subtask and a GroupBuilder per
   * group for nothing.
   */
  #building: {
    readonly builder: GroupsBuilder;
    /** Each group as the builder keeps it -> as the allocator sees it. */
    readonly byGroup: Map<GroupBuilder, ExecutionSlotSharingGroup>;
  } | null;

  constructor(graph: ExecutionGraph) {
    this.#graph = graph;
    this.#building = { builder: new GroupsBuilder(graph), byGroup: new Map() };
    for (const jobVertex of graph.jobGraph.vertices) if (graph.isInitialized(jobVertex.id)) this.#add(jobVertex.id);
    this.#doneBuilding();
  }

  /**
   * Groups the subtasks of a vertex the adaptive scheduler initialized after the others were grouped. They join a
   * group that exists only where its slot's profile stays what it was (its slot sharing group's configured profile,
   * or UNKNOWN): a SharedSlot may have asked for it already.
   */
  addJobVertex(vertexId: string): void {
    this.#add(vertexId, true);
    this.#doneBuilding();
  }

  #doneBuilding(): void {
    if (this.#graph.uninitialized().length === 0) this.#building = null;
  }

  #add(vertexId: string, late = false): void {
    const configured = this.#graph.jobGraph.slotSharingGroups;
    const building = this.#building;
    if (building === null)
      throw new IllegalStateError(`every vertex of the job is grouped already, '${vertexId}' too`, {
        component: 'LocalInputPreferredSlotSharingStrategy',
        operation: 'addJobVertex',
        state: 'grouped',
        allowed: ['grouping'],
      });
    const jobVertex = this.#graph.jobGraph.vertex(vertexId);
    // A place per subtask from the start: the groups fill it out of subtask order.
    const subtasks = this.#graph.subtasksOf(jobVertex.id).length;
    const byIndex = Array.from({ length: subtasks }, (): ExecutionSlotSharingGroup | undefined => undefined);
    this.#byVertex.set(jobVertex.id, byIndex);
    for (const [g, joined] of building.builder.add(jobVertex, late)) {
      let group = building.byGroup.get(g);
      if (group === undefined) {
        group = {
          id: g.id,
          slotSharingGroup: g.slotSharingGroup,
          members: [],
          resourceProfile: configured.get(g.slotSharingGroup) ?? ResourceProfile.UNKNOWN,
        };
        building.byGroup.set(g, group);
        this.#groups.push(group);
      }
      // A new array of just its members (GroupsBuilder.add says why).
      (group as { members: readonly ExecutionVertexID[] }).members = group.members.concat(
        joined.map((member) => member.id),
      );
      // A group joined late keeps its profile (see addJobVertex); a new one is the sum of its members'.
      if (!configured.has(g.slotSharingGroup) && (!late || group.members.length === joined.length))
        (group as { resourceProfile: ResourceProfile }).resourceProfile = sumOf(g.members);
      for (const member of joined) byIndex[member.id.subtaskIndex] = group;
    }
  }

  getExecutionSlotSharingGroup(id: ExecutionVertexID): ExecutionSlotSharingGroup | undefined {
    return this.#byVertex.get(id.vertexId)?.[id.subtaskIndex];
  }

  getExecutionSlotSharingGroups(): readonly ExecutionSlotSharingGroup[] {
    return this.#groups;
  }
}

/** The members' profiles merged (Flink's getPhysicalSlotResourceProfile). */
function sumOf(members: readonly ExecutionVertex[]): ResourceProfile {
  let sum = ResourceProfile.ZERO;
  for (const member of members) sum = sum.merge(member.jobVertex.resourceProfile);
  return sum;
}

/** Flink's build(), one job vertex at a time (topological order): the groups so far, and their candidates. */
class GroupsBuilder {
  readonly #graph: ExecutionGraph;
  /** Per job vertex, each subtask's group by subtask index (no Map entry per subtask: 100,000 in a large job). */
  readonly #groupsOf = new Map<string, Array<GroupBuilder | undefined>>();
  /** Per slot sharing group, its groups in creation order. */
  readonly #bySharingGroup = new Map<string, GroupBuilder[]>();
  /** `<co-location group>#<subtask index>` -> the group the constraint chose. */
  readonly #byConstraint = new Map<string, GroupBuilder>();
  /** Per consumed producer block: candidate groups not yet looked at, in producer order. */
  readonly #candidates = new Map<readonly ExecutionVertex[], GroupBuilder[]>();

  constructor(graph: ExecutionGraph) {
    this.#graph = graph;
  }

  /**
   * Puts the vertex's subtasks into groups; returns the groups they joined, each with its new members. `late`: only
   * groups whose profile cannot change are joined (see LocalInputPreferredSlotSharingStrategy.addJobVertex).
   */
  add(jobVertex: JobVertex, late: boolean): Map<GroupBuilder, ExecutionVertex[]> {
    const graph = this.#graph;
    const subtasks = graph.subtasksOf(jobVertex.id);
    // A place per subtask from the start: the passes below fill it out of subtask order.
    const placed = Array.from({ length: subtasks.length }, (): GroupBuilder | undefined => undefined);
    this.#groupsOf.set(jobVertex.id, placed);
    const joinedNow = new Map<GroupBuilder, ExecutionVertex[]>();
    const fixedProfile = (group: GroupBuilder) =>
      graph.jobGraph.slotSharingGroups.has(group.slotSharingGroup) || sumOf(group.members).isUnknown();
    const join = (ev: ExecutionVertex, group: GroupBuilder) => {
      group.members.push(ev);
      group.jobVertices.push(ev.jobVertex.id);
      placed[ev.id.subtaskIndex] = group;
      const list = joinedNow.get(group);
      if (list === undefined) joinedNow.set(group, [ev]);
      else list.push(ev);
    };
    const availableTo = (group: GroupBuilder, ev: ExecutionVertex) =>
      !group.jobVertices.includes(ev.jobVertex.id) && (!late || joinedNow.has(group) || fixedProfile(group));

    const producerGroupFor = (ev: ExecutionVertex): GroupBuilder | undefined => {
      for (const input of graph.inputsOf(ev)) {
        let list = this.#candidates.get(input.producers);
        if (list === undefined) {
          const producerVertex = graph.jobGraph.vertex(input.edge.from);
          const same = producerVertex.slotSharingGroup === ev.jobVertex.slotSharingGroup;
          list = same ? [...new Set(input.producers.map((p) => this.#groupOf(p)))] : [];
          this.#candidates.set(input.producers, list);
        }
        while (list.length > 0) {
          const group = list.shift()!;
          if (availableTo(group, ev)) return group;
        }
      }
      return undefined;
    };

    const constraintKey = (ev: ExecutionVertex) => `${jobVertex.coLocationGroup}#${ev.id.subtaskIndex}`;

    // Pass 1: co-location, then a producer's group.
    const remaining: ExecutionVertex[] = [];
    for (const ev of subtasks) {
      const group =
        (jobVertex.coLocationGroup !== null ? this.#byConstraint.get(constraintKey(ev)) : undefined) ??
        producerGroupFor(ev);
      if (group === undefined) remaining.push(ev);
      else join(ev, group);
    }

    // Pass 2: the oldest group still free of this vertex, else a new one. A group passed over
    // holds this vertex already and never frees up for it again: one cursor per vertex suffices.
    const own = this.#bySharingGroup.get(jobVertex.slotSharingGroup) ?? [];
    this.#bySharingGroup.set(jobVertex.slotSharingGroup, own);
    let cursor = 0;
    for (const ev of remaining) {
      while (cursor < own.length && !availableTo(own[cursor]!, ev)) cursor++;
      let group = own[cursor];
      if (group === undefined) {
        group = {
          // Joined, not a template: in V8 a template of 13 characters or more is a rope of ~4 strings.
          id: [jobVertex.slotSharingGroup, '[', own.length, ']'].join(''),
          slotSharingGroup: jobVertex.slotSharingGroup,
          members: [],
          jobVertices: [],
        };
        own.push(group);
      }
      join(ev, group);
    }

    if (jobVertex.coLocationGroup !== null) {
      for (const ev of subtasks)
        if (!this.#byConstraint.has(constraintKey(ev)))
          this.#byConstraint.set(constraintKey(ev), placed[ev.id.subtaskIndex]!);
    }
    // An array grown by push keeps room for ~17 elements, a group holds a few (one subtask per job vertex): in a job
    // of 100,000 subtasks, tens of thousands of groups and their lists. Each list the call grew, copied to its size.
    for (const group of joinedNow.keys()) {
      group.members = group.members.slice();
      group.jobVertices = group.jobVertices.slice();
    }
    return joinedNow;
  }

  /** The group of a subtask grouped already (a producer's: its vertex comes earlier in topological order). */
  #groupOf(ev: ExecutionVertex): GroupBuilder {
    return this.#groupsOf.get(ev.jobVertex.id)![ev.id.subtaskIndex]!;
  }
}
