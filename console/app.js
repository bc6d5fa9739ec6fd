// engram's web console: a page over the public API, signed in with an API key, so it
// can do nothing that key cannot. No framework and no build step. Every text that comes
// from the API goes into the page as text (createTextNode / textContent), never as
// markup; the server's Content-Security-Policy allows this file and nothing inline.

import { drawGraph } from './graph.js';

// The API is the directory above /console/, so the console works behind a path prefix.
const apiBase = new URL('../', location.href);
const KEY = 'engram.key';
const USER = 'engram.user';
const CATEGORIES = ['identity', 'personal', 'preference', 'project', 'technical', 'decision', 'event', 'lesson',
  'statement', 'relationship', 'health', 'finance', 'other'];
const STATUSES = ['active', 'superseded', 'merged', 'evicted'];
const KINDS = ['fact', 'insight', 'event', 'session_summary', 'period_summary', 'relation'];

const session = { key: sessionStorage.getItem(KEY), caller: null, user: sessionStorage.getItem(USER) };
const runNames = new Map(); // job run id -> job name, filled as runs are looked up

// ---------------------------------------------------------------- the page's elements

// An element with attributes, listeners (`onclick`) and children; strings become text nodes.
function el(tag, attributes = {}, ...children) {
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
function put(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const $ = (selector, root = document) => root.querySelector(selector);

function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

function num(value, digits = 2) {
  return typeof value === 'number' ? value.toFixed(digits) : '—';
}

function counts(object) {
  const entries = Object.entries(object || {});
  return entries.length ? entries.map(([k, v]) => `${k} ${v}`).join(' · ') : 'nothing counted';
}

const short = (id) => (id ? String(id).slice(-8) : '');

function badge(text, kind = text) {
  return el('span', { class: `badge badge-${String(kind).replace(/[^a-z_]/gi, '')}` }, text);
}

function field(label, input) {
  return el('label', { class: 'field' }, el('span', { class: 'field-name' }, label), input);
}

function select(name, options, value, extra = {}) {
  return el('select', { name, ...extra },
    options.map(([v, label]) => el('option', { value: v, selected: v === value }, label)));
}

// A datetime-local input's value, read as UTC, in RFC 3339; undefined when empty.
function utc(value) {
  return value ? new Date(`${value}:00Z`).toISOString() : undefined;
}

function errorBox(err) {
  const box = el('div', { class: 'error', role: 'alert' });
  if (err instanceof ApiError) {
    append(box, [el('strong', {}, `${err.status} ${err.code}`), ' ', err.message,
      err.field ? el('span', { class: 'muted' }, ` (field ${err.field})`) : null]);
  } else {
    append(box, [String(err && err.message ? err.message : err)]);
  }
  return box;
}

function notify(text, kind = 'ok') {
  const area = $('#flash');
  if (area) put(area, el('div', { class: `flash flash-${kind}`, role: 'status' }, text));
}

// A message for the page the console is about to show.
let flashNext = null;
function notifyAfterNavigation(text) {
  flashNext = text;
}

function loading() {
  return el('p', { class: 'muted loading' }, 'Loading…');
}

// ---------------------------------------------------------------- the API

class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || 'error';
    this.field = error.field;
  }
}

async function api(method, path, { query, body } = {}) {
  const url = new URL(path, apiBase);
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, value);
  }
  const headers = { Authorization: `Bearer ${session.key}`, Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(url, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer',
  });
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (response.status === 401 && session.caller) {
    signOut('The key was refused: it may have been revoked.');
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

const userPath = (user, ...rest) => ['v1/users', encodeURIComponent(user), ...rest.map(encodeURIComponent)].join('/');

const can = {
  get ingest() { return session.caller?.scopes.includes('ingest'); },
  get admin() { return session.caller?.scopes.includes('admin'); },
  get operator() { return session.caller?.scopes.includes('operator'); },
  get jobs() { return can.admin || can.operator; },
};

// ---------------------------------------------------------------- signing in and out

function signOut(message) {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(USER);
  Object.assign(session, { key: null, caller: null, user: null });
  location.hash = '';
  chrome();
  signInPage(message);
}

function signInPage(message) {
  const input = el('input', { id: 'key', name: 'key', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true, placeholder: 'egm_…' });
  const status = el('div', { class: 'signin-status' }, message ? errorBox(message) : null);
  const form = el('form', { id: 'signin', class: 'card signin', onsubmit: async (event) => {
    event.preventDefault();
    session.key = input.value.trim();
    put(status, loading());
    try {
      session.caller = await api('GET', 'v1/whoami');
      sessionStorage.setItem(KEY, session.key);
      start();
    } catch (err) {
      session.key = null;
      session.caller = null;
      put(status, errorBox(err.status === 401 ? 'That key was refused.' : err));
    }
  } },
  el('h1', {}, 'Sign in'),
  el('p', { class: 'muted' }, 'With an engram API key. It stays in this browser tab (session storage) and goes to the API as a bearer token only; the console can do what the key can, nothing more.'),
  field('API key', input),
  el('button', { type: 'submit', class: 'primary' }, 'Sign in'),
  status);
  $('#main').replaceChildren(form);
  input.focus();
}

async function start() {
  if (!session.key) return signInPage();
  if (!session.caller) {
    try {
      session.caller = await api('GET', 'v1/whoami');
    } catch (err) {
      sessionStorage.removeItem(KEY);
      session.key = null;
      return signInPage(err.status === 401 ? 'That key was refused.' : err);
    }
  }
  if (session.caller.user_id) setUser(session.caller.user_id);
  chrome();
  if (!location.hash || location.hash === '#' || location.hash === '#/') {
    location.hash = session.caller.user_id ? `#/users/${encodeURIComponent(session.caller.user_id)}` : '#/users';
  } else {
    route();
  }
}

function setUser(user) {
  session.user = user;
  sessionStorage.setItem(USER, user);
}

// The header (tenant, scopes, sign-out) and the navigation.
function chrome() {
  const who = $('#who');
  const nav = $('#nav');
  if (!session.caller) {
    put(who);
    nav.hidden = true;
    return;
  }
  const caller = session.caller;
  put(who, 
    el('span', { class: 'who-item' }, 'tenant ', el('strong', { id: 'tenant' }, caller.tenant)),
    el('span', { class: 'who-item', id: 'scopes' }, caller.scopes.map((s) => badge(s, 'scope'))),
    caller.user_id ? el('span', { class: 'who-item' }, 'bound to ', el('strong', {}, caller.user_id)) : null,
    !can.ingest ? el('span', { class: 'who-item read-only' }, 'read-only') : null,
    el('button', { type: 'button', id: 'signout', class: 'link', onclick: () => signOut() }, 'Sign out'));
  const link = (href, text, extra = {}) => el('a', { href, ...extra }, text);
  const user = session.user;
  put(nav, 
    link('#/users', session.caller.user_id ? 'User' : 'Users', { 'data-nav': 'users' }),
    user ? el('div', { class: 'nav-user' }, el('div', { class: 'nav-heading' }, user),
      link(`#/users/${encodeURIComponent(user)}/memories`, 'Memory', { 'data-nav': 'memories' }),
      link(`#/users/${encodeURIComponent(user)}/turns`, 'Turns & sessions', { 'data-nav': 'turns' }),
      link(`#/users/${encodeURIComponent(user)}/graph`, 'Graph', { 'data-nav': 'graph' })) : null,
    link('#/search', 'Search & context', { 'data-nav': 'search' }),
    can.jobs ? link('#/jobs', 'Jobs', { 'data-nav': 'jobs' }) : null);
  nav.hidden = false;
}

function markNav(name) {
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('current', a.dataset.nav === name);
}

// ---------------------------------------------------------------- routing

function route() {
  if (!session.caller) return;
  const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const page = el('div', { class: 'page' });
  $('#main').replaceChildren(el('div', { id: 'flash' }), page);
  if (flashNext) notify(flashNext);
  flashNext = null;
  window.scrollTo(0, 0);
  const [section, user, view, id] = parts;
  if (section === 'users' && user) {
    if (user !== session.user) { setUser(user); chrome(); }
    markNav(view || 'users');
    if (view === 'memories') return memoriesPage(page, user, id);
    if (view === 'turns') return turnsPage(page, user, id);
    if (view === 'graph') return graphPage(page, user);
    return userPage(page, user);
  }
  markNav(section || 'users');
  if (section === 'search') return searchPage(page);
  if (section === 'jobs') return jobsPage(page);
  return usersPage(page);
}

window.addEventListener('hashchange', route);

// ---------------------------------------------------------------- users

function usersPage(page) {
  if (session.caller.user_id) {
    location.hash = `#/users/${encodeURIComponent(session.caller.user_id)}`;
    return;
  }
  const input = el('input', { name: 'user', required: true, placeholder: 'alice', autocomplete: 'off' });
  const status = el('div');
  const find = el('form', { id: 'find-user', class: 'card inline-form', onsubmit: async (event) => {
    event.preventDefault();
    const user = input.value.trim();
    put(status, loading());
    try {
      await api('GET', userPath(user));
      location.hash = `#/users/${encodeURIComponent(user)}`;
    } catch (err) {
      put(status, err.status === 404 ? el('p', { class: 'muted', id: 'not-found' }, `engram knows nothing of “${user}”.`) : errorBox(err));
    }
  } }, field('User id', input), el('button', { type: 'submit', class: 'primary' }, 'Open'));
  append(page, [el('h1', {}, 'Users'), find, status]);
  if (!can.admin) {
    append(page, [el('p', { class: 'muted' }, 'Listing the tenant’s users needs a key with the admin scope; find one by id above.')]);
    return;
  }
  const body = el('tbody');
  const more = el('div', { class: 'more' });
  append(page, [el('h2', {}, 'The tenant’s users'),
    el('table', { id: 'users', class: 'grid' },
      el('thead', {}, el('tr', {}, ['User', 'Turns', 'Memories', 'Sessions', 'Entities', 'Last activity'].map((h) => el('th', {}, h)))),
      body),
    more]);
  const load = async (cursor) => {
    put(more, loading());
    try {
      const found = await api('GET', 'admin/v1/users', { query: { limit: 50, cursor } });
      for (const u of found.users) {
        const href = `#/users/${encodeURIComponent(u.user_id)}`;
        body.append(el('tr', { 'data-user': u.user_id },
          el('td', {}, el('a', { href }, u.user_id)), el('td', { class: 'n' }, u.events), el('td', { class: 'n' }, u.memories),
          el('td', { class: 'n' }, u.sessions ?? '—'), el('td', { class: 'n' }, u.entities ?? '—'), el('td', {}, when(u.last_activity))));
      }
      if (!found.users.length && !cursor) body.append(el('tr', {}, el('td', { colspan: 6, class: 'muted' }, 'No users yet.')));
      put(more, found.next_cursor
        ? el('button', { type: 'button', onclick: () => load(found.next_cursor) }, 'More users') : null);
    } catch (err) {
      put(more, errorBox(err));
    }
  };
  load();
}

async function userPage(page, user) {
  append(page, [el('h1', {}, 'User ', el('span', { class: 'mono' }, user))]);
  const body = append(el('div'), [loading()]);
  page.append(body);
  try {
    const u = await api('GET', userPath(user));
    const stat = (name, label, value) => el('div', { class: 'stat', 'data-stat': name },
      el('div', { class: 'stat-value' }, value), el('div', { class: 'stat-label' }, label));
    const base = `#/users/${encodeURIComponent(user)}`;
    put(body, 
      el('div', { class: 'stats' },
        stat('memories', 'active memories', u.memories), stat('events', 'turns', u.events),
        stat('sessions', 'sessions', u.sessions), stat('entities', 'graph entities', u.entities),
        stat('last_activity', 'last activity', when(u.last_activity))),
      el('div', { class: 'card links' },
        el('a', { href: `${base}/memories` }, 'Memory →'), el('a', { href: `${base}/turns` }, 'Turns & sessions →'),
        el('a', { href: `${base}/graph` }, 'Graph →'), el('a', { href: '#/search' }, 'Search & context →')));
  } catch (err) {
    put(body, err.status === 404 ? el('p', { class: 'muted' }, `engram knows nothing of “${user}” yet.`) : errorBox(err));
  }
}

// ---------------------------------------------------------------- memory

const memoryFilter = { status: 'active', kind: '', category: '', key: '' };

function memoriesPage(page, user, selected) {
  const base = `#/users/${encodeURIComponent(user)}/memories`;
  const filters = el('form', { id: 'memory-filters', class: 'filters', onsubmit: (event) => {
    event.preventDefault();
    const form = new FormData(filters);
    for (const name of Object.keys(memoryFilter)) memoryFilter[name] = String(form.get(name) || '').trim();
    loadList();
  } },
  field('Status', select('status', STATUSES.map((s) => [s, s]), memoryFilter.status)),
  field('Kind', select('kind', [['', 'any'], ['fact', 'fact'], ['insight', 'insight']], memoryFilter.kind)),
  field('Category', select('category', [['', 'any'], ...CATEGORIES.map((c) => [c, c])], memoryFilter.category)),
  field('Key', el('input', { name: 'key', value: memoryFilter.key, placeholder: 'any', size: 12 })),
  el('button', { type: 'submit' }, 'Filter'));
  const body = el('tbody');
  const more = el('div', { class: 'more' });
  const detail = el('section', { id: 'memory-detail', class: 'detail' });
  append(page, [
    el('h1', {}, 'Memory of ', el('span', { class: 'mono' }, user)),
    can.ingest ? addMemoryForm(user) : null,
    filters,
    el('div', { class: selected ? 'split' : '' },
      el('div', { class: 'list' },
        el('table', { id: 'memories', class: 'grid memories' },
          el('thead', {}, el('tr', {}, ['Memory', 'Category · key', 'Imp.', 'Decay', 'Status', 'Valid'].map((h) => el('th', {}, h)))),
          body),
        more),
      selected ? detail : null)]);

  async function loadList(cursor) {
    if (!cursor) put(body);
    put(more, loading());
    try {
      const query = { ...memoryFilter, limit: 50, cursor };
      const page = await api('GET', userPath(user, 'memories'), { query });
      for (const m of page.memories) {
        const row = el('tr', { 'data-memory-id': m.id, class: m.id === selected ? 'selected' : '', tabindex: 0 },
          el('td', { class: 'content' }, m.pinned ? el('span', { class: 'pin', title: 'pinned' }, '📌 ') : null,
            el('a', { href: `${base}/${m.id}` }, m.content)),
          el('td', {}, m.category, m.key ? el('div', { class: 'mono small' }, m.key) : null),
          el('td', { class: 'n' }, num(m.importance)), el('td', { class: 'n' }, num(m.decay, 3)),
          el('td', {}, badge(m.status), m.kind === 'insight' ? badge('insight') : null),
          el('td', { class: 'small' }, when(m.valid_from), m.valid_to ? el('div', {}, `to ${when(m.valid_to)}`) : null));
        row.addEventListener('click', (event) => { if (event.target.tagName !== 'A') location.hash = `${base}/${m.id}`; });
        body.append(row);
      }
      if (!page.memories.length && !cursor) body.append(el('tr', {}, el('td', { colspan: 6, class: 'muted' }, `No ${memoryFilter.status} memories.`)));
      put(more, page.next_cursor ? el('button', { type: 'button', onclick: () => loadList(page.next_cursor) }, 'More') : null);
    } catch (err) {
      put(more, errorBox(err));
    }
  }
  loadList();
  if (selected) memoryDetail(detail, user, selected, () => loadList());
}

function addMemoryForm(user) {
  const status = el('div');
  const form = el('form', { id: 'add-memory', class: 'stack', onsubmit: async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const body = { content: String(data.get('content')).trim() };
    if (data.get('category')) body.category = data.get('category');
    if (String(data.get('key')).trim()) body.key = String(data.get('key')).trim();
    if (data.get('importance')) body.importance = Number(data.get('importance'));
    if (data.get('pinned')) body.pinned = true;
    try {
      const added = await api('POST', userPath(user, 'memories'), { body });
      notifyAfterNavigation(added.outcome === 'created' ? 'Memory added.' : 'An active memory already said that: it was refreshed.');
      location.hash = `#/users/${encodeURIComponent(user)}/memories/${added.memory.id}`;
    } catch (err) {
      put(status, errorBox(err));
    }
  } },
  field('Content', el('textarea', { name: 'content', rows: 2, required: true })),
  el('div', { class: 'row' },
    field('Category', select('category', [['', 'statement (default)'], ...CATEGORIES.map((c) => [c, c])], '')),
    field('Key', el('input', { name: 'key', placeholder: 'optional', size: 14 })),
    field('Importance', el('input', { name: 'importance', type: 'number', min: 0, max: 1, step: 0.05, placeholder: '0.7' })),
    el('label', { class: 'check' }, el('input', { type: 'checkbox', name: 'pinned' }), ' pinned'),
    el('button', { type: 'submit', class: 'primary', 'data-action': 'add' }, 'Add memory')),
  status);
  return el('details', { class: 'card add' }, el('summary', {}, 'Add a memory'), form);
}

// What a history row says happened, in words.
function actionLabel(entry) {
  const after = entry.after || {};
  if (entry.action === 'updated' && after.absorbed) return 'absorbed a duplicate';
  if (entry.action === 'updated' && (after.source_event_ids || after.restated)) return 'refreshed';
  return entry.action;
}

function changeText(value) {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'number') return String(Number(value.toFixed(3)));
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text && text.length > 240 ? `${text.slice(0, 240)}…` : text;
}

function changes(entry) {
  const before = entry.before || {}, after = entry.after || {};
  const names = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  if (!names.length) return null;
  return el('dl', { class: 'changes' }, names.map((name) => [
    el('dt', {}, name),
    el('dd', {}, name in before ? el('span', { class: 'before' }, changeText(before[name])) : null,
      name in before && name in after ? ' → ' : null,
      name in after ? el('span', { class: 'after' }, changeText(after[name])) : null)]));
}

async function runName(id) {
  if (!can.jobs) return null;
  if (!runNames.has(id)) {
    runNames.set(id, api('GET', `admin/v1/jobs/runs/${encodeURIComponent(id)}`).then((run) => run.job, () => null));
  }
  return runNames.get(id);
}

function timeline(history) {
  return el('ol', { class: 'timeline', id: 'history' }, history.map((entry) => {
    const run = entry.job_run_id ? el('span', { class: 'run-ref mono', 'data-run-id': entry.job_run_id }, `run …${short(entry.job_run_id)}`) : null;
    if (run) runName(entry.job_run_id).then((name) => { if (name) run.textContent = `${name} run …${short(entry.job_run_id)}`; });
    const label = actionLabel(entry);
    return el('li', { 'data-action': entry.action, 'data-label': label },
      el('div', { class: 'tl-head' }, badge(label, entry.action), el('span', { class: 'muted' }, when(entry.created_at)), run,
        entry.actor ? el('span', { class: 'muted small' }, `by ${entry.actor}`) : null),
      entry.reason ? el('div', { class: 'tl-reason' }, entry.reason) : null,
      changes(entry));
  }));
}

async function memoryDetail(box, user, id, reloadList) {
  put(box, loading());
  let detail;
  try {
    detail = await api('GET', userPath(user, 'memories', id));
  } catch (err) {
    put(box, errorBox(err));
    return;
  }
  const m = detail.memory;
  const base = `#/users/${encodeURIComponent(user)}/memories`;
  const facts = [
    ['id', el('span', { class: 'mono small' }, m.id)], ['kind', m.kind], ['category', m.category], ['key', m.key || '—'],
    ['value', m.value || '—'], ['importance', num(m.importance)], ['confidence', num(m.confidence)], ['decay', num(m.decay, 3)],
    ['pinned', m.pinned ? 'yes' : 'no'], ['status', badge(m.status)], ['valid from', when(m.valid_from)], ['valid to', when(m.valid_to)],
    ['superseded by', m.superseded_by ? el('a', { href: `${base}/${m.superseded_by}`, class: 'mono small' }, short(m.superseded_by)) : '—'],
    ['accesses', `${m.access_count}${m.last_accessed_at ? `, last ${when(m.last_accessed_at)}` : ''}`],
    ['sources', `${m.source_event_ids.length} turn${m.source_event_ids.length === 1 ? '' : 's'}`],
    ['created', when(m.created_at)], ['updated', when(m.updated_at)],
  ];
  const actions = el('div', { class: 'actions' });
  const status = el('div');
  const act = async (work, message) => {
    put(status, loading());
    try {
      await work();
      notify(message);
      reloadList();
      memoryDetail(box, user, id, reloadList);
    } catch (err) {
      put(status, errorBox(err));
    }
  };
  if (can.ingest && m.status !== 'deleted') {
    actions.append(
      el('button', { type: 'button', 'data-action': 'edit', onclick: () => editForm() }, 'Edit'),
      el('button', { type: 'button', 'data-action': 'pin', onclick: () => act(
        () => api('PATCH', userPath(user, 'memories', id), { body: { pinned: !m.pinned } }), m.pinned ? 'Unpinned.' : 'Pinned.') },
      m.pinned ? 'Unpin' : 'Pin'),
      el('button', { type: 'button', class: 'danger', 'data-action': 'delete', onclick: () => deleteForm() }, 'Delete…'));
  }
  if (can.admin && (m.status === 'evicted' || m.status === 'merged')) {
    actions.append(el('button', { type: 'button', 'data-action': 'restore', onclick: () => act(
      () => api('POST', `admin/v1/users/${encodeURIComponent(user)}/memories/${encodeURIComponent(id)}/restore`), 'Restored.') }, 'Restore'));
  }
  const panel = el('div', { class: 'panel' });

  function editForm() {
    const form = el('form', { id: 'edit-memory', class: 'stack', onsubmit: (event) => {
      event.preventDefault();
      const data = new FormData(form);
      const body = {};
      const content = String(data.get('content')).trim();
      if (content !== m.content) body.content = content;
      if (data.get('category') !== m.category) body.category = data.get('category');
      const importance = Number(data.get('importance'));
      if (Math.abs(importance - m.importance) > 1e-6) body.importance = importance;
      if (!Object.keys(body).length) { put(panel); return; }
      act(() => api('PATCH', userPath(user, 'memories', id), { body }), 'Saved.');
    } },
    field('Content', el('textarea', { name: 'content', rows: 3, required: true }, m.content)),
    el('div', { class: 'row' },
      field('Category', select('category', CATEGORIES.map((c) => [c, c]), m.category)),
      field('Importance', el('input', { name: 'importance', type: 'number', min: 0, max: 1, step: 0.05, value: String(m.importance) })),
      el('button', { type: 'submit', class: 'primary', 'data-action': 'save' }, 'Save'),
      el('button', { type: 'button', onclick: () => put(panel) }, 'Cancel')));
    put(panel, form);
  }

  function deleteForm() {
    const sources = el('input', { type: 'checkbox', name: 'sources' });
    put(panel, el('div', { class: 'confirm' },
      el('p', {}, 'Delete this memory for good: the row, its vector, the duplicates merged into it and the content of its history. This cannot be undone.'),
      el('label', { class: 'check' }, sources, ' also replace the turns it came from by [deleted]'),
      el('div', { class: 'row' },
        el('button', { type: 'button', class: 'danger', 'data-action': 'confirm-delete', onclick: async () => {
          try {
            const done = await api('DELETE', userPath(user, 'memories', id), { query: { sources: sources.checked ? 'true' : undefined } });
            notifyAfterNavigation(`Deleted for good: ${counts(done.deleted)}.`);
            location.hash = base;
          } catch (err) {
            put(status, errorBox(err));
          }
        } }, 'Delete for good'),
        el('button', { type: 'button', onclick: () => put(panel) }, 'Cancel'))));
  }

  put(box, 
    el('div', { class: 'detail-head' }, el('h2', {}, 'Memory'), el('a', { href: base, class: 'close', title: 'close' }, '×')),
    el('p', { class: 'memory-content', id: 'memory-content' }, m.content),
    m.source_quote && m.source_quote !== m.content ? el('blockquote', {}, m.source_quote) : null,
    actions, panel, status,
    el('dl', { class: 'facts' }, facts.map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])),
    el('h3', {}, 'History'),
    detail.history.length ? timeline(detail.history) : el('p', { class: 'muted' }, 'No history.'));
}

// ---------------------------------------------------------------- turns and sessions

function turnsPage(page, user, sessionId) {
  const base = `#/users/${encodeURIComponent(user)}/turns`;
  const sessions = el('div', { id: 'sessions', class: 'sessions' }, loading());
  const periods = el('div', { id: 'periods' });
  const turns = el('div', { id: 'turns', class: 'turns' });
  const more = el('div', { class: 'more' });
  append(page, [el('h1', {}, 'Turns of ', el('span', { class: 'mono' }, user)),
    el('div', { class: 'split turns-split' },
      el('div', { class: 'list' },
        el('h2', {}, sessionId ? ['Session ', el('span', { class: 'mono' }, sessionId)] : 'Latest turns'),
        turns, more),
      el('aside', { class: 'side' }, el('h2', {}, 'Sessions'), sessions, periods))]);

  const loadTurns = async (cursor) => {
    put(more, loading());
    try {
      const found = await api('GET', userPath(user, 'events'), { query: { session_id: sessionId, limit: 50, cursor } });
      for (const e of found.events) {
        turns.append(el('article', { class: `turn role-${e.role}`, 'data-event-id': e.id },
          el('div', { class: 'turn-head' }, badge(e.role), el('span', { class: 'muted small' }, when(e.created_at)),
            sessionId ? null : el('a', { class: 'mono small', href: `${base}/${encodeURIComponent(e.session_id)}` }, e.session_id)),
          el('p', { class: 'turn-content' }, e.content)));
      }
      if (!found.events.length && !cursor) turns.append(el('p', { class: 'muted' }, 'No turns.'));
      put(more, found.next_cursor ? el('button', { type: 'button', onclick: () => loadTurns(found.next_cursor) }, 'Older turns') : null);
    } catch (err) {
      put(more, errorBox(err));
    }
  };
  loadTurns();

  api('GET', userPath(user, 'sessions'), { query: { limit: 50 } }).then((found) => {
    put(sessions, 
      el('a', { href: base, class: `session${sessionId ? '' : ' current'}` }, 'All turns'),
      found.sessions.map((s) => el('a', { href: `${base}/${encodeURIComponent(s.session_id)}`, 'data-session': s.session_id,
        class: `session${s.session_id === sessionId ? ' current' : ''}` },
      el('div', { class: 'session-head' }, el('span', { class: 'mono' }, s.session_id),
        el('span', { class: 'muted small' }, `${s.event_count} turn${s.event_count === 1 ? '' : 's'}`)),
      el('div', { class: 'muted small' }, `${when(s.started_at)} – ${when(s.last_event_at)}`,
        s.archived_at ? ' · archived' : '', s.ended_at ? '' : ' · open'),
      s.summary ? el('p', { class: 'summary' }, s.summary) : el('p', { class: 'muted small' }, 'not summarised yet'))));
    if (!found.sessions.length) sessions.append(el('p', { class: 'muted' }, 'No sessions.'));
  }, (err) => put(sessions, errorBox(err)));

  api('GET', userPath(user, 'summaries'), { query: { limit: 20 } }).then((found) => {
    if (!found.summaries.length) return;
    put(periods, el('h2', {}, 'Period summaries'), found.summaries.map((p) => el('div', { class: 'period' },
      el('div', { class: 'session-head' }, badge(p.period), el('span', { class: 'muted small' }, `${p.period_start} – ${p.period_end}`)),
      el('p', { class: 'summary' }, p.summary))));
  }, (err) => put(periods, errorBox(err)));
}

// ---------------------------------------------------------------- the graph

async function graphPage(page, user) {
  append(page, [el('h1', {}, 'Graph of ', el('span', { class: 'mono' }, user))]);
  const holder = append(el('div'), [loading()]);
  page.append(holder);
  let entities;
  try {
    entities = (await api('GET', userPath(user, 'entities'), { query: { limit: 200 } })).entities;
  } catch (err) {
    put(holder, errorBox(err));
    return;
  }
  if (!entities.length) {
    put(holder, el('p', { class: 'muted' }, 'No graph yet: extract_facts builds it from the user’s turns.'));
    return;
  }
  const self = entities.find((e) => e.is_user) || entities[0];
  const names = el('datalist', { id: 'entity-names' }, entities.map((e) => el('option', { value: e.name })));
  const around = select('entity', entities.map((e) => [e.id, `${e.name} (${e.type})`]), self.id);
  const depth = select('depth', [['1', '1 hop'], ['2', '2 hops'], ['3', '3 hops']], '2');
  const asOf = el('input', { type: 'datetime-local', name: 'as_of' });
  const status = el('div', { id: 'graph-status' });
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.id = 'graph';
  const pathText = el('div', { id: 'path-text' });
  const relationsBox = el('div', { id: 'relations' });
  const entityBox = el('aside', { id: 'entity', class: 'side' }, el('p', { class: 'muted' }, 'Click an entity to see its relations and history.'));
  let shown = { entities: [], relations: [] };
  let onPath = new Set();

  const draw = () => {
    drawGraph(svg, shown, { highlight: onPath, onSelect: (entity) => showEntity(entity) });
    put(relationsBox, relationsTable(shown.relations, onPath));
  };
  const neighbourhood = async () => {
    put(status, loading());
    try {
      shown = await api('GET', userPath(user, 'graph'), { query: { entity: around.value, depth: depth.value, as_of: utc(asOf.value) } });
      onPath = new Set();
      put(pathText);
      put(status, el('span', { class: 'muted' },
        `${shown.entities.length} entities, ${shown.relations.length} relations${asOf.value ? `, as of ${asOf.value} UTC` : ', holding now'}.`));
      draw();
    } catch (err) {
      put(status, errorBox(err));
    }
  };
  const from = el('input', { name: 'from', list: 'entity-names', required: true, placeholder: 'an entity', size: 16 });
  const to = el('input', { name: 'to', list: 'entity-names', required: true, placeholder: 'another', size: 16 });
  const findPath = async () => {
    put(pathText, loading());
    try {
      const path = await api('GET', userPath(user, 'graph', 'path'), { query: { from: from.value.trim(), to: to.value.trim(), max_depth: 3 } });
      const byId = new Map(shown.entities.map((e) => [e.id, e]));
      for (const e of path.entities) byId.set(e.id, e);
      const relations = new Map(shown.relations.map((r) => [r.id, r]));
      for (const r of path.relations) relations.set(r.id, r);
      shown = { entities: [...byId.values()], relations: [...relations.values()] };
      onPath = new Set(path.relations.map((r) => r.id));
      draw();
      const chain = [];
      path.relations.forEach((r, i) => {
        if (i === 0) chain.push(el('span', { class: 'path-node' }, r.subject));
        chain.push(el('span', { class: 'path-edge' }, ` —${r.predicate}→ `), el('span', { class: 'path-node' }, r.object));
      });
      put(pathText, el('div', { class: 'path' },
        el('strong', {}, `${path.relations.length} hop${path.relations.length === 1 ? '' : 's'}: `), chain));
    } catch (err) {
      put(pathText, err.status === 404 ? el('p', { class: 'muted' }, err.message) : errorBox(err));
    }
  };

  const showEntity = async (entity) => {
    put(entityBox, loading());
    try {
      const found = await api('GET', userPath(user, 'entities', entity.id));
      const e = found.entity;
      put(entityBox, 
        el('h2', {}, e.name), el('p', {}, badge(e.type), e.is_user ? badge('the user', 'scope') : null),
        e.aliases.length ? el('p', { class: 'small' }, 'also: ', e.aliases.join(', ')) : null,
        el('p', { class: 'muted small' }, `seen ${when(e.first_seen)} – ${when(e.last_seen)}`),
        el('button', { type: 'button', onclick: () => { around.value = e.id; neighbourhood(); } }, 'Centre the graph here'),
        el('h3', {}, 'Relations'),
        el('ul', { class: 'plain' }, found.relations.map((r) => el('li', { class: r.status === 'active' ? '' : 'ended' },
          `${r.subject} —${r.predicate}→ ${r.object}`, el('div', { class: 'muted small' }, r.fact),
          r.valid_to ? el('div', { class: 'muted small' }, `ended ${when(r.valid_to)}`) : null))),
        found.history.length ? [el('h3', {}, 'History'), timeline(found.history)] : null);
    } catch (err) {
      put(entityBox, errorBox(err));
    }
  };

  put(holder, 
    names,
    el('form', { id: 'graph-controls', class: 'filters', onsubmit: (event) => { event.preventDefault(); neighbourhood(); } },
      field('Around', around), field('Depth', depth), field('As of (UTC)', asOf), el('button', { type: 'submit' }, 'Draw')),
    el('form', { id: 'path', class: 'filters', onsubmit: (event) => { event.preventDefault(); findPath(); } },
      field('Path from', from), field('to', to), el('button', { type: 'submit' }, 'Find path')),
    status, pathText,
    el('div', { class: 'split graph-split' }, el('div', { class: 'graph-box' }, svg), entityBox),
    el('h2', {}, 'Relations shown'), relationsBox);
  neighbourhood();
}

function relationsTable(relations, onPath) {
  if (!relations.length) return el('p', { class: 'muted' }, 'None.');
  return el('table', { class: 'grid' },
    el('thead', {}, el('tr', {}, ['Subject', 'Predicate', 'Object', 'Said', 'Valid'].map((h) => el('th', {}, h)))),
    el('tbody', {}, relations.map((r) => el('tr', { class: onPath.has(r.id) ? 'selected' : '' },
      el('td', {}, r.subject), el('td', {}, el('span', { class: 'mono' }, r.predicate)), el('td', {}, r.object),
      el('td', { class: 'small' }, r.fact),
      el('td', { class: 'small' }, when(r.valid_from), r.valid_to ? el('div', {}, `to ${when(r.valid_to)}`) : null)))));
}

// ---------------------------------------------------------------- search and context

const searchForm = { query: '', kinds: ['fact', 'insight', 'event'], limit: 10, min_score: '', since: '', until: '', as_of: '', explain: true };

function searchPage(page) {
  const bound = session.caller.user_id;
  const userInput = el('input', { name: 'user', required: true, value: session.user || '', readonly: Boolean(bound), size: 14 });
  const results = el('div', { id: 'results' });
  const form = el('form', { id: 'search', class: 'card stack', onsubmit: async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    Object.assign(searchForm, {
      query: String(data.get('query')), kinds: data.getAll('kinds'), limit: Number(data.get('limit')) || 10,
      min_score: String(data.get('min_score')), since: String(data.get('since')), until: String(data.get('until')),
      as_of: String(data.get('as_of')), explain: Boolean(data.get('explain')),
    });
    const user = userInput.value.trim();
    setUser(user);
    const body = { user_id: user, query: searchForm.query, limit: searchForm.limit, explain: searchForm.explain };
    if (searchForm.kinds.length) body.kinds = searchForm.kinds;
    if (searchForm.min_score !== '') body.min_score = Number(searchForm.min_score);
    for (const name of ['since', 'until', 'as_of']) if (searchForm[name]) body[name] = utc(searchForm[name]);
    put(results, loading());
    try {
      put(results, searchResults(await api('POST', 'v1/search', { body }), searchForm.explain));
    } catch (err) {
      put(results, errorBox(err));
    }
  } },
  el('h2', {}, 'Search'),
  el('div', { class: 'row' }, field('User', userInput),
    field('Query', el('input', { name: 'query', value: searchForm.query, class: 'wide', placeholder: 'which database do we use?' }))),
  el('div', { class: 'row' }, el('span', { class: 'field-name' }, 'Kinds'),
    KINDS.map((k) => el('label', { class: 'check' }, el('input', { type: 'checkbox', name: 'kinds', value: k, checked: searchForm.kinds.includes(k) }), ` ${k}`))),
  el('div', { class: 'row' },
    field('Limit', el('input', { name: 'limit', type: 'number', min: 1, max: 50, value: String(searchForm.limit) })),
    field('Min score', el('input', { name: 'min_score', type: 'number', min: 0, max: 1, step: 0.05, value: searchForm.min_score, placeholder: 'default' })),
    field('Since (UTC)', el('input', { name: 'since', type: 'datetime-local', value: searchForm.since })),
    field('Until (UTC)', el('input', { name: 'until', type: 'datetime-local', value: searchForm.until })),
    field('As of (UTC)', el('input', { name: 'as_of', type: 'datetime-local', value: searchForm.as_of })),
    el('label', { class: 'check' }, el('input', { type: 'checkbox', name: 'explain', checked: searchForm.explain }), ' explain'),
    el('button', { type: 'submit', class: 'primary' }, 'Search')));

  const contextOut = el('div', { id: 'context' });
  const contextForm = el('form', { id: 'context-form', class: 'card stack', onsubmit: async (event) => {
    event.preventDefault();
    const data = new FormData(contextForm);
    const user = userInput.value.trim();
    put(contextOut, loading());
    try {
      const context = await api('GET', userPath(user, 'context'), { query: {
        query: String(data.get('query')).trim(), max_tokens: data.get('max_tokens'), session_id: String(data.get('session_id')).trim(),
      } });
      put(contextOut, 
        el('p', { class: 'muted' }, `${context.tokens} of ${context.max_tokens} tokens · ${num(context.took_ms, 1)} ms`),
        el('pre', { class: 'context-text', id: 'context-text' }, context.text || '(empty)'),
        context.items.length ? el('table', { class: 'grid' },
          el('thead', {}, el('tr', {}, ['Section', 'Kind', 'Tokens', 'Id'].map((h) => el('th', {}, h)))),
          el('tbody', {}, context.items.map((i) => el('tr', {}, el('td', {}, i.section), el('td', {}, i.kind),
            el('td', { class: 'n' }, i.tokens), el('td', { class: 'mono small' }, i.id))))) : null);
    } catch (err) {
      put(contextOut, errorBox(err));
    }
  } },
  el('h2', {}, 'Context block'),
  el('p', { class: 'muted small' }, 'What GET /v1/users/{user}/context gives an agent for its prompt, for the user above.'),
  el('div', { class: 'row' },
    field('Query', el('input', { name: 'query', class: 'wide', placeholder: 'optional' })),
    field('Max tokens', el('input', { name: 'max_tokens', type: 'number', min: 1, max: 8192, value: '512' })),
    field('Session', el('input', { name: 'session_id', placeholder: 'optional', size: 12 })),
    el('button', { type: 'submit', class: 'primary' }, 'Build context')));

  append(page, [el('h1', {}, 'Search & context'), form, results, contextForm, contextOut]);
}

function searchResults(found, explain) {
  const parts = ['similarity', 'keyword', 'relevance', 'tier', 'time'];
  const head = ['#', 'Kind', 'Result', 'Score', ...(explain ? parts : [])];
  return el('div', {},
    el('p', { class: 'muted', id: 'search-summary' },
      `${found.results.length} result${found.results.length === 1 ? '' : 's'} · ${found.hit ? 'hit' : 'miss'} · ${num(found.took_ms, 1)} ms`),
    found.results.length ? el('table', { id: 'search-results', class: 'grid results' },
      el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, h)))),
      el('tbody', {}, found.results.map((r, i) => el('tr', { 'data-result-id': r.id },
        el('td', { class: 'n' }, i + 1), el('td', {}, badge(r.kind), r.category ? el('div', { class: 'small muted' }, r.category) : null),
        el('td', { class: 'content' }, el('div', { class: 'result-content' }, r.content),
          r.path && r.path !== r.content ? el('div', { class: 'small muted' }, r.path) : null,
          r.fact ? el('div', { class: 'small muted' }, `“${r.fact}”`) : null,
          r.kind === 'event' ? el('div', { class: 'small muted' }, `${r.role} · ${r.session_id} · ${when(r.created_at)}`) : null,
          r.explanation && r.explanation.window ? el('div', { class: 'small muted' }, `window ${r.explanation.window.map(when).join(' – ')}`) : null),
        el('td', { class: 'n score' }, num(r.score, 3)),
        explain ? parts.map((p) => el('td', { class: 'n' }, num(r.explanation?.[p], 3))) : null)))) : null,
    explain && found.results[0]?.explanation?.formula ? el('p', { class: 'muted small formula' }, found.results[0].explanation.formula) : null);
}

// ---------------------------------------------------------------- jobs

async function jobsPage(page) {
  append(page, [el('h1', {}, 'Jobs')]);
  if (!can.jobs) {
    page.append(el('p', { class: 'muted' }, 'Jobs need a key with the admin scope.'));
    return;
  }
  const scope = el('input', { name: 'user', value: session.caller.user_id || session.user || '', placeholder: 'every user of the tenant', size: 18 });
  const runs = el('div', { id: 'runs' });
  const table = el('div', {}, loading());
  const recent = el('div', { id: 'recent' });
  append(page, [
    el('form', { class: 'card inline-form', onsubmit: (event) => event.preventDefault() },
      field('Runs cover user', scope),
      el('span', { class: 'muted small' }, 'leave empty for every user of the tenant')),
    runs, table, recent]);

  const trigger = async (job, dryRun) => {
    const body = { dry_run: dryRun };
    if (scope.value.trim()) body.user_id = scope.value.trim();
    const card = el('div', { class: 'card run' }, loading());
    runs.prepend(card);
    try {
      const queued = await api('POST', `admin/v1/jobs/${encodeURIComponent(job)}/runs`, { body });
      card.dataset.runId = queued.run_id;
      await follow(card, queued.run_id);
      load();
    } catch (err) {
      put(card, el('strong', {}, `${dryRun ? 'Dry run' : 'Run'} of ${job}`), errorBox(err));
    }
  };
  const pause = async (job, paused) => {
    try {
      await api('POST', `admin/v1/jobs/${encodeURIComponent(job)}/${paused ? 'pause' : 'resume'}`);
      notify(`${job} ${paused ? 'paused' : 'resumed'}.`);
      load();
    } catch (err) {
      runs.prepend(errorBox(err));
    }
  };

  async function load() {
    try {
      const { jobs } = await api('GET', 'admin/v1/jobs');
      put(table, el('table', { id: 'jobs', class: 'grid jobs' },
        el('thead', {}, el('tr', {}, ['Job', 'Schedule', 'State', 'Last run', ''].map((h) => el('th', {}, h)))),
        el('tbody', {}, jobs.map((job) => el('tr', { 'data-job': job.name },
          el('td', {}, el('strong', {}, job.name)),
          el('td', {}, el('span', { class: 'mono small' }, job.schedule), el('div', { class: 'small muted' }, job.next_run_at ? `next ${when(job.next_run_at)}` : 'no next tick')),
          el('td', {}, job.paused ? badge('paused') : job.enabled ? badge('scheduled', 'active') : badge('disabled')),
          el('td', { class: 'small' }, job.last_run ? runSummary(job.last_run) : el('span', { class: 'muted' }, 'never run')),
          el('td', { class: 'job-actions' },
            el('button', { type: 'button', 'data-action': 'run', onclick: () => trigger(job.name, false) }, 'Run'),
            el('button', { type: 'button', 'data-action': 'dry-run', onclick: () => trigger(job.name, true) }, 'Dry run'),
            can.operator ? el('button', { type: 'button', 'data-action': job.paused ? 'resume' : 'pause', onclick: () => pause(job.name, !job.paused) },
              job.paused ? 'Resume' : 'Pause') : null,
            el('button', { type: 'button', class: 'link', 'data-action': 'history', onclick: () => recentRuns(recent, job.name) }, 'Runs')))))));
    } catch (err) {
      put(table, errorBox(err));
    }
  }
  load();
}

function runSummary(run) {
  return el('div', { class: 'run-summary' },
    el('div', {}, badge(run.status), run.dry_run ? badge('dry run', 'dry') : null, ' ', when(run.finished_at || run.started_at || run.created_at),
      el('span', { class: 'muted' }, ` · ${run.trigger}${run.user_id ? ` · ${run.user_id}` : ''}`)),
    el('div', { class: 'muted counts' }, counts(run.counts)),
    run.stop_reason ? el('div', { class: 'muted' }, `stopped: ${run.stop_reason}`) : null,
    run.error ? el('div', { class: 'run-error' }, run.error) : null);
}

// Polls a run until it has finished, showing it in `card`.
async function follow(card, id) {
  for (;;) {
    const run = await api('GET', `admin/v1/jobs/runs/${encodeURIComponent(id)}`);
    runNames.set(id, Promise.resolve(run.job));
    const finished = !['queued', 'running'].includes(run.status);
    card.dataset.status = run.status;
    put(card, 
      el('div', { class: 'run-title' }, el('strong', {}, run.dry_run ? `Dry run of ${run.job}` : `Run of ${run.job}`),
        el('span', { class: 'mono small muted' }, ` …${short(run.id)}`)),
      run.dry_run && finished ? el('p', { class: 'small' }, 'Nothing was changed. This is what the run would do:') : null,
      el('div', { class: 'status' }, badge(run.status)),
      el('dl', { class: 'counts-list' }, Object.entries(run.counts || {}).map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])),
      run.error ? el('div', { class: 'run-error' }, run.error) : null);
    if (finished) return run;
    await new Promise((resolve) => setTimeout(resolve, 400));
  }
}

async function recentRuns(box, job) {
  put(box, el('h2', {}, `Recent runs of ${job}`), loading());
  try {
    const found = await api('GET', `admin/v1/jobs/${encodeURIComponent(job)}/runs`, { query: { limit: 20 } });
    put(box, el('h2', {}, `Recent runs of ${job}`),
      found.runs.length ? el('table', { class: 'grid', id: 'recent-runs' },
        el('thead', {}, el('tr', {}, ['Run', 'Status', 'Scope', 'Counts', 'Error'].map((h) => el('th', {}, h)))),
        el('tbody', {}, found.runs.map((run) => el('tr', { 'data-run-id': run.id },
          el('td', { class: 'small' }, el('span', { class: 'mono' }, `…${short(run.id)}`), el('div', { class: 'muted' }, when(run.created_at))),
          el('td', {}, badge(run.status), run.dry_run ? badge('dry run', 'dry') : null, el('div', { class: 'small muted' }, run.trigger)),
          el('td', { class: 'small' }, run.user_id || run.tenant_id || 'every tenant'),
          el('td', { class: 'small counts' }, counts(run.counts)),
          el('td', { class: 'small run-error' }, run.error || ''))))) : el('p', { class: 'muted' }, 'No runs yet.'));
  } catch (err) {
    const missing = err.status === 404 && err.code === 'not_found' && /route/.test(err.message);
    put(box, el('h2', {}, `Recent runs of ${job}`), missing
      ? el('p', { class: 'muted', id: 'no-run-list' }, 'This engram does not list past runs; the table shows the last run of each job.')
      : errorBox(err));
  }
}

start();
