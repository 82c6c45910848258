/**
 * A JobMaster's declaration as it arrives on the wire, to and from the SlotManager's
 * ResourceRequirements.
 */
import { ResourceProfile } from '../core/ResourceProfile.js';
import type { ResourceRequirementsWire } from '../rpc/protocol.js';
import { ResourceRequirement, ResourceRequirements } from './slotmanager/ResourceRequirement.js';

export function requirementsToWire(requirements: ResourceRequirements): ResourceRequirementsWire {
  return {
    jobId: requirements.jobId,
    targetAddress: requirements.targetAddress,
    requirements: requirements.resourceRequirements.map((r) => ({
      resourceProfile: r.resourceProfile.toJSON(),
      numberOfRequiredSlots: r.numberOfRequiredSlots,
    })),
  };
}

/** Checks what arrived: a malformed declaration throws the typed error of ResourceRequirements.create. */
export function requirementsFromWire(wire: ResourceRequirementsWire): ResourceRequirements {
  return ResourceRequirements.create(
    wire.jobId,
    wire.targetAddress,
    (wire.requirements ?? []).map((r) =>
      ResourceRequirement.create(ResourceProfile.fromJSON(r.resourceProfile), r.numberOfRequiredSlots),
    ),
  );
}
