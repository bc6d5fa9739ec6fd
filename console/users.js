// The users pages: finding a user by id, the tenant's users for an admin key, and one
// user's counts with the ways into their memory, turns and graph.

import { api, can, session, userPath } from './api.js';
import { append, el, errorBox, field, loading, put, when } from './dom.js';

export function usersPage(page) {
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

export async function userPage(page, user) {
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
