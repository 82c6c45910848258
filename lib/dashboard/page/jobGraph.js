// The job graph on the job page: vertices left to right in layers, each a box with its parallelism and
// state, each edge an arrow labelled with its pattern (SVG; styled by dashboard.css, no inline style).

const search = new URL(import.meta.url).search; // the page's token: every asset is asked for with it
const { svg, h } = await import(`./dom.js${search}`);

/** A vertex's state from its subtasks' (as Flink's ExecutionJobVertex aggregates it). */
export function vertexState(subtasks) {
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
export function renderGraph(job) {
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
    // Null: the adaptive scheduler decides it once the vertex's producers have finished.
    const parallelism = v.parallelism ?? '?';
    const why = v.parallelismReason ? ` (adaptive: ${v.parallelismReason})` : '';
    return svg(
      'g',
      {
        class: `vertex ${state}`,
        'data-testid': 'graph-vertex',
        'data-vertex': v.id,
        'data-parallelism': parallelism,
        'data-state': state,
      },
      svg('title', {}, `${v.id} · parallelism ${parallelism}${why} · ${state}`),
      svg('rect', { x, y, width: BOX.width, height: BOX.height, rx: 6 }),
      svg('text', { x: x + 10, y: y + 20, class: 'name' }, name),
      svg('text', { x: x + 10, y: y + 40, class: 'info' }, `parallelism ${parallelism} · ${state}`),
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
