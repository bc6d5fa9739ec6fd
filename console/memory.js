// A user's memory: the list with its filters, adding a memory, and one memory beside the
// list with every field, its history and the actions the key allows (edit, pin, delete,
// restore).

import { api, can, userPath } from './api.js';
import { append, badge, counts, el, errorBox, field, loading, notify, notifyAfterNavigation, num, put, select, short, when } from './dom.js';
import { timeline } from './history.js';

const CATEGORIES = ['identity', 'personal', 'preference', 'project', 'technical', 'decision', 'event', 'lesson',
  'statement', 'relationship', 'health', 'finance', 'other'];
const STATUSES = ['active', 'superseded', 'merged', 'evicted'];

// The list's filters, kept while the tab stays open.
const memoryFilter = { status: 'active', kind: '', category: '', key: '' };

export function memoriesPage(page, user, selected) {
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
      const found = await api('GET', userPath(user, 'memories'), { query });
      for (const m of found.memories) {
        const row = el('tr', { 'data-memory-id': m.id, class: m.id === selected ? 'selected' : '', tabindex: 0 },
          el('td', { class: 'content' }, el('a', { href: `${base}/${m.id}` }, m.content)),
          el('td', {}, m.category, m.key ? el('div', { class: 'mono small' }, m.key) : null),
          el('td', { class: 'n' }, num(m.importance)), el('td', { class: 'n' }, num(m.decay, 3)),
          el('td', {}, badge(m.status), m.pinned ? badge('pinned') : null, m.kind === 'insight' ? badge('insight') : null),
          el('td', { class: 'small' }, when(m.valid_from), m.valid_to ? el('div', {}, `to ${when(m.valid_to)}`) : null));
        row.addEventListener('click', (event) => { if (event.target.tagName !== 'A') location.hash = `${base}/${m.id}`; });
        body.append(row);
      }
      if (!found.memories.length && !cursor) body.append(el('tr', {}, el('td', { colspan: 6, class: 'muted' }, `No ${memoryFilter.status} memories.`)));
      put(more, found.next_cursor ? el('button', { type: 'button', onclick: () => loadList(found.next_cursor) }, 'More') : null);
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
