// The slotwise dashboard page: plain JavaScript, no framework, nothing loaded from outside this
// origin. It follows the server's `view` stream (Server-Sent Events) and renders the overview,
// charts (uPlot), the jobs (jobPage.js: each as Flink's job page), TaskExecutors with their slot
// tables, pending requests and, for a chosen statechart actor, its state and recent events (a second
// stream). Its modules are imported with the page's token in their URL (dom.js has the helpers).

const search = new URL(import.meta.url).search; // the page's token: every asset is asked for with it
const { $, badge, h, headerRow, query, short } = await import(`./dom.js${search}`);
const { renderJobs } = await import(`./jobPage.js${search}`);

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
stream.addEventListener('view', (message) => render(JSON.parse(message.data)));

function render(view) {
  const slotsByAllocation = new Map();
  for (const te of view.overview.taskExecutors)
    for (const slot of te.slots) if (slot.allocationId) slotsByAllocation.set(slot.allocationId, { te, slot });
  const jobNames = new Map(view.overview.jobs.map((job) => [job.jobId, job.name]));
  renderOverview(view.overview);
  renderCharts(view.series);
  renderJobs(view.jobs, slotsByAllocation);
  renderExecutors(view.overview.taskExecutors, jobNames, view.partitions ?? {});
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

// ------------------------------------------------------------------ TaskExecutors

function renderExecutors(executors, jobNames, partitions) {
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
        partitionsLine(partitions[te.resourceId]),
        h(
          'table',
          {},
          headerRow('slot', 'state', 'job', 'profile', 'subtasks'),
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

/** A TaskExecutor's result partitions: held now (in memory, on disk) and bytes since it started; null if none. */
function partitionsLine(p) {
  if (p === undefined) return null;
  const size = (bytes) =>
    bytes < 1024
      ? `${bytes} b`
      : bytes < 1048576
        ? `${(bytes / 1024).toFixed(1)} kb`
        : `${(bytes / 1048576).toFixed(1)} mb`;
  return h(
    'div',
    { class: 'meta', 'data-testid': 'executor-partitions' },
    `result partitions: ${p.partitions} held, ${size(p.bytes - p.spilledBytes)} in memory, ` +
      `${size(p.spilledBytes)} on disk · produced ${size(p.producedBytes)}, consumed ${size(p.consumedBytes)}, ` +
      `spilled ${size(p.spilledTotal)}`,
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
      headerRow('job', 'slots', 'profile', 'reason', 'why'),
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
