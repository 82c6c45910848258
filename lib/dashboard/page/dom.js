// What every part of the dashboard page builds with: the token (from the page's URL), the stream's
// query, an element (and an SVG element) with attributes and children, badges, IDs and times as text.
// Every text from the cluster goes in through text nodes: job names and task names are user input.

export const token = new URLSearchParams(location.search).get('token') ?? '';
export const query = token === '' ? '' : `?token=${encodeURIComponent(token)}`;
export const ENDED = ['finished', 'failed', 'canceled'];

/** An element with attributes and children (strings become text nodes). */
export function h(tag, attributes = {}, ...children) {
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
/** A table's header row: one `th` per name. */
export const headerRow = (...names) =>
  h(
    'tr',
    {},
    names.map((name) => h('th', {}, name)),
  );
export const badge = (state, testid) => h('span', { class: `badge ${state}`, 'data-testid': testid }, state);
/** A random hex ID (JobID, AllocationID) cut to 8 characters; readable IDs (ResourceIDs) are shown whole. */
export const short = (id) => (id ? String(id).slice(0, 8) : '—');
export const $ = (id) => document.getElementById(id);

export const timeOf = (ms) => new Date(ms).toLocaleTimeString();
/** `850 ms`, `12.4 s`, `3 min 5 s`, `2 h 4 min`. */
export function durationText(ms) {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const s = Math.floor(ms / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3_600)} h ${Math.floor((s % 3_600) / 60)} min`;
}

const SVG = 'http://www.w3.org/2000/svg';
/** An SVG element with attributes and children (strings become text nodes). */
export function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}
