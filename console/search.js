// The search playground (kinds, limit, minimum score, time window, as_of, explain, with
// the parts of each score) and the context block an agent gets for a token budget.

import { api, session, setUser, userPath } from './api.js';
import { append, badge, el, errorBox, field, loading, num, put, utc, when } from './dom.js';

const KINDS = ['fact', 'insight', 'event', 'session_summary', 'period_summary', 'relation'];

// The last search asked, kept while the tab stays open.
const searchForm = { query: '', kinds: ['fact', 'insight', 'event'], limit: 10, min_score: '', since: '', until: '', as_of: '', explain: true };

export function searchPage(page) {
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
      put(results, searchResults(user, await api('POST', 'v1/search', { body }), searchForm.explain));
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

function searchResults(user, found, explain) {
  const parts = ['similarity', 'keyword', 'relevance', 'tier', 'time'];
  const head = ['#', 'Kind', 'Result', 'Score', ...(explain ? parts : [])];
  return el('div', {},
    el('p', { class: 'muted', id: 'search-summary' },
      `${found.results.length} result${found.results.length === 1 ? '' : 's'} · ${found.hit ? 'hit' : 'miss'} · ${num(found.took_ms, 1)} ms`),
    found.results.length ? el('table', { id: 'search-results', class: 'grid results' },
      el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, h)))),
      el('tbody', {}, found.results.map((r, i) => el('tr', { 'data-result-id': r.id },
        el('td', { class: 'n' }, i + 1), el('td', {}, badge(r.kind), (r.category ?? r.predicate) ? el('div', { class: 'small muted' }, r.category ?? r.predicate) : null),
        el('td', { class: 'content' }, el('div', { class: 'result-content' }, ['fact', 'insight'].includes(r.kind)
          ? el('a', { href: `#/users/${encodeURIComponent(user)}/memories/${r.id}` }, r.content) : r.content),
          r.path && r.path !== r.content ? el('div', { class: 'small muted' }, r.path) : null,
          r.fact ? el('div', { class: 'small muted' }, `“${r.fact}”`) : null,
          r.kind === 'event' ? el('div', { class: 'small muted' }, `${r.role} · ${r.session_id} · ${when(r.created_at)}`) : null,
          r.explanation && r.explanation.window ? el('div', { class: 'small muted' }, `window ${r.explanation.window.map(when).join(' – ')}`) : null),
        el('td', { class: 'n score' }, num(r.score, 3)),
        explain ? parts.map((p) => el('td', { class: 'n' }, num(r.explanation?.[p], 3))) : null)))) : null,
    explain && found.results[0]?.explanation?.formula ? el('p', { class: 'muted small formula' }, found.results[0].explanation.formula) : null);
}
