// The graph page: an entity's neighbourhood as it holds now or as of a past instant, the
// shortest path between two entities, and one entity's relations and history. The drawing
// itself is graph.js.

import { api, userPath } from './api.js';
import { append, badge, el, errorBox, field, loading, put, select, utc, when } from './dom.js';
import { drawGraph } from './graph.js';
import { timeline } from './history.js';

export async function graphPage(page, user) {
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
