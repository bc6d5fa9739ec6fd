// The user's graph drawn in SVG: a deterministic force layout (the same entities and
// relations always land in the same places) and a drawing built with createElementNS,
// every name and predicate set as text.

const SVG = 'http://www.w3.org/2000/svg';
const RADIUS = 9;

function svgEl(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

// Positions for `entities` within width × height: a circle in name order, then a few
// hundred steps of Fruchterman–Reingold with a cooling temperature. No randomness.
export function layout(entities, relations, width, height) {
  const nodes = [...entities].sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  const margin = 70;
  const [w, h] = [width - 2 * margin, height - 2 * margin];
  const at = new Map();
  nodes.forEach((entity, i) => {
    const angle = (2 * Math.PI * i) / Math.max(nodes.length, 1) - Math.PI / 2;
    const spread = nodes.length > 1 ? 0.45 : 0;
    at.set(entity.id, { x: width / 2 + Math.cos(angle) * w * spread, y: height / 2 + Math.sin(angle) * h * spread });
  });
  const edges = relations.filter((r) => at.has(r.subject_id) && at.has(r.object_id) && r.subject_id !== r.object_id);
  const k = Math.sqrt((w * h) / Math.max(nodes.length, 1)) * 0.75;
  let temperature = Math.min(w, h) / 8;
  for (let step = 0; step < 300; step++) {
    const moves = new Map(nodes.map((n) => [n.id, { x: 0, y: 0 }]));
    for (let i = 0; i < nodes.length; i++) {
      for (let j = i + 1; j < nodes.length; j++) {
        const a = at.get(nodes[i].id), b = at.get(nodes[j].id);
        let dx = a.x - b.x, dy = a.y - b.y;
        let d = Math.hypot(dx, dy);
        if (d < 0.01) { dx = 0.01 * (i - j); dy = 0.01; d = Math.hypot(dx, dy); }
        const push = (k * k) / d;
        const ma = moves.get(nodes[i].id), mb = moves.get(nodes[j].id);
        ma.x += (dx / d) * push; ma.y += (dy / d) * push;
        mb.x -= (dx / d) * push; mb.y -= (dy / d) * push;
      }
    }
    for (const edge of edges) {
      const a = at.get(edge.subject_id), b = at.get(edge.object_id);
      const dx = a.x - b.x, dy = a.y - b.y;
      const d = Math.max(Math.hypot(dx, dy), 0.01);
      const pull = (d * d) / k;
      const ma = moves.get(edge.subject_id), mb = moves.get(edge.object_id);
      ma.x -= (dx / d) * pull; ma.y -= (dy / d) * pull;
      mb.x += (dx / d) * pull; mb.y += (dy / d) * pull;
    }
    for (const node of nodes) {
      const p = at.get(node.id), m = moves.get(node.id);
      const length = Math.max(Math.hypot(m.x, m.y), 0.01);
      p.x = Math.min(width - margin, Math.max(margin, p.x + (m.x / length) * Math.min(length, temperature)));
      p.y = Math.min(height - margin / 2, Math.max(margin / 2, p.y + (m.y / length) * Math.min(length, temperature)));
    }
    temperature *= 0.985;
  }
  return at;
}

// Draws entities and relations into `svg`, replacing what it held. `highlight` holds the
// ids of relations to emphasise (a path); `onSelect(entity)` runs when a node is clicked.
export function drawGraph(svg, { entities, relations }, { highlight = new Set(), onSelect } = {}) {
  const width = 760, height = 440;
  svg.replaceChildren();
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('role', 'img');
  const defs = svgEl('defs');
  for (const [id, cls] of [['arrow', 'arrow'], ['arrow-on', 'arrow on-path']]) {
    const marker = svgEl('marker', { id, viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
    marker.append(svgEl('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: cls }));
    defs.append(marker);
  }
  svg.append(defs);
  if (entities.length === 0) {
    svg.append(svgEl('text', { x: width / 2, y: height / 2, class: 'empty', 'text-anchor': 'middle' }, 'Nothing to draw.'));
    return;
  }
  const at = layout(entities, relations, width, height);
  const edgeLayer = svgEl('g', { class: 'edges' });
  const labelLayer = svgEl('g', { class: 'edge-labels' });
  const nodeLayer = svgEl('g', { class: 'nodes' });
  for (const relation of relations) {
    const a = at.get(relation.subject_id), b = at.get(relation.object_id);
    if (!a || !b) continue;
    const d = Math.max(Math.hypot(b.x - a.x, b.y - a.y), 0.01);
    const [ux, uy] = [(b.x - a.x) / d, (b.y - a.y) / d];
    const onPath = highlight.has(relation.id);
    const classes = ['edge', onPath ? 'on-path' : '', relation.status !== 'active' || relation.valid_to ? 'ended' : ''];
    const line = svgEl('line', {
      x1: a.x + ux * RADIUS, y1: a.y + uy * RADIUS, x2: b.x - ux * (RADIUS + 2), y2: b.y - uy * (RADIUS + 2),
      class: classes.join(' ').trim(), 'marker-end': `url(#${onPath ? 'arrow-on' : 'arrow'})`,
      'data-relation-id': relation.id,
    });
    line.append(svgEl('title', {}, relation.fact));
    edgeLayer.append(line);
    labelLayer.append(svgEl('text', {
      x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 4, class: onPath ? 'edge-label on-path' : 'edge-label', 'text-anchor': 'middle',
    }, relation.predicate));
  }
  for (const entity of entities) {
    const p = at.get(entity.id);
    const group = svgEl('g', {
      class: `node type-${entity.type}${entity.is_user ? ' is-user' : ''}`, transform: `translate(${p.x.toFixed(1)} ${p.y.toFixed(1)})`,
      'data-entity-id': entity.id, tabindex: 0,
    });
    group.append(svgEl('circle', { r: RADIUS }));
    group.append(svgEl('text', { y: RADIUS + 14, 'text-anchor': 'middle', class: 'node-label' }, entity.name));
    group.append(svgEl('title', {}, `${entity.name} (${entity.type})`));
    if (onSelect) {
      group.addEventListener('click', () => onSelect(entity));
      group.addEventListener('keydown', (event) => { if (event.key === 'Enter') onSelect(entity); });
    }
    nodeLayer.append(group);
  }
  svg.append(edgeLayer, labelLayer, nodeLayer);
}
