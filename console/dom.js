// The small helpers every page builds with. Strings always become text nodes, so what
// the API says is shown, never parsed as markup.

import { ApiError } from './api.js';

// An element with attributes, listeners (`onclick`) and children; strings become text nodes.
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else if (name === 'class') node.className = value;
    else if (name === 'value') node.value = value;
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

// Replaces what `node` holds by `children` (null, false and undefined are left out).
export function put(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export const $ = (selector, root = document) => root.querySelector(selector);

export function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

export function num(value, digits = 2) {
  return typeof value === 'number' ? value.toFixed(digits) : '—';
}

export function counts(object) {
  const entries = Object.entries(object || {});
  return entries.length ? entries.map(([k, v]) => `${k} ${v}`).join(' · ') : 'nothing counted';
}

export const short = (id) => (id ? String(id).slice(-8) : '');

export function badge(text, kind = text) {
  return el('span', { class: `badge badge-${String(kind).replace(/[^a-z_]/gi, '')}` }, text);
}

export function field(label, input) {
  return el('label', { class: 'field' }, el('span', { class: 'field-name' }, label), input);
}

export function select(name, options, value, extra = {}) {
  return el('select', { name, ...extra },
    options.map(([v, label]) => el('option', { value: v, selected: v === value }, label)));
}

// A datetime-local input's value, read as UTC, in RFC 3339; undefined when empty.
export function utc(value) {
  return value ? new Date(`${value}:00Z`).toISOString() : undefined;
}

export function loading() {
  return el('p', { class: 'muted loading' }, 'Loading…');
}

export function errorBox(err) {
  const box = el('div', { class: 'error', role: 'alert' });
  if (err instanceof ApiError) {
    append(box, [el('strong', {}, `${err.status} ${err.code}`), ' ', err.message,
      err.field ? el('span', { class: 'muted' }, ` (field ${err.field})`) : null]);
  } else {
    append(box, [String(err && err.message ? err.message : err)]);
  }
  return box;
}

// A message above the page; the router empties #flash on every navigation.
export function notify(text, kind = 'ok') {
  const area = $('#flash');
  if (area) put(area, el('div', { class: `flash flash-${kind}`, role: 'status' }, text));
}

let noticeForNextPage = null;

// A message for the page the console is about to show.
export function notifyAfterNavigation(text) {
  noticeForNextPage = text;
}

// Called by the router once the next page's #flash exists.
export function showPendingNotice() {
  if (noticeForNextPage) notify(noticeForNextPage);
  noticeForNextPage = null;
}
