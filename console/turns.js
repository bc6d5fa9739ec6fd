// A user's raw turns, newest first, all of them or one session's, beside the sessions
// with their summaries and the period summaries.

import { api, userPath } from './api.js';
import { append, badge, el, errorBox, loading, put, when } from './dom.js';

export function turnsPage(page, user, sessionId) {
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
