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

/**
 * A group as the builder keeps it while it groups: no member lists (a job of 100,000 subtasks makes tens of thousands
 * of groups, and lists grown one member per job vertex were most of what grouping allocated). What it asks of a group
 * is whether a subtask of the job vertex being grouped joined it, and whether its profile can still change.
 */
interface GroupBuilder {
  readonly id: string;
  readonly slotSharingGroup: string;
  /** The last job vertex a subtask of which joined it: the vertex grouped now, or one before (they come in order). */
  lastVertex: string | null;
  /** Its members' profiles merged so far (Flink's getPhysicalSlotResourceProfile without a configured one). */
  sum: ResourceProfile;
  /** The group as the allocator sees it, once the strategy made it. */
  group: ExecutionSlotSharingGroup | null;
  /** Members placed but not yet in `group.members` (the strategy adds them in one copy). */
  joined: number;
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
   * vertex is grouped: a job of 100,000 subtasks would otherwise keep a GroupBuilder per group for nothing.
   */
  #builder: GroupsBuilder | null;

  constructor(graph: ExecutionGraph) {
    this.#graph = graph;
    this.#builder = new GroupsBuilder(graph);
    this.#add(
      graph.jobGraph.vertices.filter((v) => graph.isInitialized(v.id)).map((v) => v.id),
      false,
    );
    this.#doneBuilding();
  }

  /**
   * Groups the subtasks of a vertex the adaptive scheduler initialized after the others were grouped. They join a
   * group that exists only where its slot's profile stays what it was (its slot sharing group's configured profile,
   * or UNKNOWN): a SharedSlot may have asked for it already.
   */
  addJobVertex(vertexId: string): void {
    this.#add([vertexId], true);
    this.#doneBuilding();
  }

  #doneBuilding(): void {
    if (this.#graph.uninitialized().length === 0) this.#builder = null;
  }

  /**
   * Groups the vertices' subtasks (topological order), then gives each group it touched one members list of its new
   * size: a list copied per vertex, or grown by push (room for ~17), was most of what a large job's grouping allocated.
   */
  #add(vertexIds: readonly string[], late: boolean): void {
    const builder = this.#builder;
    if (builder === null)
      throw new IllegalStateError(`every vertex of the job is grouped already, '${vertexIds[0]}' too`, {
        component: 'LocalInputPreferredSlotSharingStrategy',
        operation: 'addJobVertex',
        state: 'grouped',
        allowed: ['grouping'],
      });
    const configured = this.#graph.jobGraph.slotSharingGroups;
    const placements: (readonly GroupBuilder[])[] = [];
    const touched: GroupBuilder[] = [];
    for (const vertexId of vertexIds) {
      const placed = builder.add(this.#graph.jobGraph.vertex(vertexId), late);
      placements.push(placed);
      const byIndex = new Array<ExecutionSlotSharingGroup | undefined>(placed.length);
      this.#byVertex.set(vertexId, byIndex);
      for (let i = 0; i < placed.length; i++) {
        const g = placed[i]!;
        let group = g.group;
        const created = group === null;
        if (group === null) {
          group = {
            id: g.id,
            slotSharingGroup: g.slotSharingGroup,
            members: NO_MEMBERS,
            resourceProfile: configured.get(g.slotSharingGroup) ?? ResourceProfile.UNKNOWN,
          };
          g.group = group;
          this.#groups.push(group);
        }
        // A group joined late keeps its profile (see addJobVertex); one made now is the sum of its members'.
        if (!configured.has(g.slotSharingGroup) && (!late || created))
          (group as { resourceProfile: ResourceProfile }).resourceProfile = g.sum;
        if (g.joined++ === 0) touched.push(g);
        byIndex[i] = group;
      }
    }
    for (const g of touched) {
      const members = g.group!.members;
      const grown = new Array<ExecutionVertexID>(members.length + g.joined);
      for (let i = 0; i < members.length; i++) grown[i] = members[i]!;
      (g.group as { members: readonly ExecutionVertexID[] }).members = grown;
    }
    // Filled vertex by vertex: a group's members in the order they joined.
    for (let v = 0; v < placements.length; v++) {
      const placed = placements[v]!;
      const subtasks = this.#graph.subtasksOf(vertexIds[v]!);
      for (let i = 0; i < placed.length; i++) {
        const g = placed[i]!;
        const members = g.group!.members as ExecutionVertexID[];
        members[members.length - g.joined--] = subtasks[i]!.id;
      }
    }
  }

  getExecutionSlotSharingGroup(id: ExecutionVertexID): ExecutionSlotSharingGroup | undefined {
    return this.#byVertex.get(id.vertexId)?.[id.subtaskIndex];
  }

  getExecutionSlotSharingGroups(): readonly ExecutionSlotSharingGroup[] {
    return this.#groups;
  }
}

/** A group's members before any joined (replaced as they do). */
const NO_MEMBERS: readonly ExecutionVertexID[] = Object.freeze([]);

/** Flink's build(), one job vertex at a time (topological order): the groups so far, and their candidates. */
class GroupsBuilder {
  readonly #graph: ExecutionGraph;
  /** Per job vertex, each subtask's group by subtask index (no Map entry per subtask: 100,000 in a large job). */
  readonly #groupsOf = new Map<string, GroupBuilder[]>();
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
   * Puts the vertex's subtasks into groups; returns each subtask's group by subtask index. `late`: only groups whose
   * profile cannot change are joined (see LocalInputPreferredSlotSharingStrategy.addJobVertex).
   */
  add(jobVertex: JobVertex, late: boolean): readonly GroupBuilder[] {
    const graph = this.#graph;
    const vertexId = jobVertex.id;
    const subtasks = graph.subtasksOf(vertexId);
    // A place per subtask from the start: the passes below fill it out of subtask order.
    const placed = new Array<GroupBuilder>(subtasks.length);
    this.#groupsOf.set(vertexId, placed);
    const profile = jobVertex.resourceProfile;
    const join = (ev: ExecutionVertex, group: GroupBuilder) => {
      group.lastVertex = vertexId;
      group.sum = group.sum.merge(profile);
      placed[ev.id.subtaskIndex] = group;
    };
    // A group holds one subtask per job vertex; late, it takes one only where its profile cannot change.
    const availableTo = (group: GroupBuilder) =>
      group.lastVertex !== vertexId &&
      (!late || graph.jobGraph.slotSharingGroups.has(group.slotSharingGroup) || group.sum.isUnknown());

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
          if (availableTo(group)) return group;
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
      while (cursor < own.length && !availableTo(own[cursor]!)) cursor++;
      let group = own[cursor];
      if (group === undefined) {
        group = {
          // Joined, not a template: in V8 a template of 13 characters or more is a rope of ~4 strings.
          id: [jobVertex.slotSharingGroup, '[', own.length, ']'].join(''),
          slotSharingGroup: jobVertex.slotSharingGroup,
          lastVertex: null,
          sum: ResourceProfile.ZERO,
          group: null,
          joined: 0,
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
    return placed;
  }

  /** The group of a subtask grouped already (a producer's: its vertex comes earlier in topological order). */
  #groupOf(ev: ExecutionVertex): GroupBuilder {
    return this.#groupsOf.get(ev.jobVertex.id)![ev.id.subtaskIndex]!;
  }
}
