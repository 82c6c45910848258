// The slotwise dashboard page: plain JavaScript, no framework, nothing loaded from outside this
// origin. It follows the server's `view` stream (Server-Sent Events) and renders the overview,
// charts (uPlot), the jobs (each as Flink's job page: its graph, times, every subtask's attempts with
// their TaskExecutor and slot, a log panel per subtask; ended jobs collapsed), TaskExecutors with
// their slot tables, pending requests and, for a chosen
// statechart actor, its state and recent events (a second stream). Every text from the cluster
// goes in through textContent: job names and task names are user input.

const token = new URLSearchParams(location.search).get('token') ?? '';
const query = token === '' ? '' : `?token=${encodeURIComponent(token)}`;
const ENDED = ['finished', 'failed', 'canceled'];

/** An element with attributes and children (strings become text nodes). */
function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat())
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  return node;
}
const badge = (state, testid) => h('span', { class: `badge ${state}`, 'data-testid': testid }, state);
/** A random hex ID (JobID, AllocationID) cut to 8 characters; readable IDs (ResourceIDs) are shown whole. */
const short = (id) => (id ? String(id).slice(0, 8) : '—');
const $ = (id) => document.getElementById(id);

// ------------------------------------------------------------------ the stream

const connection = $('connection');
const stream = new EventSource(`/dashboard/events${query}`);
stream.addEventListener('open', () => {
  connection.textContent = 'live';
  connection.className = 'connection live';
});
stream.addEventListener('error', () => {
  connection.textContent = stream.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting…';
  connection.className = 'connection lost';
});
/** The last view, for a re-render the page itself asks for (a log panel opened). */
let lastView = null;
stream.addEventListener('view', (message) => render(JSON.parse(message.data)));

function render(view) {
  lastView = view;
  const slotsByAllocation = new Map();
  for (const te of view.overview.taskExecutors)
    for (const slot of te.slots) if (slot.allocationId) slotsByAllocation.set(slot.allocationId, { te, slot });
  const jobNames = new Map(view.overview.jobs.map((job) => [job.jobId, job.name]));
  renderOverview(view.overview);
  renderCharts(view.series);
  renderJobs(view.jobs, slotsByAllocation);
  renderExecutors(view.overview.taskExecutors, jobNames);
  renderPending(view.overview.pendingRequests, jobNames);
  renderActorList(view.actors, view.jobs);
  document.body.dataset.rendered = String(Date.now());
}

// ------------------------------------------------------------------ overview

function renderOverview(overview) {
  const slots = overview.taskExecutors.flatMap((te) => te.slots);
  const count = (state) => slots.filter((slot) => slot.state === state).length;
  const jobs = overview.jobs;
  const byStatus = {};
  for (const job of jobs) byStatus[job.status] = (byStatus[job.status] ?? 0) + 1;
  const card = (label, value, testid, wide = false) =>
    h(
      'div',
      { class: wide ? 'card wide' : 'card', 'data-testid': testid },
      h('div', { class: 'label' }, label),
      h('div', { class: 'value' }, value),
    );
  $('overview').replaceChildren(
    card('TaskExecutors', overview.taskExecutors.length, 'overview-executors'),
    card('Slots total', slots.length, 'overview-slots-total'),
    card('Slots free', count('free'), 'overview-slots-free'),
    card('Slots pending', count('pending'), 'overview-slots-pending'),
    card('Slots allocated', count('allocated'), 'overview-slots-allocated'),
    card('Pending workers', overview.pendingWorkers, 'overview-pending-workers'),
    card(
      'Waiting requests',
      overview.pendingRequests.reduce((n, r) => n + r.missing, 0),
      'overview-waiting',
    ),
    card(
      'Jobs',
      Object.entries(byStatus)
        .map(([status, n]) => `${n} ${status}`)
        .join(', ') || '0',
      'overview-jobs',
      true,
    ),
  );
}

// ------------------------------------------------------------------ charts

const charts = {};
function chart(id, series, data) {
  const container = $(id);
  const width = Math.max(280, container.clientWidth - 4);
  if (charts[id] === undefined) {
    charts[id] = new uPlot(
      { width, height: 180, series: [{}, ...series], scales: { x: { time: true } }, axes: [{}, { size: 50 }] },
      data,
      container,
    );
  } else {
    if (Math.abs(charts[id].width - width) > 8) charts[id].setSize({ width, height: 180 });
    charts[id].setData(data);
  }
}
function renderCharts(series) {
  if (typeof uPlot === 'undefined' || series.time.length === 0) return;
  chart(
    'chart-slots',
    [
      { label: 'in use', stroke: '#2f6fdd', fill: 'rgba(47,111,221,.12)' },
      { label: 'total', stroke: '#9aa3ad', dash: [4, 4] },
    ],
    [series.time, series.slotsInUse, series.slotsTotal],
  );
  chart(
    'chart-latency',
    [
      { label: 'mean', stroke: '#2e9d5b', spanGaps: false, points: { show: true } },
      { label: 'max', stroke: '#d89614', spanGaps: false, points: { show: true } },
    ],
    [series.time, series.allocationLatencyMean, series.allocationLatencyMax],
  );
}

// ------------------------------------------------------------------ jobs

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

function renderJobs(jobs, slotsByAllocation) {
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

const timeOf = (ms) => new Date(ms).toLocaleTimeString();
/** `850 ms`, `12.4 s`, `3 min 5 s`, `2 h 4 min`. */
function durationText(ms) {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const s = Math.floor(ms / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3_600)} h ${Math.floor((s % 3_600) / 60)} min`;
}
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

// ------------------------------------------------------------------ job graph

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

/** A vertex's state from its subtasks' (as Flink's ExecutionJobVertex aggregates it). */
function vertexState(subtasks) {
  const has = (state) => subtasks.some((s) => s.state === state);
  for (const state of ['failed', 'canceling', 'canceled']) if (has(state)) return state;
  if (subtasks.length > 0 && subtasks.every((s) => s.state === 'finished')) return 'finished';
  for (const state of ['running', 'initializing', 'deploying', 'scheduled']) if (has(state)) return state;
  return 'created';
}

const BOX = { width: 170, height: 52, across: 70, down: 18, margin: 8 };

/**
 * The job graph, left to right in layers (a vertex one layer after its furthest producer): each vertex a box with
 * its parallelism and state, each edge an arrow labelled with its pattern.
 */
function renderGraph(job) {
  const layer = new Map();
  for (const v of job.vertices)
    layer.set(v.id, Math.max(0, ...job.edges.filter((e) => e.to === v.id).map((e) => (layer.get(e.from) ?? 0) + 1)));
  const rows = new Map();
  const place = new Map();
  for (const v of job.vertices) {
    const column = layer.get(v.id);
    const row = rows.get(column) ?? 0;
    rows.set(column, row + 1);
    place.set(v.id, {
      x: BOX.margin + column * (BOX.width + BOX.across),
      y: BOX.margin + row * (BOX.height + BOX.down),
    });
  }
  const columns = Math.max(1, ...[...layer.values()].map((c) => c + 1));
  const mostRows = Math.max(1, ...rows.values());
  const width = 2 * BOX.margin + columns * BOX.width + (columns - 1) * BOX.across;
  const height = 2 * BOX.margin + mostRows * BOX.height + (mostRows - 1) * BOX.down;
  const marker = `arrow-${job.jobId}`;
  const edges = job.edges.map((e) => {
    const from = place.get(e.from);
    const to = place.get(e.to);
    const [x1, y1, x2, y2] = [from.x + BOX.width, from.y + BOX.height / 2, to.x - 2, to.y + BOX.height / 2];
    const bend = (x2 - x1) / 2;
    return svg(
      'g',
      { class: 'edge', 'data-testid': 'graph-edge', 'data-from': e.from, 'data-to': e.to, 'data-pattern': e.pattern },
      svg('path', {
        d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`,
        'marker-end': `url(#${marker})`,
      }),
      svg('text', { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4, 'text-anchor': 'middle' }, e.pattern),
    );
  });
  const boxes = job.vertices.map((v) => {
    const { x, y } = place.get(v.id);
    const state = vertexState(v.subtasks);
    const name = v.id.length > 22 ? `${v.id.slice(0, 21)}…` : v.id;
    return svg(
      'g',
      {
        class: `vertex ${state}`,
        'data-testid': 'graph-vertex',
        'data-vertex': v.id,
        'data-parallelism': v.parallelism,
        'data-state': state,
      },
      svg('title', {}, `${v.id} · parallelism ${v.parallelism} · ${state}`),
      svg('rect', { x, y, width: BOX.width, height: BOX.height, rx: 6 }),
      svg('text', { x: x + 10, y: y + 20, class: 'name' }, name),
      svg('text', { x: x + 10, y: y + 40, class: 'info' }, `parallelism ${v.parallelism} · ${state}`),
    );
  });
  return h(
    'div',
    { class: 'graph' },
    svg(
      'svg',
      { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'data-testid': 'job-graph' },
      svg(
        'defs',
        {},
        svg(
          'marker',
          { id: marker, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' },
          svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }),
        ),
      ),
      ...edges,
      ...boxes,
    ),
  );
}

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
  const head = h(
    'tr',
    {},
    h('th', {}, 'subtask'),
    h('th', {}, 'attempt'),
    h('th', {}, 'state'),
    h('th', {}, 'TaskExecutor'),
    h('th', {}, 'slot'),
    h('th', {}, 'start'),
    h('th', {}, 'end'),
    h('th', {}, 'duration'),
    h('th', {}, 'logs'),
  );
  const rows = job.vertices.flatMap((vertex) => [
    h(
      'tr',
      { class: 'vertex-row', 'data-testid': 'vertex', 'data-vertex': vertex.id },
      h(
        'td',
        { colspan: 5 },
        h('strong', {}, vertex.id),
        h('span', { class: 'meta' }, ` · parallelism ${vertex.parallelism} · ${vertex.resources}`),
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
        // Its ended attempts, newest first, under it.
        ...[...subtask.priorAttempts]
          .reverse()
          .map((attempt) => attemptRow(attempt, '', { class: 'prior', 'data-testid': 'prior-attempt' })),
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
  if (lastView !== null) render(lastView);
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
      h(
        'tr',
        {},
        h('th', {}, 'time'),
        h('th', {}, 'task'),
        h('th', {}, 'TaskExecutor / slot'),
        h('th', {}, 'exception'),
      ),
      ...history.entries.flatMap((root) => [entry(root, false), ...root.concurrent.map((c) => entry(c, true))]),
    ),
    history.truncated ? h('p', { class: 'meta' }, 'older failures dropped (web.exception-history-size)') : null,
  );
}

// ------------------------------------------------------------------ TaskExecutors

function renderExecutors(executors, jobNames) {
  if (executors.length === 0)
    return $('executors').replaceChildren(h('p', { class: 'empty' }, 'No TaskExecutor registered.'));
  $('executors').replaceChildren(
    ...executors.map((te) =>
      h(
        'div',
        { class: 'box', 'data-testid': 'executor', 'data-resource-id': te.resourceId },
        h(
          'h3',
          {},
          h('span', { class: 'mono' }, te.resourceId),
          h('span', { class: 'meta' }, `${te.mode} · utilization ${Math.round(te.utilization * 100)} %`),
        ),
        h('div', { class: 'meta' }, `available: ${te.available}`),
        h(
          'table',
          {},
          h(
            'tr',
            {},
            h('th', {}, 'slot'),
            h('th', {}, 'state'),
            h('th', {}, 'job'),
            h('th', {}, 'profile'),
            h('th', {}, 'subtasks'),
          ),
          ...te.slots.map((slot) =>
            h(
              'tr',
              {
                'data-testid': 'slot',
                'data-slot': slot.slot,
                'data-state': slot.state,
                'data-allocation-id': slot.allocationId ?? '',
              },
              h('td', {}, slot.slot),
              h('td', {}, badge(slot.state, 'slot-state')),
              h('td', {}, slot.jobId ? `${jobNames.get(slot.jobId) ?? ''} ${short(slot.jobId)}` : '—'),
              h('td', { class: 'meta' }, profileText(slot.resources)),
              h('td', { 'data-testid': 'slot-tasks' }, slot.tasks.join(', ') || '—'),
            ),
          ),
        ),
      ),
    ),
  );
}

function profileText(r) {
  const mb = (bytes) => `${Math.round(bytes / 1048576)} mb`;
  const extended = Object.entries(r.extendedResources ?? {}).map(([name, n]) => `${name} ${n}`);
  return [`${r.cpuCores} cpu`, `heap ${mb(r.taskHeapMemory)}`, `managed ${mb(r.managedMemory)}`, ...extended].join(
    ' · ',
  );
}

// ------------------------------------------------------------------ pending requests

function renderPending(requests, jobNames) {
  if (requests.length === 0) return $('pending').replaceChildren(h('p', { class: 'empty' }, 'Nothing waits.'));
  $('pending').replaceChildren(
    h(
      'table',
      {},
      h(
        'tr',
        {},
        h('th', {}, 'job'),
        h('th', {}, 'slots'),
        h('th', {}, 'profile'),
        h('th', {}, 'reason'),
        h('th', {}, 'why'),
      ),
      ...requests.map((r) =>
        h(
          'tr',
          { 'data-testid': 'pending-request', 'data-reason': r.reason },
          h('td', {}, `${jobNames.get(r.jobId) ?? ''} ${short(r.jobId)}`),
          h('td', {}, r.missing),
          h('td', { class: 'meta' }, r.profile),
          h('td', {}, badge(r.reason)),
          h('td', {}, r.why),
        ),
      ),
    ),
  );
}

// ------------------------------------------------------------------ actors

const actorSelect = $('actor-select');
let actorStream = null;
let actorListKey = '';
let actorDetail = null;

function renderActorList(actors, jobs) {
  if (actors === null) {
    actorSelect.disabled = true;
    return $('actor').replaceChildren(h('p', { class: 'empty' }, 'This cluster was started without inspection.'));
  }
  const jobOfActor = new Map(jobs.filter((job) => job.actorId).map((job) => [job.actorId, job.name]));
  const label = (actor) => {
    const job = jobOfActor.has(actor.id) ? ` (${jobOfActor.get(actor.id)})` : '';
    const status = actor.status === 'active' ? '' : ` [${actor.status}]`;
    return `${actor.name}${job} — ${stateText(actor.value)}${status}`;
  };
  const key = actors.map(label).join('\n');
  if (key === actorListKey) return;
  actorListKey = key;
  const chosen = actorSelect.value;
  actorSelect.replaceChildren(
    h('option', { value: '' }, 'choose an actor…'),
    ...actors.map((actor) => h('option', { value: actor.id, selected: actor.id === chosen }, label(actor))),
  );
}

actorSelect.addEventListener('change', () => watchActor(actorSelect.value));

function watchActor(id) {
  actorStream?.close();
  actorStream = null;
  actorDetail = null;
  if (id === '') return $('actor').replaceChildren();
  actorStream = new EventSource(`/dashboard/actors/${encodeURIComponent(id)}/events${query}`);
  actorStream.addEventListener('actor', (message) => {
    actorDetail = JSON.parse(message.data);
    renderActor();
  });
  actorStream.addEventListener('actor-event', (message) => {
    if (actorDetail === null) return;
    const event = JSON.parse(message.data);
    actorDetail.value = event.value;
    actorDetail.events++;
    actorDetail.recent.push(event);
    if (actorDetail.recent.length > 50) actorDetail.recent.shift();
    renderActor();
  });
}

function renderActor() {
  const a = actorDetail;
  $('actor').replaceChildren(
    h(
      'h3',
      {},
      h('span', { 'data-testid': 'actor-name' }, a.name),
      h('span', { class: 'meta' }, `${a.origin} · ${a.status} · ${a.events} events`),
    ),
    h('div', {}, 'state: ', h('code', { 'data-testid': 'actor-state' }, stateText(a.value))),
    h(
      'ol',
      { reversed: true, 'data-testid': 'actor-events' },
      ...[...a.recent]
        .reverse()
        .map((e) =>
          h(
            'li',
            {},
            h('span', { class: 'meta' }, new Date(e.at).toLocaleTimeString()),
            ' ',
            h('code', {}, e.type),
            ' → ',
            stateText(e.value),
          ),
        ),
    ),
  );
}

function stateText(value) {
  return typeof value === 'string' ? value : JSON.stringify(value);
}
