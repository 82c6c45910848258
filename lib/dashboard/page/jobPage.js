// The job page (Flink's, on one screen): each job a box, open while it runs and collapsed once it ended,
// with its times, its graph (jobGraph.js), every subtask's attempts with the TaskExecutor and slot they
// ran in, a log panel per subtask (the records a session cluster forwards, read every second while
// open), its exceptions, and a Cancel button while it runs.

const search = new URL(import.meta.url).search; // the page's token: every asset is asked for with it
const { $, ENDED, badge, durationText, h, headerRow, query, short, timeOf, token } = await import(`./dom.js${search}`);
const { renderGraph, vertexState } = await import(`./jobGraph.js${search}`);

const canceling = new Set();
async function cancel(jobId, button) {
  button.disabled = true;
  button.textContent = 'canceling…';
  canceling.add(jobId);
  const response = await fetch(`/dashboard/jobs/${encodeURIComponent(jobId)}/cancel${query}`, { method: 'POST' });
  if (!response.ok) {
    canceling.delete(jobId);
    button.disabled = false;
    button.textContent = `cancel failed (${response.status})`;
  }
}

/** Jobs the user opened or closed against the default (running ones open, ended ones collapsed), by JobID. */
const jobOpen = new Map();
/** Slot numbers of allocations seen in the TaskExecutors' tables, kept after the slot went back. */
const slotNumbers = new Map();

/** The last jobs shown, for a re-render the page itself asks for (a log panel opened or closed). */
let shown = { jobs: [], slotsByAllocation: new Map() };

export function renderJobs(jobs, slotsByAllocation) {
  shown = { jobs, slotsByAllocation };
  for (const [allocationId, { slot }] of slotsByAllocation) slotNumbers.set(allocationId, slot.slot);
  if (jobs.length === 0) return $('jobs').replaceChildren(h('p', { class: 'empty' }, 'No job yet.'));
  $('jobs').replaceChildren(...jobs.map(renderJob));
}

function renderJob(job) {
  const running = !ENDED.includes(job.status);
  const open = jobOpen.has(job.jobId) ? jobOpen.get(job.jobId) : running;
  const states = Object.entries(job.subtasksByState)
    .map(([state, n]) => `${n} ${state}`)
    .join(', ');
  const button = running
    ? h(
        'button',
        {
          'data-testid': 'cancel-job',
          disabled: canceling.has(job.jobId),
          onclick: (event) => {
            event.preventDefault(); // inside the summary: no toggle
            cancel(job.jobId, event.currentTarget);
          },
        },
        canceling.has(job.jobId) ? 'canceling…' : 'Cancel',
      )
    : null;
  return h(
    'details',
    {
      class: 'box job',
      open,
      'data-testid': 'job',
      'data-job-id': job.jobId,
      'data-status': job.status,
      ontoggle: (event) => {
        // Only a choice against the default is kept: a running job the user left alone collapses when it ends.
        if (event.currentTarget.open === running) jobOpen.delete(job.jobId);
        else jobOpen.set(job.jobId, event.currentTarget.open);
      },
    },
    h(
      'summary',
      { 'data-testid': 'job-summary' },
      h('span', { class: 'job-title', 'data-testid': 'job-name' }, job.name),
      badge(job.status, 'job-status'),
      h('span', { class: 'meta mono' }, job.jobId),
      h('span', { class: 'meta', 'data-testid': 'job-times' }, timesText(job.startTime, job.endTime)),
      button,
    ),
    h('div', { class: 'meta' }, `restarts ${job.restarts} · subtasks: ${states}`),
    renderGraph(job),
    renderExceptions(job),
    renderSubtasks(job),
  );
}

// ------------------------------------------------------------------ times

/** A duration that grows while it runs: the ticker below keeps `data-since` elements current. */
function durationOf(start, end) {
  if (start < 0) return h('span', { class: 'meta' }, '—');
  if (end >= 0) return h('span', {}, durationText(end - start));
  return h('span', { 'data-since': start }, durationText(Date.now() - start));
}
/** `10:02:03 → 10:02:07 · 4.0 s`, or `since 10:02:03 · 1.2 s` (growing) while it runs. */
function timesText(start, end) {
  if (start < 0) return '';
  return [end >= 0 ? `${timeOf(start)} → ${timeOf(end)} · ` : `since ${timeOf(start)} · `, durationOf(start, end)];
}
setInterval(() => {
  for (const node of document.querySelectorAll('[data-since]'))
    node.textContent = durationText(Date.now() - Number(node.dataset.since));
}, 1_000);

// ------------------------------------------------------------------ vertices and subtasks

/** Random hex IDs (AllocationIDs, JobIDs) cut to 8 characters, the whole one in the tooltip; readable ones whole. */
function idText(id, testid) {
  if (!id) return h('span', { class: 'meta' }, '—');
  const hex = /^[0-9a-f]{16,}$/.test(id);
  return h('span', { class: 'mono', title: id, 'data-testid': testid }, hex ? id.slice(0, 8) : id);
}

function slotText(attempt) {
  if (!attempt.allocationId) return h('span', { class: 'meta' }, '—');
  const number = slotNumbers.get(attempt.allocationId);
  return h(
    'span',
    { class: 'mono', title: `AllocationID ${attempt.allocationId}`, 'data-testid': 'subtask-slot' },
    number === undefined ? attempt.allocationId.slice(0, 8) : `slot ${number} · ${attempt.allocationId.slice(0, 8)}`,
  );
}

function renderSubtasks(job) {
  const head = headerRow('subtask', 'attempt', 'state', 'TaskExecutor', 'slot', 'start', 'end', 'duration', 'logs');
  const rows = job.vertices.flatMap((vertex) => [
    h(
      'tr',
      { class: 'vertex-row', 'data-testid': 'vertex', 'data-vertex': vertex.id },
      h(
        'td',
        { colspan: 5 },
        h('strong', {}, vertex.id),
        h(
          'span',
          { class: 'meta', ...(vertex.parallelismReason ? { title: vertex.parallelismReason } : {}) },
          ` · parallelism ${vertex.parallelism ?? 'decided when its inputs are done'}` +
            `${vertex.parallelismReason ? ' (adaptive)' : ''} · ${vertex.resources}`,
        ),
        ...(vertex.parallelismReason
          ? [h('div', { class: 'meta', 'data-testid': 'parallelism-reason' }, vertex.parallelismReason)]
          : []),
        ' ',
        badge(vertexState(vertex.subtasks)),
      ),
      h('td', { class: 'meta' }, vertex.startTime < 0 ? '—' : timeOf(vertex.startTime)),
      h('td', { class: 'meta' }, vertex.endTime < 0 ? '—' : timeOf(vertex.endTime)),
      h('td', {}, durationOf(vertex.startTime, vertex.endTime)),
      h('td', {}),
    ),
    ...vertex.subtasks.flatMap((subtask) => {
      const key = `${job.jobId}/${vertex.id}/${subtask.index}`;
      const panel = logPanels.get(key);
      return [
        attemptRow(subtask, `${vertex.id} #${subtask.index}`, {
          class: 'subtask',
          'data-testid': 'subtask',
          'data-vertex': vertex.id,
          'data-index': subtask.index,
          'data-state': subtask.state,
          'data-resource-id': subtask.resourceId ?? '',
          'data-allocation-id': subtask.allocationId ?? '',
          logs: h(
            'button',
            {
              class: 'quiet',
              'data-testid': 'subtask-logs-toggle',
              onclick: () => toggleLogs(key, job.jobId, vertex.id, subtask.index),
            },
            panel ? 'hide' : 'logs',
          ),
        }),
        // Its speculative attempts running beside it, then its ended attempts, newest first, under it.
        ...subtask.concurrentAttempts.map((attempt) =>
          attemptRow(attempt, '', { class: 'speculative', 'data-testid': 'speculative-attempt' }),
        ),
        ...[...subtask.priorAttempts].reverse().map((attempt) =>
          attemptRow(attempt, '', {
            class: attempt.speculative ? 'prior speculative-prior' : 'prior',
            'data-testid': 'prior-attempt',
          }),
        ),
        panel ? logRow(key, panel) : null,
      ];
    }),
  ]);
  return h('table', { class: 'subtask-table' }, head, ...rows);
}

function attemptRow(attempt, label, { logs = null, ...attributes }) {
  return h(
    'tr',
    attributes,
    h('td', {}, label),
    h('td', {}, `#${attempt.attempt}`),
    h('td', {}, badge(attempt.state)),
    h('td', {}, idText(attempt.resourceId, 'subtask-executor')),
    h('td', {}, slotText(attempt)),
    h('td', { class: 'meta' }, attempt.startTime < 0 ? '—' : timeOf(attempt.startTime)),
    h('td', { class: 'meta' }, attempt.endTime < 0 ? '—' : timeOf(attempt.endTime)),
    h('td', {}, durationOf(attempt.startTime, attempt.endTime)),
    h('td', {}, logs),
  );
}

// ------------------------------------------------------------------ log panels

/** Open log panels by `jobId/vertex/index`: the records read so far, where to read on, or why there are none. */
const logPanels = new Map();
const LOG_LINES_SHOWN = 500;

function toggleLogs(key, jobId, vertex, index) {
  const panel = logPanels.get(key);
  if (panel) {
    clearTimeout(panel.timer);
    logPanels.delete(key);
  } else {
    logPanels.set(key, { jobId, vertex, index, records: [], next: 0, message: 'loading…', timer: null });
    void readLogs(key);
  }
  renderJobs(shown.jobs, shown.slotsByAllocation);
}

/** Reads what came since the last read, then again in a second while the panel is open. */
async function readLogs(key) {
  const panel = logPanels.get(key);
  if (!panel) return;
  const path =
    `/dashboard/jobs/${encodeURIComponent(panel.jobId)}/logs?vertex=${encodeURIComponent(panel.vertex)}` +
    `&subtask=${panel.index}&from=${panel.next}${token === '' ? '' : `&token=${encodeURIComponent(token)}`}`;
  let again = true;
  try {
    const response = await fetch(path);
    if (!response.ok) {
      // A JSON answer says why (no task logs kept, an unknown job); a refusal (403) is text.
      const text = await response.text();
      let message = text.trim();
      try {
        message = JSON.parse(text).message ?? message;
      } catch {}
      panel.message = `${message || 'the logs could not be read'} (${response.status})`;
      again = response.status >= 500;
    } else {
      const body = await response.json();
      panel.records.push(...body.records);
      if (panel.records.length > LOG_LINES_SHOWN) panel.records.splice(0, panel.records.length - LOG_LINES_SHOWN);
      panel.next = body.next;
      panel.message = panel.records.length === 0 ? 'nothing logged yet' : null;
    }
  } catch (error) {
    panel.message = `the logs could not be read: ${error.message}`;
  }
  if (logPanels.get(key) !== panel) return;
  const pre = document.querySelector(`[data-log-key="${CSS.escape(key)}"]`);
  if (pre) pre.replaceWith(logBody(key, panel));
  if (again) panel.timer = setTimeout(() => readLogs(key), 1_000);
}

function logRow(key, panel) {
  return h('tr', { class: 'logs' }, h('td', { colspan: 9 }, logBody(key, panel)));
}

function logBody(key, panel) {
  const lines = panel.records.map((r) => {
    const attempt = r.attemptNumber ? ` #${r.attemptNumber}` : '';
    return `${new Date(r.time).toLocaleTimeString()} ${r.level.toUpperCase()}${attempt} ${r.message}`;
  });
  return h(
    'pre',
    { class: 'log-panel', 'data-testid': 'subtask-logs', 'data-log-key': key },
    panel.message === null ? lines.join('\n') : [...lines, panel.message].join('\n'),
  );
}

// ------------------------------------------------------------------ exceptions

/** Stack traces the user opened, by job and entry, so that a re-render keeps them open. */
const openStacks = new Set();
const firstLines = (text, n) => text.split('\n').slice(0, n).join('\n');
/** A job's failures (Flink's Exceptions tab): the root cause with its stack, then every failure, newest first. */
function renderExceptions(job) {
  const history = job.exceptions;
  if (!history || history.rootCause === null) return null;
  const root = history.rootCause;
  const entry = (e, concurrent) => {
    const key = `${job.jobId}:${e.timestamp}:${e.taskName ?? ''}`;
    const where = e.resourceId ? `${e.resourceId} / ${short(e.allocationId)}` : '—';
    return h(
      'tr',
      { 'data-testid': 'exception', class: concurrent ? 'concurrent' : null },
      h('td', { class: 'meta' }, timeOf(e.timestamp)),
      h('td', { 'data-testid': 'exception-task' }, e.taskName ?? '(the job)'),
      h('td', { class: 'meta mono' }, where),
      h(
        'td',
        {},
        h(
          'details',
          {
            open: openStacks.has(key),
            ontoggle: (event) => (event.currentTarget.open ? openStacks.add(key) : openStacks.delete(key)),
          },
          h('summary', { 'data-testid': 'exception-name' }, `${e.exceptionName}: ${e.message}`),
          h('pre', { class: 'stack' }, e.stacktrace),
        ),
      ),
    );
  };
  return h(
    'div',
    { class: 'exceptions', 'data-testid': 'exceptions' },
    h('h4', {}, 'Exceptions'),
    h(
      'div',
      { class: 'root-cause', 'data-testid': 'root-cause' },
      h('strong', {}, `${root.exceptionName}: ${root.message}`),
      h('span', { class: 'meta' }, ` · ${root.taskName ?? 'the job'} · ${timeOf(root.timestamp)}`),
      h('pre', { class: 'stack' }, firstLines(root.stacktrace, 6)),
    ),
    h(
      'table',
      {},
      headerRow('time', 'task', 'TaskExecutor / slot', 'exception'),
      ...history.entries.flatMap((root) => [entry(root, false), ...root.concurrent.map((c) => entry(c, true))]),
    ),
    history.truncated ? h('p', { class: 'meta' }, 'older failures dropped (web.exception-history-size)') : null,
  );
}
