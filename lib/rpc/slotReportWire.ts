/** Slot reports to and from their wire form (profiles as plain JSON). */
import { ResourceProfile } from '../core/ResourceProfile.js';
import { SlotID } from '../core/ids.js';
import type { SlotReport } from '../core/SlotReport.js';
import type { SlotReportWire } from './protocol.js';

export function slotReportToWire(report: SlotReport): SlotReportWire {
  return {
    resourceId: report.resourceId,
    slots: report.slots.map((s) => ({
      slotNumber: s.slotId.slotNumber,
      resourceProfile: s.resourceProfile.toJSON(),
      allocationId: s.allocationId,
      jobId: s.jobId,
      state: s.state,
    })),
  };
}

/** Checks what arrived (a malformed profile or id throws its typed error). */
export function slotReportFromWire(wire: SlotReportWire): SlotReport {
  return {
    resourceId: wire.resourceId,
    slots: wire.slots.map((s) => ({
      slotId: SlotID.of(wire.resourceId, s.slotNumber),
      resourceProfile: ResourceProfile.fromJSON(s.resourceProfile),
      allocationId: s.allocationId,
      jobId: s.jobId,
      state: s.state,
    })),
  };
}
